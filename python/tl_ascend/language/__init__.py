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

from .. import _core
from . import _state
from .parser import prim_func, macro  # noqa: F401

Error = _core.Error


def _loc():
    return _state.current()


# ---- dtypes -----------------------------------------------------------------------------------


class DType(str):
    """A dtype name that also builds immediates: `T.float32(0.5)`, `T.int32(7)`."""

    def __call__(self, value=None):
        if value is None:
            raise TypeError(f"T.{self}() needs a value")
        if isinstance(value, (_core.Expr,)) or hasattr(value, "_tl_expr"):
            return _core.cast(str(self), value)
        if isinstance(value, bool) or (isinstance(value, int) and not _is_float_name(self)):
            return _core.int_imm(str(self), int(value))
        return _core.imm(str(self), _builtins.float(value))


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
        if isinstance(shape, (int, _core.Expr)):
            shape = (shape,)
        self.shape = tuple(shape)
        self.dtype = str(dtype)
        self.strides = tuple(strides) if strides else ()

    def __repr__(self):
        return f"T.Tensor({self.shape}, {self.dtype!r})"


Buffer = Tensor


def dynamic(name, dtype="int32"):
    """A dynamic size, bound at launch from the tensor shapes it appears in."""
    return _core.dynamic(name, str(dtype))


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
            raise TypeError(f"T.Kernel: unexpected arguments {sorted(unused)}")
        self.num_blocks = num_blocks
        self.threads = threads


class Scope(_Marker):
    """`with T.Scope("C"):` code for the AIC; `with T.Scope("V"):` for each AIV."""

    def __init__(self, core):
        self.core = core


class _Loop(_Marker):
    def __init__(self, kind, extents, start=0, stages=0):
        self.kind, self.extents, self.start, self.stages = kind, list(extents), start, stages


def serial(start, stop=None):
    """`for k in T.serial(n)` or `T.serial(start, stop)`."""
    if stop is None:
        return _Loop("serial", [start])
    return _Loop("serial", [_sub(stop, start)], start=start)


def unroll(extent):
    return _Loop("unroll", [extent])


def Parallel(*extents):
    """`for i, j in T.Parallel(M, N):` element loops (developer mode)."""
    return _Loop("parallel", extents)


def Pipelined(extent, num_stages=2):
    """`for k in T.Pipelined(n, num_stages=2):` a software-pipelined loop (developer mode)."""
    return _Loop("pipelined", [extent], stages=num_stages)


class Persistent(_Marker):
    """`for bx, by in T.Persistent([M_tiles, N_tiles], num_workers, cid):` tiles dealt to workers."""

    def __init__(self, domain, num_workers, worker):
        self.domain, self.num_workers, self.worker = list(domain), num_workers, worker


def _sub(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a - b
    return _core.as_expr(a) - b


# ---- Memory -----------------------------------------------------------------------------------


def _fresh(make, base):
    """make(name) for a buffer the script does not name: `base`, or base_1, ... if taken."""
    return make(_core.fresh_name(base))


def _alloc(scope, shape, dtype, name, address=-1):
    if isinstance(shape, (int, _core.Expr)):
        shape = (shape,)
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
    loc = _loc()
    make = lambda n: _core.alloc_var(n, str(dtype), init, loc)  # noqa: E731
    return make(name) if name is not None else _fresh(make, "var")


alloc_var._tl_takes_name = True


def view(base, dtype, name=None):
    loc = _loc()
    make = lambda n: _core.view(n, base, str(dtype), loc)  # noqa: E731
    return make(name) if name is not None else _fresh(make, base.name + "_view")


view._tl_takes_name = True


# ---- Data movement and cube ---------------------------------------------------------------------


def copy(src, dst, enable_relu=False, transpose=False, pad_value=None, nd2nz=True):
    attrs = {}
    if enable_relu:
        attrs["enable_relu"] = True
    if transpose:
        attrs["transpose"] = True
    if pad_value is not None:
        attrs["pad"] = True
        attrs["pad_value"] = _builtins.float(pad_value)
    if not nd2nz:
        attrs["nd2nz"] = False
    _core.emit("copy", [src, dst], attrs, _loc())


def atomic_add(dst, src):
    _core.emit("atomic_add", [dst, src], {}, _loc())


def dcci(dst, entire=False):
    _core.emit("dcci", [dst], {"entire": True} if entire else {}, _loc())


def _gemm(op, A, B, C, transpose_A, transpose_B, init):
    attrs = {}
    if transpose_A:
        attrs["transpose_A"] = True
    if transpose_B:
        attrs["transpose_B"] = True
    _core.emit(op, [A, B, C, init], attrs, _loc())


def gemm_v0(A, B, C, transpose_A=False, transpose_B=False, init=False):
    """C (L0C) [+]= op(A) x op(B) with A and B in L1."""
    _gemm("gemm_v0", A, B, C, transpose_A, transpose_B, init)


def gemm(A, B, C, transpose_A=False, transpose_B=False, init=False):
    """Developer mode: C [+]= op(A) x op(B) on tiles the compiler places."""
    _gemm("gemm", A, B, C, transpose_A, transpose_B, init)


def mma(A, B, C, init=False):
    _core.emit("mma", [A, B, C, init], {}, _loc())


def fill(dst, value):
    _core.emit("tile.fill", [dst, value], {}, _loc())


def clear(dst):
    dtype = dst.dtype if isinstance(dst, _core.Buffer) else "float32"
    _core.emit("tile.fill", [dst, _zero(dtype)], {}, _loc())


def _zero(dtype):
    return _core.imm(dtype, 0.0) if _is_float_name(dtype) else _core.int_imm(dtype, 0)


def init_const(dst, value):
    _core.emit("init_const", [dst, value], {}, _loc())


# ---- Reductions and sorting ---------------------------------------------------------------------


def reduce_sum(src, dst, dim=-1, clear=True):
    _core.emit("reduce_sum", [src, dst], {"dim": int(dim), "clear": bool(clear)}, _loc())


def reduce_max(src, dst, dim=-1, clear=True):
    _core.emit("reduce_max", [src, dst], {"dim": int(dim), "clear": bool(clear)}, _loc())


def reduce_min(src, dst, dim=-1, clear=True):
    _core.emit("reduce_min", [src, dst], {"dim": int(dim), "clear": bool(clear)}, _loc())


def sort(dst, src, actual_num):
    _core.emit("sort", [dst, src, actual_num], {}, _loc())


def merge_sort(dst, srcs):
    srcs = list(srcs)
    if not 2 <= len(srcs) <= 4:
        _core.user_error(_loc(), f"T.merge_sort merges 2 to 4 queues, got {len(srcs)}")
    _core.emit("merge_sort", [dst] + srcs, {}, _loc())


def topk(dst, src, k, actual_num):
    _core.emit("topk", [dst, src, k, actual_num], {}, _loc())


def init_sort_buf(dst, num, value=None):
    _core.emit("init_sort_buf", [dst, num] + ([] if value is None else [value]), {}, _loc())


# ---- Synchronisation ----------------------------------------------------------------------------


def _pipe(p):
    """Pipe names as TileLang-Ascend scripts write them: "MTE2" or "mte2"."""
    return p.upper() if isinstance(p, str) else p


def set_flag(src, dst, event_id):
    _core.set_flag(_pipe(src), _pipe(dst), event_id, _loc())


def wait_flag(src, dst, event_id):
    _core.wait_flag(_pipe(src), _pipe(dst), event_id, _loc())


def pipe_barrier(pipe):
    _core.pipe_barrier(_pipe(pipe), _loc())


def barrier_all():
    _core.barrier_all(_loc())


def set_cross_flag(pipe, event_id, mode=2):
    _core.set_cross_flag(_pipe(pipe), event_id, int(mode), _loc())


def wait_cross_flag(event_id):
    _core.wait_cross_flag(event_id, _loc())


def sync_all():
    _core.sync_all(_loc())


# ---- Debug ----------------------------------------------------------------------------------------


def printf(fmt, *args):
    _core.printf(fmt, list(args), _loc())


print = printf  # noqa: A001  (TileLang's T.print)


def dump_tensor(src, desc=0):
    _core.emit("dump_tensor", [src], {"desc": int(desc)}, _loc())


# ---- Scalar expressions -----------------------------------------------------------------------------


def _both_python(*vs):
    return all(isinstance(v, (int, _builtins.float)) and not isinstance(v, bool) for v in vs)


def ceildiv(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return -(-a // b)
    return _core.ceildiv(a, b)


def max(a, b):  # noqa: A001
    if _both_python(a, b):
        return a if a >= b else b
    return _core.max(a, b)


def min(a, b):  # noqa: A001
    if _both_python(a, b):
        return a if a <= b else b
    return _core.min(a, b)


def if_then_else(cond, t, f):
    if isinstance(cond, bool):
        return t if cond else f
    return _core.select(cond, t, f)


select = if_then_else


def cast(value, dtype):
    return _core.cast(str(dtype), value)


def infinity(dtype):
    return _core.inf(str(dtype))


def _intrinsic(name):
    def f(*args):
        return _core.intrinsic(name, list(args))

    f.__name__ = name
    f._tl_intrinsic = True  # test_ops_values.py: every intrinsic has a value test
    return f


exp = _intrinsic("exp")
log = _intrinsic("log")
sqrt = _intrinsic("sqrt")
rsqrt = _intrinsic("rsqrt")
abs = _intrinsic("abs")  # noqa: A001
sigmoid = _intrinsic("sigmoid")
pow = _intrinsic("pow")  # noqa: A001


# ---- T.tile: every vector op of the registry ---------------------------------------------------------

from . import tile  # noqa: E402,F401
from ._ops import emit  # noqa: E402,F401
