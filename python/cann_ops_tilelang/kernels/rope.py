"""RoPE's kernel generator in TileLang-Ascend syntax: the Python twin of
cann_ops_tilelang/rope/rope_kernel.cpp.

For the same key this builds the very IR the C++ generator builds (the printed IR text is
compared in python/tests/test_opslib_rope.py), so a user reads and changes the op in the language
they know, and a change here that the C++ side lacks fails that test. The key is what the
library's launch layer chooses (cann_ops_tilelang.kernels.rope_key): dtype, heads (H), head_dim
(D), rot_dim (R), rot_offset (0: the first R elements of a head rotate; D - R: the last),
interleaved, backward, positions, tokens_per_tile (bT), heads_per_tile (bH), blocks. M (tokens)
and NR (table rows) are dynamic: one kernel per key serves every sequence length.

The design (the C++ file's top comment says it at length): expert mode; a tile is bT tokens x bH
heads of x, loaded in one copy with the tokens' cos/sin rows, rotated head by head on [bT, R]
regions (so the table rows line up with x's rows and are never broadcast across heads), stored
in one copy; three x slots buffered by hand (event s for slot s), the next item's load issued
before this item's vector work; each worker takes a contiguous run of items and loads a token
tile's table rows once (two parity buffers); UB addresses placed against bank conflicts; the
tail tile's copies
clipped to M by the compiler. Half: with q = r * w, y[j] = r[j] c[j] + q[p(j)] (p the pair
partner, w sin permuted and signed forward, signed backward); interleaved: y = r * c + g * w with
g the partner rows, one gather per token row (w signed sin forward, permuted and signed backward).
"""

# No `from __future__ import annotations`: the parser reads a parameter's T.Tensor annotation
# from the evaluated __annotations__ (the dynamic sizes live in this function's scope).
import tl_ascend.language as T
from tl_ascend.language.parser import PrimFunc

from ._ub import ub_placer


def rope_kernel(dtype: str, heads: int, head_dim: int, rot_dim: int, rot_offset: int, interleaved: bool,
                backward: bool, positions: bool, tokens_per_tile: int, heads_per_tile: int,
                blocks: int) -> PrimFunc:
    """X [M, H * D], C [NR, R] fp32, S [NR, R] fp32, (P [M] int32), Y [M, H * D]."""
    H, D, R, off, bT, bH = heads, head_dim, rot_dim, rot_offset, tokens_per_tile, heads_per_tile
    wide = dtype != "float32"
    chunks, bHD, h2 = H // bH, bH * D, R // 2
    M = T.dynamic("M")
    NR = T.dynamic("NR")
    items = T.ceildiv(M, bT) * chunks
    # UB addresses by hand, in the C++ generator's order: the two sources of the 16-bit paths'
    # instructions start 256 bytes apart modulo 512 (no bank-group conflict, docs/calibration.md).
    place = ub_placer()
    es = 2 if wide else 4
    a_x = [place(bT * bHD * es, 0) for _ in range(3)]
    a_c, a_s, a_w = place(2 * bT * R * 4, 256), place(2 * bT * R * 4, 0), place(2 * bT * R * 4, 0)
    a_y = place(bT * R * 4, 0) if not (wide and interleaved) else None
    a_xf = place(bT * (bHD if interleaved else R) * 4, 0) if wide else None
    a_q = place(bT * R * 4, 0) if not wide else None
    a_g = place(bT * bHD * 4, 256) if interleaved else None
    a_sg = place(bT * R * 4, 256) if interleaved else None
    a_ix = place(bHD * 4, 0) if interleaved else None
    a_hf = place(bHD * 4, 256) if interleaved else None
    a_fl = place(bHD * 4, 0) if interleaved else None
    a_oi = place(bHD * 4, 256) if interleaved else None
    num_blocks = T.min(blocks, T.ceildiv(items, 2))

    @T.macro
    def load(X, C, S, P, it, x_ub, ev, c_ub, s_ub, first_item):
        """Loads item `it` (token tile, head chunk) into one slot, and its token tile's table rows if
        it is the worker's first item of that tile. The compiler clips the tail tile's copies to M:
        its rows past M load as pad_value and are never stored."""
        t0 = it // chunks * bT
        col = it % chunks * bHD
        par = it // chunks % 2
        T.wait_flag("MTE3", "MTE2", ev)  # the slot's last store is done
        T.wait_flag("MTE3", "V", ev)  # a pad fill of x's slot runs on V (the C++ generator says why)
        if first_item:
            tables(C, S, P, t0, par, c_ub, s_ub)
        else:
            if it % chunks == 0:
                tables(C, S, P, t0, par, c_ub, s_ub)
        # x last: the row copies nearly fill the 32-deep MTE2 queue, and a big copy at its head would
        # hold the scalar unit's issue of the current item's vector work for its whole length.
        T.copy(X[t0, col], x_ub, pad_value=0.0)
        T.set_flag("MTE2", "V", ev)

    @T.macro
    def tables(C, S, P, t0, par, c_ub, s_ub):
        """The token tile's cos/sin rows into rows [par bT, par bT + bT) of the table tiles."""
        # The tables of the token tile two back (same rows) are read no more; the barrier orders a pad
        # fill (V) after those reads.
        T.wait_flag("V", "MTE2", par)
        T.pipe_barrier("V")
        if P is not None:  # the tokens' rows one by one (a row past M keeps what the slot held)
            nt = T.min(M - t0, bT)
            for j in T.serial(nt):
                row = P[t0 + j]
                T.copy(C[row, 0], c_ub[par * bT + j:par * bT + j + 1, 0:R])
                T.copy(S[row, 0], s_ub[par * bT + j:par * bT + j + 1, 0:R])
        else:
            T.copy(C[t0, 0], c_ub[par * bT:par * bT + bT, 0:R], pad_value=0.0)
            T.copy(S[t0, 0], s_ub[par * bT:par * bT + bT, 0:R], pad_value=0.0)

    @T.macro
    def compute_store(Y, it, i, mine, x_ub, ev, c_ub, s_ub, w_ub, q_ub, y_ub, xf_ub, g_ub, sg_ub,
                      offs_ub):
        """Rotates the item loaded into the slot (the worker's item i) and stores it."""
        t0 = it // chunks * bT
        col = it % chunks * bHD
        par = it // chunks % 2
        T.wait_flag("MTE2", "V", ev)
        # w, once per token tile (the C++ generator's table)
        if i == 0 or it % chunks == 0:
            if interleaved:
                if backward:
                    for j in T.serial(bT):
                        T.tile.gather(w_ub[par * bT + j:par * bT + j + 1, 0:R],
                                      s_ub[par * bT + j:par * bT + j + 1, 0:R], offs_ub[0:R], 0)
                    T.pipe_barrier("V")
                    T.tile.mul(w_ub[par * bT:par * bT + bT, 0:R], w_ub[par * bT:par * bT + bT, 0:R], sg_ub)
                else:
                    T.tile.mul(w_ub[par * bT:par * bT + bT, 0:R], s_ub[par * bT:par * bT + bT, 0:R], sg_ub)
            else:
                # 16-bit I/O adds r[p(j)] w'[j], w'[j] = sgn(j) s[j] forward (sgn(p(j)) s[p(j)]
                # backward); 32-bit I/O adds q[p(j)], q = r w, whose w is the other of the two.
                if backward == wide:
                    T.tile.mul(w_ub[par * bT:par * bT + bT, 0:h2], s_ub[par * bT:par * bT + bT, h2:h2 + h2], 1.0)
                    T.tile.mul(w_ub[par * bT:par * bT + bT, h2:h2 + h2], s_ub[par * bT:par * bT + bT, 0:h2], -1.0)
                else:
                    T.tile.mul(w_ub[par * bT:par * bT + bT, 0:h2], s_ub[par * bT:par * bT + bT, 0:h2], -1.0)
                    T.tile.mul(w_ub[par * bT:par * bT + bT, h2:h2 + h2], s_ub[par * bT:par * bT + bT, h2:h2 + h2],
                               1.0)
        c = c_ub[par * bT:par * bT + bT, 0:R]
        w = w_ub[par * bT:par * bT + bT, 0:R]
        if interleaved:
            if wide:
                # x widened into xf, the partner rows gathered from it, then y computed in place in xf,
                # every head's instruction of a step under one barrier: y = r c, y += g w, the narrowing.
                T.pipe_barrier("V")  # the previous item's narrowing has read xf
                T.tile.cast(xf_ub, x_ub)
                T.pipe_barrier("V")
                for t in T.serial(bT):
                    T.tile.gather(g_ub[t:t + 1, 0:bHD], xf_ub[t:t + 1, 0:bHD], offs_ub, 0)
                T.pipe_barrier("V")
                for h in T.serial(bH):
                    T.tile.mul(xf_ub[0:bT, h * D + off:h * D + off + R], xf_ub[0:bT, h * D + off:h * D + off + R], c)
                T.pipe_barrier("V")
                for h in T.serial(bH):
                    T.tile.mul_add_dst(xf_ub[0:bT, h * D + off:h * D + off + R],
                                       g_ub[0:bT, h * D + off:h * D + off + R], w)
                T.pipe_barrier("V")
                for h in T.serial(bH):
                    T.tile.cast(x_ub[0:bT, h * D + off:h * D + off + R], xf_ub[0:bT, h * D + off:h * D + off + R],
                                "CAST_RINT")
            else:
                for t in T.serial(bT):
                    T.tile.gather(g_ub[t:t + 1, 0:bHD], x_ub[t:t + 1, 0:bHD], offs_ub, 0)
                for h in T.serial(bH):
                    T.pipe_barrier("V")  # the previous head's last op has read q, y
                    T.tile.mul(y_ub, x_ub[0:bT, h * D + off:h * D + off + R], c)
                    T.tile.mul(q_ub, g_ub[0:bT, h * D + off:h * D + off + R], w)
                    T.pipe_barrier("V")
                    T.tile.add(x_ub[0:bT, h * D + off:h * D + off + R], y_ub, q_ub)
        else:
            for h in T.serial(bH):
                T.pipe_barrier("V")  # the previous head's last op has read q, y, xf
                if wide:
                    # y = r c, then y[j] += r[p(j)] w'[j] as two half-width multiply-adds, then the
                    # narrowing
                    T.tile.cast(xf_ub, x_ub[0:bT, h * D + off:h * D + off + R])
                    T.pipe_barrier("V")
                    T.tile.mul(y_ub, xf_ub, c)
                    T.pipe_barrier("V")
                    T.tile.mul_add_dst(y_ub[0:bT, 0:h2], xf_ub[0:bT, h2:h2 + h2], w_ub[par * bT:par * bT + bT, 0:h2])
                    T.tile.mul_add_dst(y_ub[0:bT, h2:h2 + h2], xf_ub[0:bT, 0:h2],
                                       w_ub[par * bT:par * bT + bT, h2:h2 + h2])
                    T.pipe_barrier("V")
                    T.tile.cast(x_ub[0:bT, h * D + off:h * D + off + R], y_ub, "CAST_RINT")
                else:
                    # y[j] = r[j] c[j] + q[p(j)], into x's region
                    T.tile.mul(q_ub, x_ub[0:bT, h * D + off:h * D + off + R], w)
                    T.tile.mul(y_ub, x_ub[0:bT, h * D + off:h * D + off + R], c)
                    T.pipe_barrier("V")
                    T.tile.add(x_ub[0:bT, h * D + off + 0:h * D + off + 0 + h2], y_ub[0:bT, 0:h2],
                               q_ub[0:bT, h2:h2 + h2])
                    T.tile.add(x_ub[0:bT, h * D + off + h2:h * D + off + h2 + h2], y_ub[0:bT, h2:h2 + h2],
                               q_ub[0:bT, 0:h2])
        # The token tile's last item of this worker: its table rows and w are free.
        if i + 1 == mine or (it + 1) % chunks == 0:
            T.set_flag("V", "MTE2", par)
        T.set_flag("V", "MTE3", ev)
        T.wait_flag("V", "MTE3", ev)
        T.copy(x_ub, Y[t0, col])
        T.set_flag("MTE3", "MTE2", ev)  # the slot is free again
        T.set_flag("MTE3", "V", ev)

    @T.macro
    def body(X, C, S, P, Y):
        with T.Kernel(num_blocks, is_npu=True) as (cid, vid):
            with T.Scope("V"):
                x0_ub = T.alloc_ub((bT, bHD), dtype, address=a_x[0])
                x1_ub = T.alloc_ub((bT, bHD), dtype, address=a_x[1])
                x2_ub = T.alloc_ub((bT, bHD), dtype, address=a_x[2])
                # The token tiles' table rows and w (rows [par bT, par bT + bT) for token tile parity
                # par): loaded once per token tile and worker, shared by its head chunks.
                c_ub = T.alloc_ub((2 * bT, R), "float32", address=a_c)
                s_ub = T.alloc_ub((2 * bT, R), "float32", address=a_s)
                w_ub = T.alloc_ub((2 * bT, R), "float32", address=a_w)
                y_ub = None
                if not (wide and interleaved):
                    y_ub = T.alloc_ub((bT, R), "float32", address=a_y)  # r c, the result
                q_ub = None
                xf_ub = None
                g_ub = None
                sg_ub = None
                offs_ub = None
                if wide:
                    xf_ub = T.alloc_ub((bT, bHD if interleaved else R), "float32", address=a_xf)
                else:
                    q_ub = T.alloc_ub((bT, R), "float32", address=a_q)  # r * w, partner * w
                if interleaved:
                    # The partner rows (x[j ^ 1], every head at once), one gather per token row: a
                    # whole-tile gather is refused (the tile's rows are not provably inside M).
                    g_ub = T.alloc_ub((bT, bHD), "float32", address=a_g)
                    sg_ub = T.alloc_ub((bT, R), "float32", address=a_sg)  # sgn(j) forward, -sgn(j) backward
                    # sgn(j) (-1 even, +1 odd) and the partner offsets (j ^ 1) * 4 bytes, built once.
                    ix_ub = T.alloc_ub((bHD,), "float32", address=a_ix)
                    hf_ub = T.alloc_ub((bHD,), "float32", address=a_hf)
                    fl_ub = T.alloc_ub((bHD,), "float32", address=a_fl)
                    offs_i_ub = T.alloc_ub((bHD,), "int32", address=a_oi)
                    offs_ub = T.view(offs_i_ub, "uint32")
                    T.tile.createvecindex(ix_ub, 0.0)
                    T.pipe_barrier("V")
                    T.tile.mul(hf_ub, ix_ub, 0.5)
                    T.pipe_barrier("V")
                    T.tile.cast(offs_i_ub, hf_ub, "CAST_FLOOR")
                    T.pipe_barrier("V")
                    T.tile.cast(fl_ub, offs_i_ub, "CAST_RINT")
                    T.pipe_barrier("V")
                    T.tile.sub(hf_ub, hf_ub, fl_ub)
                    T.pipe_barrier("V")
                    T.tile.mul(hf_ub, hf_ub, 4.0)
                    T.pipe_barrier("V")
                    T.tile.add(hf_ub, hf_ub, -1.0)  # sgn(j)
                    T.pipe_barrier("V")
                    T.tile.broadcast(sg_ub, hf_ub[0:R])
                    T.tile.sub(ix_ub, ix_ub, hf_ub)  # the partner j - sgn(j)
                    T.pipe_barrier("V")
                    if backward:
                        T.tile.mul(sg_ub, sg_ub, -1.0)
                    T.tile.mul(ix_ub, ix_ub, 4.0)
                    T.pipe_barrier("V")
                    T.tile.cast(offs_i_ub, ix_ub, "CAST_RINT")
                    T.pipe_barrier("V")

                workers = num_blocks * 2
                worker = cid * 2 + vid
                # A contiguous run of items per worker (token tile major), so that its consecutive items
                # share a token tile and its table rows.
                first = items * worker // workers
                mine = items * (worker + 1) // workers - first
                T.set_flag("MTE3", "MTE2", 0)
                T.set_flag("MTE3", "MTE2", 1)
                T.set_flag("MTE3", "MTE2", 2)
                T.set_flag("MTE3", "V", 0)
                T.set_flag("MTE3", "V", 1)
                T.set_flag("MTE3", "V", 2)
                T.set_flag("V", "MTE2", 0)
                T.set_flag("V", "MTE2", 1)
                # Software-pipelined in program order: a wait_flag holds the scalar unit's issue and an
                # item's vector work fills the V queue, so item i + 1's load is issued before item i's
                # vector work, into the slot of item i - 2 (three slots).
                if 0 < mine:
                    load(X, C, S, P, first, x0_ub, 0, c_ub, s_ub, True)
                for p in T.serial(T.ceildiv(mine, 3)):
                    if p * 3 + 0 + 1 < mine:
                        load(X, C, S, P, first + (p * 3 + 0 + 1), x1_ub, 1, c_ub, s_ub, False)
                    compute_store(Y, first + (p * 3 + 0), p * 3 + 0, mine, x0_ub, 0, c_ub, s_ub, w_ub, q_ub, y_ub,
                                  xf_ub, g_ub, sg_ub, offs_ub)
                    if p * 3 + 1 < mine:
                        if p * 3 + 1 + 1 < mine:
                            load(X, C, S, P, first + (p * 3 + 1 + 1), x2_ub, 2, c_ub, s_ub, False)
                        compute_store(Y, first + (p * 3 + 1), p * 3 + 1, mine, x1_ub, 1, c_ub, s_ub, w_ub, q_ub,
                                      y_ub, xf_ub, g_ub, sg_ub, offs_ub)
                    if p * 3 + 2 < mine:
                        if p * 3 + 2 + 1 < mine:
                            load(X, C, S, P, first + (p * 3 + 2 + 1), x0_ub, 0, c_ub, s_ub, False)
                        compute_store(Y, first + (p * 3 + 2), p * 3 + 2, mine, x2_ub, 2, c_ub, s_ub, w_ub, q_ub,
                                      y_ub, xf_ub, g_ub, sg_ub, offs_ub)
                T.wait_flag("MTE3", "MTE2", 0)
                T.wait_flag("MTE3", "MTE2", 1)
                T.wait_flag("MTE3", "MTE2", 2)
                T.wait_flag("MTE3", "V", 0)
                T.wait_flag("MTE3", "V", 1)
                T.wait_flag("MTE3", "V", 2)
                T.wait_flag("V", "MTE2", 0)
                T.wait_flag("V", "MTE2", 1)

    if positions and backward:
        @T.prim_func
        def rope_bwd(X: T.Tensor((M, H * D), dtype), C: T.Tensor((NR, R), "float32"),
                     S: T.Tensor((NR, R), "float32"), P: T.Tensor((M,), "int32"),
                     Y: T.Tensor((M, H * D), dtype)):
            body(X, C, S, P, Y)
        return rope_bwd
    if positions:
        @T.prim_func
        def rope_fwd(X: T.Tensor((M, H * D), dtype), C: T.Tensor((NR, R), "float32"),
                     S: T.Tensor((NR, R), "float32"), P: T.Tensor((M,), "int32"),
                     Y: T.Tensor((M, H * D), dtype)):
            body(X, C, S, P, Y)
        return rope_fwd
    if backward:
        @T.prim_func
        def rope_bwd(X: T.Tensor((M, H * D), dtype), C: T.Tensor((NR, R), "float32"),
                     S: T.Tensor((NR, R), "float32"), Y: T.Tensor((M, H * D), dtype)):
            body(X, C, S, None, Y)
        return rope_bwd

    @T.prim_func
    def rope_fwd(X: T.Tensor((M, H * D), dtype), C: T.Tensor((NR, R), "float32"),
                 S: T.Tensor((NR, R), "float32"), Y: T.Tensor((M, H * D), dtype)):
        body(X, C, S, None, Y)
    return rope_fwd
