"""RMSNorm's forward kernel, resident schedule, in TileLang-Ascend syntax: the Python twin of
cann_ops_tilelang/norm/rms_norm_fwd_resident.cpp (the same IR for the same key, compared in
python/tests/test_opslib_twin.py). rms_norm_fwd_kernel (rms_norm.py) builds this one when the
key's `resident` is set.

Each rM-row tile of x (and the residual) is loaded into UB once and stays there for both passes
(pass 1 the sum of squares in bN-column fp32 chunks, pass 2 y = h * rstd * w written over x's
chunk, h over the residual's), then stored whole: x is read from GM once. Two tile slots: the
load of a worker's next tile is issued before this tile's compute. Events per pipe pair: slot s
loads MTE2 -> V on id s, stores V -> MTE3 on id s, and is free for its next load after the store,
MTE3 -> MTE2 on id s (set once for both slots before the loop, waited once after it); the rstd
store waits at once on id 2; the tail tile (M % rM rows), after the loop, runs synchronously in
slot 0 on id 3, zero-filled and loaded row by row.
"""

import tl_ascend.language as T
from tl_ascend.language.parser import PrimFunc

from ._rms_norm_parts import sync, weight_loader
from ._ub import ub_placer

EV_RSTD, EV_TAIL = 2, 3


def rms_norm_fwd_resident_kernel(dtype: str, hidden: int, rows_per_tile: int, chunk: int, blocks: int,
                                 residual: bool, rstd: bool) -> PrimFunc:
    """X [M, H], (R [M, H]), W [H], Y [M, H], (HO [M, H]), (Rstd [MP]), eps."""
    H, rM, bN = hidden, rows_per_tile, chunk
    chunks = H // bN
    wide = dtype != "float32"
    M = T.dynamic("M")
    MP = T.dynamic("MP")
    num_blocks = T.min(blocks, T.ceildiv(M, rM))
    # Explicit UB addresses: a vector instruction whose two sources start in the same bank groups
    # pays its repeats twice (asc-devkit "avoid bank conflicts", 2201: 16 groups of 32-byte
    # banks; docs/calibration.md), so each pair of sources an instruction reads starts 256 bytes
    # apart modulo 512: x, xf at 0, the others at 256 (W at 0 beside rf with a residual).
    es = 4 if dtype == "float32" else 2
    tile, chunk_bytes = rM * H * es, rM * bN * 4
    place = ub_placer()

    a_wf = place(H * 4, 0 if residual else 256)
    a_x = [place(tile, 0), place(tile, 0)]
    a_r = [place(tile, 256), place(tile, 256)] if residual else None
    a_xf, a_acc = place(chunk_bytes, 0), place(chunk_bytes, 256)
    a_rf = place(chunk_bytes, 256) if residual else None
    a_xg = None if residual else place(chunk_bytes, 0)
    a_ss = place(rM * 4, 256)
    # W as loaded is dead once widened: without a residual it shares the chunk temporaries' bytes.
    a_w = (place(H * es, 0) if residual else a_xf) if wide else None
    load_weight_f32 = weight_loader(dtype, H, EV_TAIL, a_w)
    pairs = chunks // 2

    @T.macro
    def load(X, R, x_ub, r_ub, row0, nrows):
        """The tile at row0 into a slot: one copy, or one per valid row of the tail."""
        if nrows is None:
            T.copy(X[row0, 0], x_ub)
            if R is not None:
                T.copy(R[row0, 0], r_ub)
        else:
            for j in T.serial(nrows):
                T.copy(X[row0 + j, 0], x_ub[j:j + 1, 0:H])
            if R is not None:
                for j in T.serial(nrows):
                    T.copy(R[row0 + j, 0], r_ub[j:j + 1, 0:H])

    @T.macro
    def store(Y, HO, x_ub, r_ub, row0, nrows):
        if nrows is None:
            T.copy(x_ub, Y[row0, 0])
            if HO is not None:
                T.copy(r_ub, HO[row0, 0])
        else:
            for j in T.serial(nrows):
                T.copy(x_ub[j:j + 1, 0:H], Y[row0 + j, 0])
            if HO is not None:
                for j in T.serial(nrows):
                    T.copy(r_ub[j:j + 1, 0:H], HO[row0 + j, 0])

    @T.macro
    def h_chunk(x_ub, r_ub, xf_ub, rf_ub, c0):
        """h's chunk at column c0 in fp32 into xf_ub (not for fp32 without a residual: there h is
        x's own chunk)."""
        if not wide:
            T.tile.add(xf_ub, x_ub[0:rM, c0:c0 + bN], r_ub[0:rM, c0:c0 + bN])
        else:
            T.tile.cast(xf_ub, x_ub[0:rM, c0:c0 + bN])
            if r_ub is not None:
                T.tile.cast(rf_ub, r_ub[0:rM, c0:c0 + bN])
                T.pipe_barrier("V")
                T.tile.add(xf_ub, xf_ub, rf_ub)

    @T.macro
    def rstd_of(Rstd, eps, acc_ub, ss_ub, row0):
        """acc_ub's row sums -> rstd in ss_ub (stored to Rstd when asked)."""
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

    @T.macro
    def pass1_pair(x_ub, xf_ub, xg_ub, acc_ub, c0, c1, first):
        """Sum of squares of the chunks at c0 (in xf_ub) and c1 (in xg_ub), each step of the two
        issued together under one barrier; the first pair writes acc_ub."""
        T.pipe_barrier("V")
        if wide:
            T.tile.cast(xf_ub, x_ub[0:rM, c0:c0 + bN])
            T.tile.cast(xg_ub, x_ub[0:rM, c1:c1 + bN])
            T.pipe_barrier("V")
            if first:
                T.tile.mul(acc_ub, xf_ub, xf_ub)
            else:
                T.tile.mul(xf_ub, xf_ub, xf_ub)
            T.tile.mul(xg_ub, xg_ub, xg_ub)
        else:
            T.pipe_barrier("V")
            if first:
                T.tile.mul(acc_ub, x_ub[0:rM, c0:c0 + bN], x_ub[0:rM, c0:c0 + bN])
            else:
                T.tile.mul(xf_ub, x_ub[0:rM, c0:c0 + bN], x_ub[0:rM, c0:c0 + bN])
            T.tile.mul(xg_ub, x_ub[0:rM, c1:c1 + bN], x_ub[0:rM, c1:c1 + bN])
        T.pipe_barrier("V")
        if not first:
            T.tile.add(acc_ub, acc_ub, xf_ub)
            T.pipe_barrier("V")
        T.tile.add(acc_ub, acc_ub, xg_ub)

    @T.macro
    def pass1_one(x_ub, xf_ub, acc_ub, c0, first):
        T.pipe_barrier("V")
        if wide:
            T.tile.cast(xf_ub, x_ub[0:rM, c0:c0 + bN])
            T.pipe_barrier("V")
            if first:
                T.tile.mul(acc_ub, xf_ub, xf_ub)
            else:
                T.tile.mul(xf_ub, xf_ub, xf_ub)
        else:
            T.pipe_barrier("V")
            if first:
                T.tile.mul(acc_ub, x_ub[0:rM, c0:c0 + bN], x_ub[0:rM, c0:c0 + bN])
            else:
                T.tile.mul(xf_ub, x_ub[0:rM, c0:c0 + bN], x_ub[0:rM, c0:c0 + bN])
        if not first:
            T.pipe_barrier("V")
            T.tile.add(acc_ub, acc_ub, xf_ub)

    @T.macro
    def scale_pair(x_ub, wf_ub, xf_ub, xg_ub, ss_ub, c0, c1):
        """y = x * rstd * w for the chunks at c0 (in xf_ub) and c1 (in xg_ub), step by step."""
        T.pipe_barrier("V")
        if wide:
            T.tile.cast(xf_ub, x_ub[0:rM, c0:c0 + bN])
            T.tile.cast(xg_ub, x_ub[0:rM, c1:c1 + bN])
            T.pipe_barrier("V")
            T.tile.row_expand_mul(xf_ub, xf_ub, ss_ub)
            T.tile.row_expand_mul(xg_ub, xg_ub, ss_ub)
        else:
            T.pipe_barrier("V")
            T.tile.row_expand_mul(xf_ub, x_ub[0:rM, c0:c0 + bN], ss_ub)
            T.tile.row_expand_mul(xg_ub, x_ub[0:rM, c1:c1 + bN], ss_ub)
        T.pipe_barrier("V")
        for r in T.serial(rM):
            if wide:
                T.tile.mul(xf_ub[r:r + 1, 0:bN], xf_ub[r:r + 1, 0:bN], wf_ub[c0:c0 + bN])
                T.tile.mul(xg_ub[r:r + 1, 0:bN], xg_ub[r:r + 1, 0:bN], wf_ub[c1:c1 + bN])
            else:
                T.tile.mul(x_ub[r:r + 1, c0:c0 + bN], xf_ub[r:r + 1, 0:bN], wf_ub[c0:c0 + bN])
                T.tile.mul(x_ub[r:r + 1, c1:c1 + bN], xg_ub[r:r + 1, 0:bN], wf_ub[c1:c1 + bN])
        if wide:
            T.pipe_barrier("V")
            T.tile.cast(x_ub[0:rM, c0:c0 + bN], xf_ub, "CAST_RINT")
            T.tile.cast(x_ub[0:rM, c1:c1 + bN], xg_ub, "CAST_RINT")

    @T.macro
    def scale_one(x_ub, wf_ub, xf_ub, ss_ub, c0):
        T.pipe_barrier("V")
        if wide:
            T.tile.cast(xf_ub, x_ub[0:rM, c0:c0 + bN])
            T.pipe_barrier("V")
            T.tile.row_expand_mul(xf_ub, xf_ub, ss_ub)
        else:
            T.pipe_barrier("V")
            T.tile.row_expand_mul(xf_ub, x_ub[0:rM, c0:c0 + bN], ss_ub)
        T.pipe_barrier("V")
        for r in T.serial(rM):
            if wide:
                T.tile.mul(xf_ub[r:r + 1, 0:bN], xf_ub[r:r + 1, 0:bN], wf_ub[c0:c0 + bN])
            else:
                T.tile.mul(x_ub[r:r + 1, c0:c0 + bN], xf_ub[r:r + 1, 0:bN], wf_ub[c0:c0 + bN])
        if wide:
            T.pipe_barrier("V")
            T.tile.cast(x_ub[0:rM, c0:c0 + bN], xf_ub, "CAST_RINT")

    @T.macro
    def paired(Rstd, eps, x_ub, wf_ub, xf_ub, xg_ub, acc_ub, ss_ub, row0):
        """Without a residual, chunks go in pairs (xf_ub the even one, xg_ub the odd one) and each
        step of the two is issued together: one barrier per step serves both, half the barriers
        of chunk after chunk (a barrier waits out the V pipe's head and tail)."""
        if pairs == 0:
            pass1_one(x_ub, xf_ub, acc_ub, 0, True)
        else:
            pass1_pair(x_ub, xf_ub, xg_ub, acc_ub, 0, bN, True)
            for p in T.serial(1, pairs):
                pass1_pair(x_ub, xf_ub, xg_ub, acc_ub, p * (2 * bN), p * (2 * bN) + bN, False)
            if chunks % 2 == 1:
                pass1_one(x_ub, xf_ub, acc_ub, (chunks - 1) * bN, False)
        rstd_of(Rstd, eps, acc_ub, ss_ub, row0)
        for p in T.serial(pairs):
            scale_pair(x_ub, wf_ub, xf_ub, xg_ub, ss_ub, p * (2 * bN), p * (2 * bN) + bN)
        if chunks % 2 == 1:
            scale_one(x_ub, wf_ub, xf_ub, ss_ub, (chunks - 1) * bN)

    @T.macro
    def compute(Rstd, eps, x_ub, r_ub, wf_ub, xf_ub, xg_ub, acc_ub, rf_ub, ss_ub, row0):
        """The tile in a slot: statistics, then y in place of x (and h in place of r)."""
        # Vector instructions overlap: every chunk starts after the last one's reads of its
        # temporaries, and the tile after the previous tile's (a WAR hazard without it).
        if r_ub is None:
            paired(Rstd, eps, x_ub, wf_ub, xf_ub, xg_ub, acc_ub, ss_ub, row0)
        else:
            # Pass 1: sum of squares; chunk 0 writes acc_ub, the others add to it.
            T.pipe_barrier("V")
            h_chunk(x_ub, r_ub, xf_ub, rf_ub, 0)
            T.pipe_barrier("V")
            T.tile.mul(acc_ub, xf_ub, xf_ub)
            for c in T.serial(1, chunks):
                T.pipe_barrier("V")
                h_chunk(x_ub, r_ub, xf_ub, rf_ub, c * bN)
                T.pipe_barrier("V")
                T.tile.mul(xf_ub, xf_ub, xf_ub)
                T.pipe_barrier("V")
                T.tile.add(acc_ub, acc_ub, xf_ub)
            rstd_of(Rstd, eps, acc_ub, ss_ub, row0)
            # Pass 2: y = h * rstd * w, narrowed into x's chunk, h narrowed into r's.
            for c in T.serial(chunks):
                T.pipe_barrier("V")
                h_chunk(x_ub, r_ub, xf_ub, rf_ub, c * bN)
                T.pipe_barrier("V")
                if wide:
                    T.tile.cast(r_ub[0:rM, c * bN:c * bN + bN], xf_ub, "CAST_RINT")
                else:
                    T.tile.add(r_ub[0:rM, c * bN:c * bN + bN], xf_ub, 0.0)
                T.tile.row_expand_mul(rf_ub, xf_ub, ss_ub)
                T.pipe_barrier("V")
                # W's chunk row by row (a broadcast tile of W would cost a vector pass and UB);
                # fp32 without narrowing writes y straight into x's chunk.
                for r in T.serial(rM):
                    if wide:
                        T.tile.mul(rf_ub[r:r + 1, 0:bN], rf_ub[r:r + 1, 0:bN], wf_ub[c * bN:c * bN + bN])
                    else:
                        T.tile.mul(x_ub[r:r + 1, c * bN:c * bN + bN], rf_ub[r:r + 1, 0:bN],
                                   wf_ub[c * bN:c * bN + bN])
                if wide:
                    T.pipe_barrier("V")
                    T.tile.cast(x_ub[0:rM, c * bN:c * bN + bN], rf_ub, "CAST_RINT")

    @T.macro
    def slot_step(X, R, Y, HO, Rstd, eps, x_ub, r_ub, xn_ub, rn_ub, wf_ub, xf_ub, xg_ub, acc_ub, rf_ub, ss_ub,
                  i, s, worker, workers, mine):
        """Tile 2 i + s of this worker, in slot s; the next tile loads into the other slot."""
        if i * 2 + s < mine:
            if i * 2 + s + 1 < mine:  # the next tile loads while this one computes
                T.wait_flag("MTE3", "MTE2", 1 - s)
                load(X, R, xn_ub, rn_ub, (worker + (i * 2 + s + 1) * workers) * rM, None)
                T.set_flag("MTE2", "V", 1 - s)
            T.wait_flag("MTE2", "V", s)
            compute(Rstd, eps, x_ub, r_ub, wf_ub, xf_ub, xg_ub, acc_ub, rf_ub, ss_ub,
                    (worker + (i * 2 + s) * workers) * rM)
            sync("V", "MTE3", s)
            store(Y, HO, x_ub, r_ub, (worker + (i * 2 + s) * workers) * rM, None)
            T.set_flag("MTE3", "MTE2", s)

    @T.macro
    def body(X, R, W, Y, HO, Rstd, eps):
        with T.Kernel(num_blocks, is_npu=True) as (cid, vid):
            with T.Scope("V"):
                wf_ub = T.alloc_ub((H,), "float32", address=a_wf)  # W in fp32, kept for all rows
                x0_ub = T.alloc_ub((rM, H), dtype, address=a_x[0])  # the two tile slots: x as loaded, then y
                x1_ub = T.alloc_ub((rM, H), dtype, address=a_x[1])
                r0_ub = None
                r1_ub = None
                if R is not None:
                    r0_ub = T.alloc_ub((rM, H), dtype, address=a_r[0])  # the residual as loaded, then h
                    r1_ub = T.alloc_ub((rM, H), dtype, address=a_r[1])
                xf_ub = T.alloc_ub((rM, bN), "float32", address=a_xf)  # h chunk in fp32
                acc_ub = T.alloc_ub((rM, bN), "float32", address=a_acc)  # sum of squares per column slot
                rf_ub = None
                xg_ub = None
                if R is not None:
                    rf_ub = T.alloc_ub((rM, bN), "float32", address=a_rf)  # r chunk, then y chunk
                else:
                    xg_ub = T.alloc_ub((rM, bN), "float32", address=a_xg)  # the odd chunk of a pair
                ss_ub = T.alloc_ub((rM,), "float32", address=a_ss)  # row sums of squares, then rstd
                load_weight_f32(W, wf_ub)

                workers = num_blocks * 2
                worker = cid * 2 + vid
                full_tiles = M // rM
                mine = T.ceildiv(T.max(full_tiles - worker, 0), workers)
                T.set_flag("MTE3", "MTE2", 0)  # both slots start free
                T.set_flag("MTE3", "MTE2", 1)
                if mine > 0:
                    T.wait_flag("MTE3", "MTE2", 0)
                    load(X, R, x0_ub, r0_ub, worker * rM, None)
                    T.set_flag("MTE2", "V", 0)
                # Tiles in pairs, so each slot's code and event ids are constants.
                for i in T.serial(T.ceildiv(mine, 2)):
                    slot_step(X, R, Y, HO, Rstd, eps, x0_ub, r0_ub, x1_ub, r1_ub, wf_ub, xf_ub, xg_ub, acc_ub, rf_ub,
                              ss_ub, i, 0, worker, workers, mine)
                    slot_step(X, R, Y, HO, Rstd, eps, x1_ub, r1_ub, x0_ub, r0_ub, wf_ub, xf_ub, xg_ub, acc_ub, rf_ub,
                              ss_ub, i, 1, worker, workers, mine)
                T.wait_flag("MTE3", "MTE2", 0)
                T.wait_flag("MTE3", "MTE2", 1)
                # The tail tile continues the round robin, in slot 0, zero-filled first.
                tail = M % rM
                if tail > 0 and worker == full_tiles % workers:
                    sync("MTE3", "V", EV_TAIL)  # slot 0's last store has read it
                    T.tile.fill(x0_ub, 0.0)
                    if R is not None:
                        T.tile.fill(r0_ub, 0.0)
                    sync("V", "MTE2", EV_TAIL)
                    load(X, R, x0_ub, r0_ub, full_tiles * rM, tail)
                    sync("MTE2", "V", EV_TAIL)
                    compute(Rstd, eps, x0_ub, r0_ub, wf_ub, xf_ub, xg_ub, acc_ub, rf_ub, ss_ub, full_tiles * rM)
                    sync("V", "MTE3", EV_TAIL)
                    store(Y, HO, x0_ub, r0_ub, full_tiles * rM, tail)

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
