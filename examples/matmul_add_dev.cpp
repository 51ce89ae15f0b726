// Developer-mode matmul + add, C = A x B + D (docs/developer_mode.md, "Data that crosses cores"):
// the cube accumulates A x B in fp32 and the vector unit adds D in the dtype. The kernel says only
// what flows where: `c` is the gemm's accumulator and is read by an element loop, so the compiler
// keeps it in L0C and gives it a UB twin `c_ub` (infer_scopes), moves it across cores through a GM
// workspace it allocates itself, one slot per block (legalize_copies), splits the body into a Cube
// and a Vector scope and orders the crossing with a cross-core flag (insert_channel_syncs). Any M,
// N, K: edge tiles are clipped as in gemm_dev (docs/developer_mode.md "Tails").
#include "tl/kernel_registry.h"
#include "tl/lang.h"

namespace tl::examples {

PrimFunc matmul_add_dev(int M, int N, int K, int bM, int bN, int bK, DType dtype) {
  auto A = T::Tensor("A", {M, K}, dtype);
  auto B = T::Tensor("B", {K, N}, dtype);
  auto D = T::Tensor("D", {M, N}, dtype);
  auto C = T::Tensor("C", {M, N}, dtype);
  const int n_tiles = ceildiv(N, bN);
  const int blocks = checked_product("matmul_add_dev: the block count ceildiv(M, bM) * ceildiv(N, bN)",
                                     {ceildiv(M, bM), n_tiles});
  return T::prim_func("matmul_add_dev", {A, B, D, C}, [&] {
    T::Kernel(blocks, [&](Expr cid) {
      Expr bx = cid / n_tiles, by = cid % n_tiles;
      auto a = T::alloc_shared("a", {bM, bK}, dtype);
      auto b = T::alloc_shared("b", {bK, bN}, dtype);
      auto c = T::alloc_fragment("c", {bM, bN}, f32);
      auto d = T::alloc_shared("d", {bM, bN}, dtype);
      T::clear(c);
      T::Pipelined("k", ceildiv(K, bK), 2, [&](Expr k) {
        T::copy(A.at({bx * bM, k * bK}), a);
        T::copy(B.at({k * bK, by * bN}), b);
        T::gemm(a, b, c);
      });
      T::copy(D.at({bx * bM, by * bN}), d);
      T::Parallel({bM, bN}, [&](Expr i, Expr j) { d(i, j) = cast(dtype, c(i, j)) + d(i, j); });
      T::copy(d, C.at({bx * bM, by * bN}));
    }, {.threads = 2});
  });
}

TL_REGISTER_KERNEL({
    .name = "matmul_add_dev",
    .summary = "developer C = A x B + D: the accumulator crosses from the cube to the vector unit through a "
               "compiler-made GM workspace channel",
    .params = {{"M", "256", "rows of A, D and C"},
               {"N", "256", "columns of B, D and C"},
               {"K", "256", "columns of A, rows of B"},
               {"bM", "64", "tile rows (bfloat16 computes the add in float32: 128 x 256 tiles overflow UB)",
                ParamRule::tile(16)},
               {"bN", "128", "tile columns", ParamRule::tile(16)},
               {"bK", "64", "K panel width", ParamRule::tile(16)},
               {"dtype", "float16", "A, B, D and C dtype", {.one_of = {"float16", "bfloat16"}}}},
    .build = [](const KernelArgs& a) {
      return matmul_add_dev(a.get("M"), a.get("N"), a.get("K"), a.get("bM"), a.get("bN"), a.get("bK"),
                            a.get_dtype("dtype"));
    },
});

}  // namespace tl::examples
