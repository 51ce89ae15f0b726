"""Unknown names of the TileLang-Ascend surface: a tl_ascend.Error with "did you mean", never a
bare AttributeError.

A TileLang-Ascend script run on tl-ascend (`python -m tl_ascend.run`, docs/python.md) reaches
for `T.*`, `T.tile.*`, `tilelang.*` and `torch_npu.*` names. Where tl-ascend spells a name
differently, or does not have it, the script should learn that at the line that used it, with
the tl-ascend spelling, instead of a Python traceback ending in `AttributeError`. The modules
call `unknown()` from their module-level `__getattr__` (PEP 562), which Python consults only for
names the module does not have, so known names cost nothing.

The error is both a `tl_ascend.Error` (what every user error is) and an `AttributeError`, so
`hasattr()`, `getattr(m, name, default)` and `except AttributeError` keep working as Python
promises.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping

from . import _core


class UnknownNameError(_core.Error, AttributeError):
    """A name the tl-ascend module does not have: a tl_ascend.Error that is also the
    AttributeError Python raises for a missing attribute."""


class UnsupportedModuleError(_core.Error, ImportError):
    """`import tilelang.<sub>` of a TileLang module tl-ascend does not provide: a tl_ascend.Error
    that is also an ImportError, so a script's `try: import ... except ImportError` still works."""


def _where() -> str:
    """The caller's file:line: the parser's statement while a kernel is parsed, else the first
    frame outside the package (the script line that named the attribute)."""
    from .language import _state

    file, line, via = _state.current()
    return f"{file}:{line}" + (f" (via {via})" if via else "")


def suggestion(name: str, known: Iterable[str], hints: Mapping[str, str], prefix: str) -> str:
    """The text after "has no name": a hint written for this TileLang-Ascend name, else the
    closest known names, else nothing."""
    if name in hints:
        return f": {hints[name]}"
    close = difflib.get_close_matches(name, [k for k in known if not k.startswith("_")], n=3, cutoff=0.7)
    if not close:
        lower = name.lower()
        close = [k for k in known if not k.startswith("_") and k.lower() == lower]
    if close:
        return "; did you mean " + " or ".join(f"{prefix}{c}" for c in close) + "?"
    return ""


def unknown(module: str, name: str, known: Iterable[str], hints: Mapping[str, str] | None = None,
            prefix: str | None = None) -> UnknownNameError:
    """The error for `module.name` (raise it). Dunder names stay plain AttributeErrors: Python's
    own machinery (copy, pickle, inspect) probes them and expects exactly that."""
    if name.startswith("__") and name.endswith("__"):
        return AttributeError(f"module '{module}' has no attribute '{name}'")  # type: ignore[return-value]
    shown = prefix if prefix is not None else module + "."
    return UnknownNameError(f"{_where()}: {shown}{name} is not in tl-ascend"
                            f"{suggestion(name, known, hints or {}, shown)}")


# ---- What TileLang-Ascend scripts name that tl-ascend spells otherwise or lacks --------------------


T_HINTS: dict[str, str] = {
    "reinterpret": "not supported yet: T.view(buffer, dtype) reads a whole buffer's bytes as another dtype",
    "call_extern": "not supported: tl-ascend has no extern calls (every op is a T.* or T.tile.* primitive)",
    "shmem_put_nbi": "not supported: tl-ascend has one device (no shmem across devices)",
    "shmem_get_nbi": "not supported: tl-ascend has one device (no shmem across devices)",
    "shmem_ub_put_nbi": "not supported: tl-ascend has one device (no shmem across devices)",
    "shmem_ub_get_nbi": "not supported: tl-ascend has one device (no shmem across devices)",
    "ceil_div": "T.ceildiv(a, b)",
    "alloc_local": "T.alloc_fragment(shape, dtype) (developer mode) or T.alloc_ub (expert mode)",
    "alloc_l1": "T.alloc_L1", "alloc_l0a": "T.alloc_L0A", "alloc_l0b": "T.alloc_L0B", "alloc_l0c": "T.alloc_L0C",
    "int": "T.int32 (a dtype string \"int\" is accepted too)",
}

TILE_HINTS: dict[str, str] = {
    "atomic_add": "T.atomic_add(dst, src) (a data movement, not a T.tile vector op in tl-ascend)",
    "bitwise_rshift": "T.tile.shift_right", "bitwise_lshift": "T.tile.shift_left",
    "reduce_sum": "T.reduce_sum(src, dst, dim) (reductions are T.*, not T.tile.*)",
    "reduce_max": "T.reduce_max(src, dst, dim)", "reduce_min": "T.reduce_min(src, dst, dim)",
    "datacachecleanandinvalid": "T.dcci(dst)",
    "gathermask": "T.tile.gather_mask",
    "brcb": "not supported yet: T.tile.broadcast and the T.tile.row_expand_* ops broadcast rows",
    "mins": "T.tile.min with a scalar operand",
    "sum": "T.reduce_sum(src, dst, dim)",
}


def tile_hint(name: str, known: Iterable[str]) -> dict[str, str]:
    """T.tile hints, with TileLang-Ascend's `<op>_experiment` spellings pointing at the op they
    are a variant of (`T.tile.sub_experiment` is T.tile.sub here)."""
    base = name[: -len("_experiment")] if name.endswith("_experiment") else None
    if base is None:
        return TILE_HINTS
    if base in known:
        return {name: f"T.tile.{base} (tl-ascend has one version of each op: no `_experiment` variants)"}
    if base in TILE_HINTS:
        return {name: TILE_HINTS[base]}
    return TILE_HINTS


TILELANG_HINTS: dict[str, str] = {
    "autotuner": "tilelang.autotune(configs=...) above @tilelang.jit (the AutoTuner class is not in tl-ascend)",
    "engine": "not supported: tl_ascend.compile(prim_func) compiles, kernel.get_kernel_source() shows the result",
    "carver": "not supported: tl-ascend has no carver; choose tile sizes by hand",
    "Profiler": "tl_ascend.profiler.do_bench(fn), or kernel.profile(*inputs) for the timing model's profile",
    "set_log_level": "not needed: tl-ascend reports errors as tl_ascend.Error and logs nothing",
    "ceildiv": "tilelang.cdiv(a, b) (or T.ceildiv inside a kernel generator)",
}

TORCH_NPU_HINTS: dict[str, str] = {}

INTRINSICS_HINTS: dict[str, str] = {
    "make_col_major_layout": "not supported: tl-ascend's L1 tiles are zN fractals (make_zn_layout); a column-major "
                             "tile is a transposed copy (T.copy(..., transpose=True) into L0)",
}
