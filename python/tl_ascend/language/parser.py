"""The script parser: a `@T.prim_func` Python function, read from its AST into the C++ builder.

As TileLang's script parser does, this never runs the kernel function. It reads the function's
source and walks its AST, evaluating what is Python (constants, the generator's arguments,
helper functions, list indexing) at parse time and turning what is kernel code into builder
calls, each at the Python line it came from:

  with T.Kernel(n, is_npu=True) as (cid, vid)   -> the launch (expert; `as cid`: developer)
  with T.Scope("C" | "V")                       -> AIC / AIV code
  for k in T.serial / T.unroll / T.Parallel /
           T.Pipelined / T.Persistent / range   -> loops (range(a, b) is T.serial(a, b))
  for x in [python list]                        -> unrolled at parse time, in the enclosing block
  if cond / else                                -> T::If when cond is symbolic, else Python's if
  name = symbolic expression                    -> a let (a new kernel variable `name`)
  name = T.alloc_*(shape, dtype)                -> a buffer called `name`
  buf[i, j] = value, buf[i] += value            -> element stores
  A[i * 128:(i + 1) * 128, :], A[i, j]          -> regions / start points (tile-op operands),
                                                   element loads (in expressions)
  a call of a @T.macro function                 -> its body, parsed in place

Names resolve as Python resolves them: a name the function assigns is its local (never a
global's or a closure's), a free name reads its closure cell, then globals, then builtins. A
binding made inside a kernel loop, a kernel `if` or a `with` ends with that block (TVMScript's
let scoping); _scopes.py refuses the reads where that would differ from Python silently.

Every error names the Python file and line of the statement (a tl_ascend.Error): _Parser.located
wraps whatever a statement raises.
"""

from __future__ import annotations

import ast
import builtins
import functools
import inspect
import operator
import re
import textwrap
from collections.abc import Callable
from typing import Any

from .. import _core
from . import _cube_zero, _frames, _host_print, _reinterpret, _state
from ._scopes import BLOCK, BRANCH, LOOP, MISSING, Scopes, ScopeError
from ._values import _BINOPS, _CMP_METHODS, _CMPOPS, _Element, _operand, _symbolic

# TileLang keywords for kernel-level constructs; imported lazily to avoid a cycle.
_T = None


def _lang():
    global _T
    if _T is None:
        from .. import language as T

        _T = T
    return _T


class PrimFunc:
    """A parsed kernel: the C++ PrimFunc plus where it came from."""

    def __init__(self, func: _core.PrimFunc, source_file: str, source_line: int = 0,
                 attrs: dict | None = None, host_prints: list | None = None) -> None:
        self.func = func
        # T.printf / T.dump_tensor written outside `with T.Kernel` (_host_print.py): printed by
        # the launcher before ("before") or after ("after") each launch.
        self.host_prints = list(host_prints or [])
        self.source_file = source_file
        self.source_line = source_line  # the first line of its definition (decorators included)
        self.attrs = dict(attrs or {})  # T.func_attr's, e.g. {"enable_auto_sync": True}

    @property
    def name(self) -> str:
        return self.func.name

    def script(self, locations: bool = True) -> str:
        """The kernel's IR text (tl-ascend's printer; `locations` adds `# @file:line`)."""
        return self.func.script(locations)

    def __repr__(self) -> str:
        return f"<tl_ascend PrimFunc '{self.name}' from {self.source_file}>"


class Macro:
    """A @T.macro function: its body is parsed in place wherever a kernel calls it."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = _function(fn, "@T.macro")
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        _core.user_error(_state.current(), f"@T.macro '{self.fn.__name__}' can only be called inside a "
                                           f"@T.prim_func kernel")


def macro(fn: Callable[..., Any]) -> Macro:
    return Macro(fn)


def prim_func(fn: Callable[..., Any] | None = None, **options: Any) -> Any:
    """Parses `fn` into a kernel at once (as TileLang does): returns a PrimFunc."""
    if fn is None:
        return lambda f: prim_func(f, **options)
    parser = _Parser(_function(fn, "T.prim_func"))
    _state.begin_func_attrs()
    try:
        func = parser.parse_prim_func()
    finally:
        attrs = _state.end_func_attrs()
    return PrimFunc(func, parser.file, parser.line_offset + 1, attrs, parser.host_prints)


def _function(fn: Any, what: str) -> Any:
    """The Python function a decorator was given, through any functools.wraps wrappers: its
    source, globals and closure are the kernel's (a wrapper's are the decorator's, shared by
    every function it wraps)."""
    try:
        real = inspect.unwrap(fn)
    except ValueError as e:  # a __wrapped__ cycle
        _core.user_error(_state.current(), f"{what}: cannot unwrap {fn!r}: {e}")
    if not inspect.isfunction(real):
        _core.user_error(_state.current(), f"{what} decorates a Python function (def), got {type(real).__name__} "
                                           f"{real!r}")
    return real


def _let(name, value, loc):
    """A let named `name`, or name_1, name_2, ... if the kernel already uses it (TVMScript
    rebinds a reassigned name to a new variable)."""
    return _core.let(_core.fresh_name(name), value, loc)


_sources = {}
_LOCATED = re.compile(r"\S+:\d+\b")  # an error message that starts with its file:line
_MAX_MACRO_DEPTH = 32

_STATEMENTS = {"Try": "try/except", "TryStar": "try/except*", "With": "with", "AsyncWith": "async with",
               "AsyncFor": "async for", "AsyncFunctionDef": "async def", "FunctionDef": "def", "ClassDef": "class",
               "Global": "global", "Nonlocal": "nonlocal", "Delete": "del", "Import": "import",
               "ImportFrom": "from ... import", "Raise": "raise", "Break": "break", "Continue": "continue",
               "Match": "match"}


def _text(node: ast.AST, limit: int = 60) -> str:
    """The source text of `node`, shortened, to name the construct in an error."""
    try:
        text = ast.unparse(node).splitlines()[0]
    except Exception:  # noqa: BLE001
        return type(node).__name__
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _source(fn):
    """(AST, line offset, display path) of `fn` (a real function, not a wrapper: see
    _function), read and parsed once per code object: a generator called with new arguments,
    and every call of a macro, reuse it."""
    key = fn.__code__
    hit = _sources.get(key)
    if hit is None:
        try:
            lines, start = inspect.getsourcelines(fn)
        except (OSError, TypeError) as e:
            _core.user_error(_state.current(), f"T.prim_func: cannot read the source of {fn!r} ({e}); kernels must "
                                               f"be defined in a file")
        hit = (ast.parse(textwrap.dedent("".join(lines))), start - 1,
               _state.display_path(inspect.getsourcefile(fn)))
        _sources[key] = hit
    return hit


class _Parser:
    def __init__(self, fn, caller=None, depth=0):
        self.fn = fn
        self.tree, self.line_offset, self.file = _source(fn)
        self.globals = fn.__globals__
        code = fn.__code__
        # Python's name resolution: a name the function assigns anywhere is its local (never a
        # closure's or a global's, even before the assignment); a free name reads its closure
        # cell (empty when the enclosing function assigns it only later); any other name is a
        # global, then a builtin.
        self.locals = set(code.co_varnames) | set(code.co_cellvars)
        self.cells = dict(zip(code.co_freevars, fn.__closure__ or ()))
        self.scopes = Scopes()
        self.caller = caller  # (file, line, via) of the kernel line that called this macro
        self.depth = depth  # macro nesting
        self.line = self.line_offset + 1
        self.host_prints = []  # (when, what) of the prints outside T.Kernel (_host_print.py)
        self.kernel_seen = False
        self.core_scope = None  # "C" or "V" inside a `with T.Scope(...)` (_cube_zero.py)

    # ---- locations and errors ----------------------------------------------------------------

    def loc(self, node=None):
        line = self.line if node is None else node.lineno + self.line_offset
        if self.caller is not None:
            file, cline, via = self.caller
            here = f"{self.file}:{line}"
            return (file, cline, f"{via}, {here}" if via else here)
        return (self.file, line, "")

    def at(self, node):
        self.line = node.lineno + self.line_offset
        _state.set_line(self.loc())

    def fail(self, node, msg):
        if node is not None:
            self.at(node)
        _core.user_error(self.loc(), msg)

    # ---- names ---------------------------------------------------------------------------------

    def lookup(self, node, name):
        try:
            v = self.scopes.lookup(name)
        except ScopeError as e:
            self.fail(node, str(e))
        if v is not MISSING:
            return v
        if name in self.locals:
            self.fail(node, f"name '{name}' has no value here: it is assigned in '{self.fn.__name__}' (so it is "
                            f"that function's local, never a global or closure variable), but not before this line "
                            f"in this block; an assignment inside a kernel loop or `if` ends with it")
        cell = self.cells.get(name)
        if cell is not None:
            try:
                return cell.cell_contents
            except ValueError:
                self.fail(node, f"name '{name}' has no value yet: '{self.fn.__name__}' reads it from the enclosing "
                                f"function, which assigns it only after defining '{self.fn.__name__}'")
        if name in self.globals:
            return self.globals[name]
        if hasattr(builtins, name):
            return getattr(builtins, name)
        self.fail(node, f"name '{name}' is not defined")

    def bind(self, name, value, line=None):
        try:
            self.scopes.bind(name, value, line)
        except ScopeError as e:
            self.fail(None, str(e))

    # ---- the function --------------------------------------------------------------------------

    def parse_prim_func(self):
        fdef = self.tree.body[0]
        if not isinstance(fdef, ast.FunctionDef):
            self.fail(fdef, "T.prim_func decorates a plain function (def), not an `async def`"
                      if isinstance(fdef, ast.AsyncFunctionDef) else "T.prim_func decorates a function (def)")
        self.at(fdef)
        _state.push(self.loc())
        try:
            extra = fdef.args.vararg or fdef.args.kwarg or fdef.args.kwonlyargs or fdef.args.posonlyargs
            if extra:
                self.fail(fdef, f"kernel '{fdef.name}' takes plain parameters only (no *args, **kwargs, keyword-only "
                                f"or positional-only parameters)")
            params = []
            for a in fdef.args.args:
                self.at(a)
                p = self.located(a, lambda: self.param(a))
                self.bind(a.arg, p)
                params.append(p)
            self.at(fdef)
            return _core.prim_func(fdef.name, params, lambda: _host_print.top_body(self, fdef.body), self.loc())
        finally:
            _state.pop()

    def param(self, a):
        if a.annotation is None:
            self.fail(a, f"parameter '{a.arg}' needs an annotation: T.Tensor((M, N), dtype) for a tensor, "
                         f"a dtype (T.int32, T.float32) for a scalar")
        # Python evaluated the annotations when the function was defined, in the generator's
        # scope (their names are not the body's closure); a string annotation (from
        # __future__ import annotations) is evaluated here.
        spec = self.fn.__annotations__.get(a.arg)
        if spec is None or isinstance(spec, str):
            spec = self.eval(a.annotation)
        T = _lang()
        if isinstance(spec, T.Tensor):
            return _core.Tensor(a.arg, list(spec.shape), spec.dtype, list(spec.strides), self.loc())
        if isinstance(spec, str):
            return _core.Scalar(a.arg, spec)
        self.fail(a, f"parameter '{a.arg}': expected T.Tensor(shape, dtype) or a dtype, got {spec!r}")

    def located(self, node, work):
        """work(), with any failure a tl_ascend.Error at `node`'s file:line: an error of the
        builder that has its location passes, one without gets it, and anything else (a T
        function's or a helper's own exception, Python's recursion limit) is wrapped."""
        try:
            return work()
        except _core.InternalError:
            raise
        except _core.Error as e:
            if _LOCATED.match(str(e)):
                raise
            self.fail(node, str(e))
        except RecursionError:
            self.fail(node, "Python's recursion limit was reached parsing this statement (a @T.macro or helper "
                            "that calls itself without a base case known while parsing?)")
        except Exception as e:  # noqa: BLE001
            self.fail(node, f"`{_text(node)}`: {type(e).__name__}: {e}")

    # ---- statements ----------------------------------------------------------------------------

    def body(self, stmts):
        for s in stmts:
            self.stmt(s)

    def stmt(self, s):
        """One statement. This is the one place a failure of any kind becomes a tl_ascend.Error
        at the statement's file:line: an error of the builder already is one, anything else
        (a helper's or a T function's own exception, Python's recursion limit) is wrapped."""
        self.at(s)
        method = getattr(self, "stmt_" + type(s).__name__, None)
        if method is None:
            self.fail(s, f"a '{type(s).__name__}' statement ({_STATEMENTS.get(type(s).__name__, 'this')}) cannot "
                         f"appear in a kernel")
        self.located(s, lambda: method(s))

    def stmt_Pass(self, s):
        pass

    def stmt_Expr(self, s):
        if isinstance(s.value, ast.Constant) and isinstance(s.value.value, str):
            return  # a docstring
        if isinstance(s.value, ast.Call) and self.eval(s.value.func) is _lang().reinterpretcast:
            return self.reinterpretcast(s, s.value)
        self.eval(s.value)

    def reinterpretcast(self, s, n):
        """T.reinterpretcast(dst, src, casttype): from here on the name dst is a view of src's
        bytes, as the Ascend C TileLang-Ascend emits declares it (_reinterpret.py)."""
        if n.keywords or len(n.args) != 3 or not isinstance(n.args[0], ast.Name):
            self.fail(s, "T.reinterpretcast(dst, src, casttype) takes a tile's name, a tile and a type name")
        dst, src, casttype = (self.eval(a) for a in n.args)
        T = _lang()
        view = _reinterpret.view_of(dst, src, casttype, lambda b, d, nm: T.view(b, d, name=_core.fresh_name(nm)),
                                    lambda m: self.fail(s, m))
        self.assign(n.args[0], view, s)

    def stmt_Assert(self, s):
        cond = self.eval(s.test)
        if _symbolic(cond):
            self.fail(s, "assert needs a condition known when the kernel is built")
        if not cond:
            msg = self.eval(s.msg) if s.msg is not None else _text(s.test)
            self.fail(s, f"assertion failed: {msg}")

    def stmt_Assign(self, s):
        value_node = s.value
        if len(s.targets) != 1:
            self.fail(s, "chained assignment (a = b = ...) is not supported in a kernel")
        target = s.targets[0]
        value = self.eval(value_node, name_hint=target.id if isinstance(target, ast.Name) else None)
        self.assign(target, value, s)

    def stmt_AnnAssign(self, s):
        if s.value is None:
            self.fail(s, "a kernel variable needs a value")
        value = self.eval(s.value, name_hint=s.target.id if isinstance(s.target, ast.Name) else None)
        dtype = self.eval(s.annotation)
        if isinstance(dtype, str) and _symbolic(value):
            value = _core.cast(dtype, _operand(value))
        self.assign(s.target, value, s)

    def stmt_AugAssign(self, s):
        op = _BINOPS.get(type(s.op))
        if op is None:
            self.fail(s, f"unsupported operator {type(s.op).__name__}")
        t = s.target
        if isinstance(t, ast.Subscript):
            base = self.eval(t.value)
            if isinstance(base, _core.Buffer):
                idx = self.indices(t.slice)
                if any(isinstance(i, slice) for i in idx):
                    self.fail(s, "an augmented assignment to a buffer slice: use a tile op")
                _core.store(base, idx, op(base.load(idx), _operand(self.eval(s.value))), self.loc())
                return
        if isinstance(t, ast.Name):
            cur = self.lookup(t, t.id)
            if isinstance(cur, _core.Buffer) and cur.scope == "var":
                _core.assign(cur, op(cur.load([0]), _operand(self.eval(s.value))), self.loc())
                return
            self.assign(t, op(_operand(cur), _operand(self.eval(s.value))), s)
            return
        self.fail(s, "unsupported augmented assignment target")

    def assign(self, target, value, s, loop_target=False):
        """Binds `target` to `value` (`loop_target`: the target of an unrolled Python loop or
        a comprehension, a loop variable rather than an assignment for the let-scoping checks)."""
        if isinstance(target, ast.Name):
            cur = self.scopes.current(target.id)
            if isinstance(cur, _core.Buffer) and cur.scope == "var" and not isinstance(value, _core.Buffer):
                _core.assign(cur, _operand(value), self.loc())  # TileLang: a var written by name
                return
            if _symbolic(value) and not isinstance(value, _core.Buffer):
                name = target.id if target.id != "_" else "v"
                value = _let(name, _operand(value), self.loc())
            self.bind(target.id, value, None if loop_target else self.line)
        elif isinstance(target, (ast.Tuple, ast.List)):
            if _symbolic(value):
                self.fail(s, "a kernel expression cannot be unpacked")
            try:
                values = list(value)
            except TypeError:
                self.fail(s, f"cannot unpack a {type(value).__name__} into {len(target.elts)} names")
            if len(values) != len(target.elts):
                self.fail(s, f"cannot unpack {len(values)} values into {len(target.elts)} names")
            for t, v in zip(target.elts, values):
                self.assign(t, v, s, loop_target)
        elif isinstance(target, ast.Subscript):
            base = self.eval(target.value)
            if isinstance(base, _core.Buffer):
                idx = self.indices(target.slice)
                if any(isinstance(i, slice) for i in idx):
                    self.fail(s, f"assigning to a slice of '{base.name}': use T.copy or T.fill for tiles")
                _core.store(base, idx, _operand(value), self.loc())
            else:
                base[self.eval(target.slice)] = value
        else:
            self.fail(s, f"cannot assign to a {type(target).__name__}")

    def stmt_If(self, s):
        cond = self.eval(s.test)
        if not _symbolic(cond):
            self.body(s.body if cond else s.orelse)
            return
        else_cb = (lambda: self.scoped(s.orelse, kind=BRANCH)) if s.orelse else None
        _core.If(_operand(cond), lambda: self.scoped(s.body, kind=BRANCH), else_cb, self.loc(s))

    def scoped(self, stmts, bindings=None, kind=BLOCK):
        """`stmts` in a block of their own: what they bind ends with it (TVMScript's scoping;
        _scopes.py refuses the reads where that differs from Python's)."""
        self.scopes.push(kind, bindings)
        try:
            self.body(stmts)
        finally:
            self.scopes.pop()

    def stmt_With(self, s):
        s = _frames.one_item(s)
        item = s.items[0]
        ctx = self.eval(item.context_expr)
        T = _lang()
        loc = self.loc(s)
        if isinstance(ctx, (T.If, T.Then, T.Else)):
            return _frames.if_frame(self, s, ctx)
        if isinstance(ctx, T.Kernel):
            self.kernel_seen = True
            self.check_int(s, "T.Kernel: the block count", ctx.num_blocks)
            if ctx.threads is not None:
                self.check_int(s, "T.Kernel: threads", ctx.threads)
            names = self.target_names(item.optional_vars, s)
            if len(names) == 2 and ctx.threads is None:  # `as (cid, vid)`: expert mode
                _core.Kernel(ctx.num_blocks, lambda cid, vid: self.scoped(s.body, self.pairs(names, [cid, vid])), loc)
            elif len(names) <= 1:
                threads = 1 if ctx.threads is None else int(ctx.threads)
                _core.KernelDev(ctx.num_blocks, threads,
                                lambda cid: self.scoped(s.body, self.pairs(names, [cid])), loc)
            else:
                self.fail(s, "T.Kernel binds (cid, vid) in expert mode, or cid alone in developer mode "
                             "(T.Kernel(n, threads=2) as cid)")
        elif isinstance(ctx, T.Scope):
            if item.optional_vars is not None:
                self.fail(s, "T.Scope binds no names")
            outer, self.core_scope = self.core_scope, "C" if str(ctx.core) in ("C", "Cube", "cube") else "V"
            _core.Scope(str(ctx.core), lambda: self.scoped(s.body), loc)  # an error ends the parse
            self.core_scope = outer
        else:
            self.fail(s, f"`with` in a kernel takes T.Kernel or T.Scope, got {ctx!r}")

    def check_int(self, s, what, v):
        """`v` is an integer (a Python int or an integer kernel expression), or an error."""
        if isinstance(v, bool) or not (isinstance(v, int) or (isinstance(v, _core.Expr) and "int" in v.dtype)):
            self.fail(s, f"{what} must be an integer, got {type(v).__name__} {v!r}")

    def pairs(self, names, values):
        return {n: v for n, v in zip(names, values) if n is not None}

    def target_names(self, node, s):
        if node is None:
            return []
        if isinstance(node, ast.Name):
            return [None if node.id == "_" else node.id]
        if isinstance(node, (ast.Tuple, ast.List)) and all(isinstance(e, ast.Name) for e in node.elts):
            return [None if e.id == "_" else e.id for e in node.elts]
        self.fail(s, "expected a name or a tuple of names")

    def stmt_For(self, s):
        if s.orelse:
            self.fail(s, "for ... else is not supported in a kernel")
        T = _lang()
        it = s.iter
        if (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
                and self.lookup(it.func, "range") is builtins.range):
            args = [self.eval(a) for a in it.args]
            if len(args) == 3 and not (isinstance(args[2], int) and args[2] == 1):
                self.fail(s, "range with a step is not supported in a kernel loop (use an index expression)")
            loop = T.serial(*args[:2])
        else:
            loop = self.eval(it)
        loc = self.loc(s)
        if isinstance(loop, (list, tuple)):
            # A Python sequence: unrolled while parsing, in the enclosing block, so what an
            # iteration assigns is what the next one reads and what follows the loop sees.
            for v in loop:
                self.at(s)
                self.assign(s.target, v, s, loop_target=True)
                self.body(s.body)
            return
        names = self.target_names(s.target, s)
        if isinstance(loop, T._Loop):
            if len(names) != len(loop.extents):
                self.fail(s, f"{len(loop.extents)} loop extents but {len(names)} loop variables")
            if _cube_zero.lower(self, s, loop, names):  # an L0C zero fill in the cube scope
                return
            self.nested_loops(loop, names, 0, {}, s, loc)
        elif isinstance(loop, T.Persistent):
            if len(names) != len(loop.domain):
                self.fail(s, f"T.Persistent over {len(loop.domain)} dimensions binds {len(loop.domain)} names, "
                             f"got {len(names)}")
            _core.Persistent(loop.domain, loop.num_workers, loop.worker,
                             lambda coords: self.scoped(s.body, self.pairs(names, coords), LOOP), loc)
        else:
            self.fail(s, f"a kernel loop iterates over T.serial, T.Parallel, T.Pipelined, T.unroll, T.Persistent, "
                         f"range or a Python list, got {loop!r}")

    def nested_loops(self, loop, names, d, bound, s, loc):
        if d == len(names):
            self.scoped(s.body, bound, LOOP)
            return
        name = names[d] or "i"
        start = loop.start if d == 0 else 0

        def inner(v):
            b = dict(bound)
            if names[d] is not None:
                b[names[d]] = v
            self.nested_loops(loop, names, d + 1, b, s, loc)

        _core.loop(loop.kind, name, start, loop.extents[d], loop.stages, loop.skew, inner, loc)

    def stmt_Return(self, s):
        self.fail(s, "a kernel returns nothing: write its outputs to tensor parameters")

    def stmt_While(self, s):
        self.fail(s, "while loops are not supported in a kernel: use T.serial with a bound")

    # ---- expressions ---------------------------------------------------------------------------

    def eval(self, node, name_hint=None):
        method = getattr(self, "expr_" + type(node).__name__, None)
        if method is None:
            self.fail(node, f"a '{type(node).__name__}' expression is not supported in a kernel")
        if name_hint is not None and isinstance(node, ast.Call):
            return self.expr_Call(node, name_hint)
        return method(node)

    def expr_Constant(self, n):
        return n.value

    def expr_Name(self, n):
        return self.lookup(n, n.id)

    def expr_Attribute(self, n):
        base = self.eval(n.value)
        try:
            return getattr(base, n.attr)
        except AttributeError as e:
            if isinstance(e, _core.Error):  # T's "did you mean" (_names.py), located at this statement
                raise
            what = getattr(base, "__name__", None) if inspect.ismodule(base) else None
            self.fail(n, f"{_text(n)}: {'module ' + repr(what) if what else type(base).__name__} has no attribute "
                         f"'{n.attr}'")

    def expr_Tuple(self, n):
        return tuple(self.eval(e) for e in n.elts)

    def expr_List(self, n):
        return [self.eval(e) for e in n.elts]

    def expr_Dict(self, n):
        return {self.eval(k): self.eval(v) for k, v in zip(n.keys, n.values)}

    def expr_JoinedStr(self, n):
        parts = []
        for v in n.values:
            if isinstance(v, ast.Constant):
                parts.append(str(v.value))
            else:
                parts.append(format(self.eval(v.value), self.eval(v.format_spec) if v.format_spec else ""))
        return "".join(parts)

    def expr_BinOp(self, n):
        op = _BINOPS.get(type(n.op))
        if op is None:
            self.fail(n, f"unsupported operator {type(n.op).__name__}")
        a, b = self.eval(n.left), self.eval(n.right)
        return self.apply(n, op, _operand(a), _operand(b))

    def apply(self, n, op, *args):
        try:
            return op(*args)
        except _core.Error:
            raise
        except (TypeError, ZeroDivisionError, ValueError, OverflowError) as e:
            self.fail(n, f"`{_text(n)}`: {e}")

    def expr_UnaryOp(self, n):
        v = _operand(self.eval(n.operand))
        if isinstance(n.op, ast.Not):
            return _core.logical_not(v) if _symbolic(v) else not v
        if isinstance(n.op, ast.USub):
            return self.apply(n, operator.neg, v)
        if isinstance(n.op, ast.UAdd):
            return v
        if isinstance(n.op, ast.Invert):
            return self.apply(n, operator.invert, v)
        self.fail(n, "unsupported unary operator")

    def expr_BoolOp(self, n):
        is_and = isinstance(n.op, ast.And)
        result = None
        for e in n.values:
            v = _operand(self.eval(e))
            if result is None:
                result = v
            elif _symbolic(result) or _symbolic(v):
                result = (_core.logical_and if is_and else _core.logical_or)(result, v)
            else:
                result = (result and v) if is_and else (result or v)
            if not _symbolic(result) and (not result if is_and else result):
                return result  # Python's short circuit on a known value
        return result

    def expr_Compare(self, n):
        left = _operand(self.eval(n.left))
        result = None
        for op, right_node in zip(n.ops, n.comparators):
            right = _operand(self.eval(right_node))
            cmp = _CMPOPS[type(op)]
            if type(op) in _CMP_METHODS and (isinstance(left, _core.Expr) or isinstance(right, _core.Expr)):
                # Always `left op right`, as the C++ operator builds it: Python would try the
                # right operand's reflected method first for a Var right of an Expr (a subclass)
                # or an int left of an Expr, so `h + 2 < h_end` would build `h_end > h + 2`.
                cmp = getattr(_core.Expr, _CMP_METHODS[type(op)])
            r = self.apply(n, cmp, left, right)
            result = r if result is None else (
                _core.logical_and(result, r) if _symbolic(result) or _symbolic(r) else (result and r))
            left = right
        return result

    def expr_IfExp(self, n):
        cond = _operand(self.eval(n.test))
        if _symbolic(cond):
            return _core.select(cond, _operand(self.eval(n.body)), _operand(self.eval(n.orelse)))
        return self.eval(n.body) if cond else self.eval(n.orelse)

    def expr_Subscript(self, n):
        base = self.eval(n.value)
        if isinstance(base, _core.Buffer):
            idx = self.indices(n.slice)
            if len(idx) != base.ndim:
                self.fail(n, f"'{base.name}' has {base.ndim} dimensions, indexed with {len(idx)}")
            if not any(isinstance(i, slice) for i in idx):
                return _Element(base, idx)
            starts, extents = [], []
            elts = n.slice.elts if isinstance(n.slice, ast.Tuple) else [n.slice]
            for d, i in enumerate(idx):
                if isinstance(i, slice):
                    if i.step is not None:
                        self.fail(n, "a buffer slice with a step is not supported")
                    lo = 0 if i.start is None else i.start
                    hi = base.shape[d] if i.stop is None else i.stop
                    starts.append(lo)
                    e = elts[d]
                    if (e.lower is not None and isinstance(e.upper, ast.BinOp) and isinstance(e.upper.op, ast.Add)
                            and ast.dump(e.upper.left) == ast.dump(e.lower)):
                        # `start:start + extent`: the extent as written (the builder does not fold
                        # `start + extent - start`), as the C++ buf.region({start}, {extent}).
                        extents.append(_operand(self.eval(e.upper.right)))
                    elif isinstance(hi, _core.Expr) or isinstance(lo, _core.Expr):
                        # `m * 64:(m + 1) * 64`: the builder does not fold (m + 1) * 64 - m * 64,
                        # so a constant difference is taken here (the copy's shape check needs
                        # the 64; it was a shape mismatch against [64, 64]).
                        diff = _core.constant_difference(_operand(hi), _operand(lo))
                        extents.append(diff if diff is not None
                                       else self.apply(n, operator.sub, _operand(hi), _operand(lo)))
                    else:
                        extents.append(self.apply(n, operator.sub, _operand(hi), _operand(lo)))
                else:
                    starts.append(i)
                    extents.append(1)
            return base.region(starts, extents)
        key = self.eval(n.slice)
        try:
            return base[key]
        except Exception as e:  # noqa: BLE001 (a Python container's own error)
            self.fail(n, f"indexing {type(base).__name__}: {e}")

    def indices(self, node):
        elts = node.elts if isinstance(node, ast.Tuple) else [node]
        out = []
        for e in elts:
            if isinstance(e, ast.Slice):
                out.append(slice(None if e.lower is None else _operand(self.eval(e.lower)),
                                 None if e.upper is None else _operand(self.eval(e.upper)),
                                 None if e.step is None else self.eval(e.step)))
            else:
                out.append(self.index(e, _operand(self.eval(e))))
        return out

    def index(self, node, v):
        """An element index: an integer, never a float or a condition (`X[0.5]` was a silent
        store to nowhere)."""
        if isinstance(v, (bool, float)) or (isinstance(v, _core.Expr) and "int" not in v.dtype):
            self.fail(node, f"the index `{_text(node)}` must be an integer, got {getattr(v, 'dtype', type(v).__name__)}")
        return v

    def expr_Slice(self, n):
        return slice(*(None if x is None else self.eval(x) for x in (n.lower, n.upper, n.step)))

    def expr_Starred(self, n):
        self.fail(n, "a starred expression is only allowed in call arguments")

    def expr_ListComp(self, n):
        if len(n.generators) != 1 or n.generators[0].ifs or n.generators[0].is_async:
            self.fail(n, "only simple list comprehensions ([f(x) for x in seq]) are supported")
        g = n.generators[0]
        out = []
        seq = self.eval(g.iter)
        if _symbolic(seq):
            self.fail(n, "a list comprehension iterates over a Python sequence known while parsing, not a kernel value")
        try:
            seq = list(seq)
        except TypeError:
            self.fail(n, f"a list comprehension over a {type(seq).__name__}, which is not iterable")
        for v in seq:
            with self.scopes.comprehension():
                self.assign(g.target, v, n, loop_target=True)
                out.append(self.eval(n.elt))
        return out

    def expr_Call(self, n, name_hint=None):
        fn = self.eval(n.func)
        args = []
        for a in n.args:
            if isinstance(a, ast.Starred):
                args.extend(self.eval(a.value))
            else:
                args.append(self.eval(a))
        kwargs = {}
        for k in n.keywords:
            if k.arg is None:
                kwargs.update(self.eval(k.value))
            else:
                kwargs[k.arg] = self.eval(k.value)
        self.at(n)
        if isinstance(fn, Macro):
            return self.call_macro(n, fn, args, kwargs)
        if name_hint is not None and getattr(fn, "_tl_takes_name", False) and "name" not in kwargs:
            kwargs["name"] = name_hint
        if (fn is builtins.min or fn is builtins.max) and any(_symbolic(a) for a in args):
            T = _lang()
            fn = T.min if fn is builtins.min else T.max
        if fn is builtins.float or fn is builtins.int:
            if any(_symbolic(a) for a in args):
                return _core.cast("float32" if fn is builtins.float else "int32", _operand(args[0]))
        if not callable(fn):
            self.fail(n, f"'{_text(n.func)}' is a {type(fn).__name__}, which cannot be called")
        try:
            return fn(*args, **kwargs)
        except (_core.Error, _core.InternalError):
            raise
        except RecursionError:
            raise  # stmt() reports it once the stack has unwound
        except Exception as e:  # noqa: BLE001 (a T function's or a helper's own error, located here)
            self.fail(n, f"calling {_text(n.func)}: {type(e).__name__}: {e}")

    def call_macro(self, n, m, args, kwargs):
        if self.depth >= _MAX_MACRO_DEPTH:
            self.fail(n, f"@T.macro '{m.fn.__name__}' is nested {_MAX_MACRO_DEPTH} calls deep: a macro that calls "
                         f"itself needs a base case known while parsing")
        sub = _Parser(m.fn, caller=self.loc(n), depth=self.depth + 1)
        sig = inspect.signature(m.fn)
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            self.fail(n, f"calling @T.macro '{m.fn.__name__}': {e}")
        bound.apply_defaults()
        fdef = sub.tree.body[0]
        sub.scopes = Scopes(bound.arguments)
        _state.push(sub.loc())
        try:
            sub.body(fdef.body)
        finally:
            _state.pop()
            _state.set_line(self.loc(n))
