// Expert-mode RMSNorm, vector cores only: Y[i, :] = W * X[i, :] * rsqrt(mean(X[i, :]^2) + eps),
// with X, W, Y in bf16 (or fp16) and all arithmetic in fp32 (seed 000, "rms norm").
//
// Rows are dealt out in tiles of rM rows to 2 * blocks workers (worker = 2 * cid + vid, the
// AIVs of all blocks) with T::Persistent. W is loaded and widened to fp32 once per AIV, before
// the row loop. The fp32 math runs on bN-wide column chunks of the row tile. Two schedules:
//  - passes = 2 (default): a row of N = 7168 does not fit UB several times over, so X is read
//    from GM twice, one [rM, bN] chunk at a time:
//      pass 1  acc += x^2 chunk by chunk (elementwise), then ss = rowsum(acc),
//              inv = rsqrt(ss / N + eps)
//      pass 2  y = cast(x * inv * w) chunk by chunk, with W's chunk broadcast over the rows
//  - passes = 1: the whole [rM, N] row tile of X (and of Y) fits UB in the I/O dtype (N = 4096:
//    2 x 64 KB at rM = 8), so X is read from GM once and Y written once per tile:
//      pass 1  per chunk: widen, square, ss += rowsum (reduce_sum without clear)
//      pass 2  per chunk: widen again from UB, y = x * inv, y[r] *= w row by row, narrow into yb
//
// Synchronisation. xb_ub (the raw input) and yb_ub (the output) are reused by every chunk
// (passes = 2) or tile (passes = 1), so each load starts with V -> MTE2 (the last cast has
// read xb_ub before the next load overwrites it) and the first output cast waits on MTE3 -> V
// (the previous store has read yb_ub); each load ends with MTE2 -> V and each store starts
// with V -> MTE3. The V -> MTE2 -> V chain also orders all V work before a load against all
// V work after it, so pipe_barrier(V) is only needed between dependent V instructions in
// between: passes = 2 around each chunk's square and add, around the row reduction and the
// normalisation; passes = 1 before each chunk's widening (xf_ub is rewritten after the last
// instruction that read it) and between each chunk's dependent steps.
#include "tl/kernel_registry.h"
#include "tl/lang.h"

namespace tl::examples {
namespace {

constexpr int kEvIn = 0, kEvOut = 1;  // intra-core event ids

/// The kernel's parameters and the UB buffers both schedules share.
struct Norm {
  Buffer X, W, Y;
  Var eps;
  int N = 0, rM = 0, bN = 0;
  DType dtype = bf16;
  Buffer w_f{}, xb{}, xf{}, yb{}, ss{};  // set in the kernel scope; ss: per-row sums, then 1/rms
};

/// Loads W once and widens it into w_f.
void load_w(const Norm& k) {
  auto w_b = T::alloc_ub("w_ub", {k.N}, k.dtype);  // W as loaded
  T::copy(k.W, w_b);
  T::set_flag(Pipe::MTE2, Pipe::V, kEvIn);  // W is in UB before the cast reads it
  T::wait_flag(Pipe::MTE2, Pipe::V, kEvIn);
  T::tile::cast(k.w_f, w_b);
}

/// Loads X at (row0, col) into xb_ub (a chunk or the whole row tile, xb_ub's shape).
void load_x(const Norm& k, Expr row0, Expr col) {
  T::set_flag(Pipe::V, Pipe::MTE2, kEvIn);  // the last cast has read xb_ub
  T::wait_flag(Pipe::V, Pipe::MTE2, kEvIn);
  T::copy(k.X.at({row0, col}), k.xb);
  T::set_flag(Pipe::MTE2, Pipe::V, kEvIn);  // X is in UB before the cast
  T::wait_flag(Pipe::MTE2, Pipe::V, kEvIn);
}

/// ss (sums of squares) -> 1 / rms = rsqrt(ss / N + eps); ss was just written by V.
void finish_stats(const Norm& k) {
  T::pipe_barrier(Pipe::V);
  T::tile::mul(k.ss, k.ss, 1.0 / k.N);
  T::pipe_barrier(Pipe::V);
  T::tile::add(k.ss, k.ss, k.eps);
  T::pipe_barrier(Pipe::V);
  T::tile::rsqrt(k.ss, k.ss);
}

/// Waits for the previous store to have read yb_ub before V writes it again.
void wait_yb_free() {
  T::set_flag(Pipe::MTE3, Pipe::V, kEvOut);
  T::wait_flag(Pipe::MTE3, Pipe::V, kEvOut);
}

/// Stores yb_ub (just written by V) to Y at (row0, col).
void store_y(const Norm& k, Expr row0, Expr col) {
  T::set_flag(Pipe::V, Pipe::MTE3, kEvOut);  // yb_ub is complete before it is stored
  T::wait_flag(Pipe::V, Pipe::MTE3, kEvOut);
  T::copy(k.yb, k.Y.at({row0, col}));
}

/// passes = 2: X is read twice, one [rM, bN] chunk at a time.
void two_pass(const Norm& k, Expr tile) {
  const int chunks = k.N / k.bN;
  auto acc = T::alloc_ub("acc_ub", {k.rM, k.bN}, f32);  // sum of squares, per column slot
  auto wb = T::alloc_ub("wb_ub", {k.rM, k.bN}, f32);    // W chunk broadcast over the rows
  Var row0 = T::let("row0", tile * k.rM);               // first row of this tile
  // Pass 1: sum of squares.
  T::tile::fill(acc, 0.0);
  T::serial(chunks, [&](Expr c) {
    load_x(k, row0, c * k.bN);
    T::tile::cast(k.xf, k.xb);
    T::pipe_barrier(Pipe::V);
    T::tile::mul(k.xf, k.xf, k.xf);
    T::pipe_barrier(Pipe::V);
    T::tile::add(acc, acc, k.xf);
  });
  T::pipe_barrier(Pipe::V);
  T::reduce_sum(acc, k.ss, -1);
  finish_stats(k);
  // Pass 2: normalise, scale by W, narrow and store.
  T::serial(chunks, [&](Expr c) {
    load_x(k, row0, c * k.bN);
    T::tile::cast(k.xf, k.xb);
    T::tile::broadcast(wb, k.w_f.region({c * k.bN}, {k.bN}));
    T::pipe_barrier(Pipe::V);
    T::tile::row_expand_mul(k.xf, k.xf, k.ss);
    T::pipe_barrier(Pipe::V);
    T::tile::mul(k.xf, k.xf, wb);
    wait_yb_free();
    T::pipe_barrier(Pipe::V);
    T::tile::cast(k.yb, k.xf, "CAST_RINT");
    store_y(k, row0, c * k.bN);
  });
}

/// passes = 1: the [rM, N] row tile is loaded once into xb_ub and normalised into yb_ub, in
/// bN-wide fp32 chunks.
void one_pass(const Norm& k, Expr tile) {
  const int chunks = k.N / k.bN;
  auto chunk = [&](const Buffer& b, Expr c) { return b.region({0, c * k.bN}, {k.rM, k.bN}); };
  Var row0 = T::let("row0", tile * k.rM);  // first row of this tile
  load_x(k, row0, 0);
  // Pass 1: ss = sum of squares, accumulated chunk by chunk.
  T::tile::fill(k.ss, 0.0);
  T::serial(chunks, [&](Expr c) {
    T::pipe_barrier(Pipe::V);  // the previous chunk's reduction has read xf_ub
    T::tile::cast(k.xf, chunk(k.xb, c));
    T::pipe_barrier(Pipe::V);
    T::tile::mul(k.xf, k.xf, k.xf);
    T::pipe_barrier(Pipe::V);
    T::reduce_sum(k.xf, k.ss, -1, /*clear=*/false);
  });
  finish_stats(k);
  // Pass 2: normalise, scale by W row by row, narrow into yb_ub; then one store.
  wait_yb_free();
  T::serial(chunks, [&](Expr c) {
    T::pipe_barrier(Pipe::V);  // xf_ub was last read by the previous instruction
    T::tile::cast(k.xf, chunk(k.xb, c));
    T::pipe_barrier(Pipe::V);
    T::tile::row_expand_mul(k.xf, k.xf, k.ss);
    T::pipe_barrier(Pipe::V);
    T::serial(k.rM, [&](Expr r) {
      T::tile::mul(k.xf.region({r, 0}, {1, k.bN}), k.xf.region({r, 0}, {1, k.bN}), k.w_f.region({c * k.bN}, {k.bN}));
    });
    T::pipe_barrier(Pipe::V);
    T::tile::cast(chunk(k.yb, c), k.xf, "CAST_RINT");
  });
  store_y(k, row0, 0);
}

}  // namespace

PrimFunc rms_norm(int M, int N, int rM, int bN, int blocks, int passes, DType dtype) {
  auto fail = [](const std::string& m) { throw Error("rms_norm: " + m); };
  if (M % rM != 0) fail(fmt::format("M={} must be a multiple of rM={}", M, rM));
  if (N % bN != 0) fail(fmt::format("N={} must be a multiple of bN={}", N, bN));
  const int row_tiles = M / rM, tile_cols = passes == 1 ? N : bN;

  Norm k{.X = T::Tensor("X", {M, N}, dtype),
         .W = T::Tensor("W", {N}, dtype),
         .Y = T::Tensor("Y", {M, N}, dtype),
         .eps = T::Scalar("eps", f32),
         .N = N,
         .rM = rM,
         .bN = bN,
         .dtype = dtype};

  return T::prim_func("rms_norm", {k.X, k.W, k.Y, k.eps}, [&] {
    T::Kernel(blocks, [&](Expr cid, Expr vid) {
      T::Scope(Core::Vector, [&] {
        k.w_f = T::alloc_ub("wf_ub", {N}, f32);                // W in fp32, kept for all rows
        k.xb = T::alloc_ub("xb_ub", {rM, tile_cols}, dtype);   // input chunk or row tile
        k.xf = T::alloc_ub("xf_ub", {rM, bN}, f32);            // input chunk in fp32
        k.yb = T::alloc_ub("yb_ub", {rM, tile_cols}, dtype);   // output chunk or row tile
        k.ss = T::alloc_ub("ss_ub", {rM}, f32);                // per-row sum of squares, then 1/rms
        load_w(k);
        T::Persistent({row_tiles}, 2 * blocks, cid * 2 + vid, [&](std::vector<Expr> t) {
          if (passes == 1) one_pass(k, t[0]);
          else two_pass(k, t[0]);
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
               // 32-byte fp32 row statistics; 32-byte UB rows in 16-bit types.
               {"rM", "8", "rows per tile (one AIV handles one tile at a time)", ParamRule::tile(8)},
               {"bN", "1024", "column chunk width of the fp32 math", ParamRule::tile(16)},
               {"blocks", "24", "logical blocks (2 AIVs each)", ParamRule::blocks()},
               {"passes", "2", "2: X read from GM twice in chunks; 1: the [rM, N] row tile stays in UB",
                {.min = 1, .max = 2}},
               {"dtype", "bfloat16", "X, W, Y dtype", {.one_of = {"bfloat16", "float16"}}}},
    .build = [](const KernelArgs& a) {
      return rms_norm(a.get("M"), a.get("N"), a.get("rM"), a.get("bN"), a.get("blocks"), a.get("passes"),
                      a.get_dtype("dtype"));
    },
});

}  // namespace tl::examples
