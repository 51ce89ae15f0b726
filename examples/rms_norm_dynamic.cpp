// Expert-mode RMSNorm with a dynamic row count: Y[i, :] = W * X[i, :] * rsqrt(mean(X[i, :]^2) + eps)
// for X, Y of shape [M, N] where M = T::dynamic("M") is bound from the tensors at launch, so
// one compiled kernel serves every M (0 included). N, the tile sizes and the dtype are
// compile-time parameters. bf16 (or fp16) in and out, fp32 arithmetic, as examples/rms_norm.cpp.
//
// Work split. The M rows are M / rM full tiles of rM rows plus a tail of M % rM < rM rows.
// UB buffers (and so tile ops) need static shapes, so the tail is processed as a whole rM-row
// tile of which only the first M % rM rows are valid:
//   full tiles  dealt to the 2 * blocks AIVs with T::Persistent; one GM <-> UB copy per chunk;
//   tail tile   taken by the AIV next in the round robin (full_tiles % workers); its valid
//               rows are copied GM <-> UB one row at a time (a loop with a runtime trip count
//               over 1-row regions, static extents), the vector ops run on the whole tile and
//               the rows past M are never stored. Vector math is per row, so the stale rows
//               cannot affect the valid ones.
// The block count is min(blocks, ceildiv(M, rM)): small M does not start idle blocks, and
// M = 0 launches no block at all.
//
// Synchronisation is that of examples/rms_norm.cpp: every chunk's load starts with V -> MTE2
// (the previous cast has read xb) and ends with MTE2 -> V (the chunk is in UB); the output
// cast waits on MTE3 -> V (the previous store has read yb), the store on V -> MTE3. Every
// set_flag is immediately followed by its wait_flag, so the full-tile and tail paths compose.
#include <optional>

#include "tl/kernel_registry.h"
#include "tl/lang.h"

namespace tl::examples {

PrimFunc rms_norm_dynamic(int N, int rM, int bN, int blocks, DType dtype) {
  auto fail = [](const std::string& m) { throw Error("rms_norm_dynamic: " + m); };
  if (N % bN != 0) fail(fmt::format("N={} must be a multiple of bN={}", N, bN));
  const int chunks = N / bN;

  auto M = T::dynamic("M");
  auto X = T::Tensor("X", {M, N}, dtype);
  auto W = T::Tensor("W", {N}, dtype);
  auto Y = T::Tensor("Y", {M, N}, dtype);
  auto eps = T::Scalar("eps", f32);

  constexpr int kEvIn = 0, kEvOut = 1;  // intra-core event ids

  return T::prim_func("rms_norm_dynamic", {X, W, Y, eps}, [&] {
    Expr num_blocks = min(Expr(blocks), ceildiv(M, rM));
    T::Kernel(num_blocks, [&](Expr cid, Expr vid) {
      T::Scope(Core::Vector, [&] {
        auto w_b = T::alloc_ub("w_ub", {N}, dtype);       // W as loaded
        auto w_f = T::alloc_ub("wf_ub", {N}, f32);        // W in fp32, kept for all rows
        auto xb = T::alloc_ub("xb_ub", {rM, bN}, dtype);  // input chunk
        auto xf = T::alloc_ub("xf_ub", {rM, bN}, f32);    // input chunk in fp32
        auto acc = T::alloc_ub("acc_ub", {rM, bN}, f32);  // sum of squares, per column slot
        auto wb = T::alloc_ub("wb_ub", {rM, bN}, f32);    // W chunk broadcast over the rows
        auto yb = T::alloc_ub("yb_ub", {rM, bN}, dtype);  // output chunk
        auto ss = T::alloc_ub("ss_ub", {rM}, f32);        // per-row sum of squares, then 1/rms

        T::copy(W, w_b);
        T::set_flag(Pipe::MTE2, Pipe::V, kEvIn);  // W is in UB before the cast reads it
        T::wait_flag(Pipe::MTE2, Pipe::V, kEvIn);
        T::tile::cast(w_f, w_b);

        // Normalises the rM-row tile starting at row0. A full tile (nrows unset) moves its
        // rows with one copy per chunk; the tail tile has only nrows < rM valid rows, moved
        // one row at a time (1-row regions of the UB tiles), and its other rows are computed
        // on stale data and never stored (rows are independent).
        auto tile_rows = [&](Expr row0, std::optional<Expr> nrows) {
          auto load_chunk = [&](Expr c) {
            T::set_flag(Pipe::V, Pipe::MTE2, kEvIn);  // the previous cast has read xb_ub
            T::wait_flag(Pipe::V, Pipe::MTE2, kEvIn);
            if (!nrows) {
              T::copy(X.at({row0, c * bN}), xb);
            } else {
              T::serial(*nrows, [&](Expr j) { T::copy(X.at({row0 + j, c * bN}), xb.region({j, 0}, {1, bN})); });
            }
            T::set_flag(Pipe::MTE2, Pipe::V, kEvIn);  // the chunk is in UB before the cast
            T::wait_flag(Pipe::MTE2, Pipe::V, kEvIn);
            T::tile::cast(xf, xb);
          };

          // Pass 1: sum of squares.
          T::tile::fill(acc, 0.0);
          T::serial(chunks, [&](Expr c) {
            load_chunk(c);
            T::pipe_barrier(Pipe::V);
            T::tile::mul(xf, xf, xf);
            T::pipe_barrier(Pipe::V);
            T::tile::add(acc, acc, xf);
          });
          T::pipe_barrier(Pipe::V);
          T::reduce_sum(acc, ss, -1);
          T::pipe_barrier(Pipe::V);
          T::tile::mul(ss, ss, 1.0 / N);
          T::pipe_barrier(Pipe::V);
          T::tile::add(ss, ss, eps);
          T::pipe_barrier(Pipe::V);
          T::tile::rsqrt(ss, ss);

          // Pass 2: normalise, scale by W, narrow and store.
          T::serial(chunks, [&](Expr c) {
            load_chunk(c);
            T::tile::broadcast(wb, w_f.region({c * bN}, {bN}));
            T::pipe_barrier(Pipe::V);
            T::tile::row_expand_mul(xf, xf, ss);
            T::pipe_barrier(Pipe::V);
            T::tile::mul(xf, xf, wb);
            T::set_flag(Pipe::MTE3, Pipe::V, kEvOut);  // the previous store has read yb_ub
            T::wait_flag(Pipe::MTE3, Pipe::V, kEvOut);
            T::pipe_barrier(Pipe::V);
            T::tile::cast(yb, xf, "CAST_RINT");
            T::set_flag(Pipe::V, Pipe::MTE3, kEvOut);  // the chunk is in UB before it is stored
            T::wait_flag(Pipe::V, Pipe::MTE3, kEvOut);
            if (!nrows) {
              T::copy(yb, Y.at({row0, c * bN}));
            } else {
              T::serial(*nrows, [&](Expr j) { T::copy(yb.region({j, 0}, {1, bN}), Y.at({row0 + j, c * bN})); });
            }
          });
        };

        Var workers = T::let("workers", num_blocks * 2);
        Var worker = T::let("worker", cid * 2 + vid);
        Var full_tiles = T::let("full_tiles", M / rM);
        T::Persistent({full_tiles}, workers, worker, [&](std::vector<Expr> tile) {
          tile_rows(T::let("row0", tile[0] * rM), std::nullopt);
        });
        // The tail tile continues the round robin: worker full_tiles % workers takes it.
        Var tail = T::let("tail", M % rM);
        T::If(tail > 0 && worker == full_tiles % workers, [&] { tile_rows(full_tiles * rM, Expr(tail)); });
      });
    });
  });
}

TL_REGISTER_KERNEL({
    .name = "rms_norm_dynamic",
    .summary = "expert RMSNorm with a dynamic row count M (bound at launch): full rM-row tiles, then tail rows",
    .params = {{"N", "4096", "columns (normalised dimension), compile-time"},
               // 32-byte fp32 row statistics; 32-byte UB rows in 16-bit types.
               {"rM", "8", "rows per full tile", ParamRule::tile(8)},
               {"bN", "1024", "column chunk width", ParamRule::tile(16)},
               {"blocks", "24", "maximum logical blocks (2 AIVs each)", ParamRule::blocks()},
               {"dtype", "bfloat16", "X, W, Y dtype", {.one_of = {"bfloat16", "float16"}}}},
    .build = [](const KernelArgs& a) {
      return rms_norm_dynamic(a.get("N"), a.get("rM"), a.get("bN"), a.get("blocks"), a.get_dtype("dtype"));
    },
});

}  // namespace tl::examples
