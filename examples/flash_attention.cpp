// Expert-mode FlashAttention forward, O = softmax(scale * Q K^T) V, for Q, K, V, O of shape
// [B, H, S, D] (BHSD), in the structure of the TileLang-Ascend expert kernels (seeds 000/003).
//
// One logical block per (batch, head, q-tile of bM rows). For each kv-tile of bN rows:
//   AIC   S = Q K^T          gemm_v0 with transpose_B, the K-dim D chunked by bK into one L0C
//                            accumulation; fixpipe S (fp32) to the workspace WS_S[cid]
//   AIVs  online softmax     each AIV owns bM/2 rows (vid picks the half):
//                              m_new = max(m, rowmax(scale * S)); alpha = exp(m - m_new)
//                              P = exp(scale * S - m_new); l = alpha * l + rowsum(P)
//                            P is cast to fp16 and stored to WS_P[cid]; acc *= alpha
//   AIC   PV = P V           gemm_v0, the output columns chunked by bD (L0C capacity);
//                            each chunk is fixpiped to WS_O[cid] (fp32)
//   AIVs  acc += PV          and after the last kv-tile O = acc / l (cast to fp16)
//
// Cross-core flags (mode 2; an AIC set wakes both AIVs, the AIC's wait needs both AIVs' sets):
//   kSReady  AIC -> AIVs  WS_S holds this tile's scores
//   kPReady  AIVs -> AIC  WS_P holds both halves of P
//   kPVReady AIC -> AIVs  WS_O holds P V
// These three also order every reuse of the workspaces, of S_L0C/O_L0C and of the AIVs'
// s_ub/p_ub/pv_ub across iterations (each reuse comes after a wait that transitively follows
// the last use), so no extra flag guards those. The remaining intra-core syncs each order one
// pair that nothing else orders; they are listed where they occur. Within the V pipe,
// consecutive instructions may overlap, so a pipe_barrier(V) separates every dependent pair
// that no flag already separates.
#include <cmath>

#include "tl/kernel_registry.h"
#include "tl/lang.h"

namespace tl::examples {

PrimFunc flash_attention(int Bt, int H, int S, int D, int bM, int bN, int bK, int bD, DType dtype) {
  auto fail = [](const std::string& m) { throw Error("flash_attention: " + m); };
  if (S % bM != 0 || S % bN != 0) fail(fmt::format("S={} must be a multiple of bM={} and bN={}", S, bM, bN));
  if (D % bK != 0 || D % bD != 0) fail(fmt::format("D={} must be a multiple of bK={} and bD={}", D, bK, bD));

  const int q_tiles = S / bM, kv_tiles = S / bN;
  const int num_blocks = checked_product("flash_attention: the block count B * H * (S / bM)", {Bt, H, q_tiles});
  if (num_blocks > ParamRule::kMaxBlocks)
    fail(fmt::format("B * H * (S / bM) = {} blocks, at most {} (use a larger bM)", num_blocks, ParamRule::kMaxBlocks));
  const int r = bM / 2;  // rows per AIV
  // Capacities (A2) of everything live at once; the memory planner will check this too.
  const int64_t e = dtype_bytes(dtype);
  const int64_t l1 = (int64_t{bM} * D + 2 * int64_t{bN} * D + int64_t{bM} * bN) * e;
  const int64_t l0c = (int64_t{bM} * bN + int64_t{bM} * bD) * 4;
  const int64_t ub = int64_t{r} * bN * (4 + e) + int64_t{r} * D * (4 + 4 + e) + 5 * int64_t{r} * 4;
  if (l1 > 524032 || l0c > 131072 || ub > 196608)
    fail(fmt::format("tiles do not fit A2: L1 {} / 524032 B, L0C {} / 131072 B, UB {} / 196608 B per AIV",
                     l1, l0c, ub));
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));

  auto Q = T::Tensor("Q", {Bt, H, S, D}, dtype);
  auto K = T::Tensor("K", {Bt, H, S, D}, dtype);
  auto V = T::Tensor("V", {Bt, H, S, D}, dtype);
  auto O = T::Tensor("O", {Bt, H, S, D}, dtype);
  // Workspaces: one slot per logical block; AIC and AIVs exchange data only through GM on A2.
  auto WS_S = T::Tensor("WS_S", {num_blocks, bM, bN}, f32);
  auto WS_P = T::Tensor("WS_P", {num_blocks, bM, bN}, dtype);
  auto WS_O = T::Tensor("WS_O", {num_blocks, bM, D}, f32);

  // Cross-core flag ids (0-10 on A2).
  constexpr int kSReady = 0, kPReady = 1, kPVReady = 2;
  // Intra-core event ids (0-5), one per purpose so the printed kernel reads like a protocol.
  constexpr int kEvKV = 0, kEvP = 1, kEvS = 2, kEvO = 3, kEvL1 = 4;

  return T::prim_func("flash_attention", {Q, K, V, O, WS_S, WS_P, WS_O}, [&] {
    T::Kernel(num_blocks, [&](Expr cid, Expr vid) {
      Var bx = T::let("bx", cid % q_tiles);        // q-tile
      Var by = T::let("by", cid / q_tiles % H);    // head
      Var bz = T::let("bz", cid / (q_tiles * H));  // batch

      // ------------------------------------------------------------------------------ AIC
      T::Scope(Core::Cube, [&] {
        auto q_l1 = T::alloc_L1("Q_L1", {bM, D}, dtype);
        auto k_l1 = T::alloc_L1("K_L1", {bN, D}, dtype);
        auto v_l1 = T::alloc_L1("V_L1", {bN, D}, dtype);
        auto p_l1 = T::alloc_L1("P_L1", {bM, bN}, dtype);
        auto s_l0c = T::alloc_L0C("S_L0C", {bM, bN}, f32);
        auto o_l0c = T::alloc_L0C("O_L0C", {bM, bD}, f32);

        T::copy(Q.at({bz, by, bx * bM, 0}), q_l1);
        T::serial(kv_tiles, [&](Expr j) {
          T::copy(K.at({bz, by, j * bN, 0}), k_l1);
          T::copy(V.at({bz, by, j * bN, 0}), v_l1);
          // Q (first tile), K and V are in L1 before the cube's L1 -> L0 loads read them.
          T::set_flag(Pipe::MTE2, Pipe::MTE1, kEvKV);
          T::wait_flag(Pipe::MTE2, Pipe::MTE1, kEvKV);
          // S = Q K^T, accumulated over D in bK-wide chunks.
          T::serial(D / bK, [&](Expr kk) {
            T::gemm_v0(q_l1.region({0, kk * bK}, {bM, bK}), k_l1.region({0, kk * bK}, {bN, bK}), s_l0c,
                       {.transpose_B = true, .init = kk == 0});
            // Small tiles: back-to-back Mmads into the same L0C need a barrier (docs/hardware.md
            // section 5).
            if ((bM / 16) * (bN / 16) < 10) T::pipe_barrier(Pipe::M);
          });
          T::set_flag(Pipe::M, Pipe::FIX, kEvS);  // S is accumulated before the fixpipe reads it
          T::wait_flag(Pipe::M, Pipe::FIX, kEvS);
          T::copy(s_l0c, WS_S.at({cid, 0, 0}));
          T::set_cross_flag(Pipe::FIX, kSReady, 2);

          T::wait_cross_flag(kPReady);
          T::copy(WS_P.at({cid, 0, 0}), p_l1);
          T::set_flag(Pipe::MTE2, Pipe::MTE1, kEvP);  // P is in L1 before gemm_v0 loads it
          T::wait_flag(Pipe::MTE2, Pipe::MTE1, kEvP);
          // PV = P V, bD output columns at a time (a [bM, D] fp32 tile would not fit L0C).
          T::serial(D / bD, [&](Expr c) {
            T::gemm_v0(p_l1, v_l1.region({0, c * bD}, {bN, bD}), o_l0c, {.init = true});
            T::set_flag(Pipe::M, Pipe::FIX, kEvO);  // the chunk is computed before the fixpipe
            T::wait_flag(Pipe::M, Pipe::FIX, kEvO);
            T::copy(o_l0c, WS_O.at({cid, 0, c * bD}));
            if (D / bD > 1)
              T::If(c + 1 < D / bD, [&] {
                // The next chunk's Mmad overwrites O_L0C: the fixpipe must have read it.
                T::set_flag(Pipe::FIX, Pipe::M, kEvO);
                T::wait_flag(Pipe::FIX, Pipe::M, kEvO);
              });
          });
          T::set_cross_flag(Pipe::FIX, kPVReady, 2);
          // The next tile's loads overwrite K_L1 and V_L1: the Mmads must have read them.
          T::set_flag(Pipe::M, Pipe::MTE2, kEvL1);
          T::wait_flag(Pipe::M, Pipe::MTE2, kEvL1);
        });
      });

      // ------------------------------------------------------------------------------ AIVs
      T::Scope(Core::Vector, [&] {
        auto s_ub = T::alloc_ub("s_ub", {r, bN}, f32);     // scores, then P in fp32
        auto p_ub = T::alloc_ub("p_ub", {r, bN}, dtype);   // P for the cube
        auto pv_ub = T::alloc_ub("pv_ub", {r, D}, f32);    // this tile's P V
        auto acc = T::alloc_ub("acc_ub", {r, D}, f32);     // running output
        auto o_ub = T::alloc_ub("o_ub", {r, D}, dtype);    // final output rows
        auto m = T::alloc_ub("m_ub", {r}, f32);            // running row max (of scale * S)
        auto mj = T::alloc_ub("mj_ub", {r}, f32);          // new row max
        auto alpha = T::alloc_ub("alpha_ub", {r}, f32);    // exp(m_old - m_new)
        auto rs = T::alloc_ub("rowsum_ub", {r}, f32);      // rowsum(P) of this tile
        auto l = T::alloc_ub("l_ub", {r}, f32);            // running denominator
        Expr row0 = vid * r;                               // this AIV's first row in the q-tile

        T::tile::fill(acc, 0.0);
        T::tile::fill(m, neg_inf(f32));
        T::tile::fill(l, 0.0);
        T::serial(kv_tiles, [&](Expr) {
          T::wait_cross_flag(kSReady);
          T::copy(WS_S.at({cid, row0, 0}), s_ub);
          T::set_flag(Pipe::MTE2, Pipe::V, kEvS);  // scores are in UB before the V pipe reads them
          T::wait_flag(Pipe::MTE2, Pipe::V, kEvS);
          T::tile::mul(s_ub, s_ub, scale);
          T::pipe_barrier(Pipe::V);
          T::reduce_max(s_ub, mj, -1);
          T::pipe_barrier(Pipe::V);
          T::tile::max(mj, mj, m);  // m_new
          T::pipe_barrier(Pipe::V);
          T::tile::row_expand_sub(s_ub, s_ub, mj);
          T::tile::sub(alpha, m, mj);
          T::pipe_barrier(Pipe::V);
          T::tile::exp(s_ub, s_ub);  // P (fp32)
          T::tile::exp(alpha, alpha);
          T::copy(mj, m);  // UB -> UB on the V pipe: m = m_new
          T::pipe_barrier(Pipe::V);
          T::reduce_sum(s_ub, rs, -1);
          T::tile::cast(p_ub, s_ub, "CAST_RINT");
          T::set_flag(Pipe::V, Pipe::MTE3, kEvP);  // P (fp16) is in UB before it is stored
          T::wait_flag(Pipe::V, Pipe::MTE3, kEvP);
          T::copy(p_ub, WS_P.at({cid, row0, 0}));
          T::set_cross_flag(Pipe::MTE3, kPReady, 2);
          // While the cube computes P V: rescale the running statistics by alpha.
          T::tile::mul(l, l, alpha);
          T::tile::row_expand_mul(acc, acc, alpha);
          T::pipe_barrier(Pipe::V);
          T::tile::add(l, l, rs);

          T::wait_cross_flag(kPVReady);
          T::copy(WS_O.at({cid, row0, 0}), pv_ub);
          T::set_flag(Pipe::MTE2, Pipe::V, kEvO);  // P V is in UB before the V pipe adds it
          T::wait_flag(Pipe::MTE2, Pipe::V, kEvO);
          T::tile::add(acc, acc, pv_ub);
        });
        T::pipe_barrier(Pipe::V);
        T::tile::row_expand_div(acc, acc, l);
        T::pipe_barrier(Pipe::V);
        T::tile::cast(o_ub, acc, "CAST_RINT");
        T::set_flag(Pipe::V, Pipe::MTE3, kEvO);  // O is in UB before it is stored
        T::wait_flag(Pipe::V, Pipe::MTE3, kEvO);
        T::copy(o_ub, O.at({bz, by, bx * bM + row0, 0}));
      });
    });
  });
}

TL_REGISTER_KERNEL({
    .name = "flash_attention",
    .summary = "expert FlashAttention forward (BHSD): QK^T and PV on the cube, online softmax on both AIVs",
    .params = {{"B", "1", "batch"},
               {"H", "1", "heads"},
               {"S", "512", "sequence length (queries and keys)"},
               {"D", "512", "head dimension; scale = 1/sqrt(D)"},
               // Two AIV halves of whole 16-row fractals; the cube's tiles are whole fractals.
               {"bM", "64", "q-tile rows per block (each AIV takes bM/2)", ParamRule::tile(32)},
               {"bN", "64", "kv-tile rows per iteration", ParamRule::tile(16)},
               {"bK", "128", "K-dim chunk of QK^T (L0A/L0B)", ParamRule::tile(16)},
               {"bD", "256", "output-column chunk of PV (L0C)", ParamRule::tile(16)},
               {"dtype", "float16", "Q, K, V, O dtype", {.one_of = {"float16", "bfloat16"}}}},
    .build = [](const KernelArgs& a) {
      return flash_attention(a.get("B"), a.get("H"), a.get("S"), a.get("D"), a.get("bM"), a.get("bN"),
                             a.get("bK"), a.get("bD"), a.get_dtype("dtype"));
    },
});

}  // namespace tl::examples
