// Developer-mode RMSNorm, Y[i, :] = W * X[i, :] * rsqrt(mean(X[i, :]^2) + eps): the math of
// examples/rms_norm.cpp as dataflow on one row tile per block. Element loops widen, square and
// scale; T::reduce_sum and T::tile::rsqrt are expert tile ops used on developer tiles (the
// chip's rsqrt is an approximation: an explicit choice, not something the vectoriser may
// substitute for the exact scalar rsqrt). The compiler places every tile in UB, vectorises the
// loops and inserts the flags (docs/developer_mode.md).
// Any M and N: the compiler clips the last block's copies and pads rows that are not whole
// 32-byte blocks; the row sums reduce the logical width only (docs/developer_mode.md "Tails").
#include "tl/kernel_registry.h"
#include "tl/lang.h"

namespace tl::examples {

PrimFunc rms_norm_dev(int M, int N, int rM, int tiles, DType dtype) {
  auto X = T::Tensor("X", {M, N}, dtype);
  auto W = T::Tensor("W", {N}, dtype);
  auto Y = T::Tensor("Y", {M, N}, dtype);
  auto eps = T::Scalar("eps", f32);
  const int row_tiles = ceildiv(M, rM);
  return T::prim_func("rms_norm_dev", {X, W, Y, eps}, [&] {
    T::Kernel(ceildiv(row_tiles, tiles), [&](Expr cid) {
      auto x = T::alloc_shared("x", {rM, N}, dtype);
      auto w = T::alloc_shared("w", {N}, dtype);
      auto xf = T::alloc_fragment("xf", {rM, N}, f32);
      auto sq = T::alloc_fragment("sq", {rM, N}, f32);
      auto ss = T::alloc_fragment("ss", {rM}, f32);
      auto y = T::alloc_shared("y", {rM, N}, dtype);
      T::copy(W, w);
      // This block's row tiles: the next loads while this one computes and the last stores.
      T::Pipelined("t", min(Expr(tiles), row_tiles - cid * tiles), 2, [&](Expr t) {
        T::copy(X.at({(cid * tiles + t) * rM, 0}), x);
        T::Parallel({rM, N}, [&](Expr i, Expr j) { xf(i, j) = cast(f32, x(i, j)); });
        T::Parallel({rM, N}, [&](Expr i, Expr j) { sq(i, j) = xf(i, j) * xf(i, j); });
        T::reduce_sum(sq, ss, -1);
        T::Parallel(rM, [&](Expr i) { ss(i) = ss(i) * (1.0 / N) + eps; });
        T::tile::rsqrt(ss, ss);
        T::Parallel({rM, N}, [&](Expr i, Expr j) { y(i, j) = cast(dtype, xf(i, j) * ss(i) * cast(f32, w(j))); });
        T::copy(y, Y.at({(cid * tiles + t) * rM, 0}));
      });
    }, {.threads = 2});
  });
}

TL_REGISTER_KERNEL({
    .name = "rms_norm_dev",
    .summary = "developer RMSNorm: one row tile per block; the compiler places, vectorises and syncs",
    .params = {{"M", "256", "rows"},
               {"N", "1024", "columns (normalised dimension)"},
               {"rM", "8", "rows per tile (32-byte fp32 row statistics)", ParamRule::tile(8)},
               {"tiles", "1", "row tiles per block (a T.Pipelined loop: the next tile loads while this one computes)"},
               {"dtype", "bfloat16", "X, W, Y dtype", {.one_of = {"bfloat16", "float16"}}}},
    .build = [](const KernelArgs& a) {
      return rms_norm_dev(a.get("M"), a.get("N"), a.get("rM"), a.get("tiles"), a.get_dtype("dtype"));
    },
});

}  // namespace tl::examples
