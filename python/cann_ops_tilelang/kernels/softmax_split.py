"""Softmax's split backward schedule in TileLang-Ascend syntax: the Python twin of
cann_ops_tilelang/softmax/softmax_split.cpp (the same IR for the same key, compared in
python/tests/test_opslib_softmax.py). softmax_kernel (softmax.py) builds this one when the key's
`split` is set: a 16-bit backward whose rows are larger than UB but whose half row of one input fits.

The two AIVs of a block share each row, AIV v its columns [v N / 2, (v + 1) N / 2): each holds its half
of one input resident in UB while the other streams through five chunk slots (the load of the step three
on issued before this step's compute), so the resident input is read once. What is read or written once
bypasses L2 (T.annotate_l2_cache), so softmax's dy, read twice, is what L2 holds. The halves' sums
meet through a GM workspace and a mode-1 cross-core flag, added in the same order on both AIVs.

  softmax      resident y; pass 1 s = sum(dy y) over dy's chunks, pass 2 dx = (dy - s) y (dy read twice)
  log_softmax  resident dy; pass 1 s = sum(dy) from UB, pass 2 dx = dy - s exp(y) (each read once)

Events: the slots' ids 0, 1, 2, 7, 5 on three pipe pairs as softmax_streamed.py's; the resident half's two
pieces V -> MTE2 id 3 (after a piece's last pass-2 step, then the next row's load of it) and MTE2 -> V ids
3 and 6 (waited before the row first reads the piece); the
exchange id 4 (V -> MTE3, MTE2 -> V) and cross flag 0; log-softmax's -s V -> S id 5.
"""

import math

import tl_ascend.language as T
from tl_ascend.language.parser import PrimFunc

from ._ub import ub_placer
from .softmax_resident import _sync

SLOTS, AHEAD = 5, 3  # chunk slots; the load of the step AHEAD on goes into the slot stored two steps ago
SLOT_EV = [0, 1, 2, 7, 5]  # a slot's event id on its three pipe pairs
EV_RES, EV_SUM, EV_NEG = 3, 4, 5
EV_PIECE = [3, 6]  # the resident half's two pieces, MTE2 -> V
CROSS_ID = 0  # the halves' rendezvous (mode 1)
STAGGER_FILLS = 5  # per chunk of a half row: odd blocks' head start (softmax_split.cpp says why)


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

    # The resident half in two pieces of whole chunks, [0, pb) and [pb, C) (one if pb is 0), each with its
    # own flag: the next row's first piece loads while this row's pass 2 finishes the second. Softmax
    # splits at a quarter, log-softmax at a half (softmax_split.cpp says why).
    pb = C // 2 if log else C // 4
    pieces = ([(0, pb)] if pb > 0 else []) + [(pb, C)]
    piece_idx = list(range(len(pieces)))  # a Python list: unrolled while parsing
    grid_piece = [gm_grid((b - a) * bN) for a, b in pieces]
    grid_chk = gm_grid(bN)
    row_free = N * es % 512 == 0  # rows start on the grid: the column alone gives the offset

    @T.macro
    def one(to_gm, gm, row, col, ub, c0, ww):
        if to_gm:
            T.copy(ub[0:1, c0:c0 + ww], gm[row, col])
        else:
            T.copy(gm[row, col], ub[0:1, c0:c0 + ww])

    @T.macro
    def split_copy(to_gm, gm, row, col, ub, u0, w, hd):
        if hd > 0:
            one(to_gm, gm, row, col, ub, u0, hd)
        one(to_gm, gm, row, col + hd, ub, u0 + hd, w - hd)

    @T.macro
    def chain(to_gm, gm, row, col, ub, u0, w, heads, k):
        """The offset modulo 512 tested as an else-if chain, the last residue untested."""
        if k == len(heads) - 1:
            split_copy(to_gm, gm, row, col, ub, u0, w, heads[k][1])
        elif row_free:
            if col * es % 512 == heads[k][0]:
                split_copy(to_gm, gm, row, col, ub, u0, w, heads[k][1])
            else:
                chain(to_gm, gm, row, col, ub, u0, w, heads, k + 1)
        else:
            if (row * N + col) * es % 512 == heads[k][0]:
                split_copy(to_gm, gm, row, col, ub, u0, w, heads[k][1])
            else:
                chain(to_gm, gm, row, col, ub, u0, w, heads, k + 1)

    @T.macro
    def gm_copy(to_gm, gm, row, col, ub, u0, w, grid):
        """A GM copy of w columns, split where it starts off the 512-byte grid (softmax_split.cpp)."""
        if grid[0] == 512:
            one(to_gm, gm, row, col, ub, u0, w)
        else:
            chain(to_gm, gm, row, col, ub, u0, w, grid[1], 0)

    @T.macro
    def load_piece(RES, res, row, vid, i):
        if pieces[i][0] == 0:
            gm_copy(False, RES, row, vid * H, res, 0, (pieces[i][1] - pieces[i][0]) * bN, grid_piece[i])
        else:
            gm_copy(False, RES, row, vid * H + pieces[i][0] * bN, res, pieces[i][0] * bN,
                    (pieces[i][1] - pieces[i][0]) * bN, grid_piece[i])

    @T.macro
    def wait_piece(ch):
        """Before chunk ch's first use in a row: the wait for its piece, at the piece's start."""
        for i in piece_idx:
            if ch == pieces[i][0]:
                T.wait_flag("MTE2", "V", EV_PIECE[i])

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
    def add_chunk_sum(hv, st):
        """The halves added, then one reduction into s: no tree, whose buffers UB has no room for
        beside the resident half."""
        T.tile.add(hv["r0"], hv["r0"], hv["r1"])
        T.pipe_barrier("V")
        T.reduce_sum(hv["r0"], st["cs"], -1)
        T.pipe_barrier("V")
        T.tile.add(st["s"], st["s"], st["cs"])

    @T.macro
    def pass1_res(res, hv, st, ch, first):
        """log_softmax: chunk ch's sum of the resident dy into s."""
        s = st["s"]
        T.pipe_barrier("V")
        if first:
            T.tile.fill(s, 0.0)
        widen_res(res, hv, ch)
        T.pipe_barrier("V")
        add_chunk_sum(hv, st)

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
        add_chunk_sum(hv, st)

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
                    wait_piece(p)
                    pass1_res(res, hv, st, p, p == 0)
                exchange(ws, st, cid, vid, n // spr)
            pass2(res, slot, hv, st, n % spr)
        else:
            if n % spr == C:
                exchange(ws, st, cid, vid, n // spr)
            pass2(res, slot, hv, st, n % spr - C)
        if n // spr + 1 < mine:  # a piece of the resident half is read: the next row's loads over it
            for i in piece_idx:
                if log:
                    if n % spr == pieces[i][1] - 1:
                        _sync("V", "MTE2", EV_RES)
                        load_piece(RES, res, cid + (n // spr + 1) * num_blocks, vid, i)
                        T.set_flag("MTE2", "V", EV_PIECE[i])
                else:
                    if n % spr - C == pieces[i][1] - 1:
                        _sync("V", "MTE2", EV_RES)
                        load_piece(RES, res, cid + (n // spr + 1) * num_blocks, vid, i)
                        T.set_flag("MTE2", "V", EV_PIECE[i])
        _sync("V", "MTE3", SLOT_EV[sl])
        if log:
            gm_copy(True, DX, cid + n // spr * num_blocks, vid * H + n % spr * bN, slot, 0, bN, grid_chk)
        else:
            gm_copy(True, DX, cid + n // spr * num_blocks, vid * H + (n % spr - C) * bN, slot, 0, bN, grid_chk)

    @T.macro
    def work(RES, DX, ws, res, slot, hv, st, n, sl, cid, vid, mine):
        if log:
            second(RES, DX, ws, res, slot, hv, st, n, sl, cid, vid, mine)
        else:
            if n % spr < C:
                wait_piece(n % spr)
                pass1_slot(res, slot, hv, st, n % spr, n % spr == 0)
                _sync("V", "MTE3", SLOT_EV[sl])  # the slot is read
            else:
                second(RES, DX, ws, res, slot, hv, st, n, sl, cid, vid, mine)

    @T.macro
    def step(RES, STR, DX, ws, res, slots, hv, st, n, sl, ahead, cid, vid, mine):
        """Step n in slot sl; the step after next loads into slot `ahead`."""
        if n < mine * spr:
            if n + AHEAD < mine * spr:
                T.wait_flag("MTE3", "MTE2", SLOT_EV[ahead])
                gm_copy(False, STR, cid + (n + AHEAD) // spr * num_blocks, vid * H + (n + AHEAD) % C * bN,
                        slots[ahead], 0, bN, grid_chk)
                T.set_flag("MTE2", "V", SLOT_EV[ahead])
            T.wait_flag("MTE2", "V", SLOT_EV[sl])
            work(RES, DX, ws, res, slots[sl], hv, st, n, sl, cid, vid, mine)
            T.set_flag("MTE3", "MTE2", SLOT_EV[sl])

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
                # Odd blocks start later where every block has two rows or more: out of phase, half the chip
                # streams while the other half exchanges its sums.
                if M >= num_blocks * 2 and cid % 2 == 1:
                    for stagger in T.serial(STAGGER_FILLS * C):
                        T.pipe_barrier("V")  # the fills write the same bytes
                        T.tile.fill(hv["e0"], 0.0)
                    _sync("V", "S", EV_NEG)  # the scalar unit issues nothing before
                T.tile.fill(st["pw"], 0.0)  # the block's 7 padding floats, copied with the sum
                for i in piece_idx:
                    load_piece(RES, res, cid, vid, i)
                    T.set_flag("MTE2", "V", EV_PIECE[i])
                for sl in slot_idx:
                    T.set_flag("MTE3", "MTE2", SLOT_EV[sl])  # every slot starts free
                for sl in slot_idx[:AHEAD]:
                    if mine * spr > sl:
                        T.wait_flag("MTE3", "MTE2", SLOT_EV[sl])
                        gm_copy(False, STR, cid + sl // spr * num_blocks, vid * H + sl % C * bN, slots[sl], 0, bN,
                                grid_chk)
                        T.set_flag("MTE2", "V", SLOT_EV[sl])
                for i in T.serial(T.ceildiv(mine * spr, SLOTS)):
                    for sl in slot_idx:
                        step(RES, STR, DX, ws, res, slots, hv, st, i * SLOTS + sl, sl, (sl + AHEAD) % SLOTS, cid,
                             vid, mine)
                for sl in slot_idx:
                    T.wait_flag("MTE3", "MTE2", SLOT_EV[sl])

    if not log:
        @T.prim_func
        def softmax_bwd(Y: T.Tensor((M, N), dtype), DY: T.Tensor((M, N), dtype), DX: T.Tensor((M, N), dtype)):
            T.annotate_l2_cache({Y: "disable", DX: "disable"})  # y read once, dx written once: dy stays
            body(Y, DY, DX)
        return softmax_bwd

    @T.prim_func
    def log_softmax_bwd(Y: T.Tensor((M, N), dtype), DY: T.Tensor((M, N), dtype), DX: T.Tensor((M, N), dtype)):
        T.annotate_l2_cache({Y: "disable", DY: "disable"})  # each read once
        body(Y, DY, DX)
    return log_softmax_bwd
