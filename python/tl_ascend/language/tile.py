"""T.tile: the AIV's vector tile ops (`T.tile.add(dst, a, b)`, `T.tile.exp(dst, src)`, ...),
one wrapper per `tile.*` op of the registry (generated; see _ops.py), and the sort family under
the names TileLang-Ascend gives it (`T.tile.sort`, `T.tile.topk`, `T.tile.merge_sort`: the same
ops as `T.sort`, `T.topk`, `T.merge_sort`)."""

from typing import Any as _Any, Optional as _Optional

from . import _ops

for _name in _ops.names_with_prefix("tile."):
    globals()[_name[len("tile."):]] = _ops.wrapper(_name)
del _name


def sort(dst: _Any, src: _Any, actual_num: _Any) -> None:
    """T.tile.sort(dst, src, actual_num): dst = (value, index) pairs of src[0:actual_num],
    descending; the index lanes hold each position as a float (docs/language.md, section 11)."""
    from . import sort as _sort

    _sort(dst, src, actual_num)


def topk(dst: _Any, src: _Any, K: _Any, actual_num: _Any) -> None:
    """T.tile.topk(dst, src, K, actual_num): the K largest (value, index) pairs of src."""
    from . import topk as _topk

    _topk(dst, src, K, actual_num)


def merge_sort(dst: _Any, src0: _Any, src1: _Any, src2: _Optional[_Any] = None, src3: _Optional[_Any] = None) -> None:
    """T.tile.merge_sort(dst, src0, src1[, src2, src3]): merge 2-4 descending float32
    (value, index) queues into dst."""
    from . import merge_sort as _merge_sort

    _merge_sort(dst, [s for s in (src0, src1, src2, src3) if s is not None])


def __getattr__(name: str) -> _Any:
    """An unknown `T.tile.<name>`: a tl_ascend.Error (also an AttributeError) with the tl-ascend
    spelling, or the closest ops T.tile has (_names.py)."""
    from .. import _names

    known = [n for n in globals() if not n.startswith("_")]
    raise _names.unknown("T.tile", name, known, _names.tile_hint(name, known), prefix="T.tile.")


def bitwise_rshift(dst: _Any, src0: _Any, scalarValue: _Any) -> None:
    """T.tile.bitwise_rshift(dst, src0, bits): TileLang-Ascend's name of T.tile.shift_right
    (dst = src0 >> bits, arithmetic on signed dtypes)."""
    globals()["shift_right"](dst, src0, scalarValue)


def bitwise_lshift(dst: _Any, src0: _Any, scalarValue: _Any) -> None:
    """T.tile.bitwise_lshift(dst, src0, bits): TileLang-Ascend's name of T.tile.shift_left."""
    globals()["shift_left"](dst, src0, scalarValue)


def atomic_add(dst: _Any, src: _Any) -> None:
    """T.tile.atomic_add(dst, src): TileLang-Ascend's name of T.atomic_add (GM dst += the local
    tile src, atomically: DMA atomic add)."""
    from . import atomic_add as _atomic_add

    _atomic_add(dst, src)


def _const_extents(v: _Any) -> _Optional[list]:
    """The constant extents of a buffer or region (None when one is symbolic or v is neither)."""
    from .. import _core

    if hasattr(v, "_tl_region"):
        v = v._tl_region()
    dims = v.shape if isinstance(v, _core.Buffer) else v.extents if isinstance(v, _core.BufferRegion) else None
    if dims is None:
        return None
    out = [d.const_value() if hasattr(d, "const_value") else d for d in dims]
    return out if all(isinstance(d, int) for d in out) else None


def broadcast(dst: _Any, src: _Any, axis: _Any = None) -> None:
    """T.tile.broadcast(dst, src, axis=None): dst = src repeated along dst's other dimension.
    `axis=0`: src is a row ([n] or [1, n]) copied into every row; `axis=1`: src is a column
    ([m] or [m, 1]), element i filling row i. Without axis, a one-dimensional src is a row when
    its length is dst's column count and otherwise a column when it is dst's row count
    (TileLang-Ascend's inference); other sources broadcast along their unit dimensions."""
    from . import _state
    from .. import _core

    if axis is not None and (isinstance(axis, bool) or axis not in (0, 1)):
        _core.user_error(_state.current(), f"T.tile.broadcast: argument 'axis' must be 0 (a row), 1 (a column) "
                                           f"or None, got {axis!r}")
    if axis is None:
        s, d = _const_extents(src), _const_extents(dst)
        if s is not None and d is not None and len(d) >= 2:
            while len(s) > 1 and s[0] == 1:
                s = s[1:]
            if len(s) == 1 and s[0] != d[-1] and s[0] == d[-2]:
                axis = 1
    _ops.emit("tile.broadcast", dst, src, axis=-1 if axis is None else int(axis))
