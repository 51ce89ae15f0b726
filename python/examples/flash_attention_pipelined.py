"""Expert-mode FlashAttention forward with the cube and the vector cores pipelined (seed 003,
DAY 4): the Python twin of examples/flash_attention_pipelined.cpp.

O = softmax(scale * Q K^T) V for Q, K, V, O of shape [B, H, S, D] (BHSD). Same math, tiling and
signature as flash_attention.py, which runs the two kinds of core strictly in turn. Here the
cube runs one kv-tile ahead: it computes S_{j+1} = Q K_{j+1}^T while the AIVs do the softmax
of tile j, and the AIVs do the softmax of tile j+1 while the cube computes P_j V_j. Program
order of each core (n = S / block_N kv-tiles, slot = tile % 2):

  AIC   S_0 | S_1  PV_0 | S_2  PV_1 | ... | S_{n-1}  PV_{n-2} | PV_{n-1}
  AIVs  SM_0 | SM_1 UP_0 | SM_2 UP_1 | ... | SM_{n-1} UP_{n-2} | UP_{n-1} | O = acc / l

  S_j   (qk)       K_j -> L1, S = Q K_j^T (gemm_v0 with transpose_B, D chunked by block_K into
                   one L0C accumulation), fixpipe to WS_S[slot]
  PV_j  (pv)       V_j -> L1, wait for P_j, WS_P[slot] -> L1, P V_j by block_D output columns
                   (L0C capacity), each chunk fixpiped to WS_O[slot]
  SM_j  (softmax)  each AIV owns block_M/2 rows: m_new = max(m, rowmax(scale S)),
                   alpha_j = exp(m - m_new), P = exp(scale S - m_new) -> fp16 -> WS_P[slot],
                   rs_j = rowsum(P)
  UP_j  (update)   acc = alpha_j acc + P_j V_j, l = alpha_j l + rs_j

Because SM_{j+1} runs before UP_j, alpha and rowsum have one slot per parity, and because the
cube may write tile j+1 while the AIVs still read tile j, so do the three workspaces. Every
floating-point operation is the serial kernel's, in the same order: the outputs of the two
kernels are bit-identical.

Cross-core flags (mode 2), one id per slot, so every set has exactly one matching wait:
  S_READY+s   AIC -> AIVs  WS_S[s] holds S_j
  P_READY+s   AIVs -> AIC  WS_P[s] holds both halves of P_j
  PV_READY+s  AIC -> AIVs  WS_O[s] holds P_j V_j
They also order every reuse of a slot two tiles later. The cube needs no intra-core sync
(gemm_v0 is TileLang-Ascend's template, barriers around its loads and Mmad); on the AIVs each
sync orders pairs nothing else orders, and a pipe_barrier("V") separates every dependent pair
within the V pipe.

The four stages are @T.macro functions (the C++ twin's lambdas), called with the tile index j,
a kernel expression or a Python int (then the slot and the offsets fold to constants). Every
loop is named `i`: the builder names them i, i_1, i_2, ... in order, as it names the C++
twin's unnamed loops, so the Python kernel builds the very IR of its C++ twin.
Run it: python python/examples/flash_attention_pipelined.py
"""

import math

import tl_ascend as tilelang
import tl_ascend.language as T


@tilelang.jit(out_idx=[3], workspace_idx=[4, 5, 6])
def flash_attention_pipelined_fwd(batch, heads, seq_len, dim, block_M=64, block_N=64, block_K=128, block_D=256,
                                  dtype="float16", accum_dtype="float"):
    if seq_len % block_M != 0 or seq_len % block_N != 0:
        raise ValueError(f"flash_attention_pipelined: S={seq_len} must be a multiple of block_M={block_M} and "
                         f"block_N={block_N}")
    if dim % block_K != 0 or dim % block_D != 0:
        raise ValueError(f"flash_attention_pipelined: D={dim} must be a multiple of block_K={block_K} and "
                         f"block_D={block_D}")
    q_tiles = seq_len // block_M
    n = seq_len // block_N  # kv-tiles
    num_blocks = batch * heads * q_tiles
    r = block_M // 2  # rows per AIV
    scale = 1.0 / math.sqrt(dim)
    shape = (batch, heads, seq_len, dim)

    # Cross-core flag ids (0-10 on A2): base + slot.
    S_READY, P_READY, PV_READY = 0, 2, 4
    # Intra-core event ids (0-5), one per purpose.
    EV_S, EV_P, EV_PV, EV_PV_FREE, EV_O = 0, 1, 2, 3, 4

    # ---- AIC stages -------------------------------------------------------------------------------

    @T.macro
    def qk(j, K, WS_S, Q_L1, K_L1, S_L0C, cid, bz, by):
        """S_j = Q K_j^T to WS_S[j % 2]."""
        T.copy(K[bz, by, j * block_N, 0], K_L1)
        for i in T.serial(dim // block_K):
            T.gemm_v0(Q_L1[0:block_M, i * block_K:i * block_K + block_K],
                      K_L1[0:block_N, i * block_K:i * block_K + block_K], S_L0C, transpose_B=True, init=(i == 0))
        T.copy(S_L0C, WS_S[cid, j % 2, 0, 0])
        T.set_cross_flag("FIX", S_READY + j % 2, mode=2)

    @T.macro
    def pv(j, V, WS_P, WS_O, V_L1, P_L1, O_L0C, cid, bz, by):
        """P_j V_j to WS_O[j % 2], block_D output columns at a time (a [block_M, D] fp32 tile would
        not fit L0C). V_j streams in while the fixpipe stores S_{j+1} and the cube waits for P_j."""
        T.copy(V[bz, by, j * block_N, 0], V_L1)
        T.wait_cross_flag(P_READY + j % 2)
        T.copy(WS_P[cid, j % 2, 0, 0], P_L1)
        for i in T.serial(dim // block_D):
            T.gemm_v0(P_L1, V_L1[0:block_N, i * block_D:i * block_D + block_D], O_L0C, init=True)
            T.copy(O_L0C, WS_O[cid, j % 2, 0, i * block_D])
        T.set_cross_flag("FIX", PV_READY + j % 2, mode=2)

    # ---- AIV stages -------------------------------------------------------------------------------

    @T.macro
    def softmax(j, WS_S, WS_P, s_ub, p_ub, m_ub, mj_ub, alpha_ub, rowsum_ub, cid, vid):
        """SM_j: the online softmax of tile j; P_j to WS_P[j % 2]."""
        sj = s_ub[j % 2 * r:j % 2 * r + r, 0:block_N]
        pj = p_ub[j % 2 * r:j % 2 * r + r, 0:block_N]
        aj = alpha_ub[j % 2 * r:j % 2 * r + r]
        rj = rowsum_ub[j % 2 * r:j % 2 * r + r]
        T.wait_cross_flag(S_READY + j % 2)
        T.copy(WS_S[cid, j % 2, vid * r, 0], sj)
        T.set_flag("MTE2", "V", EV_S)  # the scores are in UB before the V pipe reads them
        T.wait_flag("MTE2", "V", EV_S)
        T.tile.mul(sj, sj, scale)
        T.pipe_barrier("V")
        T.reduce_max(sj, mj_ub, dim=-1)
        T.pipe_barrier("V")
        T.tile.max(mj_ub, mj_ub, m_ub)  # m_new
        T.pipe_barrier("V")
        T.tile.row_expand_sub(sj, sj, mj_ub)
        T.tile.sub(aj, m_ub, mj_ub)
        T.pipe_barrier("V")
        T.tile.exp(sj, sj)  # P (fp32)
        T.tile.exp(aj, aj)
        T.copy(mj_ub, m_ub)  # UB -> UB on the V pipe: m = m_new
        T.pipe_barrier("V")
        T.reduce_sum(sj, rj, dim=-1)
        T.tile.cast(pj, sj, "CAST_RINT")
        T.set_flag("V", "MTE3", EV_P)  # P (fp16) is in UB before it is stored
        T.wait_flag("V", "MTE3", EV_P)
        T.copy(pj, WS_P[cid, j % 2, vid * r, 0])
        T.set_cross_flag("MTE3", P_READY + j % 2, mode=2)

    @T.macro
    def update(j, WS_O, pv_ub, acc_ub, l_ub, alpha_ub, rowsum_ub, cid, vid):
        """UP_j: acc = alpha_j acc + P_j V_j, l = alpha_j l + rs_j."""
        aj = alpha_ub[j % 2 * r:j % 2 * r + r]
        rj = rowsum_ub[j % 2 * r:j % 2 * r + r]
        # pv_ub is single-buffered: the previous tile's add has read it before this load
        # overwrites it (SM_{j+1} in between has no V -> MTE2 edge).
        T.set_flag("V", "MTE2", EV_PV_FREE)
        T.wait_flag("V", "MTE2", EV_PV_FREE)
        T.wait_cross_flag(PV_READY + j % 2)
        T.copy(WS_O[cid, j % 2, vid * r, 0], pv_ub)
        # While P V streams in: rescale the running output and denominator.
        T.tile.row_expand_mul(acc_ub, acc_ub, aj)
        T.tile.mul(l_ub, l_ub, aj)
        T.pipe_barrier("V")
        T.tile.add(l_ub, l_ub, rj)
        T.set_flag("MTE2", "V", EV_PV)  # P V is in UB before the V pipe adds it
        T.wait_flag("MTE2", "V", EV_PV)
        T.tile.add(acc_ub, acc_ub, pv_ub)

    @T.prim_func
    def flash_attention_pipelined(
            Q: T.Tensor(shape, dtype),
            K: T.Tensor(shape, dtype),
            V: T.Tensor(shape, dtype),
            O: T.Tensor(shape, dtype),
            # Workspaces: two slots per logical block (tiles j and j+1 are in flight at once).
            WS_S: T.Tensor((num_blocks, 2, block_M, block_N), accum_dtype),
            WS_P: T.Tensor((num_blocks, 2, block_M, block_N), dtype),
            WS_O: T.Tensor((num_blocks, 2, block_M, dim), accum_dtype),
    ):
        with T.Kernel(num_blocks, is_npu=True) as (cid, vid):
            bx = cid % q_tiles  # q-tile
            by = cid // q_tiles % heads  # head
            bz = cid // (q_tiles * heads)  # batch

            # -------------------------------------------------------------------------- AIC
            with T.Scope("C"):
                Q_L1 = T.alloc_L1((block_M, dim), dtype)
                K_L1 = T.alloc_L1((block_N, dim), dtype)
                V_L1 = T.alloc_L1((block_N, dim), dtype)
                P_L1 = T.alloc_L1((block_M, block_N), dtype)
                S_L0C = T.alloc_L0C((block_M, block_N), accum_dtype)
                O_L0C = T.alloc_L0C((block_M, block_D), accum_dtype)

                T.copy(Q[bz, by, bx * block_M, 0], Q_L1)
                qk(0, K, WS_S, Q_L1, K_L1, S_L0C, cid, bz, by)
                if n > 1:
                    for i in T.serial(n - 1):  # kv-tile j = i
                        qk(i + 1, K, WS_S, Q_L1, K_L1, S_L0C, cid, bz, by)  # runs ahead: the AIVs do SM_j
                        pv(i, V, WS_P, WS_O, V_L1, P_L1, O_L0C, cid, bz, by)
                pv(n - 1, V, WS_P, WS_O, V_L1, P_L1, O_L0C, cid, bz, by)

            # -------------------------------------------------------------------------- AIVs
            with T.Scope("V"):
                s_ub = T.alloc_ub((2 * r, block_N), accum_dtype)  # scores, then P in fp32 (per slot)
                p_ub = T.alloc_ub((2 * r, block_N), dtype)  # P for the cube (per slot)
                pv_ub = T.alloc_ub((r, dim), accum_dtype)  # this tile's P V
                acc_ub = T.alloc_ub((r, dim), accum_dtype)  # running output
                o_ub = T.alloc_ub((r, dim), dtype)  # final output rows
                m_ub = T.alloc_ub((r,), accum_dtype)  # running row max (of scale * S)
                mj_ub = T.alloc_ub((r,), accum_dtype)  # new row max
                alpha_ub = T.alloc_ub((2 * r,), accum_dtype)  # exp(m_old - m_new) (per slot)
                rowsum_ub = T.alloc_ub((2 * r,), accum_dtype)  # rowsum(P) (per slot)
                l_ub = T.alloc_ub((r,), accum_dtype)  # running denominator

                T.tile.fill(acc_ub, 0.0)
                T.tile.fill(m_ub, -T.infinity(accum_dtype))
                T.tile.fill(l_ub, 0.0)
                softmax(0, WS_S, WS_P, s_ub, p_ub, m_ub, mj_ub, alpha_ub, rowsum_ub, cid, vid)
                if n > 1:
                    for i in T.serial(n - 1):  # kv-tile j = i
                        # P_{j+1} is ready before the cube finishes P_j V_j.
                        softmax(i + 1, WS_S, WS_P, s_ub, p_ub, m_ub, mj_ub, alpha_ub, rowsum_ub, cid, vid)
                        update(i, WS_O, pv_ub, acc_ub, l_ub, alpha_ub, rowsum_ub, cid, vid)
                # UP_{n-1} directly follows UP_{n-2}: no softmax (and none of its barriers) in between.
                if n > 1:
                    T.pipe_barrier("V")
                update(n - 1, WS_O, pv_ub, acc_ub, l_ub, alpha_ub, rowsum_ub, cid, vid)
                T.pipe_barrier("V")
                T.tile.row_expand_div(acc_ub, acc_ub, l_ub)
                T.pipe_barrier("V")
                T.tile.cast(o_ub, acc_ub, "CAST_RINT")
                T.set_flag("V", "MTE3", EV_O)  # O is in UB before it is stored
                T.wait_flag("V", "MTE3", EV_O)
                T.copy(o_ub, O[bz, by, bx * block_M + vid * r, 0])

    return flash_attention_pipelined


def ref_program(q, k, v):
    """softmax(Q K^T / sqrt(D)) V in fp32."""
    q, k, v = q.float(), k.float(), v.float()
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    return s.softmax(dim=-1) @ v


def main(batch=1, heads=2, seq_len=256, dim=64, block_M=64, block_N=64):
    import torch

    torch.manual_seed(0)
    shape = (batch, heads, seq_len, dim)
    q, k, v = (torch.randn(shape).half() for _ in range(3))
    kernel = flash_attention_pipelined_fwd(batch, heads, seq_len, dim, block_M, block_N, block_K=dim, block_D=dim)
    o = kernel(q, k, v)  # the launcher allocates the workspaces WS_S, WS_P and WS_O
    torch.testing.assert_close(o.float(), ref_program(q, k, v), rtol=1e-2, atol=1e-2)
    print("Kernel Output Match!")


if __name__ == "__main__":
    main()
