"""Softmax's resident schedule in TileLang-Ascend syntax, forward and backward: the Python twin of
cann_ops_tilelang/softmax/softmax_resident.cpp (the same IR for the same key, compared in
python/tests/test_opslib_softmax.py). softmax_kernel (softmax.py) builds this one when the key's
`resident` is set.

Each rM-row tile of x (of y and dy) is loaded into UB once, in two tile slots so the next tile's
load is issued before this tile's compute, and widened to fp32 once as two column halves 256
bytes apart modulo 512 (no bank-group conflict between an instruction's two sources). The forward
keeps exp(x) in UB for the normalisation: no max subtracted, each row's sum checked once (a V -> S wait a
tile) and a row outside the range where that is exact (huge or very negative logits, -inf rows) computed
again with its max subtracted. The row sums are a tree of elementwise
max / add over the halves, then one reduction of the last columns. The result is narrowed over x
(dy) in its slot and stored with one copy.

  softmax      y = e / sum(e), e = exp(x)           dx = p - sum(p) y, p = dy y
  log_softmax  y = x - log(sum(e))                  dx = dy - sum(dy) exp(y)
  (fallback rows: e = exp(x - max), log_softmax y = x - (max + log(sum(e))))

Events per pipe pair: slot s loads MTE2 -> V on id s, stores V -> MTE3 on id s, and is free for its
next load after the store, MTE3 -> MTE2 on id s (set once for both slots before the loop, waited
once after it); the tail tile (M % rM rows) runs synchronously in slot 0 on id 3, zero-filled and
loaded row by row.
"""

import tl_ascend.language as T
from tl_ascend.language.parser import PrimFunc

from ._ub import ub_placer

EV_TAIL = 3
EV_CHECK = 2  # the forward's V -> S wait before its per-row check
_LOWEST = -3.4028234663852886e38  # the lowest finite float32


@T.macro
def _sync(src, dst, ev):
    T.set_flag(src, dst, ev)
    T.wait_flag(src, dst, ev)


def _tree(place, rM: int, q: int) -> dict:
    """The row tree of cann_ops_tilelang/softmax/softmax_tree.h for [rM, 4 q] tiles held as two fp32
    column halves: its buffers' addresses (placed now, t0 t1 u0 u1 red, each pair 256 bytes apart),
    shapes, and the macro row_tree(is_max, a, b, tr, out), tr the dict alloc_tree's buffers make.

    The first level writes t0, t1 from the halves; each later level halves the width while it is a
    multiple of 16 columns above 128, reading one pair of buffers at the same columns and writing
    the other pair; then red (the last width) and one reduction of red."""
    h = 2 * q
    widths = []
    w = q
    while w % 16 == 0 and w > 128:
        widths.append(w // 2)
        w //= 2
    wr = widths[-1] if widths else q
    o = q // 2
    addr = [place(rM * q * 4, 0), place(rM * q * 4, 256), place(rM * o * 4, 0), place(rM * o * 4, 256),
            place(rM * wr * 4, 0)]
    pairs = [("t", "u") if n % 2 == 0 else ("u", "t") for n in range(len(widths))]
    levels = [(src, dst, hw) for (src, dst), hw in zip(pairs, widths)]
    last = "u" if len(widths) % 2 == 1 else "t"

    @T.macro
    def row_tree(is_max, a, b, tr, out):
        """The row max (or sum) of the tile whose column halves are a and b, into out."""
        row_tree_from(is_max, a, b, a, b, 0, q, tr, out)

    @T.macro
    def row_tree_from(is_max, a_lo, b_lo, a_hi, b_hi, c_lo, c_hi, tr, out):
        """row_tree with its first level's sources: t0 = a_lo op b_lo at columns c_lo + (0, q), t1 =
        a_hi op b_hi at c_hi + (0, q)."""
        if is_max:
            T.tile.max(tr["t"][0][0:rM, 0:q], a_lo[0:rM, c_lo:c_lo + q], b_lo[0:rM, c_lo:c_lo + q])
            T.tile.max(tr["t"][1][0:rM, 0:q], a_hi[0:rM, c_hi:c_hi + q], b_hi[0:rM, c_hi:c_hi + q])
        else:
            T.tile.add(tr["t"][0][0:rM, 0:q], a_lo[0:rM, c_lo:c_lo + q], b_lo[0:rM, c_lo:c_lo + q])
            T.tile.add(tr["t"][1][0:rM, 0:q], a_hi[0:rM, c_hi:c_hi + q], b_hi[0:rM, c_hi:c_hi + q])
        for lv in levels:
            T.pipe_barrier("V")
            c0, c1, o0, o1, hw = tr[lv[0]][0], tr[lv[0]][1], tr[lv[1]][0], tr[lv[1]][1], lv[2]
            if is_max:
                T.tile.max(o0[0:rM, 0:hw], c0[0:rM, 0:hw], c1[0:rM, 0:hw])
                T.tile.max(o1[0:rM, 0:hw], c0[0:rM, hw:2 * hw], c1[0:rM, hw:2 * hw])
            else:
                T.tile.add(o0[0:rM, 0:hw], c0[0:rM, 0:hw], c1[0:rM, 0:hw])
                T.tile.add(o1[0:rM, 0:hw], c0[0:rM, hw:2 * hw], c1[0:rM, hw:2 * hw])
        T.pipe_barrier("V")
        if is_max:
            T.tile.max(tr["red"], tr[last][0][0:rM, 0:wr], tr[last][1][0:rM, 0:wr])
        else:
            T.tile.add(tr["red"], tr[last][0][0:rM, 0:wr], tr[last][1][0:rM, 0:wr])
        T.pipe_barrier("V")
        if is_max:
            T.reduce_max(tr["red"], out, -1)
        else:
            T.reduce_sum(tr["red"], out, -1)

    @T.macro
    def row_tree_acc(a, b, tr, acc0, acc1):
        """row_tree's levels (a sum), then the last pair added into acc0, acc1 ([rM, wr]) instead of
        red and its reduction: the streamed forward reduces a row's sum once a row."""
        T.tile.add(tr["t"][0][0:rM, 0:q], a[0:rM, 0:q], b[0:rM, 0:q])
        T.tile.add(tr["t"][1][0:rM, 0:q], a[0:rM, q:2 * q], b[0:rM, q:2 * q])
        for lv in levels:
            T.pipe_barrier("V")
            c0, c1, o0, o1, hw = tr[lv[0]][0], tr[lv[0]][1], tr[lv[1]][0], tr[lv[1]][1], lv[2]
            T.tile.add(o0[0:rM, 0:hw], c0[0:rM, 0:hw], c1[0:rM, 0:hw])
            T.tile.add(o1[0:rM, 0:hw], c0[0:rM, hw:2 * hw], c1[0:rM, hw:2 * hw])
        T.pipe_barrier("V")
        T.tile.add(acc0, acc0, tr[last][0][0:rM, 0:wr])
        T.tile.add(acc1, acc1, tr[last][1][0:rM, 0:wr])

    return {"addr": addr, "q": q, "o": o, "wr": wr, "row_tree": row_tree, "row_tree_from": row_tree_from,
            "row_tree_acc": row_tree_acc}


def _tree_allocator(tree: dict, rM: int):
    """A plain function that allocates the tree's buffers where the kernel calls it (the names
    softmax_tree.cpp's alloc_tree gives them) and returns them as row_tree's dict."""
    a, q, o, wr = tree["addr"], tree["q"], tree["o"], tree["wr"]

    def alloc_tree():
        t0 = T.alloc_ub((rM, q), "float32", name="t0_ub", address=a[0])
        t1 = T.alloc_ub((rM, q), "float32", name="t1_ub", address=a[1])
        u0 = T.alloc_ub((rM, o), "float32", name="u0_ub", address=a[2])
        u1 = T.alloc_ub((rM, o), "float32", name="u1_ub", address=a[3])
        red = T.alloc_ub((rM, wr), "float32", name="red_ub", address=a[4])
        return {"t": [t0, t1], "u": [u0, u1], "red": red}

    return alloc_tree


def softmax_resident_kernel(dtype: str, cols: int, rows_per_tile: int, blocks: int, log: bool,
                            backward: bool) -> PrimFunc:
    """Forward: X [M, N] -> Y [M, N]. Backward: Y [M, N], DY [M, N] -> DX [M, N]."""
    N, rM = cols, rows_per_tile
    h, q = N // 2, N // 4
    wide = dtype != "float32"
    es = 4 if dtype == "float32" else 2
    nin = 2 if backward else 1
    # The forward's unshifted sum of exp(x): the range checked per row (softmax_resident.cpp).
    lo, hi = (2.0 ** -57, 2.0 ** 126) if log else (1.0, 2.0 ** 115)
    M = T.dynamic("M")
    num_blocks = T.min(blocks, T.ceildiv(M, rM))

    place = ub_placer()
    tile, half = rM * N * es, rM * h * 4
    a_slots = [[place(tile, 256 * i) for i in range(nin)] for _ in range(2)]
    a_e0, a_e1 = place(half, 0), place(half, 256)
    a_g0 = place(half, 256) if backward else None
    a_g1 = place(half, 0) if backward else None
    tree = _tree(place, rM, q)
    row_tree, row_tree_from = tree["row_tree"], tree["row_tree_from"]
    # A 16-bit log-softmax forward keeps x's fp32 halves: the exp of its column quarters goes into t0, p0,
    # t1, p1 and the tree's first level adds t0 + p0 and t1 + p1 (x is not widened again).
    quarters = not backward and log and wide
    if quarters:
        a_p0, a_p1 = place(rM * q * 4, 256), place(rM * q * 4, 0)
    if not backward:
        a_s, a_one = place(rM * 4, 0), place(rM * 4, 256)
        a_r0, a_r1 = place(rM * 4, 256), place(rM * 4, 0)
        a_fa, a_fb, a_fm = place(rM * 4, 0), place(rM * 4, 256), place(rM * 4, 0)
    else:
        a_s0, a_s1 = place(rM * 4, 256), place(rM * 4, 0)

    @T.macro
    def widen(x, lo, hi):
        """The tile's halves in fp32 (a cast; an add of 0 copies fp32)."""
        if wide:
            T.tile.cast(lo, x[0:rM, 0:h])
            T.tile.cast(hi, x[0:rM, h:N])
        else:
            T.tile.add(lo, x[0:rM, 0:h], 0.0)
            T.tile.add(hi, x[0:rM, h:N], 0.0)

    @T.macro
    def narrow(x, lo, hi):
        T.tile.cast(x[0:rM, 0:h], lo, "CAST_RINT")
        T.tile.cast(x[0:rM, h:N], hi, "CAST_RINT")

    @T.macro
    def widen_row(x, j, e0, e1):
        if wide:
            T.tile.cast(e0[j:j + 1, 0:h], x[j:j + 1, 0:h])
            T.tile.cast(e1[j:j + 1, 0:h], x[j:j + 1, h:N])
        else:
            T.tile.add(e0[j:j + 1, 0:h], x[j:j + 1, 0:h], 0.0)
            T.tile.add(e1[j:j + 1, 0:h], x[j:j + 1, h:N], 0.0)

    @T.macro
    def fwd_fallback(x, j, e0, e1, one, r0, r1, fa, fb, fm):
        """Row j again with its max subtracted (at least the lowest float). A 16-bit tile was scaled
        (softmax) or had r subtracted (log-softmax) before the check, so the row's result is computed
        here from its own r (1 / sum, or max + log(sum)); an fp32 tile's r goes into its rows of r0, r1
        by the scalar unit (vector operands start 32-byte aligned)."""
        T.pipe_barrier("V")
        widen_row(x, j, e0, e1)
        T.pipe_barrier("V")
        T.reduce_max(e0[j:j + 1, 0:h], fa[0:1], -1)
        T.reduce_max(e1[j:j + 1, 0:h], fb[0:1], -1)
        T.pipe_barrier("V")
        T.tile.max(fm[0:1], fa[0:1], fb[0:1])  # NaN stays NaN
        T.pipe_barrier("V")
        T.tile.max(fm[0:1], fm[0:1], _LOWEST)
        T.pipe_barrier("V")
        T.tile.row_expand_sub(e0[j:j + 1, 0:h], e0[j:j + 1, 0:h], fm[0:1])
        T.tile.row_expand_sub(e1[j:j + 1, 0:h], e1[j:j + 1, 0:h], fm[0:1])
        T.pipe_barrier("V")
        T.tile.exp(e0[j:j + 1, 0:h], e0[j:j + 1, 0:h])
        T.tile.exp(e1[j:j + 1, 0:h], e1[j:j + 1, 0:h])
        T.pipe_barrier("V")
        T.reduce_sum(e0[j:j + 1, 0:h], fa[0:1], -1)
        T.reduce_sum(e1[j:j + 1, 0:h], fb[0:1], -1)
        T.pipe_barrier("V")
        T.tile.add(fa[0:1], fa[0:1], fb[0:1])
        T.pipe_barrier("V")
        if not log:
            T.tile.div(fa[0:1], one[0:1], fa[0:1])
        else:
            T.tile.ln(fa[0:1], fa[0:1])
            T.pipe_barrier("V")
            T.tile.add(fa[0:1], fm[0:1], fa[0:1])
            if wide:
                widen_row(x, j, e0, e1)  # y = x - r: x again over its exp
        if wide:
            T.pipe_barrier("V")
            if not log:
                T.tile.row_expand_mul(e0[j:j + 1, 0:h], e0[j:j + 1, 0:h], fa[0:1])
                T.tile.row_expand_mul(e1[j:j + 1, 0:h], e1[j:j + 1, 0:h], fa[0:1])
            else:
                T.tile.row_expand_sub(e0[j:j + 1, 0:h], e0[j:j + 1, 0:h], fa[0:1])
                T.tile.row_expand_sub(e1[j:j + 1, 0:h], e1[j:j + 1, 0:h], fa[0:1])
        else:
            _sync("V", "S", EV_CHECK)
            r0[j] = fa[0]
            r1[j] = fa[0]
            _sync("S", "V", EV_CHECK)

    @T.macro
    def fwd_compute(x, e0, e1, tr, pq, s, one, r0, r1, fa, fb, fm):
        T.pipe_barrier("V")  # the previous tile's reads of e0, e1 are done
        widen(x, e0, e1)
        T.pipe_barrier("V")
        # No max subtracted: the check below.
        if quarters:
            T.tile.exp(tr["t"][0][0:rM, 0:q], e0[0:rM, 0:q])
            T.tile.exp(pq[0][0:rM, 0:q], e0[0:rM, q:h])
            T.tile.exp(tr["t"][1][0:rM, 0:q], e1[0:rM, 0:q])
            T.tile.exp(pq[1][0:rM, 0:q], e1[0:rM, q:h])
            T.pipe_barrier("V")
            row_tree_from(False, tr["t"][0], pq[0], tr["t"][1], pq[1], 0, 0, tr, s)
        else:
            T.tile.exp(e0, e0)
            T.tile.exp(e1, e1)
            T.pipe_barrier("V")
            row_tree(False, e0, e1, tr, s)
        T.pipe_barrier("V")
        # The vector work queued after the flag runs while the scalar unit checks the sums.
        if not log:
            T.tile.div(r0, one, s)  # a divide per row only
            T.tile.div(r1, one, s)
        else:
            T.tile.ln(r0, s)
            T.tile.ln(r1, s)
        T.set_flag("V", "S", EV_CHECK)
        if wide:
            T.pipe_barrier("V")
            if not log:
                T.tile.row_expand_mul(e0, e0, r0)
                T.tile.row_expand_mul(e1, e1, r1)
            else:
                T.tile.row_expand_sub(e0, e0, r0)
                T.tile.row_expand_sub(e1, e1, r1)
        T.wait_flag("V", "S", EV_CHECK)
        # A row's sum must lie in [lo, hi) (the C++ generator says why); else that row's fallback. A
        # NaN stays here (the row is NaN either way).
        for j in T.serial(rM):
            sum = s[j]  # a let: the scalar load at a cycle of its own
            if sum < lo or sum >= hi:
                fwd_fallback(x, j, e0, e1, one, r0, r1, fa, fb, fm)
        T.pipe_barrier("V")
        if wide:
            narrow(x, e0, e1)
        elif not log:
            T.tile.row_expand_mul(x[0:rM, 0:h], e0, r0)
            T.tile.row_expand_mul(x[0:rM, h:N], e1, r1)
        else:
            T.tile.row_expand_sub(x[0:rM, 0:h], x[0:rM, 0:h], r0)
            T.tile.row_expand_sub(x[0:rM, h:N], x[0:rM, h:N], r1)

    @T.macro
    def bwd_compute(y, dy, y0, y1, g0, g1, tr, s0, s1):
        T.pipe_barrier("V")  # the previous tile's reads of the halves are done
        widen(y, y0, y1)
        widen(dy, g0, g1)
        T.pipe_barrier("V")
        if not log:  # p = dy y over dy's halves
            T.tile.mul(g0, g0, y0)
            T.tile.mul(g1, g1, y1)
            T.pipe_barrier("V")
        else:  # exp(y), issued with the tree's first level
            T.tile.exp(y0, y0)
            T.tile.exp(y1, y1)
        row_tree(False, g0, g1, tr, s0)
        T.pipe_barrier("V")
        T.tile.add(s1, s0, 0.0)
        T.pipe_barrier("V")
        T.tile.row_expand_mul(y0, y0, s0)  # s y, or s exp(y)
        T.tile.row_expand_mul(y1, y1, s1)
        T.pipe_barrier("V")
        if wide:
            T.tile.sub(g0, g0, y0)
            T.tile.sub(g1, g1, y1)
            T.pipe_barrier("V")
            narrow(dy, g0, g1)
        else:
            T.tile.sub(dy[0:rM, 0:h], g0, y0)
            T.tile.sub(dy[0:rM, h:N], g1, y1)

    in_idx = [0, 1] if backward else [0]  # a Python list: unrolled while parsing
    alloc_tree = _tree_allocator(tree, rM)

    @T.macro
    def compute(sl, bufs):
        if backward:
            bwd_compute(sl[0], sl[1], bufs[0], bufs[1], bufs[2], bufs[3], bufs[4], bufs[5], bufs[6])
        else:
            fwd_compute(sl[0], bufs[0], bufs[1], bufs[2], bufs[3], bufs[4], bufs[5], bufs[6], bufs[7], bufs[8],
                        bufs[9], bufs[10])

    @T.macro
    def load(ins, sl, row0):
        for i in in_idx:
            T.copy(ins[i][row0, 0], sl[i])

    @T.macro
    def slot_step(ins, OUT, cur, nxt, bufs, i, s, worker, workers, mine):
        """Tile 2 i + s of this worker, in slot s; the next tile loads into the other slot."""
        if i * 2 + s < mine:
            if i * 2 + s + 1 < mine:  # the next tile loads while this one computes
                T.wait_flag("MTE3", "MTE2", 1 - s)
                load(ins, nxt, (worker + (i * 2 + s + 1) * workers) * rM)
                T.set_flag("MTE2", "V", 1 - s)
            T.wait_flag("MTE2", "V", s)
            compute(cur, bufs)
            _sync("V", "MTE3", s)
            T.copy(cur[nin - 1], OUT[(worker + (i * 2 + s) * workers) * rM, 0])
            T.set_flag("MTE3", "MTE2", s)

    @T.macro
    def body(ins, OUT):
        """The kernel, ins the tensors read (X, or Y and DY) and OUT the one written."""
        with T.Kernel(num_blocks, is_npu=True) as (cid, vid):
            with T.Scope("V"):
                # Slot s holds input i at slots[s][i]; the result overwrites the last input.
                if backward:
                    y0_s = T.alloc_ub((rM, N), dtype, name="y0_ub", address=a_slots[0][0])
                    dy0_s = T.alloc_ub((rM, N), dtype, name="dy0_ub", address=a_slots[0][1])
                    y1_s = T.alloc_ub((rM, N), dtype, name="y1_ub", address=a_slots[1][0])
                    dy1_s = T.alloc_ub((rM, N), dtype, name="dy1_ub", address=a_slots[1][1])
                    slots = [[y0_s, dy0_s], [y1_s, dy1_s]]
                    # The fp32 halves of y and dy, each pair 256 bytes apart, dy's 256 bytes from y's.
                    y0 = T.alloc_ub((rM, h), "float32", name="yf0_ub", address=a_e0)
                    y1 = T.alloc_ub((rM, h), "float32", name="yf1_ub", address=a_e1)
                    g0 = T.alloc_ub((rM, h), "float32", name="gf0_ub", address=a_g0)
                    g1 = T.alloc_ub((rM, h), "float32", name="gf1_ub", address=a_g1)
                    tr = alloc_tree()
                    s0 = T.alloc_ub((rM,), "float32", name="s0_ub", address=a_s0)  # sum(dy y), or sum(dy)
                    s1 = T.alloc_ub((rM,), "float32", name="s1_ub", address=a_s1)
                    bufs = [y0, y1, g0, g1, tr, s0, s1]
                else:
                    x0_s = T.alloc_ub((rM, N), dtype, name="x0_ub", address=a_slots[0][0])
                    x1_s = T.alloc_ub((rM, N), dtype, name="x1_ub", address=a_slots[1][0])
                    slots = [[x0_s], [x1_s]]
                    e0 = T.alloc_ub((rM, h), "float32", name="e0_ub", address=a_e0)
                    e1 = T.alloc_ub((rM, h), "float32", name="e1_ub", address=a_e1)
                    tr = alloc_tree()
                    pq = None
                    if quarters:  # the exp of x's second and fourth column quarters
                        pq = [T.alloc_ub((rM, q), "float32", name="p0_ub", address=a_p0),
                              T.alloc_ub((rM, q), "float32", name="p1_ub", address=a_p1)]
                    s = T.alloc_ub((rM,), "float32", name="s_ub", address=a_s)  # the row sum of exp(x)
                    one = T.alloc_ub((rM,), "float32", name="one_ub", address=a_one)
                    r0 = T.alloc_ub((rM,), "float32", name="r0_ub", address=a_r0)  # 1 / sum, or log(sum)
                    r1 = T.alloc_ub((rM,), "float32", name="r1_ub", address=a_r1)
                    # A fallback row's statistics: its halves' maxima (then sums) and the max subtracted.
                    fa = T.alloc_ub((rM,), "float32", name="fa_ub", address=a_fa)
                    fb = T.alloc_ub((rM,), "float32", name="fb_ub", address=a_fb)
                    fm = T.alloc_ub((rM,), "float32", name="fm_ub", address=a_fm)
                    T.tile.fill(one, 1.0)
                    bufs = [e0, e1, tr, pq, s, one, r0, r1, fa, fb, fm]

                workers = num_blocks * 2
                worker = cid * 2 + vid
                full_tiles = M // rM
                mine = T.ceildiv(T.max(full_tiles - worker, 0), workers)
                T.set_flag("MTE3", "MTE2", 0)  # both slots start free
                T.set_flag("MTE3", "MTE2", 1)
                if mine > 0:
                    T.wait_flag("MTE3", "MTE2", 0)
                    load(ins, slots[0], worker * rM)
                    T.set_flag("MTE2", "V", 0)
                # Tiles in pairs, so each slot's code and event ids are constants.
                for i in T.serial(T.ceildiv(mine, 2)):
                    slot_step(ins, OUT, slots[0], slots[1], bufs, i, 0, worker, workers, mine)
                    slot_step(ins, OUT, slots[1], slots[0], bufs, i, 1, worker, workers, mine)
                T.wait_flag("MTE3", "MTE2", 0)
                T.wait_flag("MTE3", "MTE2", 1)
                # The tail tile continues the round robin, in slot 0, zero-filled first.
                tail = M % rM
                if tail > 0 and worker == full_tiles % workers:
                    _sync("MTE3", "V", EV_TAIL)  # slot 0's last store has read it
                    for b in slots[0]:
                        T.tile.fill(b, 0.0)
                    _sync("V", "MTE2", EV_TAIL)
                    for i in in_idx:
                        for j in T.serial(tail):
                            T.copy(ins[i][full_tiles * rM + j, 0], slots[0][i][j:j + 1, 0:N])
                    _sync("MTE2", "V", EV_TAIL)
                    compute(slots[0], bufs)
                    _sync("V", "MTE3", EV_TAIL)
                    for j in T.serial(tail):
                        T.copy(slots[0][nin - 1][j:j + 1, 0:N], OUT[full_tiles * rM + j, 0])

    # A prim_func's name and signature are fixed: one thin prim_func per (log, backward).
    if not backward and not log:
        @T.prim_func
        def softmax_fwd(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
            body([X], Y)
        return softmax_fwd
    if not backward:
        @T.prim_func
        def log_softmax_fwd(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
            body([X], Y)
        return log_softmax_fwd
    if not log:
        @T.prim_func
        def softmax_bwd(Y: T.Tensor((M, N), dtype), DY: T.Tensor((M, N), dtype), DX: T.Tensor((M, N), dtype)):
            body([Y, DY], DX)
        return softmax_bwd

    @T.prim_func
    def log_softmax_bwd(Y: T.Tensor((M, N), dtype), DY: T.Tensor((M, N), dtype), DX: T.Tensor((M, N), dtype)):
        body([Y, DY], DX)
    return log_softmax_bwd
