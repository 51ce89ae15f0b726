"""FlashAttention forward's kernel generator in TileLang-Ascend syntax: the Python twin of
cann_ops_tilelang/attention/flash_attention_kernel.cpp, building the identical IR (the printed text
is compared in python/tests/test_opslib_attention.py).

A key (cann_ops_tilelang.kernels.flash_attention_key gives the library's on a target): dtype, heads,
dim, causal, layout ("BSHD": Q, K, V, O [B, S, H * D]; "BHSD": [B, H, S, D]), scale, block_m,
block_n, stages, skew (the kv loop's cross-core skew), blocks. B and S are T.dynamic. Developer mode: per kv step the cube computes the
scores, the vector unit the online softmax (both AIVs, half the q rows each), the cube P V; the
compiler places the tiles and makes the cross-core workspaces, flags and credits. `blocks`
persistent workers take the (batch, head, q tile) triples in turn (non-causal: each worker's (q tile, kv
step) pairs as one pipelined loop; causal with square tiles: q tiles qx and nq - 1 - qx as one unit of nq + 1
kv steps, the worker's units one pipelined loop; other causal tiles: the q tiles with the most kv steps first). IDX [block_m, block_n] float16 holds c - i when causal, c when not (the host writes it),
loaded in the steps that mask: a masked step compares it with one scalar and selects in place. The row
maxima and sums are trees of whole-tile ops down to 64 columns before the row reductions.
"""

# No `from __future__ import annotations`: the parser reads the T.Tensor annotations from the
# evaluated __annotations__.
import struct

import tl_ascend.language as T
from tl_ascend.language.parser import PrimFunc


def _round_f32(value: float) -> float:
    """`value` rounded to the nearest float32 (the C++ generator's arith::round_float)."""
    return struct.unpack("f", struct.pack("f", value))[0]


def flash_attention_kernel(dtype: str, heads: int, dim: int, causal: bool, layout: str, scale: float,
                           block_m: int, block_n: int, stages: int, skew: int, blocks: int) -> PrimFunc:
    """Q, K, V, O in `layout`, LSE [B, H, S] float32, IDX [block_m, block_n] float16."""
    H, D, bM, bN = heads, dim, block_m, block_n
    if bM > 2048 or bN > 2048 or bN < 2 or bN & (bN - 1):  # exact float16 mask indices; the row trees
        raise ValueError(f"flash_attention_kernel: block_m and block_n must be at most 2048 (the float16 mask "
                         f"indices) and block_n a power of two (the row trees), got {bM} x {bN}")
    f32 = "float32"
    sc = _round_f32(scale)
    bshd = layout == "BSHD"
    B = T.dynamic("B")
    S = T.dynamic("S")
    shape = (B, S, H * D) if bshd else (B, H, S, D)

    # The non-causal loop's q tile of pair g: the worker's tiles are cid, cid + blocks, ... (as
    # T.Persistent deals them), each kvt kv steps; (b, h, qx) row-major over [B, H, nq].
    nq = T.ceildiv(S, bM)
    kvt = T.ceildiv(S, bN)

    def _b(g, cid):
        return (g // kvt * blocks + cid) // (H * nq)

    def _h(g, cid):
        return (g // kvt * blocks + cid) // nq % H

    def _qx(g, cid):
        return (g // kvt * blocks + cid) % nq

    # The causal flattened loop's coordinates (square tiles), from the loop-invariant lets
    # c = (qtiles, odd, units, steps): unit g // steps * blocks + cid of [B, H, units], step
    # r = g % steps, q tile u - odd for the first u + 1 - odd steps, then qtiles - 1 - u.
    def _cunit(g, cid, c):
        return g // c[3] * blocks + cid

    def _cb(g, cid, c):
        return _cunit(g, cid, c) // (H * c[2])

    def _ch(g, cid, c):
        return _cunit(g, cid, c) // c[2] % H

    def _cu(g, cid, c):
        return _cunit(g, cid, c) % c[2]

    def _cqx(g, cid, c):
        return T.if_then_else(g % c[3] < _cu(g, cid, c) + 1 - c[1], _cu(g, cid, c) - c[1], c[0] - 1 - _cu(g, cid, c))

    def _ckv(g, cid, c):
        return T.if_then_else(g % c[3] < _cu(g, cid, c) + 1 - c[1], g % c[3], g % c[3] - (_cu(g, cid, c) + 1 - c[1]))

    @T.macro
    def load(t, b, h, row, dst):  # BSHD: head h is columns h*D .. h*D+D-1 of a row
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

    # The trees (the C++ generator's loops). Each first level pairs adjacent column blocks of pw
    # (64) columns, 256 bytes apart: no UB bank-group conflict (docs/hardware.md section 4).
    # The max tree then halves `half` (bN / 2 columns) down to pw columns; the sum tree, in place
    # in s, adds blocks 2k and 2k + 1 into block k level by level (every add's sources 256 bytes
    # apart) down to columns 0 .. pw - 1.
    pw = min(64, bN // 2)
    pair_starts = list(range(0, bN, 2 * pw))
    max_levels = []
    w = bN // 2
    while w > pw:
        max_levels.append(w // 2)
        w //= 2
    max_width = w
    sum_adds = []  # (dst, src0, src1) column starts: blocks 2k and 2k + 1 into block k, level by level
    n = bN // pw
    while n > 1:
        sum_adds += [(k2 * pw, 2 * k2 * pw, (2 * k2 + 1) * pw) for k2 in range(n // 2)]
        n //= 2

    @T.macro
    def finish(O, LSE, acc, l, lse, out, mx, b, h, qx):  # noqa: E741
        # o = acc / l in place in acc (dead after this), lse = ln l + the row maxima mx.
        for i, j in T.Parallel(bM, D):
            acc[i, j] = acc[i, j] / l[i]
        for i, j in T.Parallel(bM, D):
            out[i, j] = T.cast(acc[i, j], dtype)
        T.tile.ln(lse, l)  # the chip's Ln, chosen explicitly
        for p in T.Parallel(bM):
            lse[p] = lse[p] + mx[p]
        store(out, O, b, h, qx * bM)
        T.copy(lse, LSE[b, h, qx * bM])

    @T.macro
    def kv_step(K, V, O, LSE, IDX, q, k, v, s, p, o, acc, m, mj, alpha, rs, l, lse, out, idx, half,  # noqa: E741
                mlast, b, h, qx, kv, last):
        load(K, b, h, kv * bN, k)
        load(V, b, h, kv * bN, v)
        T.gemm(q, k, s, transpose_B=True, init=True)
        for i, j in T.Parallel(bM, bN):
            s[i, j] = s[i, j] * sc
        # Only a step with a key past S (causal: past the q tile's first query) pays for the mask;
        # IDX is loaded in the step (a tile loaded once before the loop and read by the row-split
        # element loop is the split_aiv bug of docs/ops.md). The bound goes through float32 (the
        # AscendC emitter's scalar casts); exact either way.
        if causal:
            if kv * bN + bN > qx * bM + 1:
                T.copy(IDX, idx)
                for i, j in T.Parallel(bM, bN):
                    s[i, j] = T.if_then_else(idx[i, j] <= T.cast(T.cast(qx * bM - kv * bN, f32), "float16"), s[i, j],
                                             -T.infinity(f32))
        else:
            if kv * bN + bN > S:
                T.copy(IDX, idx)
                for i, j in T.Parallel(bM, bN):
                    s[i, j] = T.if_then_else(idx[i, j] < T.cast(T.cast(S - kv * bN, f32), "float16"), s[i, j],
                                             -T.infinity(f32))
        for c0 in pair_starts:
            T.tile.max(half[:, c0 // 2:c0 // 2 + pw], s[:, c0:c0 + pw], s[:, c0 + pw:c0 + 2 * pw])
        for hw in max_levels:
            T.tile.max(half[:, 0:hw], half[:, 0:hw], half[:, hw:2 * hw])
        T.reduce_max(half[:, 0:max_width], mj, dim=-1)
        T.tile.max(mj, mj, m)
        for i, j in T.Parallel(bM, bN):
            s[i, j] = s[i, j] - mj[i]
        for p in T.Parallel(bM):
            alpha[p] = m[p] - mj[p]
        T.tile.exp(s, s)
        T.tile.exp(alpha, alpha)
        for p in T.Parallel(bM):
            m[p] = mj[p]
        if last is not None:  # the flattened loop's lse takes each step's maxima from their slots
            for p in T.Parallel(bM):
                mlast[p] = mj[p]
        for i, j in T.Parallel(bM, bN):
            p[i, j] = T.cast(s[i, j], dtype)
        for d0, c0, c1 in sum_adds:  # in place: s is dead once P is made
            T.tile.add(s[:, d0:d0 + pw], s[:, c0:c0 + pw], s[:, c1:c1 + pw])
        T.reduce_sum(s[:, 0:pw], rs, dim=-1)
        T.gemm(p, v, o, init=True)
        # acc first: P V's crossing then precedes l's update, which the flattened loop's q tile
        # end reads and clears in the pipeline's second part (the C++ generator says why).
        for i, j in T.Parallel(bM, D):
            acc[i, j] = acc[i, j] * alpha[i] + o[i, j]
        for p in T.Parallel(bM):
            l[p] = l[p] * alpha[p] + rs[p]
        if last is not None:
            if last:
                finish(O, LSE, acc, l, lse, out, mlast, b, h, qx)
                T.clear(acc)  # for the worker's next q tile
                T.clear(l)

    @T.macro
    def tile(Q, K, V, O, LSE, IDX, q, k, v, s, p, o, acc, m, mj, alpha, rs, l, lse, out, idx, half,  # noqa: E741
             b, h, qx):
        # Causal: one q tile, its kv loop stopping at the diagonal tile.
        load(Q, b, h, qx * bM, q)
        T.clear(acc)
        T.fill(m, -T.infinity(f32))
        T.clear(l)
        for kv in T.Pipelined(T.min(T.ceildiv(S, bN), T.ceildiv((qx + 1) * bM, bN)), num_stages=stages, skew=skew):
            kv_step(K, V, O, LSE, IDX, q, k, v, s, p, o, acc, m, mj, alpha, rs, l, lse, out, idx, half, None, b, h,
                    qx, kv, None)
        finish(O, LSE, acc, l, lse, out, m, b, h, qx)

    @T.macro
    def body(Q, K, V, O, LSE, IDX):  # noqa: E741
        with T.Kernel(blocks, threads=2) as cid:
            q = T.alloc_shared((bM, D), dtype)
            k = T.alloc_shared((bN, D), dtype)
            v = T.alloc_shared((bN, D), dtype)
            s = T.alloc_fragment((bM, bN), f32)  # scores, then P in fp32
            p = T.alloc_shared((bM, bN), dtype)  # P for the cube
            o = T.alloc_fragment((bM, D), f32)  # this step's P V
            acc = T.alloc_fragment((bM, D), f32)
            # This order puts mj 256 bytes after s's bank group (the C++ generator says why).
            m = T.alloc_fragment((bM,), f32)
            if bM * 2 >= 256:
                mj = T.alloc_fragment((bM,), f32)
                rs = T.alloc_fragment((bM,), f32)
            else:
                rs = T.alloc_fragment((bM,), f32)
                mj = T.alloc_fragment((bM,), f32)
            alpha = T.alloc_fragment((bM,), f32)
            l = T.alloc_fragment((bM,), f32)  # noqa: E741
            lse = T.alloc_fragment((bM,), f32)
            out = T.alloc_shared((bM, D), dtype)
            idx = T.alloc_shared((bM, bN), "float16")
            half = T.alloc_fragment((bM, bN // 2), f32)  # the max tree's first level
            if causal and bM == bN:
                # Causal, square tiles: q tiles u - d and nq - 1 - u as one unit of nq + 1 - d steps
                # (d = nq % 2: an odd nq pairs the last tile with a tile of 0 steps), the worker's
                # units one pipelined loop (the C++ generator says why).
                mlast = T.alloc_fragment((bM,), f32)
                # Loop-invariant lets (the C++ generator says why).
                qtiles = T.ceildiv(S, bM)
                odd = qtiles % 2
                units = (qtiles + odd) // 2
                steps = qtiles + 1 - odd
                c = (qtiles, odd, units, steps)
                T.clear(acc)
                T.clear(l)
                for g in T.Pipelined(T.ceildiv(T.max(B * H * units - cid, 0), blocks) * steps, num_stages=stages,
                                     skew=skew):
                    if _ckv(g, cid, c) == 0:
                        load(Q, _cb(g, cid, c), _ch(g, cid, c), _cqx(g, cid, c) * bM, q)
                        T.fill(m, -T.infinity(f32))
                    kv_step(K, V, O, LSE, IDX, q, k, v, s, p, o, acc, m, mj, alpha, rs, l, lse, out, idx, half, mlast,
                            _cb(g, cid, c), _ch(g, cid, c), _cqx(g, cid, c), _ckv(g, cid, c),
                            _ckv(g, cid, c) == _cqx(g, cid, c))
            elif causal:  # the q tiles with the most kv steps first
                for t0, b, h in T.Persistent([T.ceildiv(S, bM), B, H], blocks, cid):
                    tile(Q, K, V, O, LSE, IDX, q, k, v, s, p, o, acc, m, mj, alpha, rs, l, lse, out, idx, half, b, h,
                         T.ceildiv(S, bM) - 1 - t0)
            else:
                # Non-causal: the worker's (q tile, kv step) pairs as one pipelined loop, which runs on
                # across q tile boundaries (q tiles cid, cid + blocks, ... as T.Persistent deals them).
                # (Kernel assignments would be lets, which the pipeline's skew does not split: the
                # coordinates are the plain-Python expressions of _b, _h, _qx, as the C++ inlines them.)
                mlast = T.alloc_fragment((bM,), f32)
                T.clear(acc)
                T.clear(l)
                for g in T.Pipelined(T.ceildiv(T.max(B * H * nq - cid, 0), blocks) * kvt, num_stages=stages,
                                     skew=skew):
                    if g % kvt == 0:
                        load(Q, _b(g, cid), _h(g, cid), _qx(g, cid) * bM, q)
                        T.fill(m, -T.infinity(f32))
                    kv_step(K, V, O, LSE, IDX, q, k, v, s, p, o, acc, m, mj, alpha, rs, l, lse, out, idx, half, mlast,
                            _b(g, cid), _h(g, cid), _qx(g, cid), g % kvt, g % kvt == kvt - 1)

    @T.prim_func
    def flash_attention_fwd(Q: T.Tensor(shape, dtype), K: T.Tensor(shape, dtype), V: T.Tensor(shape, dtype),
                            O: T.Tensor(shape, dtype), LSE: T.Tensor((B, H, S), f32),  # noqa: E741
                            IDX: T.Tensor((bM, bN), "float16")):
        body(Q, K, V, O, LSE, IDX)

    return flash_attention_fwd
