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
in one copy; three tile slots buffered by hand (event s for slot s), the next item's load issued
before this item's vector work; the tail tile's copies
clipped to M by the compiler. Half: with q = r * w, y[j] = r[j] c[j] + q[p(j)] (p the pair
partner, w sin permuted and signed forward, signed backward); interleaved: y = r * c + g * w with
g the partner rows, one gather per token row (w signed sin forward, permuted and signed backward).
"""

# No `from __future__ import annotations`: the parser reads a parameter's T.Tensor annotation
# from the evaluated __annotations__ (the dynamic sizes live in this function's scope).
import tl_ascend.language as T
from tl_ascend.language.parser import PrimFunc


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
    num_blocks = T.min(blocks, T.ceildiv(items, 2))

    @T.macro
    def load(X, C, S, P, it, x_ub, c_ub, s_ub, ev):
        """Loads item `it` (token tile, head chunk) into one slot. The compiler clips the tail tile's
        copies to M: its rows past M load as pad_value and are never stored."""
        t0 = it // chunks * bT
        col = it % chunks * bHD
        T.wait_flag("MTE3", "MTE2", ev)  # the slot's last store is done
        T.wait_flag("MTE3", "V", ev)  # a pad fill of x's slot runs on V (the C++ generator says why)
        if P is not None:  # the tokens' rows one by one (a row past M keeps what the slot held)
            nt = T.min(M - t0, bT)
            for j in T.serial(nt):
                row = P[t0 + j]
                T.copy(C[row, 0], c_ub[j:j + 1, 0:R])
                T.copy(S[row, 0], s_ub[j:j + 1, 0:R])
        else:
            T.copy(C[t0, 0], c_ub, pad_value=0.0)
            T.copy(S[t0, 0], s_ub, pad_value=0.0)
        # x last: the row copies nearly fill the 32-deep MTE2 queue, and a big copy at its head would
        # hold the scalar unit's issue of the current item's vector work for its whole length.
        T.copy(X[t0, col], x_ub, pad_value=0.0)
        T.set_flag("MTE2", "V", ev)

    @T.macro
    def compute_store(Y, it, x_ub, c_ub, s_ub, ev, q_ub, y_ub, w_ub, xf_ub, g_ub, sg_ub, nsg_ub, offs_ub):
        """Rotates the item loaded into the slot and stores it."""
        t0 = it // chunks * bT
        col = it % chunks * bHD
        T.wait_flag("MTE2", "V", ev)
        if interleaved:
            # w from the tile's sin rows; g the partner rows, one gather per token row.
            if backward:
                for j in T.serial(bT):
                    T.tile.gather(w_ub[j:j + 1, 0:R], s_ub[j:j + 1, 0:R], offs_ub[0:R], 0)
                T.pipe_barrier("V")
                T.tile.mul(w_ub, w_ub, nsg_ub)
            else:
                T.tile.mul(w_ub, s_ub, sg_ub)
            src = x_ub
            if wide:
                T.tile.cast(xf_ub, x_ub)
                T.pipe_barrier("V")
                src = xf_ub
            for t in T.serial(bT):
                T.tile.gather(g_ub[t:t + 1, 0:bHD], src[t:t + 1, 0:bHD], offs_ub, 0)
            for h in T.serial(bH):
                T.pipe_barrier("V")  # the previous head's last op has read q, y
                T.tile.mul(y_ub, src[0:bT, h * D + off:h * D + off + R], c_ub)
                T.tile.mul(q_ub, g_ub[0:bT, h * D + off:h * D + off + R], w_ub)
                T.pipe_barrier("V")
                if wide:
                    T.tile.add(y_ub, y_ub, q_ub)
                    T.pipe_barrier("V")
                    T.tile.cast(x_ub[0:bT, h * D + off:h * D + off + R], y_ub, "CAST_RINT")
                else:
                    T.tile.add(x_ub[0:bT, h * D + off:h * D + off + R], y_ub, q_ub)
        else:
            if backward:
                T.tile.mul(w_ub[0:bT, 0:h2], s_ub[0:bT, 0:h2], -1.0)
                T.tile.mul(w_ub[0:bT, h2:h2 + h2], s_ub[0:bT, h2:h2 + h2], 1.0)
            else:
                T.tile.mul(w_ub[0:bT, 0:h2], s_ub[0:bT, h2:h2 + h2], 1.0)
                T.tile.mul(w_ub[0:bT, h2:h2 + h2], s_ub[0:bT, 0:h2], -1.0)
            for h in T.serial(bH):
                T.pipe_barrier("V")  # the previous head's last op has read q, y, xf
                r = x_ub[0:bT, h * D + off:h * D + off + R]
                if wide:
                    T.tile.cast(xf_ub, x_ub[0:bT, h * D + off:h * D + off + R])
                    T.pipe_barrier("V")
                    r = xf_ub
                T.tile.mul(q_ub, r, w_ub)
                T.tile.mul(y_ub, r, c_ub)
                T.pipe_barrier("V")
                # y[j] = r[j] c[j] + q[p(j)], into x's region when no narrowing is needed
                if wide:
                    T.tile.add(y_ub[0:bT, 0:h2], y_ub[0:bT, 0:h2], q_ub[0:bT, h2:h2 + h2])
                    T.tile.add(y_ub[0:bT, h2:h2 + h2], y_ub[0:bT, h2:h2 + h2], q_ub[0:bT, 0:h2])
                    T.pipe_barrier("V")
                    T.tile.cast(x_ub[0:bT, h * D + off:h * D + off + R], y_ub, "CAST_RINT")
                else:
                    T.tile.add(x_ub[0:bT, h * D + off + 0:h * D + off + 0 + h2], y_ub[0:bT, 0:h2],
                               q_ub[0:bT, h2:h2 + h2])
                    T.tile.add(x_ub[0:bT, h * D + off + h2:h * D + off + h2 + h2], y_ub[0:bT, h2:h2 + h2],
                               q_ub[0:bT, 0:h2])
        T.set_flag("V", "MTE3", ev)
        T.wait_flag("V", "MTE3", ev)
        T.copy(x_ub, Y[t0, col])
        T.set_flag("MTE3", "MTE2", ev)  # the slot is free again
        T.set_flag("MTE3", "V", ev)

    @T.macro
    def body(X, C, S, P, Y):
        with T.Kernel(num_blocks, is_npu=True) as (cid, vid):
            with T.Scope("V"):
                x0_ub = T.alloc_ub((bT, bHD), dtype)
                c0_ub = T.alloc_ub((bT, R), "float32")
                s0_ub = T.alloc_ub((bT, R), "float32")
                x1_ub = T.alloc_ub((bT, bHD), dtype)
                c1_ub = T.alloc_ub((bT, R), "float32")
                s1_ub = T.alloc_ub((bT, R), "float32")
                x2_ub = T.alloc_ub((bT, bHD), dtype)
                c2_ub = T.alloc_ub((bT, R), "float32")
                s2_ub = T.alloc_ub((bT, R), "float32")
                q_ub = T.alloc_ub((bT, R), "float32")  # r * w (half), partner * w (interleaved)
                y_ub = T.alloc_ub((bT, R), "float32")  # r * c, then the result
                w_ub = T.alloc_ub((bT, R), "float32")  # the tile's w
                xf_ub = None
                g_ub = None
                sg_ub = None
                nsg_ub = None
                offs_ub = None
                if wide:
                    xf_ub = T.alloc_ub((bT, bHD if interleaved else R), "float32")
                if interleaved:
                    # The partner rows (x[j ^ 1], every head at once), one gather per token row: a
                    # whole-tile gather is refused (the tile's rows are not provably inside M).
                    g_ub = T.alloc_ub((bT, bHD), "float32")
                    sg_ub = T.alloc_ub((bT, R), "float32")
                    nsg_ub = T.alloc_ub((bT, R), "float32")
                    # sgn(j) (-1 even, +1 odd) and the partner offsets (j ^ 1) * 4 bytes, built once.
                    ix_ub = T.alloc_ub((bHD,), "float32")
                    hf_ub = T.alloc_ub((bHD,), "float32")
                    fl_ub = T.alloc_ub((bHD,), "float32")
                    offs_i_ub = T.alloc_ub((bHD,), "int32")
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
                    T.tile.mul(nsg_ub, sg_ub, -1.0)
                    T.tile.mul(ix_ub, ix_ub, 4.0)
                    T.pipe_barrier("V")
                    T.tile.cast(offs_i_ub, ix_ub, "CAST_RINT")
                    T.pipe_barrier("V")

                workers = num_blocks * 2
                worker = cid * 2 + vid
                mine = T.ceildiv(items - worker, workers)
                T.set_flag("MTE3", "MTE2", 0)
                T.set_flag("MTE3", "MTE2", 1)
                T.set_flag("MTE3", "MTE2", 2)
                T.set_flag("MTE3", "V", 0)
                T.set_flag("MTE3", "V", 1)
                T.set_flag("MTE3", "V", 2)
                # Software-pipelined in program order: a wait_flag holds the scalar unit's issue and an
                # item's vector work fills the V queue, so item i + 1's load is issued before item i's
                # vector work, into the slot of item i - 2 (three slots).
                if 0 < mine:
                    load(X, C, S, P, worker, x0_ub, c0_ub, s0_ub, 0)
                for p in T.serial(T.ceildiv(mine, 3)):
                    if p * 3 + 0 + 1 < mine:
                        load(X, C, S, P, worker + (p * 3 + 0 + 1) * workers, x1_ub, c1_ub, s1_ub, 1)
                    compute_store(Y, worker + (p * 3 + 0) * workers, x0_ub, c0_ub, s0_ub, 0, q_ub, y_ub, w_ub,
                                  xf_ub, g_ub, sg_ub, nsg_ub, offs_ub)
                    if p * 3 + 1 < mine:
                        if p * 3 + 1 + 1 < mine:
                            load(X, C, S, P, worker + (p * 3 + 1 + 1) * workers, x2_ub, c2_ub, s2_ub, 2)
                        compute_store(Y, worker + (p * 3 + 1) * workers, x1_ub, c1_ub, s1_ub, 1, q_ub, y_ub,
                                      w_ub, xf_ub, g_ub, sg_ub, nsg_ub, offs_ub)
                    if p * 3 + 2 < mine:
                        if p * 3 + 2 + 1 < mine:
                            load(X, C, S, P, worker + (p * 3 + 2 + 1) * workers, x0_ub, c0_ub, s0_ub, 0)
                        compute_store(Y, worker + (p * 3 + 2) * workers, x2_ub, c2_ub, s2_ub, 2, q_ub, y_ub,
                                      w_ub, xf_ub, g_ub, sg_ub, nsg_ub, offs_ub)
                T.wait_flag("MTE3", "MTE2", 0)
                T.wait_flag("MTE3", "MTE2", 1)
                T.wait_flag("MTE3", "MTE2", 2)
                T.wait_flag("MTE3", "V", 0)
                T.wait_flag("MTE3", "V", 1)
                T.wait_flag("MTE3", "V", 2)

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
