// Developer-mode GELU (sigmoid form), y = x / (1 + exp(-1.702 x)): the math of examples/gelu.cpp
// on one row tile per block. The exact steps are element loops; the exp is T::tile::exp on a
// developer tile, the chip's approximation chosen explicitly (the vectoriser never substitutes
// it for the scalar loop's exact exp). The compiler places the tiles in UB, vectorises and
// inserts the flags (docs/developer_mode.md).
// Any M and N: the compiler clips the last block's copies and pads rows that are not whole
// 32-byte blocks (legalize_copies, docs/developer_mode.md "Tails").
#include "tl/arith.h"
#include "tl/kernel_registry.h"
#include "tl/lang.h"

namespace tl::examples {

PrimFunc gelu_dev(int M, int N, int bM, int tiles, DType dtype) {
  auto X = T::Tensor("X", {M, N}, dtype);
  auto Y = T::Tensor("Y", {M, N}, dtype);
  const int row_tiles = ceildiv(M, bM);
  return T::prim_func("gelu_dev", {X, Y}, [&] {
    T::Kernel(ceildiv(row_tiles, tiles), [&](Expr cid) {
      auto x = T::alloc_shared("x", {bM, N}, dtype), y = T::alloc_shared("y", {bM, N}, dtype);
      // -1.702 as a value of the dtype: the vector mul takes its scalar in the dtype, and the
      // element loop must say so to be vectorised bit-identically.
      Expr k = imm(dtype, arith::round_float(dtype, -1.702));
      T::Pipelined("t", min(Expr(tiles), row_tiles - cid * tiles), 2, [&](Expr t) {
        T::copy(X.at({(cid * tiles + t) * bM, 0}), x);
        // y holds exp(-1.702 x) + 1 until the last step overwrites it with the result: a scratch
        // tile of its own would be one copy shared by consecutive row tiles (one pipe touches it),
        // and the vector unit would need a barrier before reusing it each iteration.
        T::Parallel({bM, N}, [&](Expr i, Expr j) { y(i, j) = x(i, j) * k; });
        T::tile::exp(y, y);
        T::Parallel({bM, N}, [&](Expr i, Expr j) { y(i, j) = y(i, j) + imm(dtype, 1.0); });  // in place: no temporary
        T::Parallel({bM, N}, [&](Expr i, Expr j) { y(i, j) = x(i, j) / y(i, j); });
        T::copy(y, Y.at({(cid * tiles + t) * bM, 0}));
      });
    }, {.threads = 2});
  });
}

TL_REGISTER_KERNEL({
    .name = "gelu_dev",
    .summary = "developer GELU (sigmoid form): element loops and an explicit tile exp; the compiler vectorises and syncs",
    .params = {{"M", "96", "rows"},
               {"N", "2048", "columns"},
               {"bM", "4", "rows per tile", ParamRule::tile()},
               {"tiles", "1", "row tiles per block (a T.Pipelined loop: the next tile loads while this one computes)"},
               {"dtype", "float32", "X, Y dtype", {.one_of = {"float32", "float16"}}}},
    .build = [](const KernelArgs& a) {
      return gelu_dev(a.get("M"), a.get("N"), a.get("bM"), a.get("tiles"), a.get_dtype("dtype"));
    },
});

}  // namespace tl::examples
