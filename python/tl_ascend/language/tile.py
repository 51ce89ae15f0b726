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
