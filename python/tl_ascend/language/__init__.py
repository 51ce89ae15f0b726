"""tl_ascend.language: TileLang-Ascend's `T` namespace, over tl-ascend's C++ builder.

`import tl_ascend.language as T` gives the names and argument conventions of TileLang-Ascend's
`tilelang.language` for every primitive tl-ascend has: `T.prim_func`, `T.Tensor`, `T.Kernel`,
`T.Scope`, the loops (`T.serial`, `T.Parallel`, `T.Pipelined`, `T.unroll`, `T.Persistent`),
the allocations, `T.copy`, `T.gemm_v0`, the `T.tile.*` vector ops, reductions, sorting, flags
and barriers, and the scalar expression helpers. Tile ops are destination first
(`T.tile.add(dst, a, b)`), `T.copy` source first, as in TileLang.

Each function here is a thin wrapper that calls the C++ builder (`tl_ascend._core`) with the
Python file and line the script parser is at (see _state.py), so the kernel a Python script
builds is the IR its C++ twin builds, and every diagnostic names the Python line. The
`T.tile` wrappers are generated from the op registry, so a new op is callable from Python
without a change here. docs/python.md lists what is supported.
"""

import builtins as _builtins
import functools as _functools
import inspect as _inspect
import numbers as _numbers
from typing import Any as _Any, Callable as _Callable

from .. import _core
from . import _state
from . import _ops
from . import _real_shape
from . import _short_read
from . import _reinterpret
from . import _host_print
from ._frames import Else, If, Then  # noqa: F401  (TVMScript's if frames, _frames.py)
from . import parser as _parser
from ._values import imm as _imm

Error = _core.Error


def _loc():
    return _state.current()


# ---- argument checks: a bad argument is a tl_ascend.Error naming it, what was expected and what
# came, at the caller's file:line (never a raw TypeError/ValueError/AttributeError) ----------------


def _what(v):
    r = repr(v)
    return f"{type(v).__name__} {r if len(r) <= 60 else r[:57] + '...'}"


def _bad(fn, arg, expected, got, why=""):
    _core.user_error(_loc(), f"T.{fn}: argument '{arg}' must be {expected}, got {_what(got)}{why}")


def _is_expr(v):
    return isinstance(v, (_numbers.Real, _core.Expr)) or hasattr(v, "_tl_expr")


def _expr(fn, arg, v):
    if not _is_expr(v):
        _bad(fn, arg, "an int, float, bool or kernel expression", v)
    return v


def _int(fn, arg, v):
    if isinstance(v, bool) or not isinstance(v, int):
        _bad(fn, arg, "a Python int", v)
    return v


def _dtype(fn, arg, v):
    if not isinstance(v, str):
        _bad(fn, arg, "a dtype name such as \"float16\"", v)
    try:
        _core.dtype_bits(v)
    except Error as e:
        _core.user_error(_loc(), f"T.{fn}: argument '{arg}': {e}")
    return str(v)


def _shape(fn, arg, shape):
    if isinstance(shape, (int, _core.Expr)) and not isinstance(shape, bool):
        return (shape,)
    if not isinstance(shape, (list, tuple)) or not shape:
        _bad(fn, arg, "a shape: an int or a non-empty tuple of ints or kernel expressions", shape)
    for d in shape:
        if isinstance(d, bool) or not isinstance(d, (int, _core.Expr)):
            _bad(fn, arg, "a shape: an int or a non-empty tuple of ints or kernel expressions", shape)
    return tuple(shape)


def _emit(op, operands, attrs, loc):
    """_core.emit after checking each operand is a buffer, region or expression (_ops.py)."""
    _ops.check_operands(op, operands)
    _core.emit(op, operands, attrs, loc)


def _guarded(fn, name):
    """`fn` with its arity checked (a wrong count or keyword is an Error showing the signature)
    and any Python exception of a bad argument inside it turned into an Error naming the call."""
    sig = _inspect.signature(fn)

    @_functools.wraps(fn)
    def g(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (TypeError, ValueError, AttributeError, ZeroDivisionError, OverflowError) as e:
            # The signature is bound only on failure: the parse-time cost of a good call stays nil.
            try:
                sig.bind(*args, **kwargs)
            except TypeError as arity:
                _core.user_error(_loc(), f"T.{name}{sig}: {arity}")
            shown = ", ".join([_what(a) for a in args] + [f"{k}={_what(v)}" for k, v in kwargs.items()])
            _core.user_error(_loc(), f"T.{name}({shown}): {e}")

    return g


def prim_func(fn=None, **options):
    """`@T.prim_func` / `@T.prim_func(...)`: parses a kernel `def` at once (parser.py)."""
    if fn is not None and (not _inspect.isfunction(fn) or fn.__name__ == "<lambda>"):
        _bad("prim_func", "fn", "a function defined with def", fn)
    return _parser.prim_func(fn, **options)


# T.func_attr keys with a meaning here, and the pass configs they switch on for the kernel.
_FUNC_ATTR_SWITCHES = {"enable_auto_sync": "auto_sync"}
# TVM's function attributes that TileLang scripts set and that change nothing here.
_INERT_FUNC_ATTRS = {"global_symbol", "tir.noalias", "tir.is_entry_func", "tir.is_global_func"}


def func_attr(attrs):
    """`T.func_attr({"enable_auto_sync": True})` inside a kernel: TileLang-Ascend's per-kernel
    switches. enable_auto_sync: the compiler writes the syncs of an expert kernel (the pass
    config TL_ASCEND_AUTO_SYNC, for this kernel only). Other keys are an error naming them,
    except TVM's bookkeeping ones (global_symbol, tir.noalias, ...), which change nothing."""
    if not _state.parsing():
        _core.user_error(_loc(), "T.func_attr: only inside a @T.prim_func kernel")
    if not isinstance(attrs, dict):
        _bad("func_attr", "attrs", "a dict of attribute name to value", attrs)
    for k, v in attrs.items():
        if k in _INERT_FUNC_ATTRS:
            continue
        if k not in _FUNC_ATTR_SWITCHES:
            _core.user_error(_loc(), f"T.func_attr: unknown attribute {k!r}; known: "
                                     f"{', '.join(sorted(_FUNC_ATTR_SWITCHES))} (and TVM's "
                                     f"{', '.join(sorted(_INERT_FUNC_ATTRS))}, which change nothing)")
        if not isinstance(v, (bool, int)) or v not in (0, 1):
            _bad("func_attr", k, "True or False", v)
    _state.add_func_attrs({k: bool(v) for k, v in attrs.items() if k in _FUNC_ATTR_SWITCHES})


def macro(fn):
    """`@T.macro`: a function whose body is parsed in place where a kernel calls it."""
    if not _inspect.isfunction(fn) or fn.__name__ == "<lambda>":
        _bad("macro", "fn", "a function defined with def", fn)
    return _parser.macro(fn)


# ---- dtypes -----------------------------------------------------------------------------------


class DType(str):
    """A dtype name that also builds immediates: `T.float32(0.5)`, `T.int32(7)`."""

    def __call__(self, value=None):
        name = str(self)
        fn = "boolean" if name == "bool" else name
        _dtype(fn, "dtype", name)
        if value is None or not _is_expr(value):
            why = f" (could not convert {value!r} to {name})" if isinstance(value, str) else ""
            _bad(fn, "value", "an int, float, bool or kernel expression", value, why)
        if isinstance(value, (_core.Expr,)) or hasattr(value, "_tl_expr"):
            return _core.cast(name, value)
        if _is_float_name(name):
            v = _builtins.float(value)
            # A finite value at or past the dtype's overflow threshold (max + half an ulp) would
            # become inf silently (T.float16(70000) was inf in the kernel).
            if v == v and _builtins.abs(v) != _builtins.float("inf") and _builtins.abs(v) >= _FLOAT_OVERFLOW.get(name, _builtins.float("inf")):
                _bad(fn, "value", f"finite in {name} (|value| < {_FLOAT_OVERFLOW[name]:g}; T.infinity for inf)", value)
            return _core.imm(name, v)
        if name == "bool":
            return _core.int_imm(name, int(bool(value)))
        # An integer immediate: a fraction or a value outside the dtype's range would change silently
        # (T.int32(1.5) was 1, T.int8(1000) was -24, T.uint8(-1) was 255).
        if not isinstance(value, _numbers.Integral) and not _builtins.float(value).is_integer():
            _bad(fn, "value", f"an integer for {name}", value)
        v = int(value)
        bits = _core.dtype_bits(name)
        lo, hi = (0, (1 << bits) - 1) if name.startswith("uint") else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
        hi = _builtins.min(hi, (1 << 63) - 1)  # the IR holds integer immediates as int64
        if not lo <= v <= hi:
            _bad(fn, "value", f"in {name}'s range [{lo}, {hi}]", value)
        return _core.int_imm(name, v)


# max + half an ulp at max: from there round-to-nearest gives inf.
_FLOAT_OVERFLOW = {"float16": 65504.0 + 16.0, "bfloat16": 3.3895313892515355e38 + 2.0**119,
                   "float32": 3.4028234663852886e38 + 2.0**103, "float8_e4m3": 448.0 + 16.0,
                   "float8_e5m2": 57344.0 + 4096.0}


def _is_float_name(name):
    return name.startswith("float") or name.startswith("bfloat")


float16 = DType("float16")
bfloat16 = DType("bfloat16")
float32 = DType("float32")
float64 = DType("float64")
float8_e4m3 = DType("float8_e4m3")
float8_e5m2 = DType("float8_e5m2")
int8 = DType("int8")
int16 = DType("int16")
int32 = DType("int32")
int64 = DType("int64")
uint8 = DType("uint8")
uint16 = DType("uint16")
uint32 = DType("uint32")
uint64 = DType("uint64")
boolean = DType("bool")
half = float16
float = float32  # noqa: A001  (TileLang's accum_dtype="float")


# ---- Parameters -------------------------------------------------------------------------------


class Tensor:
    """`A: T.Tensor((M, K), "float16")`: a GM tensor parameter (in an annotation), or, called
    while a kernel is being built, a tensor made on the spot (what T.Buffer is in TileLang)."""

    def __init__(self, shape, dtype="float32", strides=None):
        self.shape = _shape("Tensor", "shape", shape)
        self.dtype = _dtype("Tensor", "dtype", dtype)
        self.strides = _shape("Tensor", "strides", strides) if strides else ()

    def __repr__(self):
        return f"T.Tensor({self.shape}, {self.dtype!r})"


Buffer = Tensor


def dynamic(name, dtype="int32"):
    """A dynamic size, bound at launch from the tensor shapes it appears in."""
    if not isinstance(name, str) or not name.isidentifier():
        _bad("dynamic", "name", "an identifier string", name)
    return _core.dynamic(name, _dtype("dynamic", "dtype", dtype))


symbolic = dynamic


# ---- Launch, scopes and loops (the parser reads these in `with` and `for`) ----------------------


class _Marker:
    pass


class Kernel(_Marker):
    """`with T.Kernel(n, is_npu=True) as (cid, vid):` an expert kernel of n blocks;
    `with T.Kernel(n, threads=2) as cid:` a developer kernel (the compiler places buffers,
    splits Cube and Vector work and inserts every sync)."""

    def __init__(self, num_blocks, *, is_npu=True, threads=None, **unused):
        if unused:
            _core.user_error(_loc(), f"T.Kernel: unexpected arguments {sorted(unused)} (expected num_blocks, "
                                     f"is_npu=, threads=)")
        _expr("Kernel", "num_blocks", num_blocks)
        if threads is not None:
            _int("Kernel", "threads", threads)
        self.num_blocks = num_blocks
        self.threads = threads


class Scope(_Marker):
    """`with T.Scope("C"):` code for the AIC; `with T.Scope("V"):` for each AIV."""

    def __init__(self, core):
        if core not in ("C", "V", "Cube", "Vector", "cube", "vector"):
            shown = f'"{core}"' if isinstance(core, str) else _what(core)
            _core.user_error(_loc(), f'T.Scope: argument \'core\' must be "C" (the AIC) or "V" (the AIVs), got {shown}')
        self.core = core


class _Loop(_Marker):
    def __init__(self, kind, extents, start=0, stages=0, skew=1):
        for i, e in enumerate(extents):
            _expr(kind if kind != "parallel" else "Parallel", f"extent {i}" if len(extents) > 1 else "extent", e)
        _expr(kind, "start", start)
        self.kind, self.extents, self.start, self.stages, self.skew = kind, list(extents), start, stages, skew


def serial(start, stop=None):
    """`for k in T.serial(n)` or `T.serial(start, stop)`."""
    _expr("serial", "start" if stop is not None else "extent", start)
    if stop is None:
        return _Loop("serial", [start])
    return _Loop("serial", [_sub(stop, start)], start=start)


def unroll(extent):
    return _Loop("unroll", [extent])


def Parallel(*extents):
    """`for i, j in T.Parallel(M, N):` element loops (developer mode)."""
    return _Loop("parallel", extents)


def Pipelined(extent, num_stages=2, *, cross_interval=1, skew=1):
    """`for k in T.Pipelined(n, num_stages=2):` a software-pipelined loop (developer mode).

    `skew=d` (tl-ascend's, 1 <= d < num_stages): a core runs the part of the body before its first
    cross-core pop d iterations ahead (FlashAttention's Q K^T(t + d) before P(t); docs/compiler.md).

    `cross_interval=N` is TileLang-Ascend's cross-core sync frequency (its CombineCV syncs the C<->V
    flags every N iterations; pipeline.py). Scheduling only: tl-ascend's channels sync every
    iteration, which computes the same values, so any N >= 1 is accepted, the loop unchanged."""
    _int("Pipelined", "num_stages", num_stages)
    _int("Pipelined", "cross_interval", cross_interval)
    if cross_interval < 1:
        _core.user_error(_loc(), "T.Pipelined: argument 'cross_interval' must be >= 1 (iterations "
                         f"between cross-core syncs), got {cross_interval}")
    _int("Pipelined", "skew", skew)
    return _Loop("pipelined", [extent], stages=num_stages, skew=skew)


class Persistent(_Marker):
    """`for bx, by in T.Persistent([M_tiles, N_tiles], num_workers, cid):` tiles dealt to workers."""

    def __init__(self, domain, num_workers, worker):
        domain = _shape("Persistent", "domain", domain)
        _expr("Persistent", "num_workers", num_workers)
        _expr("Persistent", "worker", worker)
        self.domain, self.num_workers, self.worker = list(domain), num_workers, worker


def _sub(a, b):
    return a - b if isinstance(a, int) and isinstance(b, int) else _core.as_expr(a) - b


# ---- Memory -----------------------------------------------------------------------------------


def _fresh(make, base):
    """make(name) for a buffer the script does not name: `base`, or base_1, ... if taken."""
    return make(_core.fresh_name(base))


def _alloc(scope, shape, dtype, name, address=-1):
    fn = "alloc_" + {"UB": "ub"}.get(scope, scope)
    shape = _shape(fn, "shape", shape)
    dtype = _dtype(fn, "dtype", dtype)
    _int(fn, "address", address)
    loc = _loc()
    make = lambda n: _core.alloc(scope, n, list(shape), str(dtype), address, loc)  # noqa: E731
    return make(name) if name is not None else _fresh(make, "buf")


def _allocator(scope, doc):
    def alloc(shape, dtype="float32", name=None, address=-1):
        return _alloc(scope, shape, dtype, name, address)

    alloc.__doc__ = doc
    alloc._tl_takes_name = True
    return alloc


alloc_L1 = _allocator("L1", "A buffer in L1 (the AIC's 512 KB staging memory).")
alloc_L0A = _allocator("L0A", "A buffer in L0A (the cube's left operand).")
alloc_L0B = _allocator("L0B", "A buffer in L0B (the cube's right operand).")
alloc_L0C = _allocator("L0C", "A buffer in L0C (the cube's accumulator).")
alloc_ub = _allocator("UB", "A buffer in UB (an AIV's unified buffer).")
alloc_UB = alloc_ub
alloc_shared = _allocator("shared", "Developer mode: a tile the compiler places in L1 or UB.")
alloc_fragment = _allocator("fragment", "Developer mode: a tile the compiler places in L0A/L0B/L0C or UB.")
alloc_workspace = _allocator("workspace", "GM scratch for this launch, shared by every block.")


def alloc_var(dtype="int32", init=None, name=None):
    _dtype("alloc_var", "dtype", dtype)
    if init is not None:
        _expr("alloc_var", "init", init)
    loc = _loc()
    make = lambda n: _core.alloc_var(n, str(dtype), init, loc)  # noqa: E731
    return make(name) if name is not None else _fresh(make, "var")


alloc_var._tl_takes_name = True


def view(base, dtype, name=None):
    if not isinstance(base, _core.Buffer):
        _bad("view", "base", "a buffer (T.alloc_*)", base)
    _dtype("view", "dtype", dtype)
    loc = _loc()
    make = lambda n: _core.view(n, base, str(dtype), loc)  # noqa: E731
    return make(name) if name is not None else _fresh(make, base.name + "_view")


view._tl_takes_name = True
reinterpretcast = _reinterpret.statement_only  # a statement the parser handles (_reinterpret.py)


# ---- Data movement and cube ---------------------------------------------------------------------


def copy(src, dst, enable_relu=False, transpose=False, pad_value=None, nd2nz=True):
    attrs = {}
    if enable_relu:
        attrs["enable_relu"] = True
    if transpose:
        attrs["transpose"] = True
    if pad_value is not None:
        attrs["pad"] = True
        attrs["pad_value"] = _pad_number(pad_value)
    if not nd2nz:
        attrs["nd2nz"] = False
    dst = _short_read.short_gm_read(src, dst, attrs, lambda d, v: _emit("tile.fill", [d, v], {}, _loc()))
    _emit("copy", [src, dst], attrs, _loc())



def _pad_number(v):
    """pad_value as the float the copy fills with: a number, or any constant kernel expression
    (TileLang-Ascend takes a PrimExpr: `-T.infinity(dtype)`, `T.float16(0)`); the padded copy
    fills with one immediate, so an expression of kernel variables is an error, not a guess."""
    if isinstance(v, bool) or not _is_expr(v):
        _bad("copy", "pad_value", "a number or a constant expression (e.g. -T.infinity(dtype))", v)
    if isinstance(v, _numbers.Real):
        return _builtins.float(v)
    e = _core.as_expr(v)
    if not e.is_const():
        _bad("copy", "pad_value", "a number or a constant expression (e.g. -T.infinity(dtype))", v,
             f" ('{_core.print_expr(e)}' is not a constant: the padded copy fills with one immediate)")
    return _builtins.float(e.const_value())


def atomic_add(dst, src):
    _emit("atomic_add", [dst, src], {}, _loc())


def dcci(dst, entire=False):
    _emit("dcci", [dst], {"entire": True} if entire else {}, _loc())


def _gemm(op, A, B, C, transpose_A, transpose_B, init):
    attrs = {}
    if transpose_A:
        attrs["transpose_A"] = True
    if transpose_B:
        attrs["transpose_B"] = True
    _emit(op, [A, B, C, init], attrs, _loc())


def gemm_v0(A, B, C, transpose_A=False, transpose_B=False, init=False):
    """C (L0C) [+]= op(A) x op(B) with A and B in L1."""
    _gemm("gemm_v0", A, B, C, transpose_A, transpose_B, init)


def gemm(A, B, C, transpose_A=False, transpose_B=False, init=False):
    """Developer mode: C [+]= op(A) x op(B) on tiles the compiler places."""
    _gemm("gemm", A, B, C, transpose_A, transpose_B, init)


def mma(A, B, C, init=False):
    _emit("mma", [A, B, C, init], {}, _loc())


def fill(dst, value):
    _emit("tile.fill", [dst, value], {}, _loc())


def clear(dst):
    dtype = dst.dtype if isinstance(dst, _core.Buffer) else "float32"
    _emit("tile.fill", [dst, _zero(dtype)], {}, _loc())


def _zero(dtype):
    return _core.imm(dtype, 0.0) if _is_float_name(dtype) else _core.int_imm(dtype, 0)


def init_const(dst, value):
    _emit("init_const", [dst, value], {}, _loc())


# ---- Reductions and sorting ---------------------------------------------------------------------


def _reduce(fn, src, dst, dim, clear, real_shape):
    _int(fn, "dim", dim)
    if isinstance(clear, (list, tuple)) and real_shape is None:
        clear, real_shape = True, clear  # TileLang-Ascend's positional (src, dst, dim, real_shape)
    if not isinstance(clear, bool):
        _bad(fn, "clear", "a bool", clear)
    if real_shape is not None:
        src, dst = _real_shape.regions(fn, src, dst, dim, real_shape, _bad,
                                       lambda msg: _core.user_error(_loc(), msg))
    _emit(fn, [src, dst], {"dim": int(dim), "clear": bool(clear)}, _loc())


def reduce_sum(src, dst, dim=-1, clear=True, real_shape=None):
    """dst = sum of src along dim; real_shape=[rows, cols] reduces the tile's top-left corner
    (TileLang-Ascend's slice-buffer reduce, _real_shape.py)."""
    _reduce("reduce_sum", src, dst, dim, clear, real_shape)


def reduce_max(src, dst, dim=-1, clear=True, real_shape=None):
    _reduce("reduce_max", src, dst, dim, clear, real_shape)


def reduce_min(src, dst, dim=-1, clear=True, real_shape=None):
    _reduce("reduce_min", src, dst, dim, clear, real_shape)


def sort(dst, src, actual_num):
    _emit("sort", [dst, src, actual_num], {}, _loc())


def merge_sort(dst, srcs):
    if not isinstance(srcs, (list, tuple)):
        _bad("merge_sort", "srcs", "a list of 2 to 4 source queues", srcs)
    srcs = list(srcs)
    if not 2 <= len(srcs) <= 4:
        _core.user_error(_loc(), f"T.merge_sort merges 2 to 4 queues, got {len(srcs)}")
    _emit("merge_sort", [dst] + srcs, {}, _loc())


def topk(dst, src, k, actual_num):
    _emit("topk", [dst, src, k, actual_num], {}, _loc())


def init_sort_buf(dst, num, value=None):
    _emit("init_sort_buf", [dst, num] + ([] if value is None else [value]), {}, _loc())


# ---- Synchronisation ----------------------------------------------------------------------------


_PIPES = ("S", "V", "M", "MTE1", "MTE2", "MTE3", "FIX", "ALL")


def _pipe(fn, arg, p):
    """Pipe names as TileLang-Ascend scripts write them: "MTE2" or "mte2"."""
    if not isinstance(p, str):
        _bad(fn, arg, f"a pipe name, one of {', '.join(_PIPES)} (any case)", p)
    if p.upper() not in _PIPES:
        _core.user_error(_loc(), f"T.{fn}: argument '{arg}': unknown pipe '{p}': expected one of {', '.join(_PIPES)} "
                                 f"(any case)")
    return p.upper()


def set_flag(src, dst, event_id):
    _core.set_flag(_pipe("set_flag", "src", src), _pipe("set_flag", "dst", dst),
                   _expr("set_flag", "event_id", event_id), _loc())


def wait_flag(src, dst, event_id):
    _core.wait_flag(_pipe("wait_flag", "src", src), _pipe("wait_flag", "dst", dst),
                    _expr("wait_flag", "event_id", event_id), _loc())


def pipe_barrier(pipe):
    _core.pipe_barrier(_pipe("pipe_barrier", "pipe", pipe), _loc())


def barrier_all():
    _core.barrier_all(_loc())


def set_cross_flag(pipe, event_id, mode=2):
    _int("set_cross_flag", "mode", mode)
    _core.set_cross_flag(_pipe("set_cross_flag", "pipe", pipe), _expr("set_cross_flag", "event_id", event_id),
                         int(mode), _loc())


def wait_cross_flag(event_id, pipe=""):
    """TileLang-Ascend's wait_cross_flag(flag, pipe=""): `pipe` (A5's per-pipe wait, which
    AscendC's A2/A3 CrossCoreWaitFlag does not take) is checked as a pipe name and otherwise
    changes nothing: the wait here blocks the whole core, which orders every pipe the named one
    would and so cannot give a different result."""
    _expr("wait_cross_flag", "event_id", event_id)
    if pipe != "":
        _pipe("wait_cross_flag", "pipe", pipe)
    _core.wait_cross_flag(event_id, _loc())


def sync_all():
    _core.sync_all(_loc())


# ---- Debug ----------------------------------------------------------------------------------------


def printf(fmt, *args):
    if not isinstance(fmt, str):
        _bad("printf", "fmt", "a format string", fmt)
    for i, a in enumerate(args):
        _expr("printf", f"args[{i}]", a)
    _core.printf(fmt, list(args), _loc())


print = printf  # noqa: A001  (TileLang's T.print)


def dump_tensor(src, desc=0, dump_size=None, shape_info=None):
    """T.dump_tensor(src, desc[, dump_size, shape_info]): prints src's elements (AscendC
    DumpTensor). TileLang-Ascend's dump_size (how many elements from the start) and shape_info
    (how to lay them out) are checked, not used: tl-ascend prints the whole tile with its own
    shape, so dump_size must be its element count and shape_info, if given, hold that many.
    Outside `with T.Kernel` it prints a tensor parameter on the host (_host_print.py)."""
    _host_print.dump_checks(src, desc, dump_size, shape_info)
    _emit("dump_tensor", [src], {"desc": int(desc)}, _loc())


# ---- Scalar expressions -----------------------------------------------------------------------------


def _both_python(*vs):
    return all(isinstance(v, (int, _builtins.float)) and not isinstance(v, bool) for v in vs)


def _integer_arg(fn, arg, v):
    _expr(fn, arg, v)
    dt = v.dtype if isinstance(v, _core.Expr) else None
    if isinstance(v, _builtins.float) or (dt is not None and _is_float_name(dt)):
        _bad(fn, arg, "an integer or an integer expression", v)
    if (isinstance(v, int) or isinstance(v, _core.Expr) and v.is_const()) and _const(v) == 0:
        _bad(fn, arg, "a non-zero divisor", v)


def _const(v):
    return v if isinstance(v, int) else v.const_value()


def ceildiv(a, b):
    _integer_arg("ceildiv", "a", a) if not isinstance(a, int) else None
    _integer_arg("ceildiv", "b", b)
    if isinstance(a, int) and isinstance(b, int):
        return _imm(-(-a // b))
    return _core.ceildiv(a, b)


def max(a, b):  # noqa: A001
    _expr("max", "a", a), _expr("max", "b", b)
    if _both_python(a, b):
        return _imm(a if a >= b else b)
    return _core.max(a, b)


def min(a, b):  # noqa: A001
    _expr("min", "a", a), _expr("min", "b", b)
    if _both_python(a, b):
        return _imm(a if a <= b else b)
    return _core.min(a, b)


def if_then_else(cond, t, f):
    _expr("if_then_else", "cond", cond)
    _expr("if_then_else", "t", t), _expr("if_then_else", "f", f)
    if isinstance(cond, bool):
        return t if cond else f
    return _core.select(cond, t, f)


select = if_then_else
Select = if_then_else  # TVM's tir.Select, as TileLang-Ascend scripts spell it


# TVM's expression constructors under their TVMScript names, as TileLang-Ascend scripts call them
# (`init=T.And(k == 0, kk == 0)`, `T.Cast("int32", e)`): the same expressions as `and`, `or`,
# T.cast, T.min and T.max.
def And(a, b):
    """a and b: a condition (`T.And(k == 0, kk == 0)`), as `a and b` is in a kernel."""
    _expr("And", "a", a), _expr("And", "b", b)
    if _both_python_bool(a, b):
        return _builtins.bool(a) and _builtins.bool(b)
    return _core.logical_and(a, b)


def Or(a, b):
    """a or b: a condition, as `a or b` is in a kernel."""
    _expr("Or", "a", a), _expr("Or", "b", b)
    if _both_python_bool(a, b):
        return _builtins.bool(a) or _builtins.bool(b)
    return _core.logical_or(a, b)


def _both_python_bool(*vs):
    return all(isinstance(v, _numbers.Real) for v in vs)


def Cast(dtype, value):
    """TVM's tir.Cast(dtype, value): T.cast(value, dtype), dtype first."""
    return cast(value, dtype)


Min = min
Max = max


def floordiv(a, b):
    """a // b rounded toward negative infinity (TVM's floordiv; `a // b` in a kernel)."""
    _integer_arg("floordiv", "b", b)
    if isinstance(a, int) and isinstance(b, int):
        return _imm(a // b)
    return _core.floordiv(_expr("floordiv", "a", a), b)


def floormod(a, b):
    """a % b with the sign of b (TVM's floormod; `a % b` in a kernel)."""
    _integer_arg("floormod", "b", b)
    if isinstance(a, int) and isinstance(b, int):
        return _imm(a % b)
    return _core.as_expr(_expr("floormod", "a", a)) % b


def cast(value, dtype):
    _expr("cast", "value", value)
    return _core.cast(_dtype("cast", "dtype", dtype), value)


def infinity(dtype):
    dtype = _dtype("infinity", "dtype", dtype)
    if not _is_float_name(dtype):  # was an InternalError (a FloatImm of an integer dtype)
        _bad("infinity", "dtype", "a float dtype (float16, bfloat16, float32)", dtype)
    return _core.inf(dtype)


# The scalar intrinsics come from the extension's one table (include/tl/intrinsics.def): name,
# arity and whether the arguments must be floats. T.exp, T.pow, ... are made from it below.
_INTRINSICS = {d["name"]: d for d in _core.intrinsics()}


def _intrinsic(name: str) -> _Callable[..., _Any]:
    row = _INTRINSICS[name]
    params = ("x", "y")[: row["arity"]]

    def f(*args):
        if len(args) != len(params):
            _core.user_error(_loc(), f"T.{name}({', '.join(params)}) takes {len(params)} argument(s), got {len(args)}")
        for p, a in zip(params, args):
            _expr(name, p, a)
        if row["float_only"]:
            # exp/log/... of an integer expression would compute in float and truncate the result
            # to the integer dtype (T.exp(x) of int32 x = 1 was 2): an Error; a Python int is a
            # float literal here (T.exp(1) is e).
            args = tuple(_builtins.float(a) if isinstance(a, int) and not isinstance(a, bool) else a for a in args)
            for p, a in zip(params, args):
                dt = _core.as_expr(a).dtype
                if not _is_float_name(dt):
                    _core.user_error(_loc(), f"T.{name}: argument '{p}' must be a float expression, got {dt} "
                                             f"'{_core.print_expr(a)}' (cast it: T.cast(x, \"float32\"))")
        return _core.intrinsic(name, list(args))

    f.__name__ = name
    f._tl_intrinsic = True  # test_ops_values.py: every intrinsic has a value test
    return f


# T.exp, T.log, T.sqrt, T.rsqrt, T.abs, T.sigmoid, T.pow, ...: one per row of the table (T.abs
# and T.pow shadow the builtins inside this module, as the explicit assignments did).
for _name in _INTRINSICS:
    globals()[_name] = _intrinsic(_name)
del _name


# ---- T.tile: every vector op of the registry ---------------------------------------------------------

from . import tile  # noqa: E402,F401
from ._ops import emit  # noqa: E402,F401
from ._annot import annotate_address, annotate_l2_cache, annotate_layout, use_swizzle  # noqa: E402,F401


def _guard_public_functions():
    """Every public function of T checks its arity and reports a bad argument as an Error."""
    g = globals()
    for n, v in list(g.items()):
        if n.startswith("_") or not _inspect.isfunction(v) or v.__module__ not in (__name__, _ops_module, _annot_module):
            continue
        if n in ("prim_func", "macro"):
            continue
        g[n] = _guarded(v, n)


_ops_module = __name__ + "._ops"
_annot_module = __name__ + "._annot"
_guard_public_functions()


def __getattr__(name):
    """An unknown `T.<name>`: a tl_ascend.Error (also an AttributeError) with the tl-ascend
    spelling of TileLang-Ascend's name, or the closest names T has (_names.py)."""
    from .. import _names

    raise _names.unknown("T", name, list(globals()), _names.T_HINTS, prefix="T.")
