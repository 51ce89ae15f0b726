"""RMSNorm's backward kernel, whole-row schedule, in TileLang-Ascend syntax: the Python twin of
cann_ops_tilelang/norm/rms_norm_bwd_rows.cpp (the same IR for the same key, compared in
python/tests/test_opslib_twin.py). rms_norm_bwd_kernel (rms_norm.py) builds this one when the
key's `resident` is set and its chunk is 0 (no chunks: whole rows in fp32).

Each rM-row tile of x and dy is loaded into UB once, into three slots in turn: tile i's x in slot
2i mod 3, its dy in 2i + 1 mod 3. Once tile i is widened to fp32 (fp32 I/O: copied), its x slot
takes tile i + 1's dy at once and its dy slot takes its 16-bit dx (fp32: dx stays in the fp32 dy
buffer) and, once that is stored, tile i + 2's x: x lands a tile early. With p = dy x and g = dy w, per tile: x^2 -> tree -> s1, rstd =
rsqrt(s1 / H + eps); p, this AIV's fp32 dW partial += p rstd (axpy, the valid rows in order);
g x -> tree -> s2; dx = g rstd - (s2 rstd^3 / H) x (axpy), the factors read from UB by the
scalar unit. Each sum is an in-place tree over the products' two column halves down to at most
512 columns, then one reduce_sum. UB addresses explicit so the two sources of every vector
instruction start 256 bytes apart modulo 512 (no bank-group conflict, docs/calibration.md).
"""

import tl_ascend.language as T
from tl_ascend.language.parser import PrimFunc

from ._rms_norm_parts import sync, weight_loader, widener
from ._ub import ub_placer

EV_IN, EV_OUT, EV_SCALAR, EV_TAIL = 0, 1, 2, 3


def _pair_tree(rM: int, h: int):
    """The macro pair_tree_sum(a, b, out) of rms_norm_bwd_resident.cpp: the sum of each row of the
    [rM, h] halves a and b (256 bytes apart) into out [rM], in place: each level adds the halves'
    first halves into a's and their second halves into b's (the next pair: a's first half, b's
    second half); the last pair is added into a and reduced. Ends with the reduction issued."""
    levels, w, ob = [], h, 0
    while w % 16 == 0 and w > 512:
        levels.append((w // 2, ob))
        ob += w // 2
        w //= 2

    @T.macro
    def pair_tree_sum(a_ub, b_ub, out_ub):
        for lv in levels:
            T.tile.add(a_ub[0:rM, 0:lv[0]], a_ub[0:rM, 0:lv[0]], b_ub[0:rM, lv[1]:lv[1] + lv[0]])
            T.tile.add(b_ub[0:rM, lv[1] + lv[0]:lv[1] + 2 * lv[0]], a_ub[0:rM, lv[0]:2 * lv[0]],
                       b_ub[0:rM, lv[1] + lv[0]:lv[1] + 2 * lv[0]])
            T.pipe_barrier("V")
        T.tile.add(a_ub[0:rM, 0:w], a_ub[0:rM, 0:w], b_ub[0:rM, ob:ob + w])
        T.pipe_barrier("V")
        T.reduce_sum(a_ub[0:rM, 0:w], out_ub, -1)

    return pair_tree_sum


def rms_norm_bwd_rows_kernel(dtype: str, hidden: int, rows_per_tile: int, chunk: int,
                             blocks: int) -> PrimFunc:
    """DY, X [M, H], W [H], DX [M, H], DWP [2 * blocks, H] fp32 partials, eps. chunk: 0."""
    H, rM, h = hidden, rows_per_tile, hidden // 2
    assert H % 16 == 0 and chunk == 0, f"rms_norm_bwd rows: H {H} chunk {chunk}"
    wide = dtype != "float32"
    M = T.dynamic("M")
    num_blocks = T.min(blocks, T.ceildiv(M, rM))
    es = 4 if dtype == "float32" else 2
    tile, row32 = rM * H * es, rM * H * 4
    place = ub_placer()

    a_wf, a_dw = place(H * 4, 0), place(H * 4, 256)
    a_in = place(3 * tile, 0)
    a_xf, a_gf = place(row32, 0), place(row32, 256)
    load_weight_f32 = weight_loader(dtype, H, EV_TAIL, a_xf)
    a_pa, a_pb = place(row32 // 2, 0), place(row32 // 2, 256)
    a_rs, a_cf = place(rM * 4, 0), place(rM * 4, 0)
    pair_tree_sum = _pair_tree(rM, h)

    # The tile as loaded into fp32; dx's buffer (fp32: gf) free once its last store is done.
    widen = widener(dtype, EV_OUT)

    @T.macro
    def compute(eps, xf_ub, gf_ub, a_ub, b_ub, wf_ub, dw_ub, rs_ub, cf_ub, dx_ub, rows):
        """The rest of the tile; `rows` of its rows are valid (all rM but in the tail)."""
        T.pipe_barrier("V")
        T.tile.mul(a_ub, xf_ub[0:rM, 0:h], xf_ub[0:rM, 0:h])  # x^2
        T.tile.mul(b_ub, xf_ub[0:rM, h:H], xf_ub[0:rM, h:H])
        T.pipe_barrier("V")
        pair_tree_sum(a_ub, b_ub, rs_ub)  # s1
        T.pipe_barrier("V")
        T.tile.mul(rs_ub, rs_ub, 1.0 / H)
        T.tile.mul(a_ub, gf_ub[0:rM, 0:h], xf_ub[0:rM, 0:h])  # p = dy x
        T.tile.mul(b_ub, gf_ub[0:rM, h:H], xf_ub[0:rM, h:H])
        T.pipe_barrier("V")
        T.tile.add(rs_ub, rs_ub, eps)
        T.pipe_barrier("V")
        T.tile.rsqrt(rs_ub, rs_ub)  # rstd, read by the scalar unit from here on
        T.pipe_barrier("V")  # the factors are read by vector instructions too
        sync("V", "S", EV_SCALAR)
        for r in T.serial(rM):  # g = dy w
            T.tile.mul(gf_ub[r:r + 1, 0:H], gf_ub[r:r + 1, 0:H], wf_ub)
        for r in T.serial(rows):  # dW += p rstd, valid rows in order
            T.tile.axpy(dw_ub[0:h], a_ub[r:r + 1, 0:h], rs_ub[r])
            T.tile.axpy(dw_ub[h:H], b_ub[r:r + 1, 0:h], rs_ub[r])
            T.pipe_barrier("V")
        T.pipe_barrier("V")
        T.tile.mul(a_ub, gf_ub[0:rM, 0:h], xf_ub[0:rM, 0:h])  # g x
        T.tile.mul(b_ub, gf_ub[0:rM, h:H], xf_ub[0:rM, h:H])
        T.pipe_barrier("V")
        for r in T.serial(rM):  # g rstd, beside the tree
            T.tile.mul(gf_ub[r:r + 1, 0:H], gf_ub[r:r + 1, 0:H], rs_ub[r])
        pair_tree_sum(a_ub, b_ub, cf_ub)  # s2
        T.pipe_barrier("V")  # the factors are read by vector instructions too
        sync("V", "S", EV_SCALAR)
        for r in T.serial(rM):  # dx = g rstd - coef x, coef = s2 rstd^3 / H
            T.tile.axpy(gf_ub[r:r + 1, 0:H], xf_ub[r:r + 1, 0:H],
                        -(cf_ub[r] * rs_ub[r] * rs_ub[r] * rs_ub[r] * (1.0 / H)))
        if wide:
            T.pipe_barrier("V")
            T.wait_flag("MTE3", "V", EV_OUT)
            T.tile.cast(dx_ub, gf_ub, "CAST_RINT")

    @T.prim_func
    def rms_norm_bwd(DY: T.Tensor((M, H), dtype), X: T.Tensor((M, H), dtype), W: T.Tensor((H,), dtype),
                     DX: T.Tensor((M, H), dtype), DWP: T.Tensor((2 * blocks, H), "float32"), eps: T.float32):
        # x and dy are read once: past L2, so only dx counts in the footprint (docs/ops.md).
        T.annotate_l2_cache({X: "disable", DY: "disable"})
        with T.Kernel(num_blocks, is_npu=True) as (cid, vid):
            with T.Scope("V"):
                wf_ub = T.alloc_ub((H,), "float32", address=a_wf)  # W in fp32
                dw_ub = T.alloc_ub((H,), "float32", address=a_dw)  # this AIV's dW partial
                in_ub = T.alloc_ub((3 * rM, H), dtype, address=a_in)  # three input slots
                xf_ub = T.alloc_ub((rM, H), "float32", address=a_xf)  # the tile in fp32
                gf_ub = T.alloc_ub((rM, H), "float32", address=a_gf)
                pa_ub = T.alloc_ub((rM, h), "float32", address=a_pa)  # the products'
                pb_ub = T.alloc_ub((rM, h), "float32", address=a_pb)  # column halves
                rs_ub = T.alloc_ub((rM,), "float32", address=a_rs)  # s1, then rstd
                cf_ub = T.alloc_ub((rM,), "float32", address=a_cf)  # s2
                # W as loaded is dead once widened: it shares x's fp32 bytes.
                load_weight_f32(W, wf_ub)
                T.tile.fill(dw_ub, 0.0)

                # Slots in turn: x of a tile a tile early, dy between two tiles' widening.
                workers = num_blocks * 2
                worker = cid * 2 + vid
                full_tiles = M // rM
                mine = T.ceildiv(T.max(full_tiles - worker, 0), workers)
                T.set_flag("MTE3", "V", EV_OUT)  # dx's buffer starts free
                if mine > 0:
                    T.copy(X[worker * rM, 0], in_ub[0:rM, 0:H])
                    T.copy(DY[worker * rM, 0], in_ub[rM:2 * rM, 0:H])
                    T.set_flag("MTE2", "V", EV_IN)
                    if mine > 1:
                        T.copy(X[(worker + 1 * workers) * rM, 0], in_ub[2 * rM:3 * rM, 0:H])
                for i in T.serial(mine):
                    xo = i * 2 % 3 * rM  # this tile's x slot, then dy of i + 1
                    go = (i * 2 + 1) % 3 * rM  # its dy slot, then x of i + 2
                    T.wait_flag("MTE2", "V", EV_IN)
                    widen(in_ub[xo:xo + rM, 0:H], in_ub[go:go + rM, 0:H], xf_ub, gf_ub)
                    T.set_flag("V", "MTE2", EV_IN)
                    if i + 1 < mine:  # the next tile's dy loads while this one computes
                        T.wait_flag("V", "MTE2", EV_IN)
                        T.copy(DY[(worker + (i + 1) * workers) * rM, 0], in_ub[xo:xo + rM, 0:H])
                        T.set_flag("MTE2", "V", EV_IN)  # tile i + 1's x and dy have landed
                        if not wide:
                            if i + 2 < mine:
                                T.copy(X[(worker + (i + 2) * workers) * rM, 0], in_ub[go:go + rM, 0:H])
                    if wide:
                        compute(eps, xf_ub, gf_ub, pa_ub, pb_ub, wf_ub, dw_ub, rs_ub, cf_ub, in_ub[go:go + rM, 0:H],
                                rM)
                        sync("V", "MTE3", EV_OUT)
                        T.copy(in_ub[go:go + rM, 0:H], DX[(worker + i * workers) * rM, 0])
                    else:
                        compute(eps, xf_ub, gf_ub, pa_ub, pb_ub, wf_ub, dw_ub, rs_ub, cf_ub, gf_ub, rM)
                        sync("V", "MTE3", EV_OUT)
                        T.copy(gf_ub, DX[(worker + i * workers) * rM, 0])
                    T.set_flag("MTE3", "V", EV_OUT)
                    if wide:
                        if i + 2 < mine:  # x of tile i + 2 into the dy slot, once dx is stored
                            sync("MTE3", "MTE2", EV_OUT)
                            T.copy(X[(worker + (i + 2) * workers) * rM, 0], in_ub[go:go + rM, 0:H])
                if mine > 0:
                    T.wait_flag("V", "MTE2", EV_IN)
                T.wait_flag("MTE3", "V", EV_OUT)
                # The tail tile (M % rM rows) continues the round robin; its rows past M are
                # zero-filled first and only its valid rows enter the dW partial.
                tail = M % rM
                if tail > 0 and worker == full_tiles % workers:
                    T.set_flag("MTE3", "V", EV_OUT)
                    T.pipe_barrier("V")
                    T.tile.fill(in_ub[0:rM, 0:H], 0.0)
                    T.tile.fill(in_ub[rM:2 * rM, 0:H], 0.0)
                    sync("V", "MTE2", EV_TAIL)
                    for j in T.serial(tail):
                        T.copy(X[full_tiles * rM + j, 0], in_ub[j:j + 1, 0:H])
                    for j in T.serial(tail):
                        T.copy(DY[full_tiles * rM + j, 0], in_ub[rM + j:rM + j + 1, 0:H])
                    sync("MTE2", "V", EV_TAIL)
                    widen(in_ub[0:rM, 0:H], in_ub[rM:2 * rM, 0:H], xf_ub, gf_ub)
                    if wide:
                        compute(eps, xf_ub, gf_ub, pa_ub, pb_ub, wf_ub, dw_ub, rs_ub, cf_ub, in_ub[rM:2 * rM, 0:H],
                                tail)
                        sync("V", "MTE3", EV_TAIL)
                        for j in T.serial(tail):  # dx's valid rows (16-bit: in the dy slot)
                            T.copy(in_ub[rM + j:rM + j + 1, 0:H], DX[full_tiles * rM + j, 0])
                    else:
                        compute(eps, xf_ub, gf_ub, pa_ub, pb_ub, wf_ub, dw_ub, rs_ub, cf_ub, gf_ub, tail)
                        sync("V", "MTE3", EV_TAIL)
                        for j in T.serial(tail):
                            T.copy(gf_ub[j:j + 1, 0:H], DX[full_tiles * rM + j, 0])
                sync("V", "MTE3", EV_TAIL)
                T.copy(dw_ub, DWP[worker, 0])

    return rms_norm_bwd
