"""RMSNorm's kernel generators in TileLang-Ascend syntax: the Python twins of
cann_ops_tilelang/norm/rms_norm_fwd_kernel.cpp and rms_norm_bwd_kernel.cpp.

For the same key each function here builds the very IR its C++ generator builds (the printed IR
text is compared in python/tests/test_opslib_twin.py), so a user reads and changes the op in the
language they know, and a change here that the C++ side lacks fails that test. A key is what
the library's launch layer chooses (cann_ops_tilelang.kernels.rms_norm_fwd_key gives it for a
hidden size on a target): dtype, hidden (H), rows_per_tile (rM), chunk (bN), blocks, and the
fused branches residual / rstd. M, the row count, is T.dynamic("M"): one kernel per key serves
every batch size.

The design (the C++ files' top comments say it at length): expert mode, rM-row tiles read in
bN-column fp32 chunks, twice per tile (pass 1 statistics, pass 2 the result); full tiles dealt
round-robin to the 2 * blocks AIVs with T.Persistent, the tail tile (M % rM rows) taken by the
next worker in the round robin, zero-filled in UB and loaded row by row; every set_flag is
followed at once by its wait_flag (event 0 loads, 1 stores, 2 the rstd store).

The forward kernel's parameters depend on the fused branches (R and HO with a residual, Rstd
with rstd), and a @T.prim_func's signature is fixed, so the body is one macro and each
combination of branches has a thin prim_func of its own; absent tensors are None in the macro.
"""

# No `from __future__ import annotations`: the parser reads a parameter's T.Tensor annotation
# from the evaluated __annotations__ (the dynamic M and the key's sizes live in this function's
# scope, not in the kernel body's closure).
import tl_ascend.language as T
from tl_ascend.language.parser import PrimFunc

from ._rms_norm_parts import sync, weight_loader
from .rms_norm_bwd_resident import rms_norm_bwd_resident_kernel
from .rms_norm_bwd_rows import rms_norm_bwd_rows_kernel
from .rms_norm_resident import rms_norm_fwd_resident_kernel

EV_IN, EV_OUT, EV_RSTD = 0, 1, 2  # intra-core event ids: loads, stores of Y / h / dX, the rstd store


def rms_norm_fwd_kernel(dtype: str, hidden: int, rows_per_tile: int, chunk: int, blocks: int,
                        residual: bool, rstd: bool, resident: bool = False) -> PrimFunc:
    """The forward kernel: X [M, H], (R [M, H]), W [H], Y [M, H], (HO [M, H]), (Rstd [MP]), eps.
    With `resident` the row tile stays in UB (rms_norm_resident.py); else two chunked passes."""
    if resident:
        return rms_norm_fwd_resident_kernel(dtype, hidden, rows_per_tile, chunk, blocks, residual, rstd)
    H, rM, bN = hidden, rows_per_tile, chunk
    chunks = H // bN
    wide = dtype != "float32"  # 16-bit I/O: loaded into byte tiles, widened by a cast
    load_weight_f32 = weight_loader(dtype, H, EV_IN)
    M = T.dynamic("M")
    MP = T.dynamic("MP")  # Rstd's rows: ceil(M / rM) * rM, whole tiles
    num_blocks = T.min(blocks, T.ceildiv(M, rM))

    @T.macro
    def load(src, dst, row0, c, nrows):
        """Chunk c of the tile at row0: one copy for a full tile, one per valid row of a tail."""
        if nrows is None:
            T.copy(src[row0, c * bN], dst)
        else:
            for j in T.serial(nrows):
                T.copy(src[row0 + j, c * bN], dst[j:j + 1, 0:bN])

    @T.macro
    def store(src, dst, row0, c, nrows):
        if nrows is None:
            T.copy(src, dst[row0, c * bN])
        else:
            for j in T.serial(nrows):
                T.copy(src[j:j + 1, 0:bN], dst[row0 + j, c * bN])

    @T.macro
    def load_h(X, R, HO, xb_ub, xf_ub, rb_ub, rf_ub, hb_ub, row0, c, nrows, store_h):
        """Chunk c of h into xf_ub (fp32); with a residual, h rounded to dtype is stored (pass 1)."""
        if nrows is not None:  # rows past M: zeros, not stale data
            T.tile.fill(xb_ub, 0.0)
            if R is not None:
                T.tile.fill(rb_ub, 0.0)
        sync("V", "MTE2", EV_IN)  # the last V op has read xb_ub (and rb_ub)
        load(X, xb_ub, row0, c, nrows)
        if R is not None:
            load(R, rb_ub, row0, c, nrows)
        sync("MTE2", "V", EV_IN)
        if wide:
            T.tile.cast(xf_ub, xb_ub)
        if R is not None:
            if wide:
                T.tile.cast(rf_ub, rb_ub)
            T.pipe_barrier("V")
            T.tile.add(xf_ub, xf_ub, rf_ub)
            if store_h:
                sync("MTE3", "V", EV_OUT)  # the previous store has read hb_ub
                T.pipe_barrier("V")
                if wide:
                    T.tile.cast(hb_ub, xf_ub, "CAST_RINT")
                else:
                    T.tile.add(hb_ub, xf_ub, 0.0)
                sync("V", "MTE3", EV_OUT)
                store(hb_ub, HO, row0, c, nrows)

    @T.macro
    def tile_rows(X, R, Y, HO, Rstd, eps, wf_ub, xf_ub, acc_ub, wb_ub, yb_ub, ss_ub, xb_ub, rf_ub, rb_ub, hb_ub,
                  row0, nrows):
        """The rM-row tile at row0 (nrows: None for a full tile, else the tail's valid rows)."""
        # Pass 1: sum of squares.
        T.tile.fill(acc_ub, 0.0)
        for c in T.serial(chunks):
            load_h(X, R, HO, xb_ub, xf_ub, rb_ub, rf_ub, hb_ub, row0, c, nrows, True)
            T.pipe_barrier("V")
            T.tile.mul(xf_ub, xf_ub, xf_ub)
            T.pipe_barrier("V")
            T.tile.add(acc_ub, acc_ub, xf_ub)
        T.pipe_barrier("V")
        T.reduce_sum(acc_ub, ss_ub, -1)
        T.pipe_barrier("V")
        T.tile.mul(ss_ub, ss_ub, 1.0 / H)
        T.pipe_barrier("V")
        T.tile.add(ss_ub, ss_ub, eps)
        T.pipe_barrier("V")
        T.tile.rsqrt(ss_ub, ss_ub)
        if Rstd is not None:  # the whole tile: Rstd has ceil(M / rM) * rM rows
            sync("V", "MTE3", EV_RSTD)
            T.copy(ss_ub, Rstd[row0])
            sync("MTE3", "V", EV_RSTD)  # stored before the next tile rewrites ss_ub

        # Pass 2: normalise, scale by W, narrow and store.
        for c in T.serial(chunks):
            load_h(X, R, HO, xb_ub, xf_ub, rb_ub, rf_ub, hb_ub, row0, c, nrows, False)
            T.tile.broadcast(wb_ub, wf_ub[c * bN:c * bN + bN])
            T.pipe_barrier("V")
            T.tile.row_expand_mul(xf_ub, xf_ub, ss_ub)
            sync("MTE3", "V", EV_OUT)  # the previous store has read yb_ub
            T.pipe_barrier("V")
            if wide:
                T.tile.mul(xf_ub, xf_ub, wb_ub)
                T.pipe_barrier("V")
                T.tile.cast(yb_ub, xf_ub, "CAST_RINT")
            else:
                T.tile.mul(yb_ub, xf_ub, wb_ub)
            sync("V", "MTE3", EV_OUT)
            store(yb_ub, Y, row0, c, nrows)

    @T.macro
    def body(X, R, W, Y, HO, Rstd, eps):
        with T.Kernel(num_blocks, is_npu=True) as (cid, vid):
            with T.Scope("V"):
                wf_ub = T.alloc_ub((H,), "float32")  # W in fp32, kept for all rows
                xf_ub = T.alloc_ub((rM, bN), "float32")  # h chunk in fp32
                acc_ub = T.alloc_ub((rM, bN), "float32")  # sum of squares per column slot
                wb_ub = T.alloc_ub((rM, bN), "float32")  # W chunk broadcast over the rows
                yb_ub = T.alloc_ub((rM, bN), dtype)  # output chunk
                ss_ub = T.alloc_ub((rM,), "float32")  # row sums of squares, then rstd
                xb_ub = xf_ub  # X chunk as loaded: fp32 loads straight into xf_ub
                if wide:
                    xb_ub = T.alloc_ub((rM, bN), dtype)
                rf_ub = None
                rb_ub = None
                hb_ub = None
                if R is not None:
                    rf_ub = T.alloc_ub((rM, bN), "float32")
                    rb_ub = rf_ub
                    if wide:
                        rb_ub = T.alloc_ub((rM, bN), dtype)
                    hb_ub = T.alloc_ub((rM, bN), dtype)  # h chunk to store
                load_weight_f32(W, wf_ub)

                workers = num_blocks * 2
                worker = cid * 2 + vid
                full_tiles = M // rM
                for t in T.Persistent([full_tiles], workers, worker):
                    row0 = t * rM
                    tile_rows(X, R, Y, HO, Rstd, eps, wf_ub, xf_ub, acc_ub, wb_ub, yb_ub, ss_ub, xb_ub, rf_ub, rb_ub,
                              hb_ub, row0, None)
                # The tail tile continues the round robin: worker full_tiles % workers takes it.
                tail = M % rM
                if tail > 0 and worker == full_tiles % workers:
                    tile_rows(X, R, Y, HO, Rstd, eps, wf_ub, xf_ub, acc_ub, wb_ub, yb_ub, ss_ub, xb_ub, rf_ub, rb_ub,
                              hb_ub, full_tiles * rM, tail)

    if residual and rstd:
        @T.prim_func
        def rms_norm_fwd(X: T.Tensor((M, H), dtype), R: T.Tensor((M, H), dtype), W: T.Tensor((H,), dtype),
                         Y: T.Tensor((M, H), dtype), HO: T.Tensor((M, H), dtype), Rstd: T.Tensor((MP,), "float32"),
                         eps: T.float32):
            body(X, R, W, Y, HO, Rstd, eps)
    elif residual:
        @T.prim_func
        def rms_norm_fwd(X: T.Tensor((M, H), dtype), R: T.Tensor((M, H), dtype), W: T.Tensor((H,), dtype),
                         Y: T.Tensor((M, H), dtype), HO: T.Tensor((M, H), dtype), eps: T.float32):
            body(X, R, W, Y, HO, None, eps)
    elif rstd:
        @T.prim_func
        def rms_norm_fwd(X: T.Tensor((M, H), dtype), W: T.Tensor((H,), dtype), Y: T.Tensor((M, H), dtype),
                         Rstd: T.Tensor((MP,), "float32"), eps: T.float32):
            body(X, None, W, Y, None, Rstd, eps)
    else:
        @T.prim_func
        def rms_norm_fwd(X: T.Tensor((M, H), dtype), W: T.Tensor((H,), dtype), Y: T.Tensor((M, H), dtype),
                         eps: T.float32):
            body(X, None, W, Y, None, None, eps)
    return rms_norm_fwd


def rms_norm_bwd_kernel(dtype: str, hidden: int, rows_per_tile: int, chunk: int, blocks: int,
                        residual: bool = False, rstd: bool = False, resident: bool = False) -> PrimFunc:
    """The backward kernel: DY, X [M, H], W [H], DX [M, H], DWP [2 * blocks, H] fp32 partials, eps.

    Per tile, with g = dy * w: pass 1 sums x^2 and g * x per row, rstd = rsqrt(sum x^2 / H + eps)
    (recomputed: x is read here anyway), coef = sum(g x) * rstd^3 / H; pass 2 writes
    dx = g * rstd - x * coef and adds the rows of dy * x * rstd, in order, to this AIV's fp32 dW
    partial, which is stored whole to DWP[worker] at the end. (residual and rstd are the forward
    key's fields; the backward kernel has neither.)"""
    del residual, rstd
    if resident and chunk == 0:  # whole rows in fp32: rms_norm_bwd_rows.py
        return rms_norm_bwd_rows_kernel(dtype, hidden, rows_per_tile, chunk, blocks)
    if resident:  # the tile stays in UB: rms_norm_bwd_resident.py
        return rms_norm_bwd_resident_kernel(dtype, hidden, rows_per_tile, chunk, blocks)
    H, rM, bN = hidden, rows_per_tile, chunk
    chunks = H // bN
    wide = dtype != "float32"
    load_weight_f32 = weight_loader(dtype, H, EV_IN)
    M = T.dynamic("M")
    num_blocks = T.min(blocks, T.ceildiv(M, rM))

    @T.macro
    def load(src, dst, row0, c, nrows):
        if nrows is None:
            T.copy(src[row0, c * bN], dst)
        else:
            for j in T.serial(nrows):
                T.copy(src[row0 + j, c * bN], dst[j:j + 1, 0:bN])

    @T.macro
    def load_chunk(X, DY, wf_ub, xf_ub, gf_ub, wb_ub, xb_ub, gb_ub, row0, c, nrows):
        """Chunk c of x into xf_ub and of dy into gf_ub; wb_ub = W's chunk on every row."""
        if nrows is not None:  # rows past M: zeros, so they add nothing to dW
            T.tile.fill(xb_ub, 0.0)
            T.tile.fill(gb_ub, 0.0)
        sync("V", "MTE2", EV_IN)
        load(X, xb_ub, row0, c, nrows)
        load(DY, gb_ub, row0, c, nrows)
        sync("MTE2", "V", EV_IN)
        if wide:
            T.tile.cast(xf_ub, xb_ub)
            T.tile.cast(gf_ub, gb_ub)
        T.tile.broadcast(wb_ub, wf_ub[c * bN:c * bN + bN])

    @T.macro
    def tile_rows(DY, X, DX, eps, wf_ub, dw_ub, xf_ub, gf_ub, t1_ub, t2_ub, wb_ub, dxb_ub, rs_ub, cf_ub, xb_ub, gb_ub,
                  row0, nrows):
        # Pass 1: s1 = sum(x^2) and s2 = sum(g * x), per column slot.
        T.tile.fill(t1_ub, 0.0)
        T.tile.fill(t2_ub, 0.0)
        for c in T.serial(chunks):
            load_chunk(X, DY, wf_ub, xf_ub, gf_ub, wb_ub, xb_ub, gb_ub, row0, c, nrows)
            T.pipe_barrier("V")
            T.tile.mul(gf_ub, gf_ub, wb_ub)  # g
            T.pipe_barrier("V")  # the next mul overwrites wb_ub, which this one reads (WAR)
            T.tile.mul(wb_ub, xf_ub, xf_ub)  # x^2 (wb_ub is free until the next chunk)
            T.pipe_barrier("V")
            T.tile.mul(gf_ub, gf_ub, xf_ub)  # g * x
            T.tile.add(t1_ub, t1_ub, wb_ub)
            T.pipe_barrier("V")
            T.tile.add(t2_ub, t2_ub, gf_ub)
        T.pipe_barrier("V")
        T.reduce_sum(t1_ub, rs_ub, -1)
        T.reduce_sum(t2_ub, cf_ub, -1)
        T.pipe_barrier("V")
        T.tile.mul(rs_ub, rs_ub, 1.0 / H)
        T.pipe_barrier("V")
        T.tile.add(rs_ub, rs_ub, eps)
        T.pipe_barrier("V")
        T.tile.rsqrt(rs_ub, rs_ub)  # rstd
        T.pipe_barrier("V")
        T.tile.mul(cf_ub, cf_ub, rs_ub)
        T.pipe_barrier("V")
        T.tile.mul(cf_ub, cf_ub, rs_ub)
        T.pipe_barrier("V")
        T.tile.mul(cf_ub, cf_ub, rs_ub)
        T.pipe_barrier("V")
        T.tile.mul(cf_ub, cf_ub, 1.0 / H)  # coef = s2 * rstd^3 / H

        # Pass 2: dW partial and dx.
        for c in T.serial(chunks):
            load_chunk(X, DY, wf_ub, xf_ub, gf_ub, wb_ub, xb_ub, gb_ub, row0, c, nrows)
            T.pipe_barrier("V")
            # gf_ub is overwritten after the barrier, once dy * x has read it (WAR)
            T.tile.mul(t1_ub, gf_ub, xf_ub)  # dy * x
            T.tile.row_expand_mul(t2_ub, xf_ub, cf_ub)  # x * coef
            T.tile.row_expand_mul(wb_ub, wb_ub, rs_ub)  # w * rstd
            T.pipe_barrier("V")
            T.tile.row_expand_mul(t1_ub, t1_ub, rs_ub)  # dy * x * rstd
            T.tile.mul(gf_ub, gf_ub, wb_ub)  # g * rstd = dy * w * rstd
            T.pipe_barrier("V")
            for r in T.serial(rM):  # rows in order: a fixed summation order
                T.tile.add(dw_ub[c * bN:c * bN + bN], dw_ub[c * bN:c * bN + bN], t1_ub[r:r + 1, 0:bN])
                T.pipe_barrier("V")
            sync("MTE3", "V", EV_OUT)  # the previous store has read dxb_ub
            if wide:
                T.tile.sub(gf_ub, gf_ub, t2_ub)
                T.pipe_barrier("V")
                T.tile.cast(dxb_ub, gf_ub, "CAST_RINT")
            else:
                T.tile.sub(dxb_ub, gf_ub, t2_ub)
            sync("V", "MTE3", EV_OUT)
            if nrows is None:
                T.copy(dxb_ub, DX[row0, c * bN])
            else:
                for j in T.serial(nrows):
                    T.copy(dxb_ub[j:j + 1, 0:bN], DX[row0 + j, c * bN])

    @T.prim_func
    def rms_norm_bwd(DY: T.Tensor((M, H), dtype), X: T.Tensor((M, H), dtype), W: T.Tensor((H,), dtype),
                     DX: T.Tensor((M, H), dtype), DWP: T.Tensor((2 * blocks, H), "float32"), eps: T.float32):
        with T.Kernel(num_blocks, is_npu=True) as (cid, vid):
            with T.Scope("V"):
                wf_ub = T.alloc_ub((H,), "float32")  # W in fp32
                dw_ub = T.alloc_ub((H,), "float32")  # this AIV's dW partial
                xf_ub = T.alloc_ub((rM, bN), "float32")  # x chunk
                gf_ub = T.alloc_ub((rM, bN), "float32")  # dy chunk, then g = dy * w
                t1_ub = T.alloc_ub((rM, bN), "float32")  # pass 1: sum x^2; pass 2: dy * x * rstd
                t2_ub = T.alloc_ub((rM, bN), "float32")  # pass 1: sum g * x; pass 2: x * coef
                wb_ub = T.alloc_ub((rM, bN), "float32")  # W chunk broadcast over the rows
                dxb_ub = T.alloc_ub((rM, bN), dtype)  # dx chunk to store
                rs_ub = T.alloc_ub((rM,), "float32")  # rstd
                cf_ub = T.alloc_ub((rM,), "float32")  # coef
                xb_ub = xf_ub
                gb_ub = gf_ub
                if wide:
                    xb_ub = T.alloc_ub((rM, bN), dtype)
                    gb_ub = T.alloc_ub((rM, bN), dtype)
                load_weight_f32(W, wf_ub)
                T.tile.fill(dw_ub, 0.0)

                workers = num_blocks * 2
                worker = cid * 2 + vid
                full_tiles = M // rM
                for t in T.Persistent([full_tiles], workers, worker):
                    row0 = t * rM
                    tile_rows(DY, X, DX, eps, wf_ub, dw_ub, xf_ub, gf_ub, t1_ub, t2_ub, wb_ub, dxb_ub, rs_ub, cf_ub,
                              xb_ub, gb_ub, row0, None)
                tail = M % rM
                if tail > 0 and worker == full_tiles % workers:
                    tile_rows(DY, X, DX, eps, wf_ub, dw_ub, xf_ub, gf_ub, t1_ub, t2_ub, wb_ub, dxb_ub, rs_ub, cf_ub,
                              xb_ub, gb_ub, full_tiles * rM, tail)
                sync("V", "MTE3", EV_OUT)
                T.copy(dw_ub, DWP[worker, 0])

    return rms_norm_bwd


def rms_norm_dw_reduce_kernel(dtype: str, hidden: int, rows_per_tile: int, chunk: int, blocks: int,
                              partials: int, residual: bool = False, rstd: bool = False,
                              resident: bool = False) -> PrimFunc:
    """The dW reduction: DWP [P, H] fp32 -> DW [H] (dtype), the P rows summed in order 0 .. P-1
    per bN-column chunk, chunks dealt round-robin to the AIVs, the rows loaded in groups."""
    del rows_per_tile, residual, rstd, resident
    H, bN = hidden, chunk
    chunks = H // bN
    num_blocks = T.min(blocks, T.ceildiv(chunks, 2))
    # The partial rows of a chunk come in groups of G, one strided copy each (at most 64 KB).
    G = min(partials, max(1, 65536 // (bN * 4)))
    groups = [(g0, min(G, partials - g0)) for g0 in range(0, partials, G)]

    @T.prim_func
    def rms_norm_dw_reduce(DWP: T.Tensor((partials, H), "float32"), DW: T.Tensor((H,), dtype)):
        with T.Kernel(num_blocks, is_npu=True) as (cid, vid):
            with T.Scope("V"):
                acc_ub = T.alloc_ub((bN,), "float32")
                part_ub = T.alloc_ub((G, bN), "float32")  # a group of partial rows
                out_ub = acc_ub
                if dtype != "float32":
                    out_ub = T.alloc_ub((bN,), dtype)
                for c in T.Persistent([chunks], num_blocks * 2, cid * 2 + vid):
                    sync("MTE3", "V", EV_OUT)  # the previous chunk's store has read acc_ub / out_ub
                    T.tile.fill(acc_ub, 0.0)
                    for grp in groups:  # unrolled: (first row, rows)
                        sync("V", "MTE2", EV_IN)  # the adds before have read part_ub
                        T.copy(DWP[grp[0]:grp[0] + grp[1], c * bN:c * bN + bN], part_ub[0:grp[1], 0:bN])
                        sync("MTE2", "V", EV_IN)
                        for p in T.serial(grp[1]):  # rows in order: deterministic dW
                            T.tile.add(acc_ub, acc_ub, part_ub[p:p + 1, 0:bN])
                            T.pipe_barrier("V")
                    if dtype != "float32":
                        T.pipe_barrier("V")
                        T.tile.cast(out_ub, acc_ub, "CAST_RINT")
                    sync("V", "MTE3", EV_OUT)
                    T.copy(out_ub, DW[c * bN])

    return rms_norm_dw_reduce
