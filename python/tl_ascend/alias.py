"""The `tilelang` import alias: TileLang-Ascend scripts import tl-ascend's modules unchanged.

`install()` makes, for this process only,
  * `import tilelang`, `import tilelang.language as T`, `from tilelang import language as T`,
    `tilelang.cache`, `tilelang.math`, `tilelang.profiler`, `tilelang.jit`, `tilelang.PassConfigKey`,
    `tilelang.cdiv` resolve to tl_ascend's modules and names;
  * `import torch_npu` resolve to tl_ascend.torch_npu (tensors stay on the CPU, where the virtual
    NPU reads them), and installs that shim at once when torch is present: on a card, torch loads
    torch_npu by itself, so scripts call `.npu()` or `torch.set_default_device("npu")` without
    importing it;
  * `tilelang.intrinsics` (make_zn_layout, make_nz_layout) and `tilelang.utils.target`
    (determine_platform) resolve to tl_ascend.intrinsics and tl_ascend.utils;
  * `import tilelang.<module>` of a TileLang module tl-ascend does not have (tilelang.carver,
    ...) a tl_ascend.Error (also an ImportError) that says so.

It never takes over a real installation silently: if a `tilelang` (or `torch_npu`) package is
importable, install() refuses with an Error naming where it is, unless `force=True`.

Two ways in (docs/python.md):
  * `python -m tl_ascend.run script.py [args]` (run.py), the documented one;
  * `import tl_ascend.alias; tl_ascend.alias.install()` at the top of a script, before
    `import tilelang` (importing this module installs nothing by itself).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from collections.abc import Sequence

from . import _core

# tilelang.<sub> -> the tl_ascend module it is.
_SUBMODULES = {
    "tilelang": "tl_ascend",
    "tilelang.language": "tl_ascend.language",
    "tilelang.language.tile": "tl_ascend.language.tile",
    "tilelang.cache": "tl_ascend.cache",
    "tilelang.math": "tl_ascend.math",
    "tilelang.profiler": "tl_ascend.profiler",
    "tilelang.jit": "tl_ascend.jit",
    "tilelang.intrinsics": "tl_ascend.intrinsics",
    "tilelang.utils": "tl_ascend.utils",
    "tilelang.utils.target": "tl_ascend.utils.target",
}


class _Refuse(importlib.abc.MetaPathFinder):
    """Answers `import tilelang.<sub>` for a TileLang module tl-ascend lacks with an Error
    (the hints of _names.py), instead of Python's bare ModuleNotFoundError."""

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
                  ) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith("tilelang.") or fullname in sys.modules:
            return None
        from . import _names

        top = fullname.split(".")[1]
        hint = _names.TILELANG_HINTS.get(top, "tl-ascend provides " + ", ".join(sorted(_SUBMODULES)[1:]))
        raise _names.UnsupportedModuleError(f"{_importer()}: module '{fullname}' is not in tl-ascend: {hint}")


def _importer() -> str:
    """file:line of the import statement: the first frame outside the package and outside
    importlib's own (frozen) frames."""
    from .language import _state

    f = sys._getframe(1)
    while f is not None and (_state._is_internal(f) or f.f_code.co_filename.startswith("<frozen")):
        f = f.f_back
    return "<unknown>:0" if f is None else f"{_state.display_path(f.f_code.co_filename)}:{f.f_lineno}"


def _ours(name: str) -> bool:
    m = sys.modules.get(name)
    return m is not None and getattr(m, "__name__", "").startswith("tl_ascend")


def real_installation(name: str) -> str | None:
    """Where a real `name` package is ("" for a module already imported without a file), or
    None when there is none (tl-ascend's own alias does not count)."""
    if _ours(name):
        return None
    if name in sys.modules:
        return getattr(sys.modules[name], "__file__", "") or ""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    return spec.origin or (list(spec.submodule_search_locations or [""])[0])


def install(force: bool = False) -> None:
    """Installs the alias (module docstring). Raises tl_ascend.Error if a real tilelang or
    torch_npu is importable, unless force."""
    for name in ("tilelang", "torch_npu"):
        where = real_installation(name)
        if where is not None and not force:
            raise _core.Error(f"a real '{name}' is installed ({where or 'already imported'}): tl-ascend will not take "
                              f"it over silently. Run with `python -m tl_ascend.run --force script.py` (or "
                              f"tl_ascend.alias.install(force=True)) to run the script on tl-ascend's virtual NPU "
                              f"anyway")
    import importlib

    for alias, real in _SUBMODULES.items():
        sys.modules[alias] = importlib.import_module(real)
    if not any(isinstance(f, _Refuse) for f in sys.meta_path):
        sys.meta_path.insert(0, _Refuse())
    if importlib.util.find_spec("torch") is not None:
        sys.modules["torch_npu"] = importlib.import_module("tl_ascend.torch_npu")


def installed() -> bool:
    """Whether `import tilelang` gives tl-ascend in this process."""
    return _ours("tilelang")
