"""FlashAttention backward's kernel generators in TileLang-Ascend syntax: the Python twins of
cann_ops_tilelang/attention/flash_attention_bwd_kernel.cpp, building the identical IR (the printed
text is compared in python/tests/test_opslib_attention_bwd.py).

The key is the forward's (cann_ops_tilelang.kernels.flash_attention_bwd_key gives the library's on
a target). Two developer-mode kernels, run one after the other:

- flash_attention_bwd_dq_kernel: per (batch, head, q tile) Delta = rowsum(dO * O) (stored to DELTA
  for the second kernel), then per kv step S = Q K^T and dP = dO V^T on the cube,
  P = exp(scale S - lse) and dS = scale P (dP - Delta) on the vector unit, and dQ += dS K on the
  cube (accumulated in L0C).
- flash_attention_bwd_dkdv_kernel: per (batch, head, kv tile) and q step the same S, dP, P and dS,
  then dV += P^T dO and dK += dS^T Q on the cube (accumulated in L0C).
- flash_attention_bwd_cast_kernel: dQ, dK, dV are written in fp32 and rounded to the dtype here, on
  the vector unit (the fixpipe's conversion would turn a NaN gradient into 0).

Causal: ROWS [block_m] int32 holds 0 .. block_m - 1 (the host writes it), as in the forward.
"""

# No `from __future__ import annotations`: the parser reads the T.Tensor annotations from the
# evaluated __annotations__.
import tl_ascend.language as T
from tl_ascend.language.parser import PrimFunc

from .attention import _round_f32

# The rows of a clipped q tile past S load lse = +inf and dO, O, Delta = 0: P and dS are exactly 0
# there, and no element loop reads a stale row.
_INF = float("inf")


def flash_attention_bwd_dq_kernel(dtype: str, heads: int, dim: int, causal: bool, layout: str, scale: float,
                                  block_m: int, block_n: int, stages: int, blocks: int,
                                  dlse: bool = False, skew: int = 1) -> PrimFunc:
    """Q, K, V, O, DO, DQ in `layout` (DQ float32); LSE, DELTA [B, H, S] float32; ROWS when causal. `dlse`:
    DLSE [B, H, S] float32 (lse's gradient) after LSE, and Delta - dlse is stored."""
    H, D, bM, bN = heads, dim, block_m, block_n
    f32 = "float32"
    sc = _round_f32(scale)
    bshd = layout == "BSHD"
    B = T.dynamic("B")
    S = T.dynamic("S")
    shape = (B, S, H * D) if bshd else (B, H, S, D)

    @T.macro
    def load(t, b, h, row, dst):  # BSHD: head h is columns h*D .. h*D+D-1 of a row
        if bshd:
            T.copy(t[b, row, h * D], dst)
        else:
            T.copy(t[b, h, row, 0], dst)

    @T.macro
    def load_zero_padded(t, b, h, row, dst):  # the rows past S load 0
        if bshd:
            T.copy(t[b, row, h * D], dst, pad_value=0.0)
        else:
            T.copy(t[b, h, row, 0], dst, pad_value=0.0)

    @T.macro
    def store(src, t, b, h, row):
        if bshd:
            T.copy(src, t[b, row, h * D])
        else:
            T.copy(src, t[b, h, row, 0])

    @T.macro
    def kv_step(K, V, ROWS, q, dot, k, v, s, dp, ds, acc, lse, delta, rows, b, h, qx, kv):
        load(K, b, h, kv * bN, k)
        load(V, b, h, kv * bN, v)
        T.gemm(q, k, s, transpose_B=True, init=True)
        T.gemm(dot, v, dp, transpose_B=True, init=True)
        # s = scale S - lse, -inf where masked; only a tile that needs the mask pays for it.
        if causal:
            if kv * bN + bN > qx * bM + 1:
                T.copy(ROWS, rows)
                for i, j in T.Parallel(bM, bN):
                    s[i, j] = T.if_then_else(kv * bN + j <= qx * bM + rows[i], s[i, j] * sc - lse[i],
                                             -T.infinity(f32))
            else:
                for i, j in T.Parallel(bM, bN):
                    s[i, j] = s[i, j] * sc - lse[i]
        else:
            if kv * bN + bN > S:
                for i, j in T.Parallel(bM, bN):
                    s[i, j] = T.if_then_else(kv * bN + j < S, s[i, j] * sc - lse[i], -T.infinity(f32))
            else:
                for i, j in T.Parallel(bM, bN):
                    s[i, j] = s[i, j] * sc - lse[i]
        T.tile.exp(s, s)
        for i, j in T.Parallel(bM, bN):
            ds[i, j] = T.cast(s[i, j] * (dp[i, j] - delta[i]) * sc, dtype)
        T.gemm(ds, k, acc)

    @T.macro
    def body(Q, K, V, O, DO, LSE, DLSE, DELTA, DQ, ROWS):
        with T.Kernel(blocks, threads=2) as cid:
            q = T.alloc_shared((bM, D), dtype)
            dot = T.alloc_shared((bM, D), dtype)  # dO for the cube
            k = T.alloc_shared((bN, D), dtype)
            v = T.alloc_shared((bN, D), dtype)
            dov = T.alloc_shared((bM, D), dtype)  # dO and O for Delta
            ov = T.alloc_shared((bM, D), dtype)
            prod = T.alloc_fragment((bM, D), f32)
            s = T.alloc_fragment((bM, bN), f32)  # scores, then P in fp32
            dp = T.alloc_fragment((bM, bN), f32)
            ds = T.alloc_shared((bM, bN), dtype)  # dS for the cube
            acc = T.alloc_fragment((bM, D), f32)  # dQ, accumulated in L0C
            lse = T.alloc_fragment((bM,), f32)
            delta = T.alloc_fragment((bM,), f32)
            dl = None
            if dlse:
                dl = T.alloc_fragment((bM,), f32)
            rows = None
            if causal:
                rows = T.alloc_shared((bM,), "int32")
            for b, h, qx in T.Persistent([B, H, T.ceildiv(S, bM)], blocks, cid):
                load_zero_padded(DO, b, h, qx * bM, dov)
                load_zero_padded(O, b, h, qx * bM, ov)
                for i, j in T.Parallel(bM, D):
                    prod[i, j] = T.cast(dov[i, j], f32) * T.cast(ov[i, j], f32)
                T.reduce_sum(prod, delta, dim=-1)
                if dlse:  # d lse_i / d (scale s_ij) = P_ij: dS = P (dP - (Delta - dlse))
                    T.copy(DLSE[b, h, qx * bM], dl, pad_value=0.0)
                    for p in T.Parallel(bM):
                        delta[p] = delta[p] - dl[p]
                T.copy(delta, DELTA[b, h, qx * bM])
                load(Q, b, h, qx * bM, q)
                load(DO, b, h, qx * bM, dot)
                T.copy(LSE[b, h, qx * bM], lse, pad_value=_INF)
                T.clear(acc)
                if causal:  # the kv loop stops at the diagonal tile
                    for kv in T.Pipelined(T.min(T.ceildiv(S, bN), T.ceildiv((qx + 1) * bM, bN)),
                                          num_stages=stages, skew=skew):
                        kv_step(K, V, ROWS, q, dot, k, v, s, dp, ds, acc, lse, delta, rows, b, h, qx, kv)
                else:
                    for kv in T.Pipelined(T.ceildiv(S, bN), num_stages=stages, skew=skew):
                        kv_step(K, V, ROWS, q, dot, k, v, s, dp, ds, acc, lse, delta, rows, b, h, qx, kv)
                store(acc, DQ, b, h, qx * bM)  # fp32: the cast kernel rounds it

    q_t, g_t = T.Tensor(shape, dtype), T.Tensor(shape, f32)
    lse_t, rows_t = T.Tensor((B, H, S), f32), T.Tensor((bM,), "int32")
    if causal and dlse:
        @T.prim_func
        def flash_attention_bwd_dq(Q: q_t, K: q_t, V: q_t, O: q_t, DO: q_t, LSE: lse_t, DLSE: lse_t,  # noqa: E741
                                   DELTA: lse_t, DQ: g_t, ROWS: rows_t):
            body(Q, K, V, O, DO, LSE, DLSE, DELTA, DQ, ROWS)
    elif causal:
        @T.prim_func
        def flash_attention_bwd_dq(Q: q_t, K: q_t, V: q_t, O: q_t, DO: q_t, LSE: lse_t,  # noqa: E741
                                   DELTA: lse_t, DQ: g_t, ROWS: rows_t):
            body(Q, K, V, O, DO, LSE, None, DELTA, DQ, ROWS)
    elif dlse:
        @T.prim_func
        def flash_attention_bwd_dq(Q: q_t, K: q_t, V: q_t, O: q_t, DO: q_t, LSE: lse_t, DLSE: lse_t,  # noqa: E741
                                   DELTA: lse_t, DQ: g_t):
            body(Q, K, V, O, DO, LSE, DLSE, DELTA, DQ, None)
    else:
        @T.prim_func
        def flash_attention_bwd_dq(Q: q_t, K: q_t, V: q_t, O: q_t, DO: q_t, LSE: lse_t,  # noqa: E741
                                   DELTA: lse_t, DQ: g_t):
            body(Q, K, V, O, DO, LSE, None, DELTA, DQ, None)
    return flash_attention_bwd_dq


def flash_attention_bwd_dkdv_kernel(dtype: str, heads: int, dim: int, causal: bool, layout: str, scale: float,
                                    block_m: int, block_n: int, stages: int, blocks: int,
                                    skew: int = 1) -> PrimFunc:
    """Q, K, V, DO, DK, DV in `layout` (DK, DV float32); LSE, DELTA [B, H, S] float32 (DELTA from the
    dq kernel); ROWS when causal."""
    H, D, bM, bN = heads, dim, block_m, block_n
    f32 = "float32"
    sc = _round_f32(scale)
    bshd = layout == "BSHD"
    B = T.dynamic("B")
    S = T.dynamic("S")
    shape = (B, S, H * D) if bshd else (B, H, S, D)

    @T.macro
    def load(t, b, h, row, dst):
        if bshd:
            T.copy(t[b, row, h * D], dst)
        else:
            T.copy(t[b, h, row, 0], dst)

    @T.macro
    def store(src, t, b, h, row):
        if bshd:
            T.copy(src, t[b, row, h * D])
        else:
            T.copy(src, t[b, h, row, 0])

    @T.macro
    def q_step(Q, DO, LSE, DELTA, ROWS, k, v, q, dot, s, dp, p, ds, dv_acc, dk_acc, lse, delta, rows, b, h, kx, qx):
        load(Q, b, h, qx * bM, q)
        load(DO, b, h, qx * bM, dot)
        T.copy(LSE[b, h, qx * bM], lse, pad_value=_INF)
        T.copy(DELTA[b, h, qx * bM], delta, pad_value=0.0)
        T.gemm(q, k, s, transpose_B=True, init=True)
        T.gemm(dot, v, dp, transpose_B=True, init=True)
        # The keys past S need no mask here: they are dK and dV rows past S, never stored.
        if causal:
            if kx * bN + bN > qx * bM + 1:
                T.copy(ROWS, rows)
                for i, j in T.Parallel(bM, bN):
                    s[i, j] = T.if_then_else(kx * bN + j <= qx * bM + rows[i], s[i, j] * sc - lse[i],
                                             -T.infinity(f32))
            else:
                for i, j in T.Parallel(bM, bN):
                    s[i, j] = s[i, j] * sc - lse[i]
        else:
            for i, j in T.Parallel(bM, bN):
                s[i, j] = s[i, j] * sc - lse[i]
        T.tile.exp(s, s)
        for i, j in T.Parallel(bM, bN):
            p[i, j] = T.cast(s[i, j], dtype)
        for i, j in T.Parallel(bM, bN):
            ds[i, j] = T.cast(s[i, j] * (dp[i, j] - delta[i]) * sc, dtype)
        T.gemm(p, dot, dv_acc, transpose_A=True)
        T.gemm(ds, q, dk_acc, transpose_A=True)

    @T.macro
    def body(Q, K, V, DO, LSE, DELTA, DK, DV, ROWS):
        with T.Kernel(blocks, threads=2) as cid:
            k = T.alloc_shared((bN, D), dtype)
            v = T.alloc_shared((bN, D), dtype)
            q = T.alloc_shared((bM, D), dtype)
            dot = T.alloc_shared((bM, D), dtype)
            s = T.alloc_fragment((bM, bN), f32)  # scores, then P in fp32
            dp = T.alloc_fragment((bM, bN), f32)
            p = T.alloc_shared((bM, bN), dtype)  # P for the cube
            ds = T.alloc_shared((bM, bN), dtype)  # dS for the cube
            dv_acc = T.alloc_fragment((bN, D), f32)  # accumulated in L0C
            dk_acc = T.alloc_fragment((bN, D), f32)
            lse = T.alloc_fragment((bM,), f32)
            delta = T.alloc_fragment((bM,), f32)
            rows = None
            if causal:
                rows = T.alloc_shared((bM,), "int32")
            for b, h, kx in T.Persistent([B, H, T.ceildiv(S, bN)], blocks, cid):
                load(K, b, h, kx * bN, k)
                load(V, b, h, kx * bN, v)
                T.clear(dv_acc)
                T.clear(dk_acc)
                if causal:  # the q tiles before the one holding key kx * bN see none of this tile
                    for qi in T.Pipelined(T.ceildiv(S, bM) - kx * bN // bM, num_stages=stages, skew=skew):
                        q_step(Q, DO, LSE, DELTA, ROWS, k, v, q, dot, s, dp, p, ds, dv_acc, dk_acc, lse, delta, rows,
                               b, h, kx, kx * bN // bM + qi)
                else:
                    for qi in T.Pipelined(T.ceildiv(S, bM), num_stages=stages, skew=skew):
                        q_step(Q, DO, LSE, DELTA, ROWS, k, v, q, dot, s, dp, p, ds, dv_acc, dk_acc, lse, delta, rows,
                               b, h, kx, qi)
                store(dk_acc, DK, b, h, kx * bN)  # fp32: the cast kernel rounds it
                store(dv_acc, DV, b, h, kx * bN)

    if causal:
        @T.prim_func
        def flash_attention_bwd_dkdv(Q: T.Tensor(shape, dtype), K: T.Tensor(shape, dtype), V: T.Tensor(shape, dtype),
                                     DO: T.Tensor(shape, dtype), LSE: T.Tensor((B, H, S), f32),
                                     DELTA: T.Tensor((B, H, S), f32), DK: T.Tensor(shape, f32),
                                     DV: T.Tensor(shape, f32), ROWS: T.Tensor((bM,), "int32")):
            body(Q, K, V, DO, LSE, DELTA, DK, DV, ROWS)
    else:
        @T.prim_func
        def flash_attention_bwd_dkdv(Q: T.Tensor(shape, dtype), K: T.Tensor(shape, dtype), V: T.Tensor(shape, dtype),
                                     DO: T.Tensor(shape, dtype), LSE: T.Tensor((B, H, S), f32),
                                     DELTA: T.Tensor((B, H, S), f32), DK: T.Tensor(shape, f32),
                                     DV: T.Tensor(shape, f32)):
            body(Q, K, V, DO, LSE, DELTA, DK, DV, None)
    return flash_attention_bwd_dkdv


def flash_attention_bwd_cast_kernel(dtype: str, dim: int, block_m: int, blocks: int, **_key) -> PrimFunc:
    """X [M, dim] float32 -> Y [M, dim] `dtype` on the vector unit (M dynamic): the rounding of dQ, dK,
    dV. The fixpipe's own fp32 -> 16-bit conversion turns NaN into 0, the vector cast keeps it.
    Takes a backward key (its other fields are ignored)."""
    D, rM = dim, block_m
    M = T.dynamic("M")

    @T.prim_func
    def flash_attention_bwd_cast(X: T.Tensor((M, D), "float32"), Y: T.Tensor((M, D), dtype)):
        with T.Kernel(blocks, threads=2) as cid:
            x = T.alloc_shared((rM, D), "float32")
            y = T.alloc_shared((rM, D), dtype)
            for t in T.Persistent([T.ceildiv(M, rM)], blocks, cid):
                T.copy(X[t * rM, 0], x)
                for i, j in T.Parallel(rM, D):
                    y[i, j] = T.cast(x[i, j], dtype)
                T.copy(y, Y[t * rM, 0])
    return flash_attention_bwd_cast
