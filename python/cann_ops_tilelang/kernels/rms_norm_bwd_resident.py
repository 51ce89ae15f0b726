"""RMSNorm's backward kernel, resident schedule, in TileLang-Ascend syntax: the Python twin of
cann_ops_tilelang/norm/rms_norm_bwd_resident.cpp (the same IR for the same key, compared in
python/tests/test_opslib_twin.py). rms_norm_bwd_kernel (rms_norm.py) builds this one when the
key's `resident` is set.

Each rM-row tile of x and dy is loaded into UB once (two slots: the next tile loads while this one
computes) and stays there for both passes over bN-column fp32 chunks, with g = dy * w: pass 1 sums
x^2 and g x per row, rstd = rsqrt(s1 / H + eps), coef = s2 rstd^3 / H; pass 2 writes
dx = g rstd - x coef over dy's chunk and adds the tile's valid rows of dy x rstd, in order, to
this AIV's fp32 dW partial, stored to DWP[worker] at the end. Events as in the resident forward
(rms_norm_resident.py); UB addresses explicit so the two sources of every vector instruction
start 256 bytes apart modulo 512 (no bank-group conflict, docs/calibration.md).
"""

import tl_ascend.language as T
from tl_ascend.language.parser import PrimFunc

from ._rms_norm_parts import sync, weight_loader, xdy_loader
from ._ub import ub_placer

EV_TAIL = 3


def rms_norm_bwd_resident_kernel(dtype: str, hidden: int, rows_per_tile: int, chunk: int,
                                 blocks: int) -> PrimFunc:
    """DY, X [M, H], W [H], DX [M, H], DWP [2 * blocks, H] fp32 partials, eps."""
    H, rM, bN = hidden, rows_per_tile, chunk
    chunks = H // bN
    wide = dtype != "float32"
    M = T.dynamic("M")
    num_blocks = T.min(blocks, T.ceildiv(M, rM))
    es = 4 if dtype == "float32" else 2
    tile, chunk_bytes = rM * H * es, rM * bN * 4
    place = ub_placer()

    a_wf, a_dw = place(H * 4, 0), place(H * 4, 256)
    a_x = [place(tile, 0), place(tile, 0)]
    a_g = [place(tile, 0), place(tile, 0)]
    a_xf, a_gf, a_t = place(chunk_bytes, 0), place(chunk_bytes, 256), place(chunk_bytes, 0)
    load_weight_f32 = weight_loader(dtype, H, EV_TAIL, a_xf)
    a_a1, a_a2 = place(chunk_bytes, 256), place(chunk_bytes, 0)
    a_rs, a_cf, a_rs2 = place(rM * 4, 256), place(rM * 4, 256), place(rM * 4, 0)

    load = xdy_loader(H)

    @T.macro
    def load_in(f_ub, slot_ub, c0):
        """A slot's chunk in fp32 (fp32 I/O: copied, so the chunk code is one for all dtypes)."""
        if wide:
            T.tile.cast(f_ub, slot_ub[0:rM, c0:c0 + bN])
        else:
            T.tile.add(f_ub, slot_ub[0:rM, c0:c0 + bN], 0.0)

    @T.macro
    def times_w(gf_ub, wf_ub, c0):
        for r in T.serial(rM):
            T.tile.mul(gf_ub[r:r + 1, 0:bN], gf_ub[r:r + 1, 0:bN], wf_ub[c0:c0 + bN])

    @T.macro
    def pass1(x_ub, g_ub, wf_ub, xf_ub, gf_ub, t_ub, a1_ub, a2_ub, c0, first):
        """Chunk c0's x^2 and g x into the per-column sums; the first chunk writes them. Each chunk
        starts after the last one's reads (vector instructions overlap: a WAR hazard without it)."""
        T.pipe_barrier("V")
        load_in(xf_ub, x_ub, c0)
        load_in(gf_ub, g_ub, c0)
        T.pipe_barrier("V")
        if first:
            T.tile.mul(a1_ub, xf_ub, xf_ub)
        else:
            T.tile.mul(t_ub, xf_ub, xf_ub)
        times_w(gf_ub, wf_ub, c0)
        T.pipe_barrier("V")
        if first:
            T.tile.mul(a2_ub, gf_ub, xf_ub)
        else:
            T.tile.mul(gf_ub, gf_ub, xf_ub)
            T.tile.add(a1_ub, a1_ub, t_ub)
            T.pipe_barrier("V")
            T.tile.add(a2_ub, a2_ub, gf_ub)

    @T.macro
    def compute(eps, x_ub, g_ub, wf_ub, dw_ub, xf_ub, gf_ub, t_ub, a1_ub, a2_ub, rs_ub, cf_ub, rs2_ub, rows):
        """The tile in a slot; `rows` of its rows are valid (all rM but in the tail)."""
        pass1(x_ub, g_ub, wf_ub, xf_ub, gf_ub, t_ub, a1_ub, a2_ub, 0, True)
        for c in T.serial(1, chunks):
            pass1(x_ub, g_ub, wf_ub, xf_ub, gf_ub, t_ub, a1_ub, a2_ub, c * bN, False)
        T.pipe_barrier("V")
        T.reduce_sum(a1_ub, rs_ub, -1)
        T.reduce_sum(a2_ub, cf_ub, -1)
        T.pipe_barrier("V")
        T.tile.mul(rs_ub, rs_ub, 1.0 / H)
        T.pipe_barrier("V")
        T.tile.add(rs_ub, rs_ub, eps)
        T.pipe_barrier("V")
        T.tile.rsqrt(rs_ub, rs_ub)  # rstd
        T.pipe_barrier("V")
        T.tile.mul(cf_ub, cf_ub, rs_ub)
        T.tile.add(rs2_ub, rs_ub, 0.0)
        T.pipe_barrier("V")
        T.tile.mul(cf_ub, cf_ub, rs_ub)
        T.pipe_barrier("V")
        T.tile.mul(cf_ub, cf_ub, rs_ub)
        T.pipe_barrier("V")
        T.tile.mul(cf_ub, cf_ub, 1.0 / H)  # coef = s2 * rstd^3 / H
        # Pass 2: dW partial and dx (over dy's chunk).
        for c in T.serial(chunks):
            T.pipe_barrier("V")
            load_in(xf_ub, x_ub, c * bN)
            load_in(gf_ub, g_ub, c * bN)
            T.pipe_barrier("V")
            T.tile.mul(t_ub, gf_ub, xf_ub)  # dy * x
            T.pipe_barrier("V")
            T.tile.row_expand_mul(xf_ub, xf_ub, cf_ub)  # x * coef
            times_w(gf_ub, wf_ub, c * bN)  # g
            T.tile.row_expand_mul(t_ub, t_ub, rs_ub)  # dy * x * rstd
            T.pipe_barrier("V")
            T.tile.row_expand_mul(gf_ub, gf_ub, rs2_ub)  # g * rstd
            for r in T.serial(rows):  # valid rows in order: a fixed sum order
                T.tile.add(dw_ub[c * bN:c * bN + bN], dw_ub[c * bN:c * bN + bN], t_ub[r:r + 1, 0:bN])
                T.pipe_barrier("V")
            T.pipe_barrier("V")
            if wide:
                T.tile.sub(gf_ub, gf_ub, xf_ub)
                T.pipe_barrier("V")
                T.tile.cast(g_ub[0:rM, c * bN:c * bN + bN], gf_ub, "CAST_RINT")
            else:
                T.tile.sub(g_ub[0:rM, c * bN:c * bN + bN], gf_ub, xf_ub)

    @T.macro
    def slot_step(X, DY, DX, eps, x_ub, g_ub, xn_ub, gn_ub, wf_ub, dw_ub, xf_ub, gf_ub, t_ub, a1_ub, a2_ub, rs_ub,
                  cf_ub, rs2_ub, i, s, worker, workers, mine):
        """Tile 2 i + s of this worker, in slot s; the next tile loads into the other slot."""
        if i * 2 + s < mine:
            if i * 2 + s + 1 < mine:  # the next tile loads while this one computes
                T.wait_flag("MTE3", "MTE2", 1 - s)
                load(X, DY, xn_ub, gn_ub, (worker + (i * 2 + s + 1) * workers) * rM, None)
                T.set_flag("MTE2", "V", 1 - s)
            T.wait_flag("MTE2", "V", s)
            compute(eps, x_ub, g_ub, wf_ub, dw_ub, xf_ub, gf_ub, t_ub, a1_ub, a2_ub, rs_ub, cf_ub, rs2_ub, rM)
            sync("V", "MTE3", s)
            T.copy(g_ub, DX[(worker + (i * 2 + s) * workers) * rM, 0])
            T.set_flag("MTE3", "MTE2", s)

    @T.prim_func
    def rms_norm_bwd(DY: T.Tensor((M, H), dtype), X: T.Tensor((M, H), dtype), W: T.Tensor((H,), dtype),
                     DX: T.Tensor((M, H), dtype), DWP: T.Tensor((2 * blocks, H), "float32"), eps: T.float32):
        with T.Kernel(num_blocks, is_npu=True) as (cid, vid):
            with T.Scope("V"):
                wf_ub = T.alloc_ub((H,), "float32", address=a_wf)  # W in fp32
                dw_ub = T.alloc_ub((H,), "float32", address=a_dw)  # this AIV's dW partial
                x0_ub = T.alloc_ub((rM, H), dtype, address=a_x[0])  # the tile slots of x and of dy
                x1_ub = T.alloc_ub((rM, H), dtype, address=a_x[1])
                g0_ub = T.alloc_ub((rM, H), dtype, address=a_g[0])  # (dx overwrites dy)
                g1_ub = T.alloc_ub((rM, H), dtype, address=a_g[1])
                xf_ub = T.alloc_ub((rM, bN), "float32", address=a_xf)  # x chunk
                gf_ub = T.alloc_ub((rM, bN), "float32", address=a_gf)  # dy, g, dx chunk
                t_ub = T.alloc_ub((rM, bN), "float32", address=a_t)  # x^2; dy x rstd
                a1_ub = T.alloc_ub((rM, bN), "float32", address=a_a1)  # sum x^2 per column
                a2_ub = T.alloc_ub((rM, bN), "float32", address=a_a2)  # sum g x per column
                rs_ub = T.alloc_ub((rM,), "float32", address=a_rs)  # rstd
                cf_ub = T.alloc_ub((rM,), "float32", address=a_cf)  # coef
                rs2_ub = T.alloc_ub((rM,), "float32", address=a_rs2)  # rstd beside gf_ub
                # W as loaded is dead once widened: it shares the chunk temporaries' bytes.
                load_weight_f32(W, wf_ub)
                T.tile.fill(dw_ub, 0.0)

                workers = num_blocks * 2
                worker = cid * 2 + vid
                full_tiles = M // rM
                mine = T.ceildiv(T.max(full_tiles - worker, 0), workers)
                T.set_flag("MTE3", "MTE2", 0)  # both slots start free
                T.set_flag("MTE3", "MTE2", 1)
                if mine > 0:
                    T.wait_flag("MTE3", "MTE2", 0)
                    load(X, DY, x0_ub, g0_ub, worker * rM, None)
                    T.set_flag("MTE2", "V", 0)
                # Tiles in pairs, so each slot's code and event ids are constants.
                for i in T.serial(T.ceildiv(mine, 2)):
                    slot_step(X, DY, DX, eps, x0_ub, g0_ub, x1_ub, g1_ub, wf_ub, dw_ub, xf_ub, gf_ub, t_ub, a1_ub,
                              a2_ub, rs_ub, cf_ub, rs2_ub, i, 0, worker, workers, mine)
                    slot_step(X, DY, DX, eps, x1_ub, g1_ub, x0_ub, g0_ub, wf_ub, dw_ub, xf_ub, gf_ub, t_ub, a1_ub,
                              a2_ub, rs_ub, cf_ub, rs2_ub, i, 1, worker, workers, mine)
                T.wait_flag("MTE3", "MTE2", 0)
                T.wait_flag("MTE3", "MTE2", 1)
                # The tail tile continues the round robin, in slot 0, zero-filled first; only its
                # valid rows enter the dW partial.
                tail = M % rM
                if tail > 0 and worker == full_tiles % workers:
                    sync("MTE3", "V", EV_TAIL)  # slot 0's last store has read it
                    T.tile.fill(x0_ub, 0.0)
                    T.tile.fill(g0_ub, 0.0)
                    sync("V", "MTE2", EV_TAIL)
                    load(X, DY, x0_ub, g0_ub, full_tiles * rM, tail)
                    sync("MTE2", "V", EV_TAIL)
                    compute(eps, x0_ub, g0_ub, wf_ub, dw_ub, xf_ub, gf_ub, t_ub, a1_ub, a2_ub, rs_ub, cf_ub, rs2_ub,
                            tail)
                    sync("V", "MTE3", EV_TAIL)
                    for j in T.serial(tail):
                        T.copy(g0_ub[j:j + 1, 0:H], DX[full_tiles * rM + j, 0])
                sync("V", "MTE3", EV_TAIL)
                T.copy(dw_ub, DWP[worker, 0])

    return rms_norm_bwd
