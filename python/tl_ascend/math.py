"""tilelang.math: the host-side integer helpers TileLang-Ascend scripts size their tiles with.

`tilelang.math.next_power_of_2(n)` and `tilelang.cdiv(a, b)` (also `tilelang.math.cdiv`) are
plain Python on Python ints, as in TileLang (tilelang/math/__init__.py), with one difference:
a bad argument (a float, zero, a negative size) is a tl_ascend.Error naming it, where TileLang
would return a silently wrong figure (next_power_of_2(0) is 1 there, cdiv(7, 0) a
ZeroDivisionError). cdiv of a symbolic size is T.ceildiv's expression.
"""

from __future__ import annotations

import operator
from typing import Any

from . import _core


def _index(fn: str, arg: str, v: object) -> int:
    """v as a Python int (numpy and torch integer scalars included), or an Error naming it."""
    if isinstance(v, bool):
        raise _core.Error(f"tilelang.{fn}: argument '{arg}' must be an int, got bool {v!r}")
    try:
        return operator.index(v)
    except TypeError:
        raise _core.Error(f"tilelang.{fn}: argument '{arg}' must be an int, got {type(v).__name__} {v!r} "
                          f"(in a kernel, T.ceildiv takes symbolic sizes)") from None


def next_power_of_2(x: int) -> int:
    """The smallest power of two >= x, for x >= 1 (next_power_of_2(5) == 8, (8) == 8)."""
    x = _index("math.next_power_of_2", "x", x)
    if x < 1:
        raise _core.Error(f"tilelang.math.next_power_of_2: argument 'x' must be >= 1, got {x}")
    return 1 << (x - 1).bit_length()


def cdiv(a: Any, b: Any) -> Any:
    """ceil(a / b) for ints, b > 0 (cdiv(7, 2) == 4; cdiv(-7, 2) == -3, rounding up as ceil does).
    A symbolic size (a T.dynamic or kernel expression, as TileLang's `(a + b - 1) // b` takes
    too) gives T.ceildiv's expression."""
    if isinstance(a, _core.Expr) or isinstance(b, _core.Expr):
        from .language import ceildiv

        return ceildiv(a, b)
    a = _index("cdiv", "a", a)
    b = _index("cdiv", "b", b)
    if b <= 0:
        raise _core.Error(f"tilelang.cdiv: argument 'b' must be > 0, got {b}")
    return -(-a // b)
