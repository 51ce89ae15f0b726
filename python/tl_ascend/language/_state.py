"""Where the kernel being parsed is: the Python file and line each T call records.

The script parser (parser.py) sets the line of the statement it is building; a T call made
directly by the parser records that line. A T call made from a plain Python helper that the
kernel called records the kernel's line with the helper's own line as `via`, as a C++ kernel
helper does with T::HelperCall, so errors and profiles point at the kernel first.
"""

import os
import sys
import threading

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PARSER_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "parser.py")
_local = threading.local()


def display_path(path):
    """`path` relative to the working directory when it lies under it, else as given."""
    if not path:
        return "<unknown>"
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def _stack():
    if not hasattr(_local, "locs"):
        _local.locs = []
    return _local.locs


def push(loc):
    _stack().append(loc)


def pop():
    _stack().pop()


def set_line(loc):
    """Replaces the innermost location (the parser moves from statement to statement)."""
    s = _stack()
    if s:
        s[-1] = loc


def parsing():
    return bool(_stack())


def _is_internal(frame):
    return os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR)


def current():
    """(file, line, via) for the T call being made."""
    s = _stack()
    frame = sys._getframe(1)
    while frame is not None and _is_internal(frame):
        frame = frame.f_back
    if not s:
        if frame is None:
            return ("<unknown>", 0, "")
        return (display_path(frame.f_code.co_filename), frame.f_lineno, "")
    file, line, via = s[-1]
    # A user frame between this call and the parser is a plain helper the kernel called.
    parser_frame = sys._getframe(1)
    while parser_frame is not None and os.path.abspath(parser_frame.f_code.co_filename) != _PARSER_FILE:
        parser_frame = parser_frame.f_back
    if frame is not None and parser_frame is not None and _frame_is_below(frame, parser_frame):
        here = f"{display_path(frame.f_code.co_filename)}:{frame.f_lineno}"
        via = f"{via}, {here}" if via else here
    return (file, line, via)


def _frame_is_below(frame, parser_frame):
    f = frame
    while f is not None:
        if f is parser_frame:
            return True
        f = f.f_back
    return False


# ---- Function attributes (T.func_attr) -----------------------------------------------------------


def begin_func_attrs() -> None:
    """A kernel's parse starts: no attributes yet (kernels nest when a generator builds one
    while parsing another, so the previous set is kept on a stack)."""
    if not hasattr(_local, "attrs"):
        _local.attrs = []
    _local.attrs.append({})


def add_func_attrs(attrs: dict) -> None:
    _local.attrs[-1].update(attrs)


def end_func_attrs() -> dict:
    return _local.attrs.pop()
