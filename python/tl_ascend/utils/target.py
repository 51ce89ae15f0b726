"""tilelang.utils.target: which chip a TileLang-Ascend script runs on, answered for tl-ascend.

TileLang-Ascend detects the card (A2 for 910B, A3 for 910_93, A5 for 950, TL_PLATFORM
overriding). A script run on tl-ascend runs on the virtual NPU, whose default target is "A2"
(tl_ascend.jit.compile's default), so `determine_platform()` answers "A2" unless TL_PLATFORM
names another platform, as in TileLang-Ascend; `determine_target()` answers the target string
TileLang-Ascend gives every Ascend code generator.
"""

from __future__ import annotations

import os

from .. import _core

# TileLang-Ascend's platform names, and the targets its "ascendc" / "pto" code generators accept.
PLATFORMS = ("A2", "A3", "A5")
_ASCEND_TARGET = "llvm --keys=ascend"


def determine_platform(platform: str = "auto") -> str:
    """"A2" (the virtual NPU's default target), TL_PLATFORM if set, or `platform` if not "auto"."""
    if not isinstance(platform, str):
        raise _core.Error(f"tilelang.utils.target.determine_platform: argument 'platform' must be a str "
                          f"(\"auto\" or one of {', '.join(PLATFORMS)}), got {type(platform).__name__} {platform!r}")
    if platform != "auto":
        return platform
    return os.environ.get("TL_PLATFORM") or _core.default_target()


def determine_target(target: str = "auto", return_object: bool = False) -> str:
    """TileLang-Ascend's answer for an Ascend target ("auto", "ascendc", "pto"): "llvm --keys=ascend".
    Other targets (cuda, hip, ...) do not exist on tl-ascend and are an Error naming them."""
    if return_object:
        raise _core.Error("tilelang.utils.target.determine_target: return_object=True (a TVM Target) is not "
                          "supported: tl-ascend has no TVM; use the string")
    if target not in ("auto", "ascendc", "pto"):
        raise _core.Error(f"tilelang.utils.target.determine_target: target {target!r} is not an Ascend "
                          f"target; tl-ascend runs \"auto\", \"ascendc\" and \"pto\" on its virtual NPU")
    return _ASCEND_TARGET
