// Expert-mode GEMM: C[M, N] = A[M, K] x B[K, N] on the cube. Each block owns one bM x bN tile
// of C; the K loop streams bK-wide panels of A and B into L1, gemm_v0 accumulates into L0C,
// and the fixpipe writes the tile to GM (fp32 -> fp16 on the way out).
#include "tl/kernel_registry.h"
#include "tl/lang.h"

namespace tl::examples {

PrimFunc gemm(int M, int N, int K, int bM, int bN, int bK, DType dtype) {
  auto A = T::Tensor("A", {M, K}, dtype);
  auto B = T::Tensor("B", {K, N}, dtype);
  auto C = T::Tensor("C", {M, N}, dtype);
  const int n_tiles = ceildiv(N, bN);
  const int num_blocks =
      checked_product("gemm: the block count ceildiv(M, bM) * ceildiv(N, bN)", {ceildiv(M, bM), n_tiles});
  if (num_blocks > ParamRule::kMaxBlocks)
    throw Error(fmt::format("gemm: ceildiv(M, bM) * ceildiv(N, bN) = {} blocks, at most {} (use larger tiles)",
                            num_blocks, ParamRule::kMaxBlocks));
  return T::prim_func("gemm", {A, B, C}, [&] {
    T::Kernel(num_blocks, [&](Expr cid, Expr) {
      Expr bx = cid / n_tiles, by = cid % n_tiles;
      T::Scope(Core::Cube, [&] {
        auto a_l1 = T::alloc_L1("A_L1", {bM, bK}, dtype);
        auto b_l1 = T::alloc_L1("B_L1", {bK, bN}, dtype);
        auto c_l0c = T::alloc_L0C("C_L0C", {bM, bN}, f32);
        T::serial("k", ceildiv(K, bK), [&](Expr k) {
          T::copy(A.at({bx * bM, k * bK}), a_l1);
          T::copy(B.at({k * bK, by * bN}), b_l1);
          T::set_flag(Pipe::MTE2, Pipe::MTE1, 0);
          T::wait_flag(Pipe::MTE2, Pipe::MTE1, 0);
          T::gemm_v0(a_l1, b_l1, c_l0c, {.init = k == 0});
          // The next iteration's copies overwrite A_L1/B_L1: wait until the cube has read them.
          T::set_flag(Pipe::M, Pipe::MTE2, 0);
          T::wait_flag(Pipe::M, Pipe::MTE2, 0);
        });
        T::set_flag(Pipe::M, Pipe::FIX, 0);
        T::wait_flag(Pipe::M, Pipe::FIX, 0);
        T::copy(c_l0c, C.at({bx * bM, by * bN}));
      });
    });
  });
}

TL_REGISTER_KERNEL({
    .name = "gemm",
    .summary = "expert GEMM: L1 tiles, K loop, gemm_v0, fixpipe to GM",
    .params = {{"M", "1024", "rows of A and C"},
               {"N", "1024", "columns of B and C"},
               {"K", "1024", "columns of A, rows of B"},
               // Cube tiles are whole 16 x 16 fractals.
               {"bM", "128", "tile rows", ParamRule::tile(16)},
               {"bN", "256", "tile columns", ParamRule::tile(16)},
               {"bK", "64", "K panel width", ParamRule::tile(16)},
               {"dtype", "float16", "A, B and C dtype", {.one_of = {"float16", "bfloat16", "float32"}}}},
    .build = [](const KernelArgs& a) {
      return gemm(a.get("M"), a.get("N"), a.get("K"), a.get("bM"), a.get("bN"), a.get("bK"),
                  a.get_dtype("dtype"));
    },
});

}  // namespace tl::examples
