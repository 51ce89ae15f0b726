"""Expert-mode FlashAttention forward, O = softmax(scale * Q K^T) V: the Python twin of
examples/flash_attention.cpp (Q, K, V, O of shape [B, H, S, D], BHSD), in the structure of the
TileLang-Ascend expert kernels (seeds 000/003).

One logical block per (batch, head, q-tile of block_M rows). For each kv-tile of block_N rows:
  AIC   S = Q K^T          gemm_v0 with transpose_B, the K-dim D chunked by block_K into one L0C
                           accumulation; fixpipe S (fp32) to the workspace WS_S[cid]
  AIVs  online softmax     each AIV owns block_M/2 rows (vid picks the half):
                             m_new = max(m, rowmax(scale * S)); alpha = exp(m - m_new)
                             P = exp(scale * S - m_new); l = alpha * l + rowsum(P)
                           P is cast to fp16 and stored to WS_P[cid]; acc *= alpha
  AIC   PV = P V           gemm_v0, the output columns chunked by block_D (L0C capacity);
                           each chunk is fixpiped to WS_O[cid] (fp32)
  AIVs  acc += PV          and after the last kv-tile O = acc / l (cast to fp16)

Cross-core flags (mode 2; an AIC set wakes both AIVs, the AIC's wait needs both AIVs' sets):
  S_READY  AIC -> AIVs  WS_S holds this tile's scores
  P_READY  AIVs -> AIC  WS_P holds both halves of P
  PV_READY AIC -> AIVs  WS_O holds P V
These three also order every reuse of the workspaces, of S_L0C/O_L0C and of the AIVs'
s_ub/p_ub/pv_ub across iterations, so no extra flag guards those. The remaining intra-core
syncs each order one pair that nothing else orders. Within the V pipe, consecutive
instructions may overlap, so a pipe_barrier("V") separates every dependent pair that no flag
already separates.

The kernel's loops are named as the C++ builder names its unnamed loops (i, i_1, ...), so the
Python kernel builds the very IR of its C++ twin.
Run it: python python/examples/flash_attention.py
"""

import math

import tl_ascend as tilelang
import tl_ascend.language as T


@tilelang.jit(out_idx=[3], workspace_idx=[4, 5, 6])
def flash_attention_fwd(batch, heads, seq_len, dim, block_M=64, block_N=64, block_K=128, block_D=256,
                        dtype="float16", accum_dtype="float"):
    if seq_len % block_M != 0 or seq_len % block_N != 0:
        raise ValueError(f"flash_attention: S={seq_len} must be a multiple of block_M={block_M} and "
                         f"block_N={block_N}")
    if dim % block_K != 0 or dim % block_D != 0:
        raise ValueError(f"flash_attention: D={dim} must be a multiple of block_K={block_K} and block_D={block_D}")
    q_tiles = seq_len // block_M
    kv_tiles = seq_len // block_N
    num_blocks = batch * heads * q_tiles
    r = block_M // 2  # rows per AIV
    scale = 1.0 / math.sqrt(dim)
    shape = (batch, heads, seq_len, dim)

    # Cross-core flag ids (0-10 on A2).
    S_READY, P_READY, PV_READY = 0, 1, 2
    # Intra-core event ids (0-5), one per purpose so the printed kernel reads like a protocol.
    EV_KV, EV_P, EV_S, EV_O, EV_L1 = 0, 1, 2, 3, 4

    @T.prim_func
    def flash_attention(
            Q: T.Tensor(shape, dtype),
            K: T.Tensor(shape, dtype),
            V: T.Tensor(shape, dtype),
            O: T.Tensor(shape, dtype),
            # Workspaces: one slot per logical block; AIC and AIVs exchange data only through GM on A2.
            WS_S: T.Tensor((num_blocks, block_M, block_N), accum_dtype),
            WS_P: T.Tensor((num_blocks, block_M, block_N), dtype),
            WS_O: T.Tensor((num_blocks, block_M, dim), accum_dtype),
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
                for i in T.serial(kv_tiles):  # kv-tile
                    T.copy(K[bz, by, i * block_N, 0], K_L1)
                    T.copy(V[bz, by, i * block_N, 0], V_L1)
                    # Q (first tile), K and V are in L1 before the cube's L1 -> L0 loads read them.
                    T.set_flag("MTE2", "MTE1", EV_KV)
                    T.wait_flag("MTE2", "MTE1", EV_KV)
                    # S = Q K^T, accumulated over D in block_K-wide chunks.
                    for i_1 in T.serial(dim // block_K):
                        T.gemm_v0(Q_L1[0:block_M, i_1 * block_K:i_1 * block_K + block_K],
                                  K_L1[0:block_N, i_1 * block_K:i_1 * block_K + block_K], S_L0C,
                                  transpose_B=True, init=(i_1 == 0))
                        # Small tiles: back-to-back Mmads into the same L0C need a barrier.
                        if (block_M // 16) * (block_N // 16) < 10:
                            T.pipe_barrier("M")
                    T.set_flag("M", "FIX", EV_S)  # S is accumulated before the fixpipe reads it
                    T.wait_flag("M", "FIX", EV_S)
                    T.copy(S_L0C, WS_S[cid, 0, 0])
                    T.set_cross_flag("FIX", S_READY, mode=2)

                    T.wait_cross_flag(P_READY)
                    T.copy(WS_P[cid, 0, 0], P_L1)
                    T.set_flag("MTE2", "MTE1", EV_P)  # P is in L1 before gemm_v0 loads it
                    T.wait_flag("MTE2", "MTE1", EV_P)
                    # PV = P V, block_D output columns at a time (a [block_M, D] fp32 tile would not fit L0C).
                    for i_2 in T.serial(dim // block_D):
                        T.gemm_v0(P_L1, V_L1[0:block_N, i_2 * block_D:i_2 * block_D + block_D], O_L0C, init=True)
                        T.set_flag("M", "FIX", EV_O)  # the chunk is computed before the fixpipe
                        T.wait_flag("M", "FIX", EV_O)
                        T.copy(O_L0C, WS_O[cid, 0, i_2 * block_D])
                        if dim // block_D > 1:
                            if i_2 + 1 < dim // block_D:
                                # The next chunk's Mmad overwrites O_L0C: the fixpipe must have read it.
                                T.set_flag("FIX", "M", EV_O)
                                T.wait_flag("FIX", "M", EV_O)
                    T.set_cross_flag("FIX", PV_READY, mode=2)
                    # The next tile's loads overwrite K_L1 and V_L1: the Mmads must have read them.
                    T.set_flag("M", "MTE2", EV_L1)
                    T.wait_flag("M", "MTE2", EV_L1)

            # -------------------------------------------------------------------------- AIVs
            # This AIV's first row in the q-tile is vid * r.
            with T.Scope("V"):
                s_ub = T.alloc_ub((r, block_N), accum_dtype)  # scores, then P in fp32
                p_ub = T.alloc_ub((r, block_N), dtype)  # P for the cube
                pv_ub = T.alloc_ub((r, dim), accum_dtype)  # this tile's P V
                acc_ub = T.alloc_ub((r, dim), accum_dtype)  # running output
                o_ub = T.alloc_ub((r, dim), dtype)  # final output rows
                m_ub = T.alloc_ub((r,), accum_dtype)  # running row max (of scale * S)
                mj_ub = T.alloc_ub((r,), accum_dtype)  # new row max
                alpha_ub = T.alloc_ub((r,), accum_dtype)  # exp(m_old - m_new)
                rowsum_ub = T.alloc_ub((r,), accum_dtype)  # rowsum(P) of this tile
                l_ub = T.alloc_ub((r,), accum_dtype)  # running denominator

                T.tile.fill(acc_ub, 0.0)
                T.tile.fill(m_ub, -T.infinity(accum_dtype))
                T.tile.fill(l_ub, 0.0)
                for _ in T.serial(kv_tiles):
                    T.wait_cross_flag(S_READY)
                    T.copy(WS_S[cid, vid * r, 0], s_ub)
                    T.set_flag("MTE2", "V", EV_S)  # scores are in UB before the V pipe reads them
                    T.wait_flag("MTE2", "V", EV_S)
                    T.tile.mul(s_ub, s_ub, scale)
                    T.pipe_barrier("V")
                    T.reduce_max(s_ub, mj_ub, dim=-1)
                    T.pipe_barrier("V")
                    T.tile.max(mj_ub, mj_ub, m_ub)  # m_new
                    T.pipe_barrier("V")
                    T.tile.row_expand_sub(s_ub, s_ub, mj_ub)
                    T.tile.sub(alpha_ub, m_ub, mj_ub)
                    T.pipe_barrier("V")
                    T.tile.exp(s_ub, s_ub)  # P (fp32)
                    T.tile.exp(alpha_ub, alpha_ub)
                    T.copy(mj_ub, m_ub)  # UB -> UB on the V pipe: m = m_new
                    T.pipe_barrier("V")
                    T.reduce_sum(s_ub, rowsum_ub, dim=-1)
                    T.tile.cast(p_ub, s_ub, "CAST_RINT")
                    T.set_flag("V", "MTE3", EV_P)  # P (fp16) is in UB before it is stored
                    T.wait_flag("V", "MTE3", EV_P)
                    T.copy(p_ub, WS_P[cid, vid * r, 0])
                    T.set_cross_flag("MTE3", P_READY, mode=2)
                    # While the cube computes P V: rescale the running statistics by alpha.
                    T.tile.mul(l_ub, l_ub, alpha_ub)
                    T.tile.row_expand_mul(acc_ub, acc_ub, alpha_ub)
                    T.pipe_barrier("V")
                    T.tile.add(l_ub, l_ub, rowsum_ub)

                    T.wait_cross_flag(PV_READY)
                    T.copy(WS_O[cid, vid * r, 0], pv_ub)
                    T.set_flag("MTE2", "V", EV_O)  # P V is in UB before the V pipe adds it
                    T.wait_flag("MTE2", "V", EV_O)
                    T.tile.add(acc_ub, acc_ub, pv_ub)
                T.pipe_barrier("V")
                T.tile.row_expand_div(acc_ub, acc_ub, l_ub)
                T.pipe_barrier("V")
                T.tile.cast(o_ub, acc_ub, "CAST_RINT")
                T.set_flag("V", "MTE3", EV_O)  # O is in UB before it is stored
                T.wait_flag("V", "MTE3", EV_O)
                T.copy(o_ub, O[bz, by, bx * block_M + vid * r, 0])

    return flash_attention


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
    kernel = flash_attention_fwd(batch, heads, seq_len, dim, block_M, block_N, block_K=dim, block_D=dim)
    o = kernel(q, k, v)  # the launcher allocates the workspaces WS_S, WS_P and WS_O
    torch.testing.assert_close(o.float(), ref_program(q, k, v), rtol=1e-2, atol=1e-2)
    print("Kernel Output Match!")


if __name__ == "__main__":
    main()
