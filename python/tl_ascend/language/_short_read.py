"""T.copy of a GM region into a UB tile larger than it along its last dimension, lowered as
TileLang-Ascend's copy_gm_to_ub lowers it (hc_split_sinkhorn.py): the pad over the tile, then the
region into its leading part. Kept apart from the T namespace's __init__.py for its size."""

from typing import Any, Callable

from .. import _core

# The dtypes TileLang-Ascend's copy_gm_to_ub Duplicates pad_value over (IsDuplicateSupported_v).
_DUPLICATED = {"int16", "uint16", "float16", "bfloat16", "int32", "uint32", "float32"}


def short_gm_read(src: Any, dst: Any, attrs: dict, fill: Callable[[Any, float], None]) -> Any:
    """A GM region read into a whole UB tile whose last (non-unit) extent is larger, the rest
    equal (`T.copy(ws[r, :4], tmp)` with `tmp` of 8 floats): TileLang-Ascend's copy_gm_to_ub
    takes the tile's extent as dstN and the region's as the valid length, so it Duplicates
    pad_value (0 without one; 16- and 32-bit dtypes only) over the tile, then DataCopyPads the
    row. The same here: a fill, then a padded copy into the tile's leading part (returned)."""
    if not isinstance(src, _core.BufferRegion) or not isinstance(dst, _core.Buffer):
        return dst
    if src.buffer.scope != "global" or dst.scope not in ("UB", "shared"):
        return dst
    s = [e.evaluate({}) for e in src.extents]  # simplified: `end - start` of one loop variable
    d = [e.evaluate({}) for e in dst.shape]
    if not all(isinstance(v, int) for v in s + d):
        return dst
    s1, d1 = [v for v in s if v != 1], [v for v in d if v != 1]
    if not s1 or len(s1) != len(d1) or s1[:-1] != d1[:-1] or s1[-1] >= d1[-1]:
        return dst
    last = max(i for i, v in enumerate(d) if v != 1)
    if dst.dtype in _DUPLICATED:
        fill(dst, attrs.get("pad_value", 0.0))
    attrs["pad"] = True
    attrs.setdefault("pad_value", 0.0)
    return dst.region([0] * len(d), [s1[-1] if i == last else v for i, v in enumerate(d)])
