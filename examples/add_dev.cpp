// Developer-mode elementwise add Z = X + Y: the element loop of examples/elementwise_add.cpp
// written as dataflow. Each block takes bM rows; the compiler places x, y, z in UB, turns the
// T::Parallel loop into one vector add and inserts the MTE2 -> V -> MTE3 flags
// (docs/developer_mode.md).
// Any M and N: the compiler clips the last block's copies and pads rows that are not whole
// 32-byte blocks (legalize_copies, docs/developer_mode.md "Tails").
#include "tl/kernel_registry.h"
#include "tl/lang.h"

namespace tl::examples {

PrimFunc add_dev(int M, int N, int bM, DType dtype) {
  auto X = T::Tensor("X", {M, N}, dtype);
  auto Y = T::Tensor("Y", {M, N}, dtype);
  auto Z = T::Tensor("Z", {M, N}, dtype);
  return T::prim_func("add_dev", {X, Y, Z}, [&] {
    T::Kernel(ceildiv(M, bM), [&](Expr cid) {
      auto x = T::alloc_shared("x", {bM, N}, dtype);
      auto y = T::alloc_shared("y", {bM, N}, dtype);
      auto z = T::alloc_shared("z", {bM, N}, dtype);
      T::copy(X.at({cid * bM, 0}), x);
      T::copy(Y.at({cid * bM, 0}), y);
      T::Parallel({bM, N}, [&](Expr i, Expr j) { z(i, j) = x(i, j) + y(i, j); });
      T::copy(z, Z.at({cid * bM, 0}));
    }, {.threads = 2});
  });
}

TL_REGISTER_KERNEL({
    .name = "add_dev",
    .summary = "developer elementwise add: a T::Parallel element loop; the compiler vectorises and syncs",
    .params = {{"M", "96", "rows"},
               {"N", "2048", "columns"},
               {"bM", "4", "rows per block", ParamRule::tile()},
               {"dtype", "float16", "X, Y, Z dtype", {.one_of = {"float16", "float32", "int16", "int32"}}}},
    .build = [](const KernelArgs& a) { return add_dev(a.get("M"), a.get("N"), a.get("bM"), a.get_dtype("dtype")); },
});

}  // namespace tl::examples
