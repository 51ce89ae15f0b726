// Copy bandwidth kernels: calibration rows C11 (GM -> UB on the AIVs, 12288 x 12288 fp16,
// tiles [64, 1024], [64, 64] and [1, 64], 48 AIVs) and C12 (GM -> L1 with ND -> NZ on the AICs,
// tiles [64, 256] and [64, 64], 24 AICs) of the timing model (docs/calibration.md). Each core
// copies its band of rows, tile by tile, into on-chip slots; nothing consumes them.
// Copies on one MTE2 may overlap, so a copy may not overwrite a slot an earlier copy is still
// writing: the kernel cycles through `slots` slots and drains MTE2 (pipe_barrier) before it
// reuses them. One slot (the default) is a barrier between every two copies; small tiles need
// many slots, or every copy would wait out the GM latency alone.
#include "tl/kernel_registry.h"
#include "tl/lang.h"

namespace tl::examples {
namespace {

struct CopyShape {
  int M, N, tM, tN, slots, workers;
};

// The copy loop of worker w, shaped like asc-devkit's data_copy kernel: each worker takes a
// contiguous band of row tiles and walks each row tile's column tiles in order, so an address
// is an increment of the previous one (no division per copy). Column tile g * slots + s goes to
// slot s, stacked along `slot_dim` of x (UB: rows; L1: columns, whose 16-wide blocks are
// contiguous in NZ); MTE2 drains before each round of slots reuses them.
void copy_tiles(const Buffer& X, const Buffer& x, const CopyShape& s, Expr w, int slot_dim) {
  const int row_tiles = s.M / s.tM, rounds = s.N / s.tN / s.slots;
  const int band = ceildiv(row_tiles, s.workers);
  T::serial("m", band, [&](Expr m) {
    Var mi = T::let("mi", w * band + m);
    T::If(mi < row_tiles, [&] {
      T::serial("g", rounds, [&](Expr g) {
        T::If(m > 0 || g > 0, [&] { T::pipe_barrier(Pipe::MTE2); });
        T::serial("s", s.slots, [&](Expr k) {
          std::vector<Expr> start = {0, 0};
          start[slot_dim] = k * (slot_dim == 0 ? s.tM : s.tN);
          T::copy(X.at({mi * s.tM, (g * s.slots + k) * s.tN}), x.region(start, {s.tM, s.tN}));
        });
      });
    });
  });
}

void check_shape(const char* kernel, const CopyShape& s) {
  if (s.M % s.tM != 0 || s.N % s.tN != 0)
    throw Error(fmt::format("{}: M={} and N={} must be multiples of tM={} and tN={}", kernel, s.M, s.N, s.tM, s.tN));
  if (s.N / s.tN % s.slots != 0)
    throw Error(fmt::format("{}: slots={} must divide the {} column tiles of a row (N / tN)", kernel, s.slots,
                            s.N / s.tN));
}

}  // namespace

PrimFunc copy_gm_ub(int M, int N, int tM, int tN, int blocks, int slots, DType dtype) {
  const CopyShape s{M, N, tM, tN, slots, 2 * blocks};
  check_shape("copy_gm_ub", s);
  auto X = T::Tensor("X", {M, N}, dtype);
  return T::prim_func("copy_gm_ub", {X}, [&] {
    T::Kernel(blocks, [&](Expr cid, Expr vid) {
      T::Scope(Core::Vector, [&] {
        auto x = T::alloc_ub("x", {slots * tM, tN}, dtype);
        Var w = T::let("w", cid * 2 + vid);
        copy_tiles(X, x, s, w, 0);
      });
    });
  });
}

PrimFunc copy_gm_l1(int M, int N, int tM, int tN, int blocks, int slots, DType dtype) {
  const CopyShape s{M, N, tM, tN, slots, blocks};
  check_shape("copy_gm_l1", s);
  auto X = T::Tensor("X", {M, N}, dtype);
  return T::prim_func("copy_gm_l1", {X}, [&] {
    T::Kernel(blocks, [&](Expr cid, Expr) {
      T::Scope(Core::Cube, [&] {
        auto x = T::alloc_L1("x", {tM, slots * tN}, dtype);
        copy_tiles(X, x, s, cid, 1);
      });
    });
  });
}

TL_REGISTER_KERNEL({
    .name = "copy_gm_ub",
    .summary = "GM -> UB copy bandwidth on the AIVs (timing calibration C11)",
    .params = {{"M", "1536", "rows"},
               {"N", "12288", "columns"},
               {"tM", "64", "tile rows", ParamRule::tile()},
               {"tN", "1024", "tile columns", ParamRule::tile()},
               {"blocks", "24", "blocks (2 AIVs each)", ParamRule::blocks()},
               {"slots", "1", "UB slots the copies cycle through (a barrier before each reuse)", ParamRule::tile()},
               {"dtype", "float16", "X dtype",
                {.one_of = {"float16", "bfloat16", "float32", "int8", "uint8", "int16", "int32"}}}},
    .build = [](const KernelArgs& a) {
      return copy_gm_ub(a.get("M"), a.get("N"), a.get("tM"), a.get("tN"), a.get("blocks"), a.get("slots"),
                        a.get_dtype("dtype"));
    },
});

TL_REGISTER_KERNEL({
    .name = "copy_gm_l1",
    .summary = "GM -> L1 copy bandwidth with ND -> NZ on the AICs (timing calibration C12)",
    .params = {{"M", "1536", "rows"},
               {"N", "12288", "columns"},
               {"tM", "64", "tile rows", ParamRule::tile(16)},
               {"tN", "256", "tile columns", ParamRule::tile(16)},
               {"blocks", "24", "blocks (one AIC each)", ParamRule::blocks()},
               {"slots", "1", "L1 slots the copies cycle through (a barrier before each reuse)", ParamRule::tile()},
               {"dtype", "float16", "X dtype", {.one_of = {"float16", "bfloat16"}}}},
    .build = [](const KernelArgs& a) {
      return copy_gm_l1(a.get("M"), a.get("N"), a.get("tM"), a.get("tN"), a.get("blocks"), a.get("slots"),
                        a.get_dtype("dtype"));
    },
});

}  // namespace tl::examples
