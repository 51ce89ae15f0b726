"""`real_shape=` of TileLang-Ascend's T.reduce_max / reduce_min / reduce_sum, as regions.

In TileLang-Ascend (tilelang/language/reduce_ascend.py, its "slice buffer" reduce) `real_shape`
is the logical [rows, cols] of a 2-D UB tile that holds valid data only in its top-left corner:
the reduction reads `src[0:rows, 0:cols]` with the tile's physical row stride (0 means the
whole extent), and writes its `rows` (dim = -1) or `cols` (dim = 0) results to the first
elements of `dst`, which may keep the physical row layout ([cols], [1, cols]) or be the logical
one ([rows], [rows, 1], ...). tl-ascend's reductions take regions, so `real_shape` becomes the
two regions here; every extent is checked against the tile (a corner larger than the tile would
read other buffers' bytes on the chip).
"""

from __future__ import annotations

from typing import Any, Callable

from .. import _core


def _const(e: Any) -> Any:
    """A constant extent as a Python int; an expression of dynamic sizes as it is."""
    v = e.const_value() if isinstance(e, _core.Expr) else e
    return v if isinstance(v, int) else e


def regions(fn: str, src: Any, dst: Any, dim: int, real_shape: Any,
            bad: Callable[..., None], fail: Callable[[str], None]) -> tuple[Any, Any]:
    """(src region, dst region) for `T.<fn>(src, dst, dim, real_shape=real_shape)`; `bad(fn, arg,
    expected, got)` and `fail(message)` raise the located errors of the caller."""
    if not isinstance(real_shape, (list, tuple)) or len(real_shape) != 2:
        bad(fn, "real_shape", "a list [rows, cols] of the tile's valid corner", real_shape)
    if not isinstance(src, _core.Buffer) or src.ndim != 2:
        fail(f"T.{fn}: real_shape= needs a whole 2-D tile as 'src' (the corner is taken from its "
             f"top-left), got {src!r}; for a region, give the region itself without real_shape")
    rows_cols = []
    for axis, (v, ext) in enumerate(zip(real_shape, [_const(e) for e in src.shape])):
        if isinstance(v, bool) or not isinstance(v, (int, _core.Expr)):
            bad(fn, f"real_shape[{axis}]", "an int or kernel expression", v)
        if isinstance(v, _core.Expr) and isinstance(v.const_value(), int):
            v = v.const_value()
        if isinstance(v, int):
            if v < 0:
                bad(fn, f"real_shape[{axis}]", ">= 0 (0 means the whole extent)", v)
            if isinstance(ext, int) and v > ext:
                fail(f"T.{fn}: real_shape[{axis}] = {v} exceeds the extent {ext} of tile '{src.name}' "
                     f"(shape {[_const(e) for e in src.shape]})")
            if v == 0:
                v = ext
        rows_cols.append(v)
    if dim not in (0, 1, -1, -2):
        bad(fn, "dim", "0, 1, -1 or -2 for a 2-D tile", dim)
    rows, cols = rows_cols
    count = rows if dim in (-1, 1) else cols
    src_region = src.region([0, 0], [rows, cols])
    if isinstance(dst, _core.BufferRegion):
        return src_region, dst  # the caller's own region: the op checks it holds `count` results
    if not isinstance(dst, _core.Buffer):
        bad(fn, "dst", "a UB tile or a region of one", dst)
    shape = [_const(e) for e in dst.shape]
    # The results go to the first `count` elements along dst's one non-unit dimension.
    lead = [i for i, e in enumerate(shape) if not (isinstance(e, int) and e == 1)]
    if len(lead) > 1:
        fail(f"T.{fn}: with real_shape, 'dst' holds one row or column of results; tile '{dst.name}' "
             f"has shape {shape}")
    axis = lead[0] if lead else len(shape) - 1
    extents = [1] * len(shape)
    extents[axis] = count
    if isinstance(count, int) and isinstance(shape[axis], int) and count > shape[axis]:
        fail(f"T.{fn}: 'dst' tile '{dst.name}' (shape {shape}) cannot hold the {count} results of the "
             f"corner {[rows, cols]} reduced along dim {dim}")
    return src_region, dst.region([0] * len(shape), extents)
