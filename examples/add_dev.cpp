// Developer-mode elementwise add Z = X + Y: the element loop of examples/elementwise_add.cpp
// written as dataflow. Each block takes bM rows; the compiler places x, y, z in UB, turns the
// T::Parallel loop into one vector add and inserts the MTE2 -> V -> MTE3 flags
// (docs/developer_mode.md).
// Any M and N: the compiler clips the last block's copies and pads rows that are not whole
// 32-byte blocks (legalize_copies, docs/developer_mode.md "Tails"). tiles > 1 gives each block
// that many row tiles in a T.Pipelined loop (the tiles past M clipped away, as the last block's).
#include "tl/kernel_registry.h"
#include "tl/lang.h"

namespace tl::examples {

PrimFunc add_dev(int M, int N, int bM, DType dtype, int tiles) {
  auto X = T::Tensor("X", {M, N}, dtype);
  auto Y = T::Tensor("Y", {M, N}, dtype);
  auto Z = T::Tensor("Z", {M, N}, dtype);
  return T::prim_func("add_dev", {X, Y, Z}, [&] {
    T::Kernel(ceildiv(M, bM * tiles), [&](Expr cid) {
      auto x = T::alloc_shared("x", {bM, N}, dtype), y = T::alloc_shared("y", {bM, N}, dtype), z = T::alloc_shared("z", {bM, N}, dtype);
      auto tile = [&](Expr row) {
        T::copy(X.at({row, 0}), x);
        T::copy(Y.at({row, 0}), y);
        T::Parallel({bM, N}, [&](Expr i, Expr j) { z(i, j) = x(i, j) + y(i, j); });
        T::copy(z, Z.at({row, 0}));
      };
      // tiles > 1: a T.Pipelined loop over the block's row tiles, so the next tile loads while
      // this one is added and stored (with one tile a block has nothing to overlap).
      if (tiles == 1) tile(cid * bM);
      else T::Pipelined("t", tiles, 2, [&](Expr t) { tile((cid * tiles + t) * bM); });
    }, {.threads = 2});
  });
}

TL_REGISTER_KERNEL({
    .name = "add_dev",
    .summary = "developer elementwise add: a T::Parallel element loop; the compiler vectorises and syncs",
    .params = {{"M", "96", "rows"},
               {"N", "2048", "columns"},
               {"bM", "4", "rows per block", ParamRule::tile()},
               {"dtype", "float16", "X, Y, Z dtype", {.one_of = {"float16", "float32", "int16", "int32"}}},
               {"tiles", "1", "row tiles per block (> 1: a T.Pipelined loop)", {.min = 1, .max = 8}}},
    .build = [](const KernelArgs& a) {
      return add_dev(a.get("M"), a.get("N"), a.get("bM"), a.get_dtype("dtype"), a.get("tiles"));
    },
});

}  // namespace tl::examples
