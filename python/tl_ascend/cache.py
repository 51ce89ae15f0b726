"""tilelang.cache: `tilelang.cache.clear_cache()` empties every level of tl-ascend's JIT cache.

TileLang-Ascend's examples call `tilelang.cache.clear_cache()` first so that a run compiles
afresh. tl-ascend caches a compiled kernel at three places, and clearing must reach all of them
or an edit to the compiler would keep being answered from a stale entry:
  * each `@tl_ascend.jit` generator's memory cache (per argument tuple, jit.py);
  * the C++ JIT cache's memory level (tl/jit.h);
  * its disk level: one `<16 hex digits>.tlir` file per kernel in the cache directory
    (`$TL_CACHE_DIR`, else `$XDG_CACHE_HOME/tl-ascend`, else `~/.cache/tl-ascend`).
Only files of that name are removed, never the directory or anything else in it: the
directory may be one the user shares with other files.
"""

from __future__ import annotations

import os
import re

from . import _core

# The disk cache's entry names (src/jit/cache.cpp, file_for).
_ENTRY = re.compile(r"[0-9a-f]{16}\.tlir")


def cache_dir() -> str:
    """The directory of the disk level ("" when it is disabled: TL_CACHE=0, or no home)."""
    return _core.jit_cache_dir()


def clear_cache() -> None:
    """Empties the generators' memory caches, the C++ memory cache and the disk cache's entries."""
    from .jit import clear_cache as clear_generators  # (tl_ascend.jit is the decorator: import from the module)

    clear_generators()
    _core.clear_jit_cache()
    d = cache_dir()
    if not d or not os.path.isdir(d):
        return
    for name in os.listdir(d):
        if _ENTRY.fullmatch(name):
            try:
                os.remove(os.path.join(d, name))
            except FileNotFoundError:  # another process cleared it first
                pass
