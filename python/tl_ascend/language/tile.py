"""T.tile: the AIV's vector tile ops (`T.tile.add(dst, a, b)`, `T.tile.exp(dst, src)`, ...),
one wrapper per `tile.*` op of the registry (generated; see _ops.py), and the sort family under
the names TileLang-Ascend gives it (`T.tile.sort`, `T.tile.topk`, `T.tile.merge_sort`: the same
ops as `T.sort`, `T.topk`, `T.merge_sort`)."""

from typing import Any, Optional

from . import _ops

for _name in _ops.names_with_prefix("tile."):
    globals()[_name[len("tile."):]] = _ops.wrapper(_name)
del _name


def sort(dst: Any, src: Any, actual_num: Any) -> None:
    """T.tile.sort(dst, src, actual_num): dst = (value, index) pairs of src[0:actual_num],
    descending; the index lanes hold each position as a float (docs/language.md, section 11)."""
    from . import sort as _sort

    _sort(dst, src, actual_num)


def topk(dst: Any, src: Any, K: Any, actual_num: Any) -> None:
    """T.tile.topk(dst, src, K, actual_num): the K largest (value, index) pairs of src."""
    from . import topk as _topk

    _topk(dst, src, K, actual_num)


def merge_sort(dst: Any, src0: Any, src1: Any, src2: Optional[Any] = None, src3: Optional[Any] = None) -> None:
    """T.tile.merge_sort(dst, src0, src1[, src2, src3]): merge 2-4 descending float32
    (value, index) queues into dst."""
    from . import merge_sort as _merge_sort

    _merge_sort(dst, [s for s in (src0, src1, src2, src3) if s is not None])
