"""Softmax's streamed schedule in TileLang-Ascend syntax, forward and backward: the Python twin of
cann_ops_tilelang/softmax/softmax_streamed.cpp (the same IR for the same key, compared in
python/tests/test_opslib_softmax.py). softmax_kernel (softmax.py) builds this one when the key's
`streamed` is set: rows larger than UB (a vocabulary of 129280).

A worker takes whole rows; a row is read in bN-column chunks twice (pass 1 the statistics, pass 2
the result), and every chunk load goes through three UB slots, the load of the step after next
issued before this step's compute (two loads in flight), across chunks, passes and rows. Each
chunk is widened into two fp32 column halves 256 bytes apart (no bank-group conflict) and reduced
by the row tree of softmax_resident.py.

  softmax      pass 1  online max and sum (the max subtracted at least the lowest float, so -inf
                       logits give exp(-inf) = 0); pass 2  y = exp(x - (max + log sum))
  log_softmax  pass 2  y = x - (max + log sum)
  backward     pass 1  s = sum(dy y), or sum(dy) (dy alone loaded); pass 2  dx = (dy - s) y, or
                       dy - s exp(y)

Events per slot s (ids 0, 1, 2): its load MTE2 -> V, V -> MTE3 once its compute is done (then its
store, in pass 2), free for its next load after that, MTE3 -> MTE2 (set once for every slot before
the loop, waited once after it).
"""

import math

import tl_ascend.language as T
from tl_ascend.language.parser import PrimFunc

from ._ub import ub_placer
from .softmax_resident import _LOWEST, _sync, _tree, _tree_allocator

SLOTS = 3  # chunk slots: two loads in flight beside the compute
EV_FALLBACK = 3  # the forward's check (V -> S) and its fallback's loads
LOG_LO, LOG_HI = -40.0, 88.0  # the forward's pass 1 sums exp(x) unshifted; its log must lie here
CACHED_HI = 80.0  # softmax's cached first pass-2 step: exp(-log s) a normal float below this


def softmax_streamed_kernel(dtype: str, cols: int, chunk: int, blocks: int, log: bool,
                            backward: bool) -> PrimFunc:
    """Forward: X [M, N] -> Y [M, N]. Backward: Y [M, N], DY [M, N] -> DX [M, N]."""
    N, bN = cols, chunk
    h, q = bN // 2, bN // 4
    C = N // bN
    spr = 2 * C  # steps per row
    wide = dtype != "float32"
    es = 4 if dtype == "float32" else 2
    nin = 2 if backward else 1
    M = T.dynamic("M")
    num_blocks = T.min(blocks, T.ceildiv(M, 2))

    place = ub_placer()
    a_slots = [[place(bN * es, 256 * i) for i in range(nin)] for _ in range(SLOTS)]
    a_e0, a_e1 = place(h * 4, 0), place(h * 4, 256)
    a_g0 = place(h * 4, 256) if backward else None
    a_g1 = place(h * 4, 0) if backward else None
    tree = _tree(place, 1, q)
    row_tree = tree["row_tree"]
    row_tree_acc = tree["row_tree_acc"]
    alloc_tree = _tree_allocator(tree, 1)
    # Row statistics, one value each; a row-expand's operand sits 256 bytes from its half.
    if not backward:
        names = ["s", "cs", "mo", "mc", "r0", "r1"]
        residues = [0, 256, 0, 256, 256, 0]
    else:
        names = ["s", "cs", "s0", "s1"]
        residues = [0, 256, 256 if log else 0, 0 if log else 256]
    a_st = [place(4, r) for r in residues]
    # The forward's running sum of exp(x), elementwise at the tree's last width (row_tree_acc: no
    # reduction a chunk), reduced once a row by fwd_finish.
    wl = tree["wr"]
    a_acc = [place(wl * 4, 256), place(wl * 4, 0)] if not backward else None
    a_q = [place(4, 256), place(4, 0)] if not backward else None  # exp(-log s) beside each half
    a_fb = place(h * es, 0) if wide and not backward else None  # the forward fallback's pieces

    def alloc_stats() -> dict:
        """Allocates the statistics where the kernel calls it; returns them by name."""
        return {nm: T.alloc_ub((1,), "float32", name=nm + "_ub", address=a) for nm, a in zip(names, a_st)}

    @T.macro
    def widen(x, lo, hi):
        """The chunk's halves in fp32 (a cast; an add of 0 copies fp32)."""
        if wide:
            T.tile.cast(lo, x[0:1, 0:h])
            T.tile.cast(hi, x[0:1, h:bN])
        else:
            T.tile.add(lo, x[0:1, 0:h], 0.0)
            T.tile.add(hi, x[0:1, h:bN], 0.0)

    @T.macro
    def narrow(x, lo, hi):
        if wide:
            T.tile.cast(x[0:1, 0:h], lo, "CAST_RINT")
            T.tile.cast(x[0:1, h:bN], hi, "CAST_RINT")
        else:
            T.tile.add(x[0:1, 0:h], lo, 0.0)
            T.tile.add(x[0:1, h:bN], hi, 0.0)

    @T.macro
    def fwd_pass1(x, e0, e1, tr, st, first):
        T.pipe_barrier("V")  # the previous step's reads of the halves are done
        if first:  # beside the widening
            T.tile.fill(st["acc0"], 0.0)
            T.tile.fill(st["acc1"], 0.0)
        widen(x, e0, e1)
        T.pipe_barrier("V")
        T.tile.exp(e0, e0)  # no max subtracted: fwd_finish checks the sum
        T.tile.exp(e1, e1)
        T.pipe_barrier("V")
        row_tree_acc(e0, e1, tr, st["acc0"], st["acc1"])

    @T.macro
    def fwd_fallback(X, e0, fb, st, row):
        """The rare row whose sum of exp(x) leaves [e^-40, e^88): its statistics again, max-subtracted,
        in two sweeps over pieces of h columns loaded synchronously (event id 3 on both pipe pairs)."""
        mo, mc, s = st["mo"], st["mc"], st["s"]
        T.tile.fill(mo, _LOWEST)
        T.tile.fill(s, 0.0)
        T.set_flag("V", "MTE2", EV_FALLBACK)
        for sweep in sweeps:
            for p in T.serial(2 * C):
                T.wait_flag("V", "MTE2", EV_FALLBACK)
                if wide:
                    T.copy(X[row, p * h], fb)
                else:
                    T.copy(X[row, p * h], e0)
                _sync("MTE2", "V", EV_FALLBACK)
                if wide:
                    T.tile.cast(e0, fb)
                    T.pipe_barrier("V")
                if sweep == 0:
                    T.reduce_max(e0, mc, -1)
                    T.pipe_barrier("V")
                    T.tile.max(mo, mo, mc)  # NaN stays NaN; -inf pieces keep mo
                else:
                    T.tile.row_expand_sub(e0, e0, mo)
                    T.pipe_barrier("V")
                    T.tile.exp(e0, e0)
                    T.pipe_barrier("V")
                    T.reduce_sum(e0, mc, -1)
                    T.pipe_barrier("V")
                    T.tile.add(s, s, mc)
                T.set_flag("V", "MTE2", EV_FALLBACK)
        T.wait_flag("V", "MTE2", EV_FALLBACK)
        T.pipe_barrier("V")
        T.tile.ln(s, s)
        T.pipe_barrier("V")
        T.tile.add(st["r0"], mo, s)
        T.tile.add(st["r1"], mo, s)

    @T.macro
    def fwd_finish(X, x, e0, e1, fb, tr, st, row):
        """The row's statistics; softmax's also does pass 2's first step (the row's last chunk, whose
        exp(x) is still in e0, e1: cached_step) unless the fallback ran or log s >= CACHED_HI."""
        s = st["s"]
        T.pipe_barrier("V")
        T.tile.add(tr["red"], st["acc0"], st["acc1"])
        T.pipe_barrier("V")
        T.reduce_sum(tr["red"], s, -1)
        T.pipe_barrier("V")
        T.tile.ln(s, s)
        T.pipe_barrier("V")  # r0, r1 or the fallback's fills follow on V
        # The log of the sum of exp(x) must lie in [-40, 88) (finite, and the terms lost below fp32's
        # normal range negligible); else the fallback. A NaN stays here (the row is NaN either way).
        _sync("V", "S", EV_FALLBACK)
        lse = s[0]  # a let: the scalar load at a cycle of its own
        if lse < LOG_LO or lse >= LOG_HI:
            fwd_fallback(X, e0, fb, st, row)
            if not log:
                fwd_pass2(x, e0, e1, st)
        else:
            T.tile.add(st["r0"], s, 0.0)
            T.tile.add(st["r1"], s, 0.0)
            if not log:  # a NaN log s takes the cached step: the row is NaN either way
                if lse >= CACHED_HI:
                    fwd_pass2(x, e0, e1, st)
                else:
                    cached_step(x, e0, e1, st)

    @T.macro
    def cached_step(x, e0, e1, st):
        """y = exp(x) exp(-log s) over the chunk whose exp(x) pass 1 left in e0, e1."""
        T.tile.mul(st["q0"], st["s"], -1.0)
        T.tile.mul(st["q1"], st["s"], -1.0)
        T.pipe_barrier("V")
        T.tile.exp(st["q0"], st["q0"])
        T.tile.exp(st["q1"], st["q1"])
        T.pipe_barrier("V")
        T.tile.row_expand_mul(e0, e0, st["q0"])
        T.tile.row_expand_mul(e1, e1, st["q1"])
        T.pipe_barrier("V")
        narrow(x, e0, e1)

    @T.macro
    def fwd_pass2(x, e0, e1, st):
        T.pipe_barrier("V")
        widen(x, e0, e1)
        T.pipe_barrier("V")
        T.tile.row_expand_sub(e0, e0, st["r0"])
        T.tile.row_expand_sub(e1, e1, st["r1"])
        T.pipe_barrier("V")
        if not log:
            T.tile.exp(e0, e0)
            T.tile.exp(e1, e1)
            T.pipe_barrier("V")
        narrow(x, e0, e1)

    @T.macro
    def bwd_pass1(y, dy, y0, y1, g0, g1, tr, st, first):
        s = st["s"]
        T.pipe_barrier("V")
        if first:
            T.tile.fill(s, 0.0)
        if not log:
            widen(y, y0, y1)
        widen(dy, g0, g1)
        T.pipe_barrier("V")
        if not log:  # dy y over dy's halves
            T.tile.mul(g0, g0, y0)
            T.tile.mul(g1, g1, y1)
            T.pipe_barrier("V")
        row_tree(False, g0, g1, tr, st["cs"])
        T.pipe_barrier("V")
        T.tile.add(s, s, st["cs"])

    @T.macro
    def bwd_finish(st):
        T.pipe_barrier("V")
        if not log:
            T.tile.add(st["s0"], st["s"], 0.0)
            T.tile.add(st["s1"], st["s"], 0.0)
        else:  # -s, read by the scalar unit in each pass-2 step (Axpy's alpha)
            T.tile.mul(st["s0"], st["s"], -1.0)
            _sync("V", "S", EV_FALLBACK)

    @T.macro
    def bwd_pass2(y, dy, y0, y1, g0, g1, st):
        T.pipe_barrier("V")
        widen(y, y0, y1)
        widen(dy, g0, g1)
        T.pipe_barrier("V")
        if not log:  # (dy - s) y
            T.tile.row_expand_sub(g0, g0, st["s0"])
            T.tile.row_expand_sub(g1, g1, st["s1"])
            T.pipe_barrier("V")
            T.tile.mul(g0, g0, y0)
            T.tile.mul(g1, g1, y1)
        else:  # dy - s exp(y): one Axpy (dst += alpha src) a half, alpha = -s
            ns = st["s0"][0]  # a let: the scalar load at a cycle of its own
            T.tile.exp(y0, y0)
            T.tile.exp(y1, y1)
            T.pipe_barrier("V")
            T.tile.axpy(g0, y0, ns)
            T.tile.axpy(g1, y1, ns)
        T.pipe_barrier("V")
        narrow(dy, g0, g1)

    in_idx = [0, 1] if backward else [0]  # a Python list: unrolled while parsing
    sweeps = [0, 1]

    # A chunk's GM copy, split where the chunk starts off the 512-byte request grid (a copy off
    # it moves at 70 % of the bandwidth: docs/calibration.md, "GM alignment"): the head up to
    # the next boundary alone, then the rest on the grid. The offset (row N + col) es modulo 512
    # is one of the multiples of g; `heads` pairs each with the head's columns.
    g = math.gcd(math.gcd(N * es, bN * es), 512)
    heads = [(r, (512 - r) % 512 // es) for r in range(0, 512, g)]

    @T.macro
    def gm_load(src, row, col, ub):
        if g == 512:
            T.copy(src[row, col], ub[0:1, 0:bN])
        else:
            for r, hd in heads:
                if (row * N + col) * es % 512 == r:
                    if hd > 0:
                        T.copy(src[row, col], ub[0:1, 0:hd])
                    T.copy(src[row, col + hd], ub[0:1, hd:bN])

    @T.macro
    def gm_store(ub, dst, row, col):
        if g == 512:
            T.copy(ub[0:1, 0:bN], dst[row, col])
        else:
            for r, hd in heads:
                if (row * N + col) * es % 512 == r:
                    if hd > 0:
                        T.copy(ub[0:1, 0:hd], dst[row, col])
                    T.copy(ub[0:1, hd:bN], dst[row, col + hd])

    cached = not backward and not log  # softmax's pass 2 takes the row's last chunk first

    @T.macro
    def load(ins, sl, n, worker, workers):
        if cached:  # pass 1 in order; pass 2 the row's last chunk first, then 0, 1, ...
            for i in in_idx:
                gm_load(ins[i], worker + n // spr * workers, (n % spr - n % spr // C) % C * bN, sl[i])
        elif backward and log:  # pass 1 reads dy alone
            if n % spr < C:
                gm_load(ins[1], worker + n // spr * workers, n % C * bN, sl[1])
            else:
                for i in in_idx:
                    gm_load(ins[i], worker + n // spr * workers, n % C * bN, sl[i])
        else:
            for i in in_idx:
                gm_load(ins[i], worker + n // spr * workers, n % C * bN, sl[i])

    @T.macro
    def work(ins, OUT, sl, hv, tr, st, n, worker, workers):
        if n % spr < C:
            if backward:
                bwd_pass1(sl[0], sl[1], hv[0], hv[1], hv[2], hv[3], tr, st, n % spr == 0)
            else:
                fwd_pass1(sl[0], hv[0], hv[1], tr, st, n % spr == 0)
            _sync("V", "MTE3", sl[nin])  # the slot is read: free after MTE3's wait
        else:
            if backward:
                if n % spr == C:
                    bwd_finish(st)
                bwd_pass2(sl[0], sl[1], hv[0], hv[1], hv[2], hv[3], st)
            else:
                if cached:  # fwd_finish does the first pass-2 step
                    if n % spr == C:
                        fwd_finish(ins[0], sl[0], hv[0], hv[1], hv[2], tr, st, worker + n // spr * workers)
                    else:
                        fwd_pass2(sl[0], hv[0], hv[1], st)
                else:
                    if n % spr == C:
                        fwd_finish(ins[0], sl[0], hv[0], hv[1], hv[2], tr, st, worker + n // spr * workers)
                    fwd_pass2(sl[0], hv[0], hv[1], st)
            _sync("V", "MTE3", sl[nin])
            if cached:
                gm_store(sl[nin - 1], OUT, worker + n // spr * workers, (n % spr - n % spr // C) % C * bN)
            else:
                gm_store(sl[nin - 1], OUT, worker + n // spr * workers, (n % spr - C) * bN)

    @T.macro
    def step(ins, OUT, slots, hv, tr, st, n, sl, ahead, total, worker, workers):
        """Step n in slot sl; the step after next loads into slot `ahead`."""
        if n < total:
            if n + (SLOTS - 1) < total:
                T.wait_flag("MTE3", "MTE2", ahead)
                load(ins, slots[ahead], n + (SLOTS - 1), worker, workers)
                T.set_flag("MTE2", "V", ahead)
            T.wait_flag("MTE2", "V", sl)
            work(ins, OUT, slots[sl], hv, tr, st, n, worker, workers)
            T.set_flag("MTE3", "MTE2", sl)

    slot_idx = list(range(SLOTS))  # a Python list: unrolled while parsing
    in_names = ["y", "dy"] if backward else ["x"]

    def alloc_slots() -> list:
        """The chunk slots where the kernel calls it: slots[s] is [its inputs..., its event id]."""
        return [[T.alloc_ub((1, bN), dtype, name=f"{in_names[i]}{sl}_ub", address=a_slots[sl][i])
                 for i in range(nin)] + [sl] for sl in range(SLOTS)]

    @T.macro
    def body(ins, OUT):
        with T.Kernel(num_blocks, is_npu=True) as (cid, vid):
            with T.Scope("V"):
                # Slot s holds input i at slots[s][i] (and its event id last); the result
                # overwrites the last input.
                if backward:
                    slots = alloc_slots()
                    # The fp32 halves of y and dy, dy's 256 bytes from y's.
                    y0 = T.alloc_ub((1, h), "float32", name="yf0_ub", address=a_e0)
                    y1 = T.alloc_ub((1, h), "float32", name="yf1_ub", address=a_e1)
                    g0 = T.alloc_ub((1, h), "float32", name="gf0_ub", address=a_g0)
                    g1 = T.alloc_ub((1, h), "float32", name="gf1_ub", address=a_g1)
                    hv = [y0, y1, g0, g1]
                else:
                    slots = alloc_slots()
                    e0 = T.alloc_ub((1, h), "float32", name="e0_ub", address=a_e0)
                    e1 = T.alloc_ub((1, h), "float32", name="e1_ub", address=a_e1)
                    hv = [e0, e1]
                tr = alloc_tree()
                st = alloc_stats()
                if not backward:
                    st["acc0"] = T.alloc_ub((1, wl), "float32", name="acc0_ub", address=a_acc[0])
                    st["acc1"] = T.alloc_ub((1, wl), "float32", name="acc1_ub", address=a_acc[1])
                    st["q0"] = T.alloc_ub((1,), "float32", name="q0_ub", address=a_q[0])
                    st["q1"] = T.alloc_ub((1,), "float32", name="q1_ub", address=a_q[1])
                if not backward:  # the fallback's 16-bit pieces (fp32 pieces land in e0)
                    if wide:
                        hv = hv + [T.alloc_ub((1, h), dtype, name="fb_ub", address=a_fb)]
                    else:
                        hv = hv + [None]

                workers = num_blocks * 2
                worker = cid * 2 + vid
                mine = T.ceildiv(T.max(M - worker, 0), workers)
                for sl in slot_idx:
                    T.set_flag("MTE3", "MTE2", sl)  # every slot starts free
                for sl in slot_idx[:-1]:
                    if mine * spr > sl:
                        T.wait_flag("MTE3", "MTE2", sl)
                        load(ins, slots[sl], sl, worker, workers)
                        T.set_flag("MTE2", "V", sl)
                # Steps in threes, so each slot's code and ids are constants; the load of the step
                # after next is issued before this step's compute.
                for i in T.serial(T.ceildiv(mine * spr, SLOTS)):
                    for sl in slot_idx:
                        step(ins, OUT, slots, hv, tr, st, i * SLOTS + sl, sl, (sl + SLOTS - 1) % SLOTS,
                             mine * spr, worker, workers)
                for sl in slot_idx:
                    T.wait_flag("MTE3", "MTE2", sl)

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
