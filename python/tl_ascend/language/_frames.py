"""TVMScript's if frames as TileLang-Ascend scripts write them (xllm_kernels/fused_gdn_gating.py):

    with T.If(cond):
        with T.Then():
            ...
        with T.Else():
            ...

and `with T.If(cond), T.Then():` (several `with` items, nested as Python nests them). The
frames make the kernel `if` a Python `if cond:` ... `else:` makes (a Python `cond` picks one
branch when the kernel is built). A `T.If` block holds its `T.Then` and optionally a `T.Else`
block and nothing else; a `T.Then` / `T.Else` outside one is an error.
"""

from __future__ import annotations

import ast
from typing import Any

from .. import _core
from ._values import _operand, _symbolic


class If:
    """`with T.If(cond):` TVMScript's if frame: a `with T.Then():` block and optionally a
    `with T.Else():` block."""

    def __init__(self, condition: Any) -> None:
        from . import _expr

        _expr("If", "condition", condition)
        self.condition = condition


class Then:
    """`with T.Then():` the branch of the enclosing `with T.If(cond):` taken when cond holds."""


class Else:
    """`with T.Else():` the branch of the enclosing `with T.If(cond):` taken otherwise."""


def one_item(s: ast.With) -> ast.With:
    """`with A, B: body` as `with A:` around `with B: body` (Python's own meaning)."""
    if len(s.items) == 1:
        return s
    inner = ast.copy_location(ast.With(items=s.items[1:], body=s.body), s)
    return ast.copy_location(ast.With(items=s.items[:1], body=[inner]), s)


def if_frame(parser: Any, s: ast.With, ctx: Any) -> None:
    """Parses the `with` statement `s` whose context `ctx` is an If, Then or Else frame."""
    if not isinstance(ctx, If):
        parser.fail(s, f"`with T.{type(ctx).__name__}():` belongs directly inside a `with T.If(cond):` block")
    if s.items[0].optional_vars is not None:
        parser.fail(s, "T.If binds no names")
    from ._scopes import BRANCH
    from .parser import _text

    branches: dict = {}
    for b in s.body:
        if isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant) and isinstance(b.value.value, str):
            continue  # a docstring
        kind = None
        if isinstance(b, ast.With) and len(b.items) == 1 and b.items[0].optional_vars is None:
            frame = parser.eval(b.items[0].context_expr)
            kind = type(frame) if isinstance(frame, (Then, Else)) else None
        if kind is None:
            parser.fail(b, f"a `with T.If(cond):` block holds `with T.Then():` and `with T.Else():` blocks only, "
                           f"got `{_text(b)}`")
        name = kind.__name__
        if name in branches or (name == "Then" and "Else" in branches):
            parser.fail(b, f"`with T.{name}():` {'again' if name in branches else 'after T.Else'} in one T.If")
        branches[name] = b.body
    if "Then" not in branches:
        parser.fail(s, "a `with T.If(cond):` block needs a `with T.Then():` block")
    cond, then_body, else_body = ctx.condition, branches["Then"], branches.get("Else", [])
    if not _symbolic(cond):
        parser.body(then_body if cond else else_body)
        return
    else_cb = (lambda: parser.scoped(else_body, kind=BRANCH)) if else_body else None
    _core.If(_operand(cond), lambda: parser.scoped(then_body, kind=BRANCH), else_cb, parser.loc(s))
