"""LayerNorm's backward kernel, whole-row schedule, in TileLang-Ascend syntax: the Python twin of
cann_ops_tilelang/norm/layer_norm_bwd_rows.cpp (the same IR for the same key, compared in
python/tests/test_opslib_layernorm.py). layer_norm_bwd_kernel (layer_norm.py) builds this one when
the key's chunk is 0 (whole rows in fp32).

RMSNorm's whole-row schedule (rms_norm_bwd_rows.py) with LayerNorm's arithmetic: x and dy loaded
once into a ring of S = 2A + 1 slots (A tiles ahead), widened once; with xc = x - mean and
g' = rstd dy w, per tile: sum x -> mean; xc; sum xc^2 -> rstd; dB partial += dy; dy *= rstd; dW
partial += dy xc (mul_add_dst); g' = dy w; sum g'; sum g' xc; dx = g' - sum(g') / H - xc sum(g' xc)
rstd^2 / H; narrow into the tile's dy slot. The mean and the axpy's factor come from the scalar
unit, rstd / sqrt(H) from two [rM] vector ops (W and the dW partial carry sqrt(H)); each sum of products is the first column quarter's product plus the others'
(mul_add_dst), then a reduce_sum. UB addresses explicit so the two sources of every vector
instruction start 256 bytes apart modulo 512 (no bank-group conflict, docs/calibration.md).
"""

import math

import tl_ascend.language as T
from tl_ascend.language.parser import PrimFunc

from ._rms_norm_parts import sync, weight_loader, widener
from ._ub import ub_placer

EV_IN, EV_OUT, EV_SCALAR, EV_TAIL = 0, 1, 2, 3
EV_IN2 = 4  # with two tiles in flight, the odd tiles' MTE2 -> V (a flag is a bit)


def layer_norm_bwd_rows_layout(dtype: str, H: int, rM: int, slots: int) -> dict:
    """layer_norm_bwd_rows_layout of layer_norm_bwd_rows.cpp: the UB addresses, in its order."""
    place = ub_placer()
    es = 4 if dtype == "float32" else 2
    tile, row32 = rM * H * es, rM * H * 4
    at = {}
    at["wf"] = place(H * 4, 0)
    at["dwb"] = place(2 * H * 4, 0)
    at["in"] = place(slots * tile, 0)
    at["xf"] = place(row32, 0)
    at["gf"] = place(row32, 256)
    at["pp"] = place(row32 // 4, 256)
    at["mu"] = place(rM * 4, 256)
    at["rs"] = place(rM * 4, 0)
    at["sg"] = place(rM * 4, 0)
    at["sx"] = place(rM * 4, 0)
    at["rt"] = place(rM * 4, 0)
    return at


def layer_norm_bwd_rows_kernel(dtype: str, hidden: int, rows_per_tile: int, chunk: int, blocks: int,
                               slots: int = 3) -> PrimFunc:
    """DY, X [M, H], W [H], DX [M, H], DWBP [2 * blocks, 2 * H] fp32 partials (dW | dB), eps.
    chunk: 0; slots: 2A + 1 (A tiles loaded ahead; fp32: 3)."""
    H, rM, q, S = hidden, rows_per_tile, hidden // 4, slots
    A = (S - 1) // 2
    wide = dtype != "float32"
    assert H % 32 == 0 and chunk == 0 and S % 2 == 1 and S >= 3 and (wide or S == 3), \
        f"layer_norm_bwd rows: H {H} chunk {chunk} slots {S}"
    inv_h, sqrt_h = 1.0 / H, math.sqrt(H)
    M = T.dynamic("M")
    num_blocks = T.min(blocks, T.ceildiv(M, rM))
    at = layer_norm_bwd_rows_layout(dtype, H, rM, S)
    prologue = list(range(A))
    load_weight_f32 = weight_loader(dtype, H, EV_TAIL, at["xf"])

    # The tile as loaded into fp32; dx's buffer (fp32: gf) free once its last store is done.
    widen = widener(dtype, EV_OUT)

    @T.macro
    def product_sum(pp_ub, a_ub, b_ub, out_ub):
        """The sum of each row of a * b into out: the first quarters' product, the others' added."""
        T.tile.mul(pp_ub, a_ub[0:rM, 0:q], b_ub[0:rM, 0:q])
        for qi in [1, 2, 3]:  # a list: unrolled at build time (range() is a loop)
            T.pipe_barrier("V")
            T.tile.mul_add_dst(pp_ub, a_ub[0:rM, qi * q:(qi + 1) * q], b_ub[0:rM, qi * q:(qi + 1) * q])
        T.pipe_barrier("V")
        T.reduce_sum(pp_ub, out_ub, -1)

    @T.macro
    def compute(eps, xf_ub, gf_ub, pp_ub, wf_ub, dwb_ub, mu_ub, rs_ub, sg_ub, sx_ub, rt_ub, dx_ub, rows):
        """The rest of the tile; `rows` of its rows are valid (all rM but in the tail)."""
        T.pipe_barrier("V")
        T.reduce_sum(xf_ub, mu_ub, -1)  # sum x
        for r in T.serial(rows):  # dB += dy, valid rows in order
            T.tile.add(dwb_ub[H:2 * H], dwb_ub[H:2 * H], gf_ub[r:r + 1, 0:H])
            T.pipe_barrier("V")
        T.pipe_barrier("V")  # the sums are read by vector instructions too
        sync("V", "S", EV_SCALAR)
        for r in T.serial(rM):  # xc = x - sum x / H
            T.tile.add(xf_ub[r:r + 1, 0:H], xf_ub[r:r + 1, 0:H], -(mu_ub[r] * inv_h))
        T.pipe_barrier("V")
        product_sum(pp_ub, xf_ub, xf_ub, rs_ub)  # sum xc^2
        T.pipe_barrier("V")
        # rt = rsqrt(sum xc^2 + H eps) = rstd / sqrt(H): W and the dW partial carry sqrt(H).
        T.tile.add(rt_ub, rs_ub, eps * float(H))
        T.pipe_barrier("V")
        T.tile.rsqrt(rt_ub, rt_ub)
        T.pipe_barrier("V")
        T.tile.row_expand_mul(gf_ub, gf_ub, rt_ub)  # dy rstd / sqrt(H)
        T.pipe_barrier("V")
        for r in T.serial(rows):  # dW += dy rstd xc, valid rows in order
            T.tile.mul_add_dst(dwb_ub[0:H], gf_ub[r:r + 1, 0:H], xf_ub[r:r + 1, 0:H])
            T.pipe_barrier("V")
        T.pipe_barrier("V")
        for r in T.serial(rM):  # g' = dy rstd w
            T.tile.mul(gf_ub[r:r + 1, 0:H], gf_ub[r:r + 1, 0:H], wf_ub)
        T.pipe_barrier("V")
        T.reduce_sum(gf_ub, sg_ub, -1)  # sum g', beside the product
        product_sum(pp_ub, gf_ub, xf_ub, sx_ub)  # sum g' xc
        T.tile.mul(sg_ub, sg_ub, inv_h)
        T.pipe_barrier("V")
        T.tile.row_expand_sub(gf_ub, gf_ub, sg_ub)  # g' - mean(g'), beside the reduction
        T.pipe_barrier("V")  # the factors are read by vector instructions too
        sync("V", "S", EV_SCALAR)
        for r in T.serial(rM):  # dx = ... - coef xc, coef = sum(g' xc) / (sum xc^2 + H eps)
            T.tile.axpy(gf_ub[r:r + 1, 0:H], xf_ub[r:r + 1, 0:H], -(sx_ub[r] / (rs_ub[r] + eps * float(H))))
        if wide:
            T.pipe_barrier("V")
            T.wait_flag("MTE3", "V", EV_OUT)
            T.tile.cast(dx_ub, gf_ub, "CAST_RINT")

    @T.prim_func
    def layer_norm_bwd(DY: T.Tensor((M, H), dtype), X: T.Tensor((M, H), dtype), W: T.Tensor((H,), dtype),
                       DX: T.Tensor((M, H), dtype), DWBP: T.Tensor((2 * blocks, 2 * H), "float32"),
                       eps: T.float32):
        # x and dy are read once: past L2, so only dx counts in the footprint (docs/ops.md).
        T.annotate_l2_cache({X: "disable", DY: "disable"})
        with T.Kernel(num_blocks, is_npu=True) as (cid, vid):
            with T.Scope("V"):
                wf_ub = T.alloc_ub((H,), "float32", address=at["wf"])  # W in fp32
                dwb_ub = T.alloc_ub((2 * H,), "float32", address=at["dwb"])  # this AIV's dW | dB partial
                in_ub = T.alloc_ub((S * rM, H), dtype, address=at["in"])  # S input slots
                xf_ub = T.alloc_ub((rM, H), "float32", address=at["xf"])  # x, then xc
                gf_ub = T.alloc_ub((rM, H), "float32", address=at["gf"])  # dy, g', dx
                pp_ub = T.alloc_ub((rM, q), "float32", address=at["pp"])  # the products' quarter row
                mu_ub = T.alloc_ub((rM,), "float32", address=at["mu"])  # sum x
                rs_ub = T.alloc_ub((rM,), "float32", address=at["rs"])  # sum xc^2
                sg_ub = T.alloc_ub((rM,), "float32", address=at["sg"])  # sum g', then / H
                sx_ub = T.alloc_ub((rM,), "float32", address=at["sx"])  # sum g' xc
                rt_ub = T.alloc_ub((rM,), "float32", address=at["rt"])  # rstd / sqrt(H)
                # W as loaded is dead once widened: it shares x's fp32 bytes.
                load_weight_f32(W, wf_ub)
                T.pipe_barrier("V")
                T.tile.mul(wf_ub, wf_ub, sqrt_h)  # dy is scaled by rstd / sqrt(H)
                T.tile.fill(dwb_ub, 0.0)

                # A ring of S = 2A + 1 slots: tile i's x in slot 2i mod S, its dy (then dx) in 2i + 1
                # mod S; tile i + A's dy, then x, load while tile i computes (A = 1: RMSNorm's order).
                workers = num_blocks * 2
                worker = cid * 2 + vid
                full_tiles = M // rM
                mine = T.ceildiv(T.max(full_tiles - worker, 0), workers)
                T.set_flag("MTE3", "V", EV_OUT)  # dx's buffer starts free
                for j in prologue:  # tiles 0 .. A - 1, unrolled
                    if mine > j:
                        T.copy(X[(worker + j * workers) * rM, 0], in_ub[2 * j * rM:(2 * j + 1) * rM, 0:H])
                        T.copy(DY[(worker + j * workers) * rM, 0], in_ub[(2 * j + 1) * rM:(2 * j + 2) * rM, 0:H])
                        T.set_flag("MTE2", "V", EV_IN if A == 1 else j % 2 * EV_IN2)
                if mine > A:
                    if A > 1:
                        T.set_flag("MTE3", "MTE2", EV_OUT)  # the last slot starts free
                    else:
                        T.copy(X[(worker + 1 * workers) * rM, 0], in_ub[2 * rM:3 * rM, 0:H])
                for i in T.serial(mine):
                    xo = i * 2 % S * rM  # this tile's x slot, then dy of i + A
                    go = (i * 2 + 1) % S * rM  # its dy slot, then dx
                    if A == 1:
                        T.wait_flag("MTE2", "V", EV_IN)
                    else:
                        T.wait_flag("MTE2", "V", i % 2 * EV_IN2)
                    widen(in_ub[xo:xo + rM, 0:H], in_ub[go:go + rM, 0:H], xf_ub, gf_ub)
                    if i + A < mine:  # tile i + A's dy (and x) load while this one computes
                        sync("V", "MTE2", EV_IN)
                        T.copy(DY[(worker + (i + A) * workers) * rM, 0], in_ub[xo:xo + rM, 0:H])
                        if A > 1:  # x into the slot tile i - 1's dx left, once stored
                            T.wait_flag("MTE3", "MTE2", EV_OUT)
                            xn = (i * 2 + (S - 1)) % S * rM
                            T.copy(X[(worker + (i + A) * workers) * rM, 0], in_ub[xn:xn + rM, 0:H])
                        if A == 1:
                            T.set_flag("MTE2", "V", EV_IN)  # tile i + A's x and dy landed
                        else:
                            T.set_flag("MTE2", "V", (i + A) % 2 * EV_IN2)
                        if not wide:
                            if i + 2 < mine:
                                T.copy(X[(worker + (i + 2) * workers) * rM, 0], in_ub[go:go + rM, 0:H])
                    if wide:
                        compute(eps, xf_ub, gf_ub, pp_ub, wf_ub, dwb_ub, mu_ub, rs_ub, sg_ub, sx_ub, rt_ub,
                                in_ub[go:go + rM, 0:H], rM)
                        sync("V", "MTE3", EV_OUT)
                        T.copy(in_ub[go:go + rM, 0:H], DX[(worker + i * workers) * rM, 0])
                    else:
                        compute(eps, xf_ub, gf_ub, pp_ub, wf_ub, dwb_ub, mu_ub, rs_ub, sg_ub, sx_ub, rt_ub, gf_ub, rM)
                        sync("V", "MTE3", EV_OUT)
                        T.copy(gf_ub, DX[(worker + i * workers) * rM, 0])
                    T.set_flag("MTE3", "V", EV_OUT)
                    if A > 1:
                        if i + 1 + A < mine:
                            T.set_flag("MTE3", "MTE2", EV_OUT)
                    elif wide:
                        if i + 2 < mine:  # x of tile i + 2 into the dy slot, once dx is stored
                            sync("MTE3", "MTE2", EV_OUT)
                            T.copy(X[(worker + (i + 2) * workers) * rM, 0], in_ub[go:go + rM, 0:H])
                T.wait_flag("MTE3", "V", EV_OUT)
                # The tail tile (M % rM rows) continues the round robin; its rows past M are
                # zero-filled first and only its valid rows enter the partials.
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
                        compute(eps, xf_ub, gf_ub, pp_ub, wf_ub, dwb_ub, mu_ub, rs_ub, sg_ub, sx_ub, rt_ub,
                                in_ub[rM:2 * rM, 0:H], tail)
                        sync("V", "MTE3", EV_TAIL)
                        for j in T.serial(tail):  # dx's valid rows (16-bit: in the dy slot)
                            T.copy(in_ub[rM + j:rM + j + 1, 0:H], DX[full_tiles * rM + j, 0])
                    else:
                        compute(eps, xf_ub, gf_ub, pp_ub, wf_ub, dwb_ub, mu_ub, rs_ub, sg_ub, sx_ub, rt_ub, gf_ub, tail)
                        sync("V", "MTE3", EV_TAIL)
                        for j in T.serial(tail):
                            T.copy(gf_ub[j:j + 1, 0:H], DX[full_tiles * rM + j, 0])
                T.pipe_barrier("V")
                T.tile.mul(dwb_ub[0:H], dwb_ub[0:H], sqrt_h)  # its terms' 1 / sqrt(H)
                sync("V", "MTE3", EV_TAIL)
                T.copy(dwb_ub, DWBP[worker, 0])

    return layer_norm_bwd
