"""The pieces the RMSNorm kernels' Python twins share (twins of
cann_ops_tilelang/norm/rms_norm_parts.h): the set-then-wait sync, the weight load into fp32, the
whole-row backwards' widening and the row loads of x and dy (the resident kernels' UB placer is _ub.py's, shared with softmax). Each
builds the IR its C++ counterpart builds (python/tests/test_opslib_twin.py compares the kernels)."""

from typing import Optional

import tl_ascend.language as T


@T.macro
def sync(src, dst, ev):
    """set_flag then wait_flag at once: the data `dst` reads is ready now."""
    T.set_flag(src, dst, ev)
    T.wait_flag(src, dst, ev)


def weight_loader(dtype: str, hidden: int, ev: int, address: Optional[int] = None):
    """The macro load_weight_f32(W, wf_ub): W [hidden] into wf_ub (fp32), copied when dtype is fp32,
    else loaded into `w_ub` (at `address`; None: the planner's choice) and widened, with an
    MTE2 -> V set-then-wait on event `ev` before the cast."""
    wide = dtype != "float32"
    at = -1 if address is None else address

    @T.macro
    def load_weight_f32(W, wf_ub):
        if wide:
            w_ub = T.alloc_ub((hidden,), dtype, address=at)
            T.copy(W, w_ub)
            sync("MTE2", "V", ev)
            T.tile.cast(wf_ub, w_ub)
        else:
            T.copy(W, wf_ub)
            sync("MTE2", "V", ev)

    return load_weight_f32


def widener(dtype: str, ev_out: int):
    """The macro widen(x_ub, g_ub, xf_ub, gf_ub) of the whole-row backwards (widen_tile in
    rms_norm_parts.cpp): the tile as loaded into fp32; fp32 I/O: copied once dx's buffer gf is
    free (MTE3 -> V on event `ev_out`)."""
    wide = dtype != "float32"

    @T.macro
    def widen(x_ub, g_ub, xf_ub, gf_ub):
        T.pipe_barrier("V")  # the last tile's instructions have read what this writes
        if wide:
            T.tile.cast(xf_ub, x_ub)
            T.tile.cast(gf_ub, g_ub)
        else:
            T.wait_flag("MTE3", "V", ev_out)
            T.tile.add(xf_ub, x_ub, 0.0)
            T.tile.add(gf_ub, g_ub, 0.0)

    return widen


def xdy_loader(hidden: int):
    """The macro load(X, DY, x_ub, g_ub, row0, nrows): the tile of x and of dy at row0; nrows None:
    whole tiles in one copy each; else (a tail) one copy per valid row, x's rows then dy's."""
    H = hidden

    @T.macro
    def load(X, DY, x_ub, g_ub, row0, nrows):
        if nrows is None:
            T.copy(X[row0, 0], x_ub)
            T.copy(DY[row0, 0], g_ub)
        else:
            for j in T.serial(nrows):
                T.copy(X[row0 + j, 0], x_ub[j:j + 1, 0:H])
            for j in T.serial(nrows):
                T.copy(DY[row0 + j, 0], g_ub[j:j + 1, 0:H])

    return load
