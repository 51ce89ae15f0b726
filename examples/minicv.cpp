// Expert-mode "minicv" (seed 003): D = exp(A x B), the smallest kernel that uses both kinds of
// core of a block. The AIC computes one bM x bN tile of A x B (whole K in L1, one gemm_v0) and
// the fixpipe writes it to a GM workspace W[cid]; the two AIVs wait for it on a cross-core
// flag, each loads its half of the rows (vid selects the half), applies exp on the V pipe and
// stores its rows of D. On A2 the AIC and the AIVs can only exchange data through GM.
//
// Every synchronisation below orders one producer/consumer pair that nothing else orders:
//   cube:   MTE2 -> MTE1  the L1 tiles are loaded before gemm_v0 reads them
//           M -> FIX      the accumulation into L0C is done before the fixpipe reads it
//           cross flag 0  (FIX, mode 2) the workspace tile is in GM before the AIVs read it
//   vector: MTE2 -> V     the UB tile is loaded before exp reads it
//           V (barrier)   exp has written x before cast reads it (fp16 output only)
//           V -> MTE3     the result is in UB before it is stored
#include "tl/kernel_registry.h"
#include "tl/lang.h"

namespace tl::examples {

PrimFunc minicv(int M, int N, int K, int bM, int bN, DType dtype, DType out_dtype) {
  if (M % bM != 0 || N % bN != 0)
    throw Error(fmt::format("minicv: M={} and N={} must be multiples of bM={} and bN={}", M, N, bM, bN));
  const int m_tiles = M / bM, n_tiles = N / bN;
  const int num_blocks = checked_product("minicv: the block count (M / bM) * (N / bN)", {m_tiles, n_tiles});
  if (num_blocks > ParamRule::kMaxBlocks)
    throw Error(fmt::format("minicv: (M / bM) * (N / bN) = {} blocks, at most {} (use larger tiles)", num_blocks,
                            ParamRule::kMaxBlocks));
  const int half = bM / 2;  // rows per AIV

  auto A = T::Tensor("A", {M, K}, dtype);
  auto B = T::Tensor("B", {K, N}, dtype);
  auto D = T::Tensor("D", {M, N}, out_dtype);
  auto W = T::Tensor("W", {num_blocks, bM, bN}, f32);  // cube -> vector workspace, one tile per block

  constexpr int kEv = 0;         // intra-core event id (each set is waited on right away)
  constexpr int kTileReady = 0;  // cross-core flag: W[cid] holds the GEMM tile

  return T::prim_func("minicv", {A, B, D, W}, [&] {
    T::Kernel(num_blocks, [&](Expr cid, Expr vid) {
      Var bx = T::let("bx", cid / n_tiles * bM);  // first row of the block's tile
      Var by = T::let("by", cid % n_tiles * bN);  // first column

      T::Scope(Core::Cube, [&] {
        auto a_l1 = T::alloc_L1("A_L1", {bM, K}, dtype);
        auto b_l1 = T::alloc_L1("B_L1", {K, bN}, dtype);
        auto c_l0c = T::alloc_L0C("C_L0C", {bM, bN}, f32);
        T::copy(A.at({bx, 0}), a_l1);  // GM -> L1, ND -> NZ
        T::copy(B.at({0, by}), b_l1);
        T::set_flag(Pipe::MTE2, Pipe::MTE1, kEv);
        T::wait_flag(Pipe::MTE2, Pipe::MTE1, kEv);
        T::gemm_v0(a_l1, b_l1, c_l0c, {.init = true});
        T::set_flag(Pipe::M, Pipe::FIX, kEv);
        T::wait_flag(Pipe::M, Pipe::FIX, kEv);
        T::copy(c_l0c, W.at({cid, 0, 0}));  // fixpipe L0C -> GM, NZ -> ND
        T::set_cross_flag(Pipe::FIX, kTileReady, /*mode=*/2);  // tell both AIVs
      });

      T::Scope(Core::Vector, [&] {
        auto x = T::alloc_ub("x_ub", {half, bN}, f32);
        const bool narrow = out_dtype != f32;  // fp16 output: exp in fp32, then a vector cast
        Buffer y = narrow ? T::alloc_ub("y_ub", {half, bN}, out_dtype) : x;
        T::wait_cross_flag(kTileReady);
        T::copy(W.at({cid, vid * half, 0}), x);  // this AIV's half of the rows
        T::set_flag(Pipe::MTE2, Pipe::V, kEv);
        T::wait_flag(Pipe::MTE2, Pipe::V, kEv);
        T::tile::exp(x, x);
        if (narrow) {
          T::pipe_barrier(Pipe::V);  // the cast reads what exp wrote
          T::tile::cast(y, x, "CAST_RINT");
        }
        T::set_flag(Pipe::V, Pipe::MTE3, kEv);
        T::wait_flag(Pipe::V, Pipe::MTE3, kEv);
        T::copy(y, D.at({bx + vid * half, by}));
      });
    });
  });
}

TL_REGISTER_KERNEL({
    .name = "minicv",
    .summary = "expert CV fusion: D = exp(A x B), GEMM on the cube, exp on both AIVs via a GM workspace",
    .params = {{"M", "1024", "rows of A and D"},
               {"N", "1024", "columns of B and D"},
               {"K", "256", "columns of A, rows of B (held whole in L1)", ParamRule::tile(16)},
               // Two AIV halves of whole 16-row fractals.
               {"bM", "128", "tile rows per block (each AIV takes bM/2)", ParamRule::tile(32)},
               {"bN", "128", "tile columns per block", ParamRule::tile(16)},
               {"dtype", "float16", "A and B dtype", {.one_of = {"float16", "bfloat16", "float32"}}},
               {"out_dtype", "float32", "D dtype (float32, or float16 through a vector cast)",
                {.one_of = {"float32", "float16"}}}},
    .build = [](const KernelArgs& a) {
      return minicv(a.get("M"), a.get("N"), a.get("K"), a.get("bM"), a.get("bN"), a.get_dtype("dtype"),
                    a.get_dtype("out_dtype"));
    },
});

}  // namespace tl::examples
