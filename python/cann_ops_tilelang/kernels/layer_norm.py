"""LayerNorm's kernel generators in TileLang-Ascend syntax: the Python twins of
cann_ops_tilelang/norm/layer_norm_kernel.cpp (forward) and layer_norm_bwd_kernel.cpp (backward).

For the same key each function here builds the very IR its C++ generator builds (the printed IR
text is compared in python/tests/test_opslib_layernorm.py). The keys are what the library's
launch layer chooses (cann_ops_tilelang.kernels.layer_norm_key / layer_norm_bwd_key). M, the row
count, is T.dynamic("M"): one kernel per key serves every batch size. The backward's partials
are summed by rms_norm_dw_reduce_kernel over 2H columns (layer_norm_dwb_reduce_key gives its key).

The backward (the C++ file's top comment says it at length): expert mode; whole rows in fp32 where
they fit (chunk 0: layer_norm_bwd_rows.py, x and dy read once), else rM-row tiles read in
bN-column fp32 chunks three times (the mean; the variance and the sums of g and g * xc; dx and the
dW | dB partials); full tiles dealt round-robin to the 2 * blocks AIVs, the tail tile zero-filled
and loaded row by row, only its valid rows added to the partials.
"""

# No `from __future__ import annotations`: the parser reads a parameter's T.Tensor annotation
# from the evaluated __annotations__.
import tl_ascend.language as T
from tl_ascend.language.parser import PrimFunc

from .layer_norm_bwd_rows import layer_norm_bwd_rows_kernel

EV_IN, EV_OUT = 0, 1  # intra-core event ids: loads, stores


@T.macro
def _sync(src, dst, ev):
    """`src` work before this point is done before `dst` work after it."""
    T.set_flag(src, dst, ev)
    T.wait_flag(src, dst, ev)


def layer_norm_bwd_kernel(dtype: str, hidden: int, rows_per_tile: int, chunk: int, blocks: int,
                          slots: int = 3) -> PrimFunc:
    """DY, X [M, H], W [H], DX [M, H], DWBP [2 * blocks, 2 * Hp] fp32 partials (dW | dB), eps; Hp is H
    but for a ragged row (not whole 32-byte blocks): ceil(H / bN) bN, its pad columns masked."""
    if chunk == 0:  # whole rows in fp32 (layer_norm_bwd_rows.py)
        return layer_norm_bwd_rows_kernel(dtype, hidden, rows_per_tile, chunk, blocks, slots)
    H, rM, bN = hidden, rows_per_tile, chunk
    # A ragged row (bN does not divide H: H is not whole 32-byte blocks) is held as Hp columns.
    chunks = (H + bN - 1) // bN
    Hp, last = chunks * bN, H - (chunks - 1) * bN  # last: the last chunk's valid columns
    ragged = Hp != H
    wide = dtype != "float32"
    inv_h = 1.0 / H
    M = T.dynamic("M")
    num_blocks = T.min(blocks, T.ceildiv(M, rM))

    @T.macro
    def load_w(W, w_ub):
        if ragged:
            T.tile.fill(w_ub, 0.0)
            _sync("V", "MTE2", EV_IN)
            T.copy(W, w_ub[0:H], pad_value=0.0)
        else:
            T.copy(W, w_ub)

    @T.macro
    def load(src, dst, row0, c, nrows):
        if nrows is None and not ragged:
            T.copy(src[row0, c * bN], dst)
        elif nrows is None:
            T.copy(src[row0:row0 + rM, c * bN:c * bN + T.min(bN, H - c * bN)],
                   dst[0:0 + rM, 0:0 + T.min(bN, H - c * bN)], pad_value=0.0)
        elif not ragged:
            for j in T.serial(nrows):
                T.copy(src[row0 + j, c * bN], dst[j:j + 1, 0:bN])
        else:
            for j in T.serial(nrows):
                T.copy(src[row0 + j:row0 + j + 1, c * bN:c * bN + T.min(bN, H - c * bN)],
                       dst[j:j + 1, 0:0 + T.min(bN, H - c * bN)], pad_value=0.0)

    @T.macro
    def load_chunk(X, DY, xf_ub, gf_ub, xb_ub, gb_ub, mu_ub, row0, c, nrows, with_dy, centre):
        """Chunk c of x into xf_ub (minus the mean when centre), of dy into gf_ub when with_dy."""
        T.pipe_barrier("V")  # the vector ops before have read xf_ub / gf_ub
        if nrows is not None:  # rows past M: zeros
            T.tile.fill(xb_ub, 0.0)
            if with_dy:
                T.tile.fill(gb_ub, 0.0)
        elif ragged:  # and the columns past a ragged row
            if c == chunks - 1:
                T.tile.fill(xb_ub, 0.0)
                if with_dy:
                    T.tile.fill(gb_ub, 0.0)
        _sync("V", "MTE2", EV_IN)
        load(X, xb_ub, row0, c, nrows)
        if with_dy:
            load(DY, gb_ub, row0, c, nrows)
        _sync("MTE2", "V", EV_IN)
        if wide:
            T.tile.cast(xf_ub, xb_ub)
            if with_dy:
                T.tile.cast(gf_ub, gb_ub)
            T.pipe_barrier("V")
        if centre:
            T.tile.row_expand_sub(xf_ub, xf_ub, mu_ub)
            T.pipe_barrier("V")

    @T.macro
    def tile_rows(DY, X, DX, eps, wf_ub, dwb_ub, xf_ub, gf_ub, t1_ub, t2_ub, t3_ub, wb_ub, dxb_ub, mu_ub, rs_ub,
                  cf_ub, of_ub, xb_ub, gb_ub, mk_ub, row0, nrows):
        # Pass 1: the mean.
        T.tile.fill(t1_ub, 0.0)
        for c in T.serial(chunks):
            load_chunk(X, DY, xf_ub, gf_ub, xb_ub, gb_ub, mu_ub, row0, c, nrows, False, False)
            T.tile.add(t1_ub, t1_ub, xf_ub)
        T.pipe_barrier("V")
        T.reduce_sum(t1_ub, mu_ub, -1)
        T.pipe_barrier("V")
        T.tile.mul(mu_ub, mu_ub, inv_h)

        # Pass 2: sum(xc^2), sum(g), sum(g * xc).
        T.tile.fill(t1_ub, 0.0)
        T.tile.fill(t2_ub, 0.0)
        T.tile.fill(t3_ub, 0.0)
        for c in T.serial(chunks):
            load_chunk(X, DY, xf_ub, gf_ub, xb_ub, gb_ub, mu_ub, row0, c, nrows, True, True)
            if ragged:  # the pad columns of x - mean are -mean: out of the variance
                if c == chunks - 1:
                    for r in T.serial(rM):
                        T.tile.mul(xf_ub[r:r + 1, 0:bN], xf_ub[r:r + 1, 0:bN], mk_ub)
            T.tile.broadcast(wb_ub, wf_ub[c * bN:c * bN + bN])
            T.pipe_barrier("V")
            T.tile.mul(gf_ub, gf_ub, wb_ub)  # g
            T.pipe_barrier("V")
            T.tile.mul(wb_ub, xf_ub, xf_ub)  # xc^2
            T.tile.add(t2_ub, t2_ub, gf_ub)
            T.pipe_barrier("V")
            T.tile.mul(gf_ub, gf_ub, xf_ub)  # g * xc
            T.tile.add(t1_ub, t1_ub, wb_ub)
            T.pipe_barrier("V")
            T.tile.add(t3_ub, t3_ub, gf_ub)
        T.pipe_barrier("V")
        T.reduce_sum(t1_ub, rs_ub, -1)
        T.reduce_sum(t2_ub, of_ub, -1)
        T.reduce_sum(t3_ub, cf_ub, -1)
        T.pipe_barrier("V")
        T.tile.mul(rs_ub, rs_ub, inv_h)
        T.pipe_barrier("V")
        T.tile.add(rs_ub, rs_ub, eps)
        T.pipe_barrier("V")
        T.tile.rsqrt(rs_ub, rs_ub)  # rstd
        T.pipe_barrier("V")
        T.tile.mul(of_ub, of_ub, rs_ub)
        T.tile.mul(cf_ub, cf_ub, rs_ub)
        T.pipe_barrier("V")
        T.tile.mul(of_ub, of_ub, inv_h)  # off = sg * rstd / H
        T.tile.mul(cf_ub, cf_ub, rs_ub)
        T.pipe_barrier("V")
        T.tile.mul(cf_ub, cf_ub, rs_ub)
        T.pipe_barrier("V")
        T.tile.mul(cf_ub, cf_ub, inv_h)  # coef = sgx * rstd^3 / H

        # Pass 3: the dW | dB partials and dx.
        for c in T.serial(chunks):
            load_chunk(X, DY, xf_ub, gf_ub, xb_ub, gb_ub, mu_ub, row0, c, nrows, True, True)
            T.tile.broadcast(wb_ub, wf_ub[c * bN:c * bN + bN])
            T.tile.row_expand_mul(t1_ub, xf_ub, rs_ub)  # xhat
            T.tile.row_expand_mul(t2_ub, xf_ub, cf_ub)  # xc * coef
            T.pipe_barrier("V")
            T.tile.mul(t1_ub, t1_ub, gf_ub)  # dy * xhat
            T.tile.row_expand_mul(wb_ub, wb_ub, rs_ub)  # w * rstd
            T.pipe_barrier("V")
            for r in T.serial(rM if nrows is None else nrows):  # rows in order
                T.tile.add(dwb_ub[c * bN:c * bN + bN], dwb_ub[c * bN:c * bN + bN], t1_ub[r:r + 1, 0:bN])
                T.tile.add(dwb_ub[c * bN + Hp:c * bN + Hp + bN], dwb_ub[c * bN + Hp:c * bN + Hp + bN],
                           gf_ub[r:r + 1, 0:bN])
                T.pipe_barrier("V")
            T.tile.mul(gf_ub, gf_ub, wb_ub)  # g * rstd
            T.pipe_barrier("V")
            T.tile.sub(gf_ub, gf_ub, t2_ub)
            T.pipe_barrier("V")
            _sync("MTE3", "V", EV_OUT)  # the previous store has read dxb_ub
            if wide:
                T.tile.row_expand_sub(gf_ub, gf_ub, of_ub)
                T.pipe_barrier("V")
                T.tile.cast(dxb_ub, gf_ub, "CAST_RINT")
            else:
                T.tile.row_expand_sub(dxb_ub, gf_ub, of_ub)
            _sync("V", "MTE3", EV_OUT)
            if nrows is None and not ragged:
                T.copy(dxb_ub, DX[row0, c * bN])
            elif nrows is None:
                T.copy(dxb_ub[0:0 + rM, 0:0 + T.min(bN, H - c * bN)],
                       DX[row0:row0 + rM, c * bN:c * bN + T.min(bN, H - c * bN)], pad_value=0.0)
            elif not ragged:
                for j in T.serial(nrows):
                    T.copy(dxb_ub[j:j + 1, 0:bN], DX[row0 + j, c * bN])
            else:
                for j in T.serial(nrows):
                    T.copy(dxb_ub[j:j + 1, 0:0 + T.min(bN, H - c * bN)],
                           DX[row0 + j:row0 + j + 1, c * bN:c * bN + T.min(bN, H - c * bN)], pad_value=0.0)

    @T.prim_func
    def layer_norm_bwd(DY: T.Tensor((M, H), dtype), X: T.Tensor((M, H), dtype), W: T.Tensor((H,), dtype),
                       DX: T.Tensor((M, H), dtype), DWBP: T.Tensor((2 * blocks, 2 * Hp), "float32"), eps: T.float32):
        with T.Kernel(num_blocks, is_npu=True) as (cid, vid):
            with T.Scope("V"):
                wf_ub = T.alloc_ub((Hp,), "float32")  # W in fp32
                dwb_ub = T.alloc_ub((2 * Hp,), "float32")  # this AIV's dW | dB partial
                xf_ub = T.alloc_ub((rM, bN), "float32")  # x chunk, then xc = x - mean
                gf_ub = T.alloc_ub((rM, bN), "float32")  # dy chunk, then g = dy * w
                t1_ub = T.alloc_ub((rM, bN), "float32")  # pass 1: sum x; 2: sum xc^2; 3: dW term
                t2_ub = T.alloc_ub((rM, bN), "float32")  # pass 2: sum g; pass 3: xc * coef
                t3_ub = T.alloc_ub((rM, bN), "float32")  # pass 2: sum g * xc
                wb_ub = T.alloc_ub((rM, bN), "float32")  # W chunk broadcast, a temporary
                dxb_ub = T.alloc_ub((rM, bN), dtype)  # dx chunk to store
                mu_ub = T.alloc_ub((rM,), "float32")  # mean
                rs_ub = T.alloc_ub((rM,), "float32")  # rstd
                cf_ub = T.alloc_ub((rM,), "float32")  # coef
                of_ub = T.alloc_ub((rM,), "float32")  # off
                xb_ub = xf_ub
                gb_ub = gf_ub
                if wide:
                    xb_ub = T.alloc_ub((rM, bN), dtype)
                    gb_ub = T.alloc_ub((rM, bN), dtype)
                # A ragged row's W: a padded copy over a zero-filled buffer.
                if wide:
                    w_ub = T.alloc_ub((Hp,), dtype)
                    load_w(W, w_ub)
                    _sync("MTE2", "V", EV_IN)
                    T.tile.cast(wf_ub, w_ub)
                else:
                    load_w(W, wf_ub)
                    _sync("MTE2", "V", EV_IN)
                mk_ub = None
                if ragged:  # 1 on the last chunk's valid columns, 0 on its pad
                    mk_ub = T.alloc_ub((bN,), "float32")
                    T.tile.arith_progression(mk_ub, 0.0, 1.0)
                    T.pipe_barrier("V")
                    T.tile.mul(mk_ub, mk_ub, -1.0)
                    T.pipe_barrier("V")
                    T.tile.add(mk_ub, mk_ub, float(last))
                    T.pipe_barrier("V")
                    T.tile.clamp(mk_ub, mk_ub, 0.0, 1.0)
                T.tile.fill(dwb_ub, 0.0)

                workers = num_blocks * 2
                worker = cid * 2 + vid
                full_tiles = M // rM
                for t in T.Persistent([full_tiles], workers, worker):
                    row0 = t * rM
                    tile_rows(DY, X, DX, eps, wf_ub, dwb_ub, xf_ub, gf_ub, t1_ub, t2_ub, t3_ub, wb_ub, dxb_ub, mu_ub,
                              rs_ub, cf_ub, of_ub, xb_ub, gb_ub, mk_ub, row0, None)
                tail = M % rM
                if tail > 0 and worker == full_tiles % workers:
                    tile_rows(DY, X, DX, eps, wf_ub, dwb_ub, xf_ub, gf_ub, t1_ub, t2_ub, t3_ub, wb_ub, dxb_ub, mu_ub,
                              rs_ub, cf_ub, of_ub, xb_ub, gb_ub, mk_ub, full_tiles * rM, tail)
                T.pipe_barrier("V")
                _sync("V", "MTE3", EV_OUT)
                T.copy(dwb_ub, DWBP[worker, 0])

    return layer_norm_bwd


def layer_norm_kernel(dtype: str, hidden: int, rows_per_tile: int, blocks: int, weight: bool, bias: bool,
                      stats: bool) -> PrimFunc:
    """The forward kernel: X [M, H], (W [H]), (B [H]), Y [M, H], (Mean [M], Rstd [M]), eps.

    Developer mode, one pass: a bM-row tile read once (padded with 0 past H only where rows are not
    whole 32-byte blocks) and kept in UB in fp32; the
    mean subtracted before the variance is summed; the compiler places the tiles, splits them
    between the two AIVs, inserts the flags and clips the last row tile. The optional tensors are
    None in the body macro; each combination has a thin prim_func (a signature is fixed)."""
    H, bM = hidden, rows_per_tile
    wide = dtype != "float32"
    ragged = H * (4 if dtype == "float32" else 2) % 32 != 0
    inv_h = 1.0 / H
    M = T.dynamic("M")

    @T.macro
    def tile(X, Y, Mean, Rstd, eps, x_in, x_f, sq, y_out, mean, rstd, w_f, b_f, row):
        if ragged:  # rows not whole 32-byte blocks: zeros past H
            T.copy(X[row, 0], x_in, pad_value=0.0)
        else:  # a padded copy would wait for the V pipe: no prefetch
            T.copy(X[row, 0], x_in)
        if wide:
            for i, j in T.Parallel(bM, H):
                x_f[i, j] = T.cast(x_in[i, j], "float32")
        T.reduce_sum(x_f, mean, -1)
        for p in T.Parallel(bM):
            mean[p] = mean[p] * inv_h
        for i, j in T.Parallel(bM, H):
            x_f[i, j] = x_f[i, j] - mean[i]
        for i, j in T.Parallel(bM, H):
            sq[i, j] = x_f[i, j] * x_f[i, j]
        T.reduce_sum(sq, rstd, -1)
        for p in T.Parallel(bM):
            rstd[p] = rstd[p] * inv_h + eps
        T.tile.rsqrt(rstd, rstd)
        for i, j in T.Parallel(bM, H):
            x_f[i, j] = x_f[i, j] * rstd[i]
        if w_f is not None:
            for i, j in T.Parallel(bM, H):
                x_f[i, j] = x_f[i, j] * w_f[j]
        if b_f is not None:
            for i, j in T.Parallel(bM, H):
                x_f[i, j] = x_f[i, j] + b_f[j]
        if wide:
            for i, j in T.Parallel(bM, H):
                y_out[i, j] = T.cast(x_f[i, j], dtype)
        T.copy(y_out, Y[row, 0])
        if Mean is not None:
            T.copy(mean, Mean[row])
            T.copy(rstd, Rstd[row])

    @T.macro
    def body(X, W, B, Y, Mean, Rstd, eps):
        row_tiles = T.ceildiv(M, bM)
        with T.Kernel(blocks, threads=2) as cid:
            x_in = T.alloc_shared((bM, H), dtype)
            x_f = x_in
            if wide:
                x_f = T.alloc_fragment((bM, H), "float32")
            sq = T.alloc_fragment((bM, H), "float32")
            y_out = x_f
            if wide:
                y_out = T.alloc_shared((bM, H), dtype)
            mean = T.alloc_fragment((bM,), "float32")
            rstd = T.alloc_fragment((bM,), "float32")
            w_f = None  # W and B in fp32, loaded once per block
            if W is not None:
                w_in = T.alloc_shared((H,), dtype)
                T.copy(W, w_in)
                w_f = w_in
                if wide:
                    w_f = T.alloc_fragment((H,), "float32")
                    for p in T.Parallel(H):
                        w_f[p] = T.cast(w_in[p], "float32")
            b_f = None
            if B is not None:
                b_in = T.alloc_shared((H,), dtype)
                T.copy(B, b_in)
                b_f = b_in
                if wide:
                    b_f = T.alloc_fragment((H,), "float32")
                    for p in T.Parallel(H):
                        b_f[p] = T.cast(b_in[p], "float32")
            for t in T.Pipelined(T.ceildiv(T.max(row_tiles - cid, 0), blocks), num_stages=2):
                tile(X, Y, Mean, Rstd, eps, x_in, x_f, sq, y_out, mean, rstd, w_f, b_f, (cid + t * blocks) * bM)

    X_t, V_t, S_t = T.Tensor((M, H), dtype), T.Tensor((H,), dtype), T.Tensor((M,), "float32")
    if weight and bias and stats:
        @T.prim_func
        def layer_norm_fwd(X: X_t, W: V_t, B: V_t, Y: X_t, Mean: S_t, Rstd: S_t, eps: T.float32):
            body(X, W, B, Y, Mean, Rstd, eps)
    elif weight and bias:
        @T.prim_func
        def layer_norm_fwd(X: X_t, W: V_t, B: V_t, Y: X_t, eps: T.float32):
            body(X, W, B, Y, None, None, eps)
    elif weight and stats:
        @T.prim_func
        def layer_norm_fwd(X: X_t, W: V_t, Y: X_t, Mean: S_t, Rstd: S_t, eps: T.float32):
            body(X, W, None, Y, Mean, Rstd, eps)
    elif weight:
        @T.prim_func
        def layer_norm_fwd(X: X_t, W: V_t, Y: X_t, eps: T.float32):
            body(X, W, None, Y, None, None, eps)
    elif bias and stats:
        @T.prim_func
        def layer_norm_fwd(X: X_t, B: V_t, Y: X_t, Mean: S_t, Rstd: S_t, eps: T.float32):
            body(X, None, B, Y, Mean, Rstd, eps)
    elif bias:
        @T.prim_func
        def layer_norm_fwd(X: X_t, B: V_t, Y: X_t, eps: T.float32):
            body(X, None, B, Y, None, None, eps)
    elif stats:
        @T.prim_func
        def layer_norm_fwd(X: X_t, Y: X_t, Mean: S_t, Rstd: S_t, eps: T.float32):
            body(X, None, None, Y, Mean, Rstd, eps)
    else:
        @T.prim_func
        def layer_norm_fwd(X: X_t, Y: X_t, eps: T.float32):
            body(X, None, None, Y, None, None, eps)
    return layer_norm_fwd
