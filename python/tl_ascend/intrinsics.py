"""tilelang.intrinsics: the layout constructors TileLang-Ascend scripts pass to T.annotate_layout.

`make_zn_layout(buf)` and `make_nz_layout(buf)` describe an L1 tile's fractal order; tl-ascend
accepts them on L1 tiles, whose zN layout T.copy writes (language/_annot.py says why nZ is the
same bytes read by a transposed copy). TileLang-Ascend's other layout helpers are not here: an
unknown name is a tl_ascend.Error with a hint (_names.py).
"""

from __future__ import annotations

from typing import Any

from .language._annot import Layout, make_nz_layout, make_zn_layout

__all__ = ["Layout", "make_nz_layout", "make_zn_layout"]


def __getattr__(name: str) -> Any:
    from . import _names

    raise _names.unknown("tilelang.intrinsics", name, __all__, _names.INTRINSICS_HINTS)
