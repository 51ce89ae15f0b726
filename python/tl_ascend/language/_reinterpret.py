"""T.reinterpretcast(dst, src, "uint32_t"): TileLang-Ascend's view of a UB tile's bytes as another dtype.

TileLang-Ascend lowers it to Ascend C's `LocalTensor<T> dst = src.ReinterpretCast<T>();`
(codegen_ascend.cc, ReinterpretCastCodegen): from that statement on, the name `dst` denotes
src's bytes read as `T`, aliasing src (a later write to either is seen through the other); the
tile `dst` was allocated as is left unused. tl-ascend does the same: the parser rebinds the name
to `T.view(src, dtype)` (parser.py, stmt_Expr), so every later use reads src's memory. The view
keeps src's shape, so the element widths must match and dst must have been declared with src's
shape (the ops on `dst` count its declared elements); anything else is an error naming both.
"""

from __future__ import annotations

from typing import Any, Callable

from .. import _core
from . import _state

# Ascend C's type names (what TileLang-Ascend scripts pass) and tl-ascend's dtype names.
_C_TYPES = {"half": "float16", "bfloat16_t": "bfloat16", "float": "float32", "int8_t": "int8",
            "uint8_t": "uint8", "int16_t": "int16", "uint16_t": "uint16", "int32_t": "int32",
            "uint32_t": "uint32", "int64_t": "int64", "uint64_t": "uint64"}


def view_of(dst: Any, src: Any, casttype: Any, make_view: Callable[[Any, str, str], Any],
            fail: Callable[[str], None]) -> Any:
    """The buffer `dst` names after `T.reinterpretcast(dst, src, casttype)`: a view of src."""
    for arg, v in (("dst", dst), ("src", src)):
        if not isinstance(v, _core.Buffer) or v.scope == "var" or v.scope == "global":
            fail(f"T.reinterpretcast: argument '{arg}' must be an on-chip tile (T.alloc_ub / alloc_shared), "
                 f"got {v!r}")
    if not isinstance(casttype, str):
        fail(f"T.reinterpretcast: argument 'casttype' must be an Ascend C type name such as \"uint32_t\", "
             f"got {casttype!r}")
    dtype = _C_TYPES.get(casttype, casttype)
    try:
        bits = _core.dtype_bits(dtype)
    except _core.Error:
        fail(f"T.reinterpretcast: argument 'casttype' must be one of {', '.join(_C_TYPES)}, got {casttype!r}")
    if dtype != dst.dtype:
        fail(f"T.reinterpretcast: 'casttype' {casttype!r} is {dtype}, but 'dst' ('{dst.name}') is {dst.dtype}")
    if bits != _core.dtype_bits(src.dtype):
        fail(f"T.reinterpretcast: '{src.name}' ({src.dtype}) read as {dtype}: elements of another width are "
             f"not supported yet (the view keeps src's shape)")
    shape = lambda b: [e.const_value() if isinstance(e, _core.Expr) else e for e in b.shape]  # noqa: E731
    if shape(dst) != shape(src):
        fail(f"T.reinterpretcast: 'dst' ('{dst.name}', shape {shape(dst)}) must have the shape of 'src' "
             f"('{src.name}', shape {shape(src)}): it becomes a view of src's bytes")
    return make_view(src, dtype, dst.name)


def statement_only(*args: Any, **kwargs: Any) -> None:
    """T.reinterpretcast outside a statement of its own (the parser handles the statement)."""
    _core.user_error(_state.current(), "T.reinterpretcast(dst, src, casttype) is a statement of its own in a "
                                       "kernel: it rebinds the name dst to src's bytes")
