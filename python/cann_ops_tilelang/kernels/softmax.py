"""Softmax's kernel generator in TileLang-Ascend syntax: the Python twin of
cann_ops_tilelang/softmax/softmax_kernel.cpp (forward and backward, softmax and log-softmax).

For the same key it builds the very IR the C++ generator builds (the printed IR text is compared
in python/tests/test_opslib_twin.py). A key is what the library's launch layer chooses
(cann_ops_tilelang.kernels.softmax_key gives it for a row length on a target): dtype, cols (N),
rows_per_tile (bM), chunk (bN), blocks, log and backward. M, the row count, is T.dynamic("M").

Developer mode: the compiler places the tiles, splits them between the two AIVs, inserts the
flags, clips the last row tile's copies and pads rows that are not whole 32-byte blocks; the
row reductions count the logical columns only. Loaded tiles hold -inf (forward) or 0 (backward)
past the tensor. chunk == cols is the one-pass schedule (the row in UB); otherwise rows are read
in chunks twice: pass 1 an online max and sum, pass 2 the result. The max subtracted is
max(m, lowest float), so -inf logits give exp(-inf) = 0, never exp(-inf + inf) = NaN.
"""

# No `from __future__ import annotations`: the parser reads a parameter's T.Tensor annotation
# from the evaluated __annotations__ (the dynamic M and the key's sizes live in this scope).
import tl_ascend.language as T
from tl_ascend.language.parser import PrimFunc

from .softmax_resident import softmax_resident_kernel
from .softmax_split import softmax_split_kernel
from .softmax_streamed import softmax_streamed_kernel

_LOWEST = -3.4028234663852886e38  # the lowest finite float32


def softmax_kernel(dtype: str, cols: int, rows_per_tile: int, chunk: int, blocks: int, log: bool,
                   backward: bool, resident: bool = False, streamed: bool = False, split: bool = False) -> PrimFunc:
    """Forward: X [M, N] -> Y [M, N]. Backward: Y [M, N], DY [M, N] -> DX [M, N]. With `resident`
    the expert one-pass schedule (softmax_resident.py), with `streamed` the expert two-pass one over
    chunks (softmax_streamed.py), with `split` the backward's rows shared by a block's two AIVs
    (softmax_split.py)."""
    if resident:
        return softmax_resident_kernel(dtype, cols, rows_per_tile, blocks, log, backward)
    if streamed:
        return softmax_streamed_kernel(dtype, cols, chunk, blocks, log, backward)
    if split:
        return softmax_split_kernel(dtype, cols, chunk, blocks, log)
    N, bM, bN = cols, rows_per_tile, chunk
    chunks = (N + bN - 1) // bN
    one_pass = chunks == 1
    wide = dtype != "float32"  # 16-bit I/O: widened into fp32 fragments by a cast
    pad = 0.0 if backward else float("-inf")
    M = T.dynamic("M")

    @T.macro
    def load(src, src_in, src_f, row, col):
        T.copy(src[row, col], src_in, pad_value=pad)
        if wide:
            for i, j in T.Parallel(bM, bN):
                src_f[i, j] = T.cast(src_in[i, j], "float32")

    @T.macro
    def store(res, out, dst, row, col):
        if wide:
            for i, j in T.Parallel(bM, bN):
                out[i, j] = T.cast(res[i, j], dtype)
        T.copy(out, dst[row, col])

    @T.macro
    def fwd_one(X, Y, x_in, x_f, e, y_out, s, m, ms, row):
        load(X, x_in, x_f, row, 0)
        T.reduce_max(x_f, m, dim=-1)
        T.tile.max(ms, m, _LOWEST)
        for i, j in T.Parallel(bM, bN):
            x_f[i, j] = x_f[i, j] - ms[i]
        T.tile.exp(e, x_f)
        T.reduce_sum(e, s, dim=-1)
        if log:
            T.tile.ln(s, s)
            for i, j in T.Parallel(bM, bN):
                x_f[i, j] = x_f[i, j] - s[i]
        else:
            for p in T.Parallel(bM):
                s[p] = T.float32(1.0) / s[p]  # a divide per row only
            for i, j in T.Parallel(bM, bN):
                x_f[i, j] = x_f[i, j] * s[i]
        store(x_f, y_out, Y, row, 0)

    @T.macro
    def fwd_chunks(X, Y, x_in, x_f, y_out, s, m, ms, mc, rs, alpha, row):
        T.fill(m, -T.infinity("float32"))
        T.clear(s)
        for c in T.Pipelined(chunks, num_stages=2):  # pass 1: online max and sum
            load(X, x_in, x_f, row, c * bN)
            T.reduce_max(x_f, mc, dim=-1)
            T.tile.max(mc, mc, m)
            T.tile.max(ms, mc, _LOWEST)
            for p in T.Parallel(bM):
                alpha[p] = m[p] - ms[p]
            T.tile.exp(alpha, alpha)
            for i, j in T.Parallel(bM, bN):
                x_f[i, j] = x_f[i, j] - ms[i]
            T.tile.exp(x_f, x_f)
            T.reduce_sum(x_f, rs, dim=-1)
            for p in T.Parallel(bM):
                s[p] = s[p] * alpha[p] + rs[p]
            for p in T.Parallel(bM):
                m[p] = mc[p]
        T.tile.max(ms, m, _LOWEST)
        if log:
            T.tile.ln(s, s)
            for p in T.Parallel(bM):
                s[p] = s[p] + ms[p]  # log-sum-exp
        else:
            for p in T.Parallel(bM):
                s[p] = T.float32(1.0) / s[p]
        for c in T.Pipelined(chunks, num_stages=2):  # pass 2: the result
            load(X, x_in, x_f, row, c * bN)
            if log:
                for i, j in T.Parallel(bM, bN):
                    x_f[i, j] = x_f[i, j] - s[i]
            else:
                for i, j in T.Parallel(bM, bN):
                    x_f[i, j] = x_f[i, j] - ms[i]
                T.tile.exp(x_f, x_f)
                for i, j in T.Parallel(bM, bN):
                    x_f[i, j] = x_f[i, j] * s[i]
            store(x_f, y_out, Y, row, c * bN)

    @T.macro
    def bwd_sum(y_f, dy_f, dyy, s, accumulate):
        if log:
            T.reduce_sum(dy_f, s, dim=-1, clear=not accumulate)
        else:
            for i, j in T.Parallel(bM, bN):
                dyy[i, j] = dy_f[i, j] * y_f[i, j]
            T.reduce_sum(dyy, s, dim=-1, clear=not accumulate)

    @T.macro
    def bwd_dx(DX, y_f, dy_f, dx_out, s, row, col):
        if log:
            T.tile.exp(y_f, y_f)
            for i, j in T.Parallel(bM, bN):
                y_f[i, j] = dy_f[i, j] - y_f[i, j] * s[i]
        else:
            for i, j in T.Parallel(bM, bN):
                y_f[i, j] = y_f[i, j] * (dy_f[i, j] - s[i])
        store(y_f, dx_out, DX, row, col)

    @T.macro
    def fwd_body(X, Y):
        row_tiles = T.ceildiv(M, bM)
        with T.Kernel(blocks, threads=2) as cid:
            x_in = T.alloc_shared((bM, bN), dtype)
            x_f = x_in
            if wide:
                x_f = T.alloc_fragment((bM, bN), "float32")
            e = x_f
            if log and one_pass:
                e = T.alloc_fragment((bM, bN), "float32")
            y_out = x_f
            if wide:
                y_out = T.alloc_shared((bM, bN), dtype)
            s = T.alloc_fragment((bM,), "float32")
            m = T.alloc_fragment((bM,), "float32")
            ms = T.alloc_fragment((bM,), "float32")
            if one_pass:
                for t in T.Pipelined(T.ceildiv(T.max(row_tiles - cid, 0), blocks), num_stages=2):
                    fwd_one(X, Y, x_in, x_f, e, y_out, s, m, ms, (cid + t * blocks) * bM)
            else:
                mc = T.alloc_fragment((bM,), "float32")
                rs = T.alloc_fragment((bM,), "float32")
                alpha = T.alloc_fragment((bM,), "float32")
                for t in T.serial(T.ceildiv(T.max(row_tiles - cid, 0), blocks)):
                    fwd_chunks(X, Y, x_in, x_f, y_out, s, m, ms, mc, rs, alpha, (cid + t * blocks) * bM)

    @T.macro
    def bwd_body(Y, DY, DX):
        row_tiles = T.ceildiv(M, bM)
        with T.Kernel(blocks, threads=2) as cid:
            y_in = T.alloc_shared((bM, bN), dtype)
            y_f = y_in
            if wide:
                y_f = T.alloc_fragment((bM, bN), "float32")
            dy_in = T.alloc_shared((bM, bN), dtype)
            dy_f = dy_in
            if wide:
                dy_f = T.alloc_fragment((bM, bN), "float32")
            dyy = None
            if not log:
                dyy = T.alloc_fragment((bM, bN), "float32")
            dx_out = y_f
            if wide:
                dx_out = T.alloc_shared((bM, bN), dtype)
            s = T.alloc_fragment((bM,), "float32")
            if one_pass:
                for t in T.Pipelined(T.ceildiv(T.max(row_tiles - cid, 0), blocks), num_stages=2):
                    load(Y, y_in, y_f, (cid + t * blocks) * bM, 0)
                    load(DY, dy_in, dy_f, (cid + t * blocks) * bM, 0)
                    bwd_sum(y_f, dy_f, dyy, s, False)
                    bwd_dx(DX, y_f, dy_f, dx_out, s, (cid + t * blocks) * bM, 0)
            else:
                for t in T.serial(T.ceildiv(T.max(row_tiles - cid, 0), blocks)):
                    T.clear(s)
                    for c in T.Pipelined(chunks, num_stages=2):
                        load(Y, y_in, y_f, (cid + t * blocks) * bM, c * bN)
                        load(DY, dy_in, dy_f, (cid + t * blocks) * bM, c * bN)
                        bwd_sum(y_f, dy_f, dyy, s, True)
                    for c in T.Pipelined(chunks, num_stages=2):
                        load(Y, y_in, y_f, (cid + t * blocks) * bM, c * bN)
                        load(DY, dy_in, dy_f, (cid + t * blocks) * bM, c * bN)
                        bwd_dx(DX, y_f, dy_f, dx_out, s, (cid + t * blocks) * bM, c * bN)

    # A prim_func's name and signature are fixed: one thin prim_func per (log, backward).
    if not backward and not log:
        @T.prim_func
        def softmax_fwd(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
            fwd_body(X, Y)
        return softmax_fwd
    if not backward:
        @T.prim_func
        def log_softmax_fwd(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
            fwd_body(X, Y)
        return log_softmax_fwd
    if not log:
        @T.prim_func
        def softmax_bwd(Y: T.Tensor((M, N), dtype), DY: T.Tensor((M, N), dtype), DX: T.Tensor((M, N), dtype)):
            bwd_body(Y, DY, DX)
        return softmax_bwd

    @T.prim_func
    def log_softmax_bwd(Y: T.Tensor((M, N), dtype), DY: T.Tensor((M, N), dtype), DX: T.Tensor((M, N), dtype)):
        bwd_body(Y, DY, DX)
    return log_softmax_bwd
