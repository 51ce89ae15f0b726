"""Softmax's split backward schedule in TileLang-Ascend syntax: the Python twin of
cann_ops_tilelang/softmax/softmax_split.cpp (the same IR for the same key, compared in
python/tests/test_opslib_softmax.py). softmax_kernel (softmax.py) builds this one when the key's
`split` is set: a 16-bit backward whose rows are larger than UB but whose half row of one input fits.

The two AIVs of a block share each row, AIV v its columns [v N / 2, (v + 1) N / 2): each holds its half
of one input resident in UB while the other streams through three chunk slots (the load of the step
after next issued before this step's compute), so the resident input is read once. The halves' sums
meet through a GM workspace and a mode-1 cross-core flag, added in the same order on both AIVs.

  softmax      resident y; pass 1 s = sum(dy y) over dy's chunks, pass 2 dx = (dy - s) y (dy read twice)
  log_softmax  resident dy; pass 1 s = sum(dy) from UB, pass 2 dx = dy - s exp(y) (each read once)

Events: the slots' ids 0-2 as softmax_streamed.py's; the resident half id 3 (V -> MTE2 after a row's last
step, then the next row's load in one copy, MTE2 -> V at that row's first step); the
exchange id 4 (V -> MTE3, MTE2 -> V) and cross flag 0; log-softmax's -s V -> S id 5.
"""

import math

import tl_ascend.language as T
from tl_ascend.language.parser import PrimFunc

from ._ub import ub_placer
from .softmax_resident import _sync

SLOTS = 3  # chunk slots: two loads in flight beside the compute
EV_RES, EV_SUM, EV_NEG = 3, 4, 5
CROSS_ID = 0  # the halves' rendezvous (mode 1)


def softmax_split_kernel(dtype: str, cols: int, chunk: int, blocks: int, log: bool) -> PrimFunc:
    """Y [M, N], DY [M, N] -> DX [M, N]."""
    N, bN = cols, chunk
    H, h = N // 2, bN // 2
    C = H // bN
    spr = C if log else 2 * C  # steps per row
    es = 2
    M = T.dynamic("M")
    num_blocks = T.min(blocks, M)

    place = ub_placer()
    a_res = place(H * es, 0)
    a_slots = [place(bN * es, 256) for _ in range(SLOTS)]
    a_e0, a_e1 = place(h * 4, 0), place(h * 4, 256)
    a_r0, a_r1 = place(h * 4, 256), place(h * 4, 0)
    a_st = [place(4, r) for r in [0, 256, 256, 0]]  # s, cs, s0, s1
    a_pw = place(32, 0)
    a_pr = place(64, 0)

    def gm_grid(w: int) -> tuple:
        """A copy of w columns splits where it starts off the 512-byte grid (softmax_streamed.py)."""
        g = math.gcd(math.gcd(N * es, H * es), math.gcd(w * es, 512))
        return g, [(r, (512 - r) % 512 // es) for r in range(0, 512, g)]

    g_res, heads_res = gm_grid(H)
    g_chk, heads_chk = gm_grid(bN)

    @T.macro
    def load_res(RES, res, row, col):
        if g_res == 512:
            T.copy(RES[row, col], res[0:1, 0:H])
        else:
            for r, hd in heads_res:
                if (row * N + col) * es % 512 == r:
                    if hd > 0:
                        T.copy(RES[row, col], res[0:1, 0:hd])
                    T.copy(RES[row, col + hd], res[0:1, hd:H])

    @T.macro
    def gm_load(src, row, col, ub):
        if g_chk == 512:
            T.copy(src[row, col], ub[0:1, 0:bN])
        else:
            for r, hd in heads_chk:
                if (row * N + col) * es % 512 == r:
                    if hd > 0:
                        T.copy(src[row, col], ub[0:1, 0:hd])
                    T.copy(src[row, col + hd], ub[0:1, hd:bN])

    @T.macro
    def gm_store(ub, dst, row, col):
        if g_chk == 512:
            T.copy(ub[0:1, 0:bN], dst[row, col])
        else:
            for r, hd in heads_chk:
                if (row * N + col) * es % 512 == r:
                    if hd > 0:
                        T.copy(ub[0:1, 0:hd], dst[row, col])
                    T.copy(ub[0:1, hd:bN], dst[row, col + hd])

    @T.macro
    def widen_res(res, hv, ch):
        T.tile.cast(hv["r0"], res[0:1, ch * bN:ch * bN + h])
        T.tile.cast(hv["r1"], res[0:1, ch * bN + h:ch * bN + h + h])

    @T.macro
    def widen(x, lo, hi):
        T.tile.cast(lo, x[0:1, 0:h])
        T.tile.cast(hi, x[0:1, h:bN])

    @T.macro
    def narrow(x, lo, hi):
        T.tile.cast(x[0:1, 0:h], lo, "CAST_RINT")
        T.tile.cast(x[0:1, h:bN], hi, "CAST_RINT")

    @T.macro
    def pass1_res(res, hv, st, ch, first):
        """log_softmax: chunk ch's sum of the resident dy into s."""
        s = st["s"]
        T.pipe_barrier("V")
        if first:
            T.tile.fill(s, 0.0)
        widen_res(res, hv, ch)
        T.pipe_barrier("V")
        T.tile.add(hv["r0"], hv["r0"], hv["r1"])
        T.pipe_barrier("V")
        T.reduce_sum(hv["r0"], st["cs"], -1)
        T.pipe_barrier("V")
        T.tile.add(s, s, st["cs"])

    @T.macro
    def pass1_slot(res, slot, hv, st, ch, first):
        """softmax: chunk ch's sum of dy y (dy in the slot, y resident) into s."""
        s = st["s"]
        T.pipe_barrier("V")
        if first:
            T.tile.fill(s, 0.0)
        widen_res(res, hv, ch)
        widen(slot, hv["e0"], hv["e1"])
        T.pipe_barrier("V")
        T.tile.mul(hv["r0"], hv["r0"], hv["e0"])
        T.tile.mul(hv["r1"], hv["r1"], hv["e1"])
        T.pipe_barrier("V")
        T.tile.add(hv["r0"], hv["r0"], hv["r1"])
        T.pipe_barrier("V")
        T.reduce_sum(hv["r0"], st["cs"], -1)
        T.pipe_barrier("V")
        T.tile.add(s, s, st["cs"])

    @T.macro
    def exchange(ws, st, cid, vid, j):
        """The row's sum from both halves, added in the same order on both AIVs."""
        s = st["s"]
        T.pipe_barrier("V")
        T.tile.add(st["pw"][0:1], s, 0.0)
        _sync("V", "MTE3", EV_SUM)
        T.copy(st["pw"], ws[((cid * 2 + j % 2) * 2 + vid) * 8])
        T.set_cross_flag("MTE3", CROSS_ID, mode=1)
        T.wait_cross_flag(CROSS_ID)
        T.copy(ws[(cid * 2 + j % 2) * 16], st["pr"])
        _sync("MTE2", "V", EV_SUM)
        T.tile.add(s, st["pr"][0:1], st["pr"][8:9])
        T.pipe_barrier("V")
        if not log:
            T.tile.add(st["s0"], s, 0.0)
            T.tile.add(st["s1"], s, 0.0)
        else:  # -s, read by the scalar unit in each pass-2 step (Axpy's alpha)
            T.tile.mul(st["s0"], s, -1.0)
            _sync("V", "S", EV_NEG)

    @T.macro
    def pass2(res, slot, hv, st, ch):
        T.pipe_barrier("V")
        widen_res(res, hv, ch)
        widen(slot, hv["e0"], hv["e1"])
        T.pipe_barrier("V")
        if not log:  # (dy - s) y: dy streamed (e), y resident (r)
            T.tile.row_expand_sub(hv["e0"], hv["e0"], st["s0"])
            T.tile.row_expand_sub(hv["e1"], hv["e1"], st["s1"])
            T.pipe_barrier("V")
            T.tile.mul(hv["e0"], hv["e0"], hv["r0"])
            T.tile.mul(hv["e1"], hv["e1"], hv["r1"])
            T.pipe_barrier("V")
            narrow(slot, hv["e0"], hv["e1"])
        else:  # dy - s exp(y): y streamed (e), dy resident (r); one Axpy a half
            ns = st["s0"][0]  # a let: the scalar load at a cycle of its own
            T.tile.exp(hv["e0"], hv["e0"])
            T.tile.exp(hv["e1"], hv["e1"])
            T.pipe_barrier("V")
            T.tile.axpy(hv["r0"], hv["e0"], ns)
            T.tile.axpy(hv["r1"], hv["e1"], ns)
            T.pipe_barrier("V")
            narrow(slot, hv["r0"], hv["r1"])

    @T.macro
    def second(RES, DX, ws, res, slot, hv, st, n, sl, cid, vid, mine):
        """A pass-2 step (the exchange before a row's first), then its store."""
        if log:
            if n % spr == 0:
                for p in T.serial(C):
                    pass1_res(res, hv, st, p, p == 0)
                exchange(ws, st, cid, vid, n // spr)
            pass2(res, slot, hv, st, n % spr)
        else:
            if n % spr == C:
                exchange(ws, st, cid, vid, n // spr)
            pass2(res, slot, hv, st, n % spr - C)
        if n % spr == spr - 1:  # the resident half is read: the next row's loads over it
            if n // spr + 1 < mine:
                _sync("V", "MTE2", EV_RES)
                load_res(RES, res, cid + (n // spr + 1) * num_blocks, vid * H)
                T.set_flag("MTE2", "V", EV_RES)
        _sync("V", "MTE3", sl)
        if log:
            gm_store(slot, DX, cid + n // spr * num_blocks, vid * H + n % spr * bN)
        else:
            gm_store(slot, DX, cid + n // spr * num_blocks, vid * H + (n % spr - C) * bN)

    @T.macro
    def work(RES, DX, ws, res, slot, hv, st, n, sl, cid, vid, mine):
        if n % spr == 0:
            T.wait_flag("MTE2", "V", EV_RES)
        if log:
            second(RES, DX, ws, res, slot, hv, st, n, sl, cid, vid, mine)
        else:
            if n % spr < C:
                pass1_slot(res, slot, hv, st, n % spr, n % spr == 0)
                _sync("V", "MTE3", sl)  # the slot is read
            else:
                second(RES, DX, ws, res, slot, hv, st, n, sl, cid, vid, mine)

    @T.macro
    def step(RES, STR, DX, ws, res, slots, hv, st, n, sl, ahead, cid, vid, mine):
        """Step n in slot sl; the step after next loads into slot `ahead`."""
        if n < mine * spr:
            if n + (SLOTS - 1) < mine * spr:
                T.wait_flag("MTE3", "MTE2", ahead)
                gm_load(STR, cid + (n + (SLOTS - 1)) // spr * num_blocks, vid * H + (n + (SLOTS - 1)) % C * bN,
                        slots[ahead])
                T.set_flag("MTE2", "V", ahead)
            T.wait_flag("MTE2", "V", sl)
            work(RES, DX, ws, res, slots[sl], hv, st, n, sl, cid, vid, mine)
            T.set_flag("MTE3", "MTE2", sl)

    slot_idx = list(range(SLOTS))  # a Python list: unrolled while parsing
    st_names = ["s", "cs", "s0", "s1"]

    def alloc_slots() -> list:
        """The streamed input's chunk slots, where the kernel calls it."""
        return [T.alloc_ub((1, bN), dtype, name=f"{'y' if log else 'dy'}{sl}_ub", address=a_slots[sl])
                for sl in range(SLOTS)]

    def alloc_halves() -> dict:
        """The streamed chunk's fp32 halves and the resident chunk's, where the kernel calls it."""
        return {"e0": T.alloc_ub((1, h), "float32", name="ef0_ub", address=a_e0),
                "e1": T.alloc_ub((1, h), "float32", name="ef1_ub", address=a_e1),
                "r0": T.alloc_ub((1, h), "float32", name="rf0_ub", address=a_r0),
                "r1": T.alloc_ub((1, h), "float32", name="rf1_ub", address=a_r1)}

    def alloc_stats() -> dict:
        """The row statistics and the exchanged sums, where the kernel calls it."""
        st = {nm: T.alloc_ub((1,), "float32", name=nm + "_ub", address=a) for nm, a in zip(st_names, a_st)}
        st["pw"] = T.alloc_ub((8,), "float32", name="pw_ub", address=a_pw)
        st["pr"] = T.alloc_ub((16,), "float32", name="pr_ub", address=a_pr)
        return st

    @T.macro
    def body(Y, DY, DX):
        RES, STR = (DY, Y) if log else (Y, DY)
        ws = T.alloc_workspace((blocks * 2 * 2 * 8,), "float32", name="sums_ws")
        with T.Kernel(num_blocks, is_npu=True) as (cid, vid):
            with T.Scope("V"):
                res = T.alloc_ub((1, H), dtype, name="dyr_ub" if log else "yr_ub", address=a_res)
                slots = alloc_slots()
                hv = alloc_halves()
                st = alloc_stats()
                mine = T.ceildiv(M - cid, num_blocks)
                T.tile.fill(st["pw"], 0.0)  # the block's 7 padding floats, copied with the sum
                load_res(RES, res, cid, vid * H)
                T.set_flag("MTE2", "V", EV_RES)
                for sl in slot_idx:
                    T.set_flag("MTE3", "MTE2", sl)  # every slot starts free
                for sl in slot_idx[:-1]:
                    if mine * spr > sl:
                        T.wait_flag("MTE3", "MTE2", sl)
                        gm_load(STR, cid + sl // spr * num_blocks, vid * H + sl % C * bN, slots[sl])
                        T.set_flag("MTE2", "V", sl)
                for i in T.serial(T.ceildiv(mine * spr, SLOTS)):
                    for sl in slot_idx:
                        step(RES, STR, DX, ws, res, slots, hv, st, i * SLOTS + sl, sl, (sl + SLOTS - 1) % SLOTS, cid,
                             vid, mine)
                for sl in slot_idx:
                    T.wait_flag("MTE3", "MTE2", sl)

    if not log:
        @T.prim_func
        def softmax_bwd(Y: T.Tensor((M, N), dtype), DY: T.Tensor((M, N), dtype), DX: T.Tensor((M, N), dtype)):
            body(Y, DY, DX)
        return softmax_bwd

    @T.prim_func
    def log_softmax_bwd(Y: T.Tensor((M, N), dtype), DY: T.Tensor((M, N), dtype), DX: T.Tensor((M, N), dtype)):
        body(Y, DY, DX)
    return log_softmax_bwd
