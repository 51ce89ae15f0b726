// Developer-mode GEMM: C[M, N] = A[M, K] x B[K, N], the dataflow of examples/gemm.cpp without
// the hardware work. The author says which tiles exist and what flows where; the compiler
// places them (A_s, B_s -> L1; C_f -> L0C), lowers the gemm to L1 -> L0A/L0B loads and Mmads,
// puts it all on the cube and inserts the flags (docs/developer_mode.md).
#include "tl/kernel_registry.h"
#include "tl/lang.h"

namespace tl::examples {

PrimFunc gemm_dev(int M, int N, int K, int bM, int bN, int bK, DType dtype) {
  auto A = T::Tensor("A", {M, K}, dtype);
  auto B = T::Tensor("B", {K, N}, dtype);
  auto C = T::Tensor("C", {M, N}, dtype);
  const int n_tiles = ceildiv(N, bN);
  const int blocks = checked_product("gemm_dev: the block count ceildiv(M, bM) * ceildiv(N, bN)", {ceildiv(M, bM), n_tiles});
  return T::prim_func("gemm_dev", {A, B, C}, [&] {
    T::Kernel(blocks, [&](Expr cid) {
      Expr bx = cid / n_tiles, by = cid % n_tiles;
      auto a = T::alloc_shared("A_s", {bM, bK}, dtype);
      auto b = T::alloc_shared("B_s", {bK, bN}, dtype);
      auto c = T::alloc_fragment("C_f", {bM, bN}, f32);
      T::clear(c);
      T::serial("k", ceildiv(K, bK), [&](Expr k) {
        T::copy(A.at({bx * bM, k * bK}), a);
        T::copy(B.at({k * bK, by * bN}), b);
        T::gemm(a, b, c);
      });
      T::copy(c, C.at({bx * bM, by * bN}));
    });
  });
}

}  // namespace tl::examples
