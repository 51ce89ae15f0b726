"""T.printf and T.dump_tensor written in a kernel function outside `with T.Kernel`.

TileLang-Ascend's print/elementwise_print.py prints its GM inputs before the `with T.Kernel`
block and its output after it: there the statements are part of the device function, run by
every core at its start or end (each core prints them once). tl-ascend keeps one launch-level
meaning instead, the one the script wants to see: they print on the host, once per launch, the
statements before the kernel before it runs and those after it once it has finished (the
output tensors then hold the results), in the virtual NPU's dump format, tagged `[host]`. What
a host print can show is known without running the kernel: T.printf's arguments must be Python
values (not kernel expressions), and T.dump_tensor's tile must be a tensor parameter. Anything
else outside the kernel stays what it was (the verifier's "outside-kernel" error for ops).
"""

from __future__ import annotations

import ast
import numbers
from typing import Any

from .. import _core


def top_body(parser: Any, stmts: list) -> None:
    """The kernel function's own statements: a T.printf or T.dump_tensor among them, outside
    `with T.Kernel`, is recorded as a host print; the rest are parsed as any statements."""
    for s in stmts:
        parser.at(s)
        if not parser.located(s, lambda: take(parser, s)):
            parser.stmt(s)


def take(parser: Any, s: ast.stmt) -> bool:
    """Records `s` as a host print when it is one (returns True); False leaves it to the parser."""
    if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Call)):
        return False
    from . import dump_tensor, print as print_, printf

    fn = parser.eval(s.value.func)
    if fn is not printf and fn is not print_ and fn is not dump_tensor:
        return False
    args = [parser.eval(a) for a in s.value.args]
    kwargs = {k.arg: parser.eval(k.value) for k in s.value.keywords}
    when = "after" if parser.kernel_seen else "before"
    if fn is dump_tensor:
        parser.host_prints.append((when, _dump(parser, s, *args, **kwargs)))
    else:
        parser.host_prints.append((when, ("text", _text(parser, s, *args, **kwargs))))
    return True


def _text(parser: Any, s: ast.stmt, fmt: Any = None, *values: Any) -> str:
    if not isinstance(fmt, str):
        parser.fail(s, f"T.printf: argument 'fmt' must be a format string, got {type(fmt).__name__} {fmt!r}")
    for i, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            parser.fail(s, f"T.printf outside T.Kernel prints on the host: argument args[{i}] must be a Python "
                           f"number known when the kernel is built, got {type(v).__name__} {v!r} (print kernel "
                           f"values inside the kernel)")
    try:
        text = fmt % tuple(values)
    except (TypeError, ValueError) as e:
        parser.fail(s, f"T.printf({fmt!r}): the format does not take {len(values)} number(s): {e}")
    return text.rstrip("\n")


def _dump(parser: Any, s: ast.stmt, src: Any = None, desc: Any = 0, dump_size: Any = None,
          shape_info: Any = None) -> tuple:
    if not isinstance(src, _core.Buffer) or src.scope != "global":
        parser.fail(s, f"T.dump_tensor outside T.Kernel prints on the host: argument 'src' must be a tensor "
                       f"parameter of the kernel, got {src!r} (dump on-chip tiles inside the kernel)")
    dump_checks(src, desc, dump_size, shape_info)
    return ("dump", src.name, int(desc), src.dtype)


def dump_checks(src: Any, desc: Any, dump_size: Any, shape_info: Any) -> None:
    """T.dump_tensor's arguments: desc an int; dump_size, if given, src's element count
    (tl-ascend dumps whole tiles); shape_info, if given, positive ints holding dump_size."""
    from . import _bad, _int, _ops

    _int("dump_tensor", "desc", desc)
    if dump_size is not None:
        _int("dump_tensor", "dump_size", dump_size)
        whole = _ops._whole_elements(src._tl_region() if hasattr(src, "_tl_region") else src)
        if whole != dump_size:
            shown = "a symbolic number of" if whole is None else whole
            _bad("dump_tensor", "dump_size", f"src's element count ({shown} elements: tl-ascend dumps whole "
                 "tiles; slice src to dump part of it)", dump_size)
    if shape_info is not None:
        dims = list(shape_info) if isinstance(shape_info, (tuple, list)) else None
        if dims is None or not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in dims):
            _bad("dump_tensor", "shape_info", "a tuple of positive ints", shape_info)
        n = 1
        for d in dims:
            n *= d
        if dump_size is not None and n != dump_size:
            _bad("dump_tensor", "shape_info", f"a shape of dump_size={dump_size} elements", shape_info)


def run(prints: list, when: str, params: list, arrays: list) -> None:
    """Prints the `when` ("before" / "after") host prints of a launch whose tensor arguments
    are `arrays` (by parameter position)."""
    names = [p["name"] for p in params]
    for w, what in prints:
        if w != when:
            continue
        if what[0] == "text":
            print(f"[host] {what[1]}", flush=True)
            continue
        _, name, desc, dtype = what
        a = arrays[names.index(name)]
        values = a.reshape(-1).tolist() if hasattr(a, "reshape") else list(a)
        shown = ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in values)
        print(f"[host] dump_tensor desc={desc} {name} {dtype} [{shown}]", flush=True)
