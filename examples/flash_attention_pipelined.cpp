// Expert-mode FlashAttention forward with the cube and the vector cores pipelined (seed 003,
// DAY 4): O = softmax(scale * Q K^T) V for Q, K, V, O of shape [B, H, S, D] (BHSD). Same
// math, tiling and signature style as examples/flash_attention.cpp, which runs the two kinds
// of core strictly in turn: cube QK^T, vectors softmax, cube P V, vectors update, and each
// side idles while the other works. Here the cube runs one kv-tile ahead ("C核将QK矩阵乘连续
// 执行两次，V核softmax操作也连续执行两次"): it computes S_{j+1} = Q K_{j+1}^T while the AIVs
// do the softmax of tile j, and the AIVs do the softmax of tile j+1 while the cube computes
// P_j V_j. Program order of each core (n = S / bN kv-tiles, slot = tile % 2):
//
//   AIC   S_0 | S_1  PV_0 | S_2  PV_1 | ... | S_{n-1}  PV_{n-2} | PV_{n-1}
//   AIVs  SM_0 | SM_1 UP_0 | SM_2 UP_1 | ... | SM_{n-1} UP_{n-2} | UP_{n-1} | O = acc / l
//
//   S_j   K_j -> L1, S = Q K_j^T (gemm_v0 with transpose_B, D chunked by bK into one L0C
//         accumulation), fixpipe to WS_S[slot]
//   PV_j  V_j -> L1 (overlaps the fixpipe and the wait), wait for P_j, WS_P[slot] -> L1,
//         P V_j by bD output columns (L0C capacity), each chunk fixpiped to WS_O[slot]
//   SM_j  each AIV owns bM/2 rows: m_new = max(m, rowmax(scale S)), alpha_j = exp(m - m_new),
//         P = exp(scale S - m_new) -> fp16 -> WS_P[slot], rs_j = rowsum(P)
//   UP_j  acc = alpha_j acc + P_j V_j, l = alpha_j l + rs_j
//
// Because SM_{j+1} runs before UP_j, alpha and rowsum have one slot per parity, and because
// the cube may write tile j+1 while the AIVs still read tile j, so do the three workspaces.
// In steady state the cube's S_{j+2} hides behind the AIVs' UP_j + SM_{j+1} and the AIVs'
// SM_{j+1} behind the cube's PV_j: an iteration costs max(cube, vector) instead of their sum.
// Every floating-point operation is the serial kernel's, in the same order: the outputs of
// the two kernels are bit-identical.
//
// Cross-core flags (mode 2; an AIC set wakes both AIVs, the AIC's wait needs both AIVs' sets),
// one id per slot, so every set has exactly one matching wait and at most one is pending:
//   kSReady+s   AIC -> AIVs  WS_S[s] holds S_j
//   kPReady+s   AIVs -> AIC  WS_P[s] holds both halves of P_j
//   kPVReady+s  AIC -> AIVs  WS_O[s] holds P_j V_j
// They also order every reuse of a slot two tiles later, so no other sync guards the slots:
// the AIC overwrites WS_S[s] (S_{j+2}) only after waiting for P_j, which each AIV sets after
// its last read of S_j (the V -> MTE3 flag follows every earlier V op), and WS_O[s]
// (P_{j+2} V_{j+2}) only after waiting for P_{j+2}, which each AIV computes after UP_j has
// read P_j V_j (MTE2 -> V flag, then V -> MTE3); an AIV reuses WS_P[s], s_ub[s] and p_ub[s]
// (SM_{j+2}) only after UP_j's wait for P_j V_j, which the AIC sets after reading P_j.
// alpha[s] and rs[s] live on the V pipe alone and are ordered by its barriers.
//
// Intra-core syncs. The cube needs none: gemm_v0 is TileLang-Ascend's template
// (PipeBarrier<ALL>, LoadData, PipeBarrier<ALL>, Mmad, PipeBarrier<ALL>), so every MTE2 load
// into L1 is finished before the next gemm reads it, every Mmad before the fixpipe reads L0C,
// and every fixpipe read of L0C before the next Mmad overwrites it; a flag around a gemm_v0
// would order nothing new. On the AIVs each sync orders pairs nothing else orders (listed
// where they occur); within the V pipe a pipe_barrier(V) separates every dependent pair.
#include <cmath>

#include "tl/kernel_registry.h"
#include "tl/lang.h"

namespace tl::examples {

PrimFunc flash_attention_pipelined(int Bt, int H, int S, int D, int bM, int bN, int bK, int bD, DType dtype) {
  auto fail = [](const std::string& m) { throw Error("flash_attention_pipelined: " + m); };
  if (S % bM != 0 || S % bN != 0) fail(fmt::format("S={} must be a multiple of bM={} and bN={}", S, bM, bN));
  if (D % bK != 0 || D % bD != 0) fail(fmt::format("D={} must be a multiple of bK={} and bD={}", D, bK, bD));

  const int q_tiles = S / bM, n = S / bN;
  const int num_blocks =
      checked_product("flash_attention_pipelined: the block count B * H * (S / bM)", {Bt, H, q_tiles});
  if (num_blocks > ParamRule::kMaxBlocks)
    fail(fmt::format("B * H * (S / bM) = {} blocks, at most {} (use a larger bM)", num_blocks, ParamRule::kMaxBlocks));
  const int r = bM / 2;  // rows per AIV
  // Capacities (A2) of everything live at once; the memory planner checks this too.
  const int64_t e = dtype_bytes(dtype);
  const int64_t l1 = (int64_t{bM} * D + 2 * int64_t{bN} * D + int64_t{bM} * bN) * e;
  const int64_t l0c = (int64_t{bM} * bN + int64_t{bM} * bD) * 4;
  const int64_t ub = 2 * int64_t{r} * bN * (4 + e) + int64_t{r} * D * (4 + 4 + e) + 7 * int64_t{r} * 4;
  if (l1 > 524032 || l0c > 131072 || ub > 196608)
    fail(fmt::format("tiles do not fit A2: L1 {} / 524032 B, L0C {} / 131072 B, UB {} / 196608 B per AIV",
                     l1, l0c, ub));
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));

  auto Q = T::Tensor("Q", {Bt, H, S, D}, dtype);
  auto K = T::Tensor("K", {Bt, H, S, D}, dtype);
  auto V = T::Tensor("V", {Bt, H, S, D}, dtype);
  auto O = T::Tensor("O", {Bt, H, S, D}, dtype);
  // Workspaces: two slots per logical block (tiles j and j+1 are in flight at once).
  auto WS_S = T::Tensor("WS_S", {num_blocks, 2, bM, bN}, f32);
  auto WS_P = T::Tensor("WS_P", {num_blocks, 2, bM, bN}, dtype);
  auto WS_O = T::Tensor("WS_O", {num_blocks, 2, bM, D}, f32);

  // Cross-core flag ids (0-10 on A2): base + slot.
  constexpr int kSReady = 0, kPReady = 2, kPVReady = 4;
  // Intra-core event ids (0-5), one per purpose.
  constexpr int kEvS = 0, kEvP = 1, kEvPV = 2, kEvPVFree = 3, kEvO = 4;

  return T::prim_func("flash_attention_pipelined", {Q, K, V, O, WS_S, WS_P, WS_O}, [&] {
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

        // S_j = Q K_j^T to WS_S[j % 2].
        auto qk = [&](Expr j) {
          Expr s = j % 2;
          T::copy(K.at({bz, by, j * bN, 0}), k_l1);
          T::serial(D / bK, [&](Expr kk) {
            T::gemm_v0(q_l1.region({0, kk * bK}, {bM, bK}), k_l1.region({0, kk * bK}, {bN, bK}), s_l0c,
                       {.transpose_B = true, .init = kk == 0});
          });
          T::copy(s_l0c, WS_S.at({cid, s, 0, 0}));
          T::set_cross_flag(Pipe::FIX, kSReady + s, 2);
        };
        // P_j V_j to WS_O[j % 2], bD output columns at a time (a [bM, D] fp32 tile would not
        // fit L0C). V_j streams in while the fixpipe stores S_{j+1} and the cube waits for P_j.
        auto pv = [&](Expr j) {
          Expr s = j % 2;
          T::copy(V.at({bz, by, j * bN, 0}), v_l1);
          T::wait_cross_flag(kPReady + s);
          T::copy(WS_P.at({cid, s, 0, 0}), p_l1);
          T::serial(D / bD, [&](Expr c) {
            T::gemm_v0(p_l1, v_l1.region({0, c * bD}, {bN, bD}), o_l0c, {.init = true});
            T::copy(o_l0c, WS_O.at({cid, s, 0, c * bD}));
          });
          T::set_cross_flag(Pipe::FIX, kPVReady + s, 2);
        };

        T::copy(Q.at({bz, by, bx * bM, 0}), q_l1);
        qk(0);
        if (n > 1)
          T::serial(n - 1, [&](Expr j) {
            qk(j + 1);  // runs ahead: the AIVs are busy with the softmax of tile j
            pv(j);
          });
        pv(n - 1);
      });

      // ------------------------------------------------------------------------------ AIVs
      T::Scope(Core::Vector, [&] {
        auto s_ub = T::alloc_ub("s_ub", {2 * r, bN}, f32);    // scores, then P in fp32 (per slot)
        auto p_ub = T::alloc_ub("p_ub", {2 * r, bN}, dtype);  // P for the cube (per slot)
        auto pv_ub = T::alloc_ub("pv_ub", {r, D}, f32);       // this tile's P V
        auto acc = T::alloc_ub("acc_ub", {r, D}, f32);        // running output
        auto o_ub = T::alloc_ub("o_ub", {r, D}, dtype);       // final output rows
        auto m = T::alloc_ub("m_ub", {r}, f32);               // running row max (of scale * S)
        auto mj = T::alloc_ub("mj_ub", {r}, f32);             // new row max
        auto alpha = T::alloc_ub("alpha_ub", {2 * r}, f32);   // exp(m_old - m_new) (per slot)
        auto rs = T::alloc_ub("rowsum_ub", {2 * r}, f32);     // rowsum(P) (per slot)
        auto l = T::alloc_ub("l_ub", {r}, f32);               // running denominator
        Expr row0 = vid * r;                                  // this AIV's first row in the q-tile

        // SM_j: the online softmax of tile j; P_j to WS_P[j % 2].
        auto softmax = [&](Expr j) {
          Expr s = j % 2;
          auto sj = s_ub.region({s * r, 0}, {r, bN});
          auto pj = p_ub.region({s * r, 0}, {r, bN});
          auto aj = alpha.region({s * r}, {r});
          auto rj = rs.region({s * r}, {r});
          T::wait_cross_flag(kSReady + s);
          T::copy(WS_S.at({cid, s, row0, 0}), sj);
          T::set_flag(Pipe::MTE2, Pipe::V, kEvS);  // the scores are in UB before the V pipe reads them
          T::wait_flag(Pipe::MTE2, Pipe::V, kEvS);
          T::tile::mul(sj, sj, scale);
          T::pipe_barrier(Pipe::V);
          T::reduce_max(sj, mj, -1);
          T::pipe_barrier(Pipe::V);
          T::tile::max(mj, mj, m);  // m_new
          T::pipe_barrier(Pipe::V);
          T::tile::row_expand_sub(sj, sj, mj);
          T::tile::sub(aj, m, mj);
          T::pipe_barrier(Pipe::V);
          T::tile::exp(sj, sj);  // P (fp32)
          T::tile::exp(aj, aj);
          T::copy(mj, m);  // UB -> UB on the V pipe: m = m_new
          T::pipe_barrier(Pipe::V);
          T::reduce_sum(sj, rj, -1);
          T::tile::cast(pj, sj, "CAST_RINT");
          T::set_flag(Pipe::V, Pipe::MTE3, kEvP);  // P (fp16) is in UB before it is stored
          T::wait_flag(Pipe::V, Pipe::MTE3, kEvP);
          T::copy(pj, WS_P.at({cid, s, row0, 0}));
          T::set_cross_flag(Pipe::MTE3, kPReady + s, 2);
        };
        // UP_j: acc = alpha_j acc + P_j V_j, l = alpha_j l + rs_j.
        auto update = [&](Expr j) {
          Expr s = j % 2;
          auto aj = alpha.region({s * r}, {r});
          auto rj = rs.region({s * r}, {r});
          // pv_ub is single-buffered: the previous tile's add has read it before this load
          // overwrites it (SM_{j+1} in between has no V -> MTE2 edge).
          T::set_flag(Pipe::V, Pipe::MTE2, kEvPVFree);
          T::wait_flag(Pipe::V, Pipe::MTE2, kEvPVFree);
          T::wait_cross_flag(kPVReady + s);
          T::copy(WS_O.at({cid, s, row0, 0}), pv_ub);
          // While P V streams in: rescale the running output and denominator.
          T::tile::row_expand_mul(acc, acc, aj);
          T::tile::mul(l, l, aj);
          T::pipe_barrier(Pipe::V);
          T::tile::add(l, l, rj);
          T::set_flag(Pipe::MTE2, Pipe::V, kEvPV);  // P V is in UB before the V pipe adds it
          T::wait_flag(Pipe::MTE2, Pipe::V, kEvPV);
          T::tile::add(acc, acc, pv_ub);
        };

        T::tile::fill(acc, 0.0);
        T::tile::fill(m, neg_inf(f32));
        T::tile::fill(l, 0.0);
        softmax(0);
        if (n > 1)
          T::serial(n - 1, [&](Expr j) {
            softmax(j + 1);  // P_{j+1} is ready before the cube finishes P_j V_j
            update(j);
          });
        // UP_{n-1} directly follows UP_{n-2}: no softmax (and none of its barriers) in between.
        if (n > 1) T::pipe_barrier(Pipe::V);
        update(n - 1);
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
    .name = "flash_attention_pipelined",
    .summary = "expert FlashAttention forward (BHSD), cube one kv-tile ahead of the AIVs' softmax (seed 003)",
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
      return flash_attention_pipelined(a.get("B"), a.get("H"), a.get("S"), a.get("D"), a.get("bM"), a.get("bN"),
                                       a.get("bK"), a.get("bD"), a.get_dtype("dtype"));
    },
});

}  // namespace tl::examples
