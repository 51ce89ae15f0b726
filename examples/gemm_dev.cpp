// Developer-mode GEMM: C[M, N] = A[M, K] x B[K, N], the dataflow of examples/gemm.cpp without
// the hardware work. The author says which tiles exist and what flows where; the compiler
// places them (A_s, B_s -> L1; C_f -> L0C), lowers the gemm to L1 -> L0A/L0B loads and Mmads,
// puts it all on the cube and inserts the flags (docs/developer_mode.md). The K loop is
// T::Pipelined: the compiler gives A_s, B_s and their L0 copies one slot per stage, so the
// next panels load while the cube multiplies this one.
// Persistent, as its expert twin gemm_pipelined is: `blocks` workers (A2's 24 AICs) take the
// output tiles in turn (T::Persistent), so a worker's next tile starts loading while its last
// one drains instead of waiting for a new block to be placed. (One block per output tile, the
// non-persistent form, is 8.3 % slower at 2048^3: 135,552 against 125,214 cycles.)
// Any M, N, K: the compiler clips the edge tiles' copies and zero-fills a partial K panel in L1
// before its copy (legalize_copies, docs/developer_mode.md "Tails").
#include "tl/kernel_registry.h"
#include "tl/lang.h"

namespace tl::examples {

PrimFunc gemm_dev(int M, int N, int K, int bM, int bN, int bK, DType dtype, int num_stages, int blocks) {
  auto A = T::Tensor("A", {M, K}, dtype);
  auto B = T::Tensor("B", {K, N}, dtype);
  auto C = T::Tensor("C", {M, N}, dtype);
  const int m_tiles = ceildiv(M, bM), n_tiles = ceildiv(N, bN);
  checked_product("gemm_dev: the tile count ceildiv(M, bM) * ceildiv(N, bN)", {m_tiles, n_tiles});
  // One output tile: A_s, B_s stream the K panels through a T::Pipelined loop into C_f.
  auto tile = [&](Expr bx, Expr by, const Buffer& a, const Buffer& b, const Buffer& c) {
    T::clear(c);
    T::Pipelined("k", ceildiv(K, bK), num_stages, [&](Expr k) {
      T::copy(A.at({bx * bM, k * bK}), a);
      T::copy(B.at({k * bK, by * bN}), b);
      T::gemm(a, b, c);
    });
    T::copy(c, C.at({bx * bM, by * bN}));
  };
  return T::prim_func("gemm_dev", {A, B, C}, [&] {
    T::Kernel(blocks, [&](Expr cid) {
      auto a = T::alloc_shared("A_s", {bM, bK}, dtype);
      auto b = T::alloc_shared("B_s", {bK, bN}, dtype);
      auto c = T::alloc_fragment("C_f", {bM, bN}, f32);
      T::Persistent({m_tiles, n_tiles}, blocks, cid, [&](std::vector<Expr> t) { tile(t[0], t[1], a, b, c); });
    });
  });
}

TL_REGISTER_KERNEL({
    .name = "gemm_dev",
    .summary = "developer GEMM: shared/fragment tiles, T::gemm; the compiler places, lowers and syncs",
    .params = {{"M", "1024", "rows of A and C"},
               {"N", "1024", "columns of B and C"},
               {"K", "1024", "columns of A, rows of B"},
               {"bM", "128", "tile rows", ParamRule::tile(16)},
               {"bN", "256", "tile columns", ParamRule::tile(16)},
               {"bK", "256", "K panel width (L1; the compiler splits it into L0 chunks)", ParamRule::tile(16)},
               {"dtype", "float16", "A, B and C dtype", {.one_of = {"float16", "bfloat16"}}},
               {"num_stages", "2", "T.Pipelined stages of the K loop (1: serial)", {.min = 1, .max = 4}},
               {"blocks", "24", "persistent workers (A2: 24 AICs)", ParamRule::blocks()}},
    .build = [](const KernelArgs& a) {
      return gemm_dev(a.get("M"), a.get("N"), a.get("K"), a.get("bM"), a.get("bN"), a.get("bK"), a.get_dtype("dtype"),
                      a.get("num_stages"), a.get("blocks"));
    },
});

}  // namespace tl::examples
