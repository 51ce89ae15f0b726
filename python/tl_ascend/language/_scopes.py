"""The script parser's name scopes, and the diagnostics of TVMScript's let scoping.

A kernel body binds names in nested blocks (the kernel, a T.Scope, a kernel loop, a branch of a
kernel `if`), and a binding ends with its block, as in TileLang's TVMScript parser: `s = s + x`
inside a kernel loop makes a new let `s` that lives for one iteration. Python would instead
carry `s` from one iteration to the next and past the loop, so a script written with Python's
semantics in mind silently computes something else. This module keeps the blocks and detects
the two places where the semantics differ, so the parser can refuse them with the file:line:

  * a loop-carried read: a kernel loop reads an outer name `s` (bound by an assignment outside
    the loop) and then rebinds it (`s = s + x[i]`): each iteration would read the outer `s`;
  * a stale read: a name rebound inside a block that has ended is read after it: the read would
    see the value from before the block.

Rebinding inside a block and reading only the new binding there (TileLang-Ascend's examples
do, e.g. `chunk_len = ...` per iteration) is accepted. Rebinding an outer name that a kernel
launch, a loop or a parameter bound (`cid = T.use_swizzle(i * n + cid, ...)`) is accepted too:
that is how TileLang-Ascend scripts remap block indices per iteration.
"""

from dataclasses import dataclass, field
from typing import Any

# Block kinds. A "comp" block (a list comprehension's) ends without leaking, as in Python 3.
LOOP, BRANCH, BLOCK, COMP = "loop", "branch", "block", "comp"


@dataclass
class Frame:
    kind: str
    names: dict[str, Any] = field(default_factory=dict)
    assigned: dict[str, int] = field(default_factory=dict)  # bound by an assignment: name -> line
    read_outer: set[str] = field(default_factory=set)  # a loop's reads of bindings outside it
    shadowed: dict[str, int] = field(default_factory=dict)  # outer names rebound here -> line
    stale: dict[str, tuple[str, int]] = field(default_factory=dict)  # name -> (block kind, line)


class ScopeError(Exception):
    """A let-scoping diagnostic; the parser turns it into a tl_ascend.Error at the statement."""


_MISSING = object()


def _what(kind: str) -> str:
    return {LOOP: "a kernel loop", BRANCH: "a branch of a kernel `if`"}.get(kind, "a kernel block")


def _advice(name: str) -> str:
    return (f"a let made inside a kernel loop or branch is a new variable that ends with it (TVMScript's "
            f"scoping); to update '{name}' across iterations or branches declare it before them with "
            f"{name} = T.alloc_var(dtype, init=...) and assign it")


class Scopes:
    def __init__(self, bindings: dict[str, Any] | None = None) -> None:
        self.frames = [Frame(BLOCK, dict(bindings or {}))]

    def push(self, kind: str, bindings: dict[str, Any] | None = None) -> None:
        self.frames.append(Frame(kind, dict(bindings or {})))

    def pop(self) -> None:
        f = self.frames.pop()
        if f.kind == COMP:
            return
        parent = self.frames[-1]
        for name, line in f.shadowed.items():
            parent.stale[name] = (f.kind, line)
        for name, info in f.stale.items():
            if name not in f.names:  # a stale name of an outer binding stays stale out there
                parent.stale.setdefault(name, info)

    def _find(self, name: str) -> int:
        for k in range(len(self.frames) - 1, -1, -1):
            if name in self.frames[k].names:
                return k
        return -1

    def lookup(self, name: str) -> Any:
        """The value bound to `name` (_MISSING when no block binds it); a ScopeError for a
        read that TVMScript's scoping would make differ from Python's."""
        k = self._find(name)
        if k < 0:
            return _MISSING
        for j in range(k, len(self.frames)):
            stale = self.frames[j].stale.get(name)
            if stale is not None:
                kind, line = stale
                raise ScopeError(f"'{name}' is read after {_what(kind)} that rebound it at line {line}: this reads "
                                 f"the value from before that block, not the one assigned there; {_advice(name)}")
        for j in range(k + 1, len(self.frames)):
            if self.frames[j].kind == LOOP:
                self.frames[j].read_outer.add(name)
        return self.frames[k].names[name]

    def current(self, name: str) -> Any:
        """The binding an assignment to `name` would replace (no diagnostics), or None."""
        k = self._find(name)
        return None if k < 0 else self.frames[k].names[name]

    def bind(self, name: str, value: Any, line: int | None = None) -> None:
        """Binds `name` in the innermost block; `line` is the assignment's (None: a binding the
        parser makes, a parameter, loop or launch variable)."""
        top = self.frames[-1]
        k = self._find(name)
        if line is not None and 0 <= k < len(self.frames) - 1:
            outer = self.frames[k]
            for j in range(k + 1, len(self.frames)):
                f = self.frames[j]
                if f.kind == LOOP and name in f.read_outer and name in outer.assigned:
                    raise ScopeError(f"'{name}' is reassigned in a kernel loop after the loop read it: every "
                                     f"iteration reads the '{name}' assigned at line {outer.assigned[name]}, "
                                     f"outside the loop, and the new value is lost; {_advice(name)}")
            if name not in top.names:
                top.shadowed[name] = line
        top.names[name] = value
        top.stale.pop(name, None)
        if line is not None:
            top.assigned[name] = line

    def comprehension(self) -> "_Comp":
        return _Comp(self)


class _Comp:
    def __init__(self, scopes: Scopes) -> None:
        self.scopes = scopes

    def __enter__(self) -> None:
        self.scopes.push(COMP)

    def __exit__(self, *exc: object) -> None:
        self.scopes.pop()


MISSING = _MISSING
