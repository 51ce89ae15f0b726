// Expert-mode RMSNorm, vector cores only: Y[i, :] = W * X[i, :] * rsqrt(mean(X[i, :]^2) + eps),
// with X, W, Y in bf16 (or fp16) and all arithmetic in fp32 (seed 000, "rms norm").
//
// Rows are dealt out in tiles of rM rows to 2 * blocks workers (worker = 2 * cid + vid, the
// AIVs of all blocks) with T::Persistent. A row of N = 7168 does not fit UB several times over
// in fp32, so each row tile is processed in bN-wide column chunks, in two passes:
//   pass 1  acc += x^2 chunk by chunk (elementwise), then ss = rowsum(acc),
//           inv = rsqrt(ss / N + eps)
//   pass 2  y = cast(x * inv * w) chunk by chunk, stored to Y
// W is loaded and widened to fp32 once per AIV, before the row loop.
//
// Synchronisation. xb_ub (the raw input chunk) and yb_ub (the output chunk) are reused by
// every chunk, so each chunk starts with V -> MTE2 (the previous chunk's cast has read xb_ub
// before the next load overwrites it) and the output cast waits on MTE3 -> V (the previous
// store has read yb_ub). The V -> MTE2 -> V chain of each chunk also orders all V work of one
// chunk before all V work of the next, so pipe_barrier(V) is only needed between dependent
// V instructions inside a chunk and around the row reduction.
#include "tl/kernel_registry.h"
#include "tl/lang.h"

namespace tl::examples {

PrimFunc rms_norm(int M, int N, int rM, int bN, int blocks, DType dtype) {
  auto fail = [](const std::string& m) { throw Error("rms_norm: " + m); };
  if (M % rM != 0) fail(fmt::format("M={} must be a multiple of rM={}", M, rM));
  if (N % bN != 0) fail(fmt::format("N={} must be a multiple of bN={}", N, bN));
  if (bN % 16 != 0) fail(fmt::format("bN={} must be a multiple of 16 (32-byte UB rows in 16-bit types)", bN));
  if (rM % 8 != 0) fail(fmt::format("rM={} must be a multiple of 8 (32-byte fp32 row statistics)", rM));
  if (dtype != bf16 && dtype != f16) fail(fmt::format("dtype must be bfloat16 or float16, got {}", dtype_name(dtype)));
  const int row_tiles = M / rM, chunks = N / bN;

  auto X = T::Tensor("X", {M, N}, dtype);
  auto W = T::Tensor("W", {N}, dtype);
  auto Y = T::Tensor("Y", {M, N}, dtype);
  auto eps = T::Scalar("eps", f32);

  constexpr int kEvIn = 0, kEvOut = 1;  // intra-core event ids

  return T::prim_func("rms_norm", {X, W, Y, eps}, [&] {
    T::Kernel(blocks, [&](Expr cid, Expr vid) {
      T::Scope(Core::Vector, [&] {
        auto w_b = T::alloc_ub("w_ub", {N}, dtype);          // W as loaded
        auto w_f = T::alloc_ub("wf_ub", {N}, f32);           // W in fp32, kept for all rows
        auto xb = T::alloc_ub("xb_ub", {rM, bN}, dtype);     // input chunk
        auto xf = T::alloc_ub("xf_ub", {rM, bN}, f32);       // input chunk in fp32
        auto acc = T::alloc_ub("acc_ub", {rM, bN}, f32);     // sum of squares, per column slot
        auto wb = T::alloc_ub("wb_ub", {rM, bN}, f32);       // W chunk broadcast over the rows
        auto yb = T::alloc_ub("yb_ub", {rM, bN}, dtype);     // output chunk
        auto ss = T::alloc_ub("ss_ub", {rM}, f32);           // per-row sum of squares, then 1/rms

        T::copy(W, w_b);
        T::set_flag(Pipe::MTE2, Pipe::V, kEvIn);  // W is in UB before the cast reads it
        T::wait_flag(Pipe::MTE2, Pipe::V, kEvIn);
        T::tile::cast(w_f, w_b);

        T::Persistent({row_tiles}, 2 * blocks, cid * 2 + vid, [&](std::vector<Expr> tile) {
          Var row0 = T::let("row0", tile[0] * rM);  // first row of this tile
          // Loads one input chunk into xb_ub and widens it into xf_ub.
          auto load_chunk = [&](Expr c) {
            T::set_flag(Pipe::V, Pipe::MTE2, kEvIn);  // the previous cast has read xb_ub
            T::wait_flag(Pipe::V, Pipe::MTE2, kEvIn);
            T::copy(X.at({row0, c * bN}), xb);
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
            T::copy(yb, Y.at({row0, c * bN}));
          });
        });
      });
    });
  });
}

TL_REGISTER_KERNEL({
    .name = "rms_norm",
    .summary = "expert RMSNorm on the vector cores: bf16 in/out, fp32 math, column chunks, eps a scalar",
    .params = {{"M", "4096", "rows"},
               {"N", "7168", "columns (normalised dimension)"},
               {"rM", "8", "rows per tile (one AIV handles one tile at a time)"},
               {"bN", "1024", "column chunk width"},
               {"blocks", "24", "logical blocks (2 AIVs each)"},
               {"dtype", "bfloat16", "X, W, Y dtype (bfloat16 or float16)"}},
    .build = [](const KernelArgs& a) {
      return rms_norm(a.get("M"), a.get("N"), a.get("rM"), a.get("bN"), a.get("blocks"), a.get_dtype("dtype"));
    },
});

}  // namespace tl::examples
