"""Shared by the error tests: find a statement's line in a test function's source, and check
that calling the function raises an error located at that line of its file."""

from __future__ import annotations

import inspect
import os
from typing import Callable

import pytest

import tl_ascend as tilelang


def line_of(fn: Callable, marker: str) -> int:
    """The file line of the statement in `fn`'s source that contains `marker`."""
    lines, start = inspect.getsourcelines(fn)
    for i, line in enumerate(lines):
        if marker in line:
            return start + i
    raise AssertionError(f"{fn.__name__} has no line containing {marker!r}")


def expect_error(fn: Callable, marker: str, *fragments: str, exc: type = tilelang.Error) -> str:
    """Calls `fn`, which must raise `exc` whose message names `fn`'s file at the line holding
    `marker` and contains every fragment; returns the message."""
    with pytest.raises(exc) as e:
        fn()
    msg = str(e.value)
    here = os.path.basename(inspect.getsourcefile(fn))
    assert f"{here}:{line_of(fn, marker)}" in msg, msg
    for f in fragments:
        assert f in msg, msg
    return msg
