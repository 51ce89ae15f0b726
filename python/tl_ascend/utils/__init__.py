"""tilelang.utils: the parts of TileLang's utilities TileLang-Ascend scripts call on the host.

Only `tilelang.utils.target` (determine_platform, determine_target) is provided; an unknown name
is a tl_ascend.Error naming it (_names.py).
"""

from __future__ import annotations

from typing import Any

from . import target

__all__ = ["target"]


def __getattr__(name: str) -> Any:
    from .. import _names

    raise _names.unknown("tilelang.utils", name, __all__)
