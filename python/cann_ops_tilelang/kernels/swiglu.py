"""SwiGLU's kernel generators in TileLang-Ascend syntax: the Python twins of
cann_ops_tilelang/activation/swiglu_kernel.cpp.

For the same key each function here builds the very IR its C++ generator builds (the printed IR
text is compared in python/tests/test_opslib_twin.py). A key is what the library's launch layer
chooses (cann_ops_tilelang.kernels.swiglu_key gives it for a width on a target): dtype, hidden
(H, the width of y), rows_per_tile (bM), chunk (bN), blocks, and the branches rows (a and b are
separate [M, H] tensors: the split on rows), clamp (the runtime scalar `limit`) and weight (one
fp32 per token). M, the token count, is T.dynamic("M"): one kernel per key serves every batch.

The design: developer mode. The tiles are (row tile, column chunk) pairs, ceil(M / bM) * (H / bN)
of them; block cid takes tiles cid, cid + nb, ... in a T.Pipelined loop (the next tile loads
while this one computes), and threads=2 lets the compiler split each tile's rows over the two
AIVs. Everything is computed in fp32. The backward's clamp masks are bitmasks (compare, then a
select applies them), whose bits the compiler pairs with the tile's rows, so the tail tile's rows
past M stay known. dweight sums a row over all H / bN chunks: each tile stores
its row sums into DWP[chunk] and swiglu_dw_reduce_kernel adds the chunks in order.

A @T.prim_func's signature is fixed and the tensors depend on the branches, so the body is a
macro and each combination of branches has a thin prim_func; absent tensors are None there.
"""

# No `from __future__ import annotations`: the parser reads a parameter's T.Tensor annotation
# from the evaluated __annotations__ (the dynamic M and the key's sizes live in this function's
# scope).
import tl_ascend.language as T
from tl_ascend.language.parser import PrimFunc


def _tile_loop_sizes(hidden: int, rows_per_tile: int, chunk: int, blocks: int, M):
    chunks = hidden // chunk
    total = T.ceildiv(M, rows_per_tile) * chunks
    return chunks, total, T.min(blocks, total)


def swiglu_fwd_kernel(dtype: str, hidden: int, rows_per_tile: int, chunk: int, blocks: int, rows: bool,
                      clamp: bool, weight: bool) -> PrimFunc:
    """The forward kernel: (X [M, 2H] | A [M, H], B [M, H]), (W [M] fp32), Y [M, H], (limit)."""
    H, bM, bN = hidden, rows_per_tile, chunk
    wide = dtype != "float32"  # 16-bit I/O: compute in fp32
    M = T.dynamic("M")
    chunks, total, nb = _tile_loop_sizes(H, bM, bN, blocks, M)

    @T.macro
    def body(X, A, B, W, Y, limit):
        with T.Kernel(nb, threads=2) as cid:
            for p in T.Pipelined(T.ceildiv(total - cid, nb), num_stages=2):
                tile = cid + p * nb
                c = tile % chunks
                row = tile // chunks * bM
                col = c * bN
                a = T.alloc_shared((bM, bN), dtype)
                b = T.alloc_shared((bM, bN), dtype)
                if X is not None:
                    T.copy(X[row, col], a)
                    T.copy(X[row, H + col], b)
                else:
                    T.copy(A[row, col], a)
                    T.copy(B[row, col], b)
                af = a
                bf = b
                if wide:
                    af = T.alloc_shared((bM, bN), "float32")
                    bf = T.alloc_shared((bM, bN), "float32")
                    T.tile.cast(af, a)
                    T.tile.cast(bf, b)
                if limit is not None:  # a <= L, b in [-L, L]
                    T.tile.min(af, af, limit)
                    T.tile.clamp(bf, bf, 0.0 - limit, limit)
                T.tile.silu(af, af)
                T.tile.mul(af, af, bf)
                if W is not None:
                    w = T.alloc_shared((bM,), "float32")
                    T.copy(W[row], w)
                    T.tile.row_expand_mul(af, af, w)
                y = T.alloc_shared((bM, bN), dtype)
                if wide:
                    T.tile.cast(y, af, "CAST_RINT")
                else:
                    T.tile.add(y, af, 0.0)
                T.copy(y, Y[row, col])

    if rows:
        if weight and clamp:
            @T.prim_func
            def swiglu_fwd(A: T.Tensor((M, H), dtype), B: T.Tensor((M, H), dtype), W: T.Tensor((M,), "float32"),
                           Y: T.Tensor((M, H), dtype), limit: T.float32):
                body(None, A, B, W, Y, limit)
        elif weight:
            @T.prim_func
            def swiglu_fwd(A: T.Tensor((M, H), dtype), B: T.Tensor((M, H), dtype), W: T.Tensor((M,), "float32"),
                           Y: T.Tensor((M, H), dtype)):
                body(None, A, B, W, Y, None)
        elif clamp:
            @T.prim_func
            def swiglu_fwd(A: T.Tensor((M, H), dtype), B: T.Tensor((M, H), dtype), Y: T.Tensor((M, H), dtype),
                           limit: T.float32):
                body(None, A, B, None, Y, limit)
        else:
            @T.prim_func
            def swiglu_fwd(A: T.Tensor((M, H), dtype), B: T.Tensor((M, H), dtype), Y: T.Tensor((M, H), dtype)):
                body(None, A, B, None, Y, None)
    else:
        if weight and clamp:
            @T.prim_func
            def swiglu_fwd(X: T.Tensor((M, 2 * H), dtype), W: T.Tensor((M,), "float32"), Y: T.Tensor((M, H), dtype),
                           limit: T.float32):
                body(X, None, None, W, Y, limit)
        elif weight:
            @T.prim_func
            def swiglu_fwd(X: T.Tensor((M, 2 * H), dtype), W: T.Tensor((M,), "float32"), Y: T.Tensor((M, H), dtype)):
                body(X, None, None, W, Y, None)
        elif clamp:
            @T.prim_func
            def swiglu_fwd(X: T.Tensor((M, 2 * H), dtype), Y: T.Tensor((M, H), dtype), limit: T.float32):
                body(X, None, None, None, Y, limit)
        else:
            @T.prim_func
            def swiglu_fwd(X: T.Tensor((M, 2 * H), dtype), Y: T.Tensor((M, H), dtype)):
                body(X, None, None, None, Y, None)
    return swiglu_fwd


def swiglu_bwd_kernel(dtype: str, hidden: int, rows_per_tile: int, chunk: int, blocks: int, rows: bool,
                      clamp: bool, weight: bool) -> PrimFunc:
    """The backward kernel: DY [M, H], (X | A, B), (W), (DX [M, 2H] | DA, DB), (DWP [H / bN, M] fp32),
    (limit). With a' b' the clamped halves, s = sigmoid(a'), g = dy w: da = g b' (s + silu(a') (1 - s))
    where a <= L, db = g silu(a') where |b| <= L, DWP[chunk] = this chunk's sums of dy silu(a') b'."""
    H, bM, bN = hidden, rows_per_tile, chunk
    wide = dtype != "float32"
    M = T.dynamic("M")
    chunks, total, nb = _tile_loop_sizes(H, bM, bN, blocks, M)

    @T.macro
    def body(DY, X, A, B, W, DX, DA, DB, DWP, limit):
        with T.Kernel(nb, threads=2) as cid:
            for p in T.Pipelined(T.ceildiv(total - cid, nb), num_stages=3):
                tile = cid + p * nb
                c = tile % chunks
                row = tile // chunks * bM
                col = c * bN
                a = T.alloc_shared((bM, bN), dtype)
                b = T.alloc_shared((bM, bN), dtype)
                g = T.alloc_shared((bM, bN), dtype)
                if X is not None:
                    T.copy(X[row, col], a)
                    T.copy(X[row, H + col], b)
                else:
                    T.copy(A[row, col], a)
                    T.copy(B[row, col], b)
                T.copy(DY[row, col], g)
                # fp32 working tiles, each overwritten once its value is no longer needed, declared in
                # the order that alternates their UB bank groups (swiglu_kernel.cpp): a, then (clamp)
                # b, b', g or (no clamp) g, b, s; then db.
                af = a
                bf = b
                gf = g
                if wide:
                    af = T.alloc_shared((bM, bN), "float32")
                if limit is not None:
                    if wide:
                        bf = T.alloc_shared((bM, bN), "float32")
                    bc = T.alloc_shared((bM, bN), "float32")  # b', clamped
                    if wide:
                        gf = T.alloc_shared((bM, bN), "float32")
                else:
                    if wide:
                        gf = T.alloc_shared((bM, bN), "float32")
                        bf = T.alloc_shared((bM, bN), "float32")
                    bc = bf
                if wide:
                    T.tile.cast(af, a)
                    if limit is not None:
                        T.tile.cast(bf, b)
                    else:
                        T.tile.cast(gf, g)
                if limit is not None:  # bitmasks: the element was not clamped (compare + select)
                    ma = T.alloc_shared((bM, bN // 8), "uint8")
                    mb = T.alloc_shared((bM, bN // 8), "uint8")
                    T.tile.compare(ma, af, limit, "LE")  # a <= L
                    T.tile.min(af, af, limit)
                    T.tile.clamp(bc, bf, 0.0 - limit, limit)
                    T.tile.compare(mb, bf, bc, "EQ")  # -L <= b <= L
                    if wide:
                        T.tile.cast(gf, g)
                elif wide:
                    T.tile.cast(bf, b)
                # s = sigmoid(a'): with the clamp in b's fp32 tile, which the mask read last.
                if limit is not None and wide:
                    s = bf
                else:
                    s = T.alloc_shared((bM, bN), "float32")
                T.tile.sigmoid(s, af)
                T.tile.mul(af, af, s)  # silu(a')
                if W is not None:  # dweight partial: sum over this chunk of dy silu(a') b'
                    u = T.alloc_shared((bM, bN), "float32")
                    rs = T.alloc_shared((bM,), "float32")
                    w = T.alloc_shared((bM,), "float32")
                    T.tile.mul(u, af, bc)
                    T.tile.mul(u, u, gf)
                    T.reduce_sum(u, rs, -1)
                    T.copy(rs, DWP[c, row])
                    T.copy(W[row], w)
                    T.tile.row_expand_mul(gf, gf, w)
                # db = g silu(a'); da = b' (db + s (g - db)), in gf's place.
                db = T.alloc_shared((bM, bN), "float32")
                T.tile.mul(db, gf, af)
                T.tile.sub(af, gf, db)  # g - db
                T.tile.mul(gf, s, af)
                T.tile.add(gf, db, gf)
                T.tile.mul(gf, bc, gf)  # da
                if limit is not None:
                    T.tile.select(gf, ma, gf, 0.0, mode=1)
                    T.tile.select(db, mb, db, 0.0, mode=1)
                # The results go back over the loaded tiles (16-bit: rounded; fp32: da in g's tile).
                da_o = gf
                db_o = db
                if wide:
                    da_o = a
                    db_o = b
                    T.tile.cast(da_o, gf, "CAST_RINT")
                    T.tile.cast(db_o, db, "CAST_RINT")
                if DX is not None:
                    T.copy(da_o, DX[row, col])
                    T.copy(db_o, DX[row, H + col])
                else:
                    T.copy(da_o, DA[row, col])
                    T.copy(db_o, DB[row, col])

    P = chunks
    if rows:
        if weight and clamp:
            @T.prim_func
            def swiglu_bwd(DY: T.Tensor((M, H), dtype), A: T.Tensor((M, H), dtype), B: T.Tensor((M, H), dtype),
                           W: T.Tensor((M,), "float32"), DA: T.Tensor((M, H), dtype), DB: T.Tensor((M, H), dtype),
                           DWP: T.Tensor((P, M), "float32"), limit: T.float32):
                body(DY, None, A, B, W, None, DA, DB, DWP, limit)
        elif weight:
            @T.prim_func
            def swiglu_bwd(DY: T.Tensor((M, H), dtype), A: T.Tensor((M, H), dtype), B: T.Tensor((M, H), dtype),
                           W: T.Tensor((M,), "float32"), DA: T.Tensor((M, H), dtype), DB: T.Tensor((M, H), dtype),
                           DWP: T.Tensor((P, M), "float32")):
                body(DY, None, A, B, W, None, DA, DB, DWP, None)
        elif clamp:
            @T.prim_func
            def swiglu_bwd(DY: T.Tensor((M, H), dtype), A: T.Tensor((M, H), dtype), B: T.Tensor((M, H), dtype),
                           DA: T.Tensor((M, H), dtype), DB: T.Tensor((M, H), dtype), limit: T.float32):
                body(DY, None, A, B, None, None, DA, DB, None, limit)
        else:
            @T.prim_func
            def swiglu_bwd(DY: T.Tensor((M, H), dtype), A: T.Tensor((M, H), dtype), B: T.Tensor((M, H), dtype),
                           DA: T.Tensor((M, H), dtype), DB: T.Tensor((M, H), dtype)):
                body(DY, None, A, B, None, None, DA, DB, None, None)
    else:
        if weight and clamp:
            @T.prim_func
            def swiglu_bwd(DY: T.Tensor((M, H), dtype), X: T.Tensor((M, 2 * H), dtype), W: T.Tensor((M,), "float32"),
                           DX: T.Tensor((M, 2 * H), dtype), DWP: T.Tensor((P, M), "float32"), limit: T.float32):
                body(DY, X, None, None, W, DX, None, None, DWP, limit)
        elif weight:
            @T.prim_func
            def swiglu_bwd(DY: T.Tensor((M, H), dtype), X: T.Tensor((M, 2 * H), dtype), W: T.Tensor((M,), "float32"),
                           DX: T.Tensor((M, 2 * H), dtype), DWP: T.Tensor((P, M), "float32")):
                body(DY, X, None, None, W, DX, None, None, DWP, None)
        elif clamp:
            @T.prim_func
            def swiglu_bwd(DY: T.Tensor((M, H), dtype), X: T.Tensor((M, 2 * H), dtype),
                           DX: T.Tensor((M, 2 * H), dtype), limit: T.float32):
                body(DY, X, None, None, None, DX, None, None, None, limit)
        else:
            @T.prim_func
            def swiglu_bwd(DY: T.Tensor((M, H), dtype), X: T.Tensor((M, 2 * H), dtype),
                           DX: T.Tensor((M, 2 * H), dtype)):
                body(DY, X, None, None, None, DX, None, None, None, None)
    return swiglu_bwd


def swiglu_dw_reduce_rows(partials: int) -> int:
    """The reduce's rows per tile (include/cann_ops_tilelang/activation.h): 64, fewer when the
    partials of a tile would pass 32 KB of UB, at least 8."""
    return min(max(8192 // max(partials, 1) // 8 * 8, 8), 64)


def swiglu_dw_reduce_kernel(dtype: str, hidden: int, rows_per_tile: int, chunk: int, blocks: int, rows: bool,
                            clamp: bool, weight: bool, partials: int) -> PrimFunc:
    """dweight: DWP [P, M] fp32 -> DW [M] fp32, the partials summed in order 0 .. P-1 (one AIV per
    block: 1-D tiles have no rows for the compiler to split). Only blocks is read from the key."""
    del dtype, hidden, rows_per_tile, chunk, rows, clamp, weight
    P = partials
    bR = swiglu_dw_reduce_rows(P)
    M = T.dynamic("M")
    tiles = T.ceildiv(M, bR)
    nb = T.min(blocks, tiles)

    @T.prim_func
    def swiglu_dw_reduce(DWP: T.Tensor((P, M), "float32"), DW: T.Tensor((M,), "float32")):
        with T.Kernel(nb, threads=1) as cid:
            for p in T.Pipelined(T.ceildiv(tiles - cid, nb), num_stages=2):
                row = (cid + p * nb) * bR
                acc = T.alloc_shared((bR,), "float32")
                T.copy(DWP[0, row], acc)
                if P > 1:  # partials 1 .. P-1 in one strided copy, summed in order
                    part = T.alloc_shared((P - 1, bR), "float32")
                    T.copy(DWP[1, row], part, pad_value=0.0)
                    for j in T.serial(P - 1):
                        T.tile.add(acc, acc, part[j:j + 1, 0:bR])
                T.copy(acc, DW[row])

    return swiglu_dw_reduce
