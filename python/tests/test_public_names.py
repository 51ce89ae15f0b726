"""Every public name of `tl_ascend.language` (`T`) and of `T.tile` is called by a test, in a
kernel and outside one (issue 27).

PUBLIC maps each name to
- IN_KERNEL: where a kernel that runs on the virtual NPU with a checked result calls it: a
  VALUE_TESTS key of test_ops_values.py (`("value", "tile.add")`), a test or example source that
  calls `T.<name>` in a kernel checked against a reference (`("grep", ...)`: this test greps for
  it), a kernel in this file (`("here", ...)`), or why it has no kernel use (`("host", reason)`);
- OUT_OF_KERNEL: a call outside any kernel and what it gives: a value (`("ok", f)`) or a clear
  tl_ascend.Error (`("error", f, regex)`) — never a crash or a raw Python exception.

`test_table_covers_every_public_name` compares PUBLIC's keys with the names generated from the
module, so a new public name without a row fails the suite.
"""

import glob
import inspect
import os
import re
import types
from typing import Any, Callable, Dict, List, Tuple

import numpy as np
import pytest

import tl_ascend as tilelang
import tl_ascend.language as T

from test_ops_values import VALUE_TESTS

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCES = [p for p in glob.glob(os.path.join(HERE, "**", "*.py"), recursive=True)
           + glob.glob(os.path.join(os.path.dirname(HERE), "examples", "*.py"))
           if not p.endswith("test_public_names.py")]


def public_names() -> List[str]:
    """`T`'s public names (its submodules are not API, except the `T.tile` namespace), and
    `tile.<name>` for T.tile's."""
    def names(mod: types.ModuleType) -> List[str]:
        return [n for n in dir(mod) if not n.startswith("_") and not isinstance(getattr(mod, n), types.ModuleType)]

    return sorted(names(T) + [f"tile.{n}" for n in names(T.tile)])


# ---- kernels of this file: the names no other test calls in a kernel ----------------------------


@tilelang.jit(out_idx=[-1])
def expert_kernel():
    """Y = (X + 1 + 1) * 2 through UB on AIV 0 of each block, with a view, a workspace round trip,
    T.emit, an unrolled loop, T.select, T.sync_all and T.Buffer/T.symbolic parameters."""
    N = T.symbolic("N")

    @T.prim_func
    def k(X: T.Buffer((N,), "float32"), Y: T.Buffer((N,), "float32")):
        with T.Kernel(T.ceildiv(N, 64), is_npu=True) as (cid, vid):
            ws = T.alloc_workspace((T.ceildiv(N, 64) * 64,), "float32")
            with T.Scope("V"):
                x = T.alloc_UB((64,), "float32")
                xi = T.view(x, "int32")
                if vid == 0:
                    T.copy(X[cid * 64], x)
                    T.set_flag("MTE2", "V", 0)
                    T.wait_flag("MTE2", "V", 0)
                    for u in T.unroll(2):
                        T.emit("tile.add", x, x, T.float32(1.0))
                        T.pipe_barrier("V")
                    T.tile.mul(x, x, T.select(cid >= 0, 2.0, 3.0))
                    T.pipe_barrier("V")
                    T.tile.add(xi, xi, 0)  # the same bytes as int32, plus 0: unchanged
                    T.set_flag("V", "MTE3", 0)
                    T.wait_flag("V", "MTE3", 0)
                    T.copy(x, ws[cid * 64])
                    T.set_flag("MTE3", "MTE2", 0)
                    T.wait_flag("MTE3", "MTE2", 0)
                    T.copy(ws[cid * 64], x)
                    T.set_flag("MTE2", "MTE3", 0)
                    T.wait_flag("MTE2", "MTE3", 0)
                    T.copy(x, Y[cid * 64])
            T.sync_all()

    return k


def run_expert_kernel() -> None:
    for n in (64, 192):
        x = np.random.default_rng(n).uniform(-2, 2, n).astype(np.float32)
        np.testing.assert_allclose(expert_kernel()(x), (x + 2) * 2, rtol=1e-6)


NATIVE_FILL = ("int16", "int32", "uint16", "uint32", "half", "float16", "bfloat16", "float", "float32")


@tilelang.jit
def dtype_kernel(dt: T.DType):
    """Y = dt(1): fill with an immediate of the dtype when the vector unit fills that dtype,
    else the immediate cast to float32."""
    N = T.symbolic("N")
    native = str(dt) in [str(getattr(T, n)) for n in NATIVE_FILL]
    out = dt if native else T.float32

    @T.prim_func
    def k(Y: T.Tensor((N,), out)):
        with T.Kernel(T.ceildiv(N, 32), threads=1) as cid:
            y = T.alloc_shared((32,), out)
            if native:
                T.tile.fill(y, dt(1))
            else:
                T.tile.fill(y, T.cast(dt(1), "float32"))
            T.copy(y, Y[cid * 32])

    return k


def run_dtype_kernel(name: str) -> None:
    import ml_dtypes

    dt = getattr(T, name)
    k = dtype_kernel(dt)
    np_t = {"half": np.float16, "float": np.float32, "bfloat16": ml_dtypes.bfloat16}.get(name, getattr(np, name, None))
    np_t = np_t if name in NATIVE_FILL else np.float32
    y = np.zeros(33, np_t)
    k(y)
    np.testing.assert_array_equal(y.astype(np.float64), np.ones(33), err_msg=name)


HERE_KERNELS: Dict[str, Callable[[], None]] = {"expert_kernel": run_expert_kernel}
DTYPES = ["bfloat16", "boolean", "float", "float16", "float32", "float64", "float8_e4m3", "float8_e5m2", "half",
          "int16", "int32", "int64", "int8", "uint16", "uint32", "uint64", "uint8"]
for _d in DTYPES:
    HERE_KERNELS[f"dtype:{_d}"] = (lambda d: lambda: run_dtype_kernel(d))(_d)


# ---- the table ------------------------------------------------------------------------------------

NOT_EXPR = r"must be an int, float, bool or kernel expression, got str 'x'"
OUTSIDE = r"T:: statements must be written inside the body of T::prim_func"
NOT_TILE = r"operand '\w+' must be a buffer or buffer region, got a scalar expression"


PUBLIC: Dict[str, Tuple] = {
    # errors and types
    "Error": (("host", "the exception class; every error row below checks it is raised"),
              ("ok", lambda: issubclass(T.Error, Exception))),
    "DType": (("host", "the class of T.float32 etc.; its instances are checked under each dtype name"),
              ("error", lambda: T.DType("float17")(1), r"unknown dtype 'float17'")),
    "Tensor": (("grep",), ("error", lambda: T.Tensor("abc"), r"T.Tensor: argument 'shape' must be a shape")),
    "Buffer": (("here", "expert_kernel"), ("error", lambda: T.Buffer((4,), "float99"), r"argument 'dtype': unknown dtype 'float99'")),
    "dynamic": (("grep",), ("error", lambda: T.dynamic(3), r"T.dynamic: argument 'name' must be an identifier string, got int 3")),
    "symbolic": (("here", "expert_kernel"), ("ok", lambda: T.symbolic("M"))),
    "prim_func": (("grep",), ("error", lambda: T.prim_func(lambda: 0), r"argument 'fn' must be a function defined with def")),
    "func_attr": (("grep",), ("error", lambda: T.func_attr({"enable_auto_sync": True}),
                              r"T.func_attr: only inside a @T.prim_func kernel")),
    "macro": (("grep",), ("error", lambda: T.macro(3), r"T.macro: argument 'fn' must be a function defined with def, got int 3")),
    # launch, scopes, loops
    "Kernel": (("grep",), ("error", lambda: T.Kernel(1, foo=2), r"T.Kernel: unexpected arguments \['foo'\]")),
    "Scope": (("grep",), ("error", lambda: T.Scope("X"), r"T.Scope: argument 'core' must be \"C\" \(the AIC\) or \"V\" \(the AIVs\), got \"X\"")),
    "serial": (("grep",), ("error", lambda: T.serial("x"), r"T.serial: argument 'extent' " + NOT_EXPR)),
    "unroll": (("here", "expert_kernel"), ("error", lambda: T.unroll("x"), r"T.unroll: argument 'extent' " + NOT_EXPR)),
    "Parallel": (("grep",), ("error", lambda: T.Parallel(4, "x"), r"T.Parallel: argument 'extent 1' " + NOT_EXPR)),
    "Pipelined": (("grep",), ("error", lambda: T.Pipelined(4, num_stages="2"), r"T.Pipelined: argument 'num_stages' must be a Python int")),
    "Persistent": (("grep",), ("error", lambda: T.Persistent("x", 2, 0), r"T.Persistent: argument 'domain' must be a shape")),
    # memory
    **{n: (("grep",) if n not in ("alloc_UB", "alloc_workspace") else ("here", "expert_kernel"),
           ("error", (lambda f: lambda: f((4, 4), "float32"))(getattr(T, n)), OUTSIDE))
       for n in ("alloc_L1", "alloc_L0A", "alloc_L0B", "alloc_L0C", "alloc_ub", "alloc_UB", "alloc_shared",
                 "alloc_fragment", "alloc_workspace")},
    "alloc_var": (("grep",), ("error", lambda: T.alloc_var("int33"), r"T.alloc_var: argument 'dtype': unknown dtype 'int33'")),
    "reinterpretcast": (("grep",), ("error", lambda: T.reinterpretcast(1, 2, "uint32_t"),
                                    r"T.reinterpretcast\(dst, src, casttype\) is a statement of its own")),
    "view": (("here", "expert_kernel"), ("error", lambda: T.view(1, "int32"), r"T.view: argument 'base' must be a buffer")),
    # data movement, cube, fills
    "copy": (("value", "copy"), ("error", lambda: T.copy(1, 2), r"T.copy: " + NOT_TILE)),
    "atomic_add": (("value", "atomic_add"), ("error", lambda: T.atomic_add(1, 2), r"T.atomic_add: " + NOT_TILE)),
    "dcci": (("value", "dcci"), ("error", lambda: T.dcci(1), r"T.dcci: " + NOT_TILE)),
    "gemm_v0": (("value", "gemm_v0"), ("error", lambda: T.gemm_v0(1, 2, 3), r"T.gemm_v0: " + NOT_TILE)),
    "gemm": (("value", "gemm"), ("error", lambda: T.gemm(1, 2), r"T.gemm\(A, B, C.*missing a required argument: 'C'")),
    "mma": (("value", "mma"), ("error", lambda: T.mma(1, 2, 3), r"T.mma: " + NOT_TILE)),
    "fill": (("grep",), ("error", lambda: T.fill(1, 2), r"T.tile.fill: " + NOT_TILE)),
    "clear": (("grep",), ("error", lambda: T.clear(1), r"T.tile.fill: " + NOT_TILE)),
    "init_const": (("value", "init_const"), ("error", lambda: T.init_const(1, 2), r"T.init_const: " + NOT_TILE)),
    "emit": (("here", "expert_kernel"), ("error", lambda: T.emit("tile.nope"), r"unknown tile primitive 'tile.nope'")),
    # reductions, sorting
    "reduce_sum": (("value", "reduce_sum"), ("error", lambda: T.reduce_sum(1, 2, dim="x"), r"argument 'dim' must be a Python int, got str 'x'")),
    "reduce_max": (("value", "reduce_max"), ("error", lambda: T.reduce_max(1, 2, clear=1), r"argument 'clear' must be a bool, got int 1")),
    "reduce_min": (("value", "reduce_min"), ("error", lambda: T.reduce_min(1, 2), r"T.reduce_min: " + NOT_TILE)),
    "sort": (("value", "sort"), ("error", lambda: T.sort(1, 2, 3), r"T.sort: " + NOT_TILE)),
    "topk": (("value", "topk"), ("error", lambda: T.topk(1, 2, 3), r"T.topk\(dst, src, k, actual_num\).*missing")),
    "merge_sort": (("value", "merge_sort"), ("error", lambda: T.merge_sort(1, 2), r"argument 'srcs' must be a list of 2 to 4")),
    "init_sort_buf": (("value", "init_sort_buf"), ("error", lambda: T.init_sort_buf(1, 2), r"T.init_sort_buf: " + NOT_TILE)),
    # synchronisation
    "set_flag": (("grep",), ("error", lambda: T.set_flag("MTE2", "V", 0), OUTSIDE)),
    "wait_flag": (("grep",), ("error", lambda: T.wait_flag("mte2", "v", 0), OUTSIDE)),
    "pipe_barrier": (("grep",), ("error", lambda: T.pipe_barrier("X"), r"T.pipe_barrier: argument 'pipe': unknown pipe 'X'")),
    "barrier_all": (("grep",), ("error", lambda: T.barrier_all(), OUTSIDE)),
    "set_cross_flag": (("grep",), ("error", lambda: T.set_cross_flag("FIX", 0, mode="2"), r"argument 'mode' must be a Python int")),
    "wait_cross_flag": (("grep",), ("error", lambda: T.wait_cross_flag(0), OUTSIDE)),
    "sync_all": (("here", "expert_kernel"), ("error", lambda: T.sync_all(1), r"T.sync_all\(\): too many positional arguments")),
    # debug
    "printf": (("value", "printf"), ("error", lambda: T.printf(1), r"T.printf: argument 'fmt' must be a format string, got int 1")),
    "print": (("value", "printf"), ("error", lambda: T.print("x %d", "y"), r"T.printf: argument 'args\[0\]' " + NOT_EXPR.replace("'x'", "'y'"))),
    "dump_tensor": (("value", "dump_tensor"), ("error", lambda: T.dump_tensor(1, desc="x"), r"argument 'desc' must be a Python int")),
    # scalar expressions: they work outside a kernel (issue 27 bug 4)
    "ceildiv": (("grep",), ("ok", lambda: T.ceildiv(7, 2) == 4)),
    "max": (("value", "T.max"), ("ok", lambda: T.max(T.int32(3), 2).dtype == "int32")),
    "min": (("value", "T.min"), ("ok", lambda: T.min(1.5, 2.5) == 1.5)),
    "if_then_else": (("grep",), ("ok", lambda: T.if_then_else(T.int32(1) < 2, 1.0, 2.0) is not None)),
    "select": (("here", "expert_kernel"), ("ok", lambda: T.select(True, 1, 2) == 1)),
    "cast": (("grep",), ("ok", lambda: T.cast(1.5, "float16").dtype == "float16")),
    "infinity": (("grep",), ("ok", lambda: T.infinity("float16").dtype == "float16")),
    # TVM's spellings (test_tla_surface.py)
    "And": (("grep",), ("ok", lambda: T.And(True, 1) is True)),
    "Or": (("grep",), ("ok", lambda: T.Or(0, False) is False)),
    "Cast": (("grep",), ("ok", lambda: T.Cast("float16", 1.5).dtype == "float16")),
    "Select": (("grep",), ("ok", lambda: T.Select(False, 1, 2) == 2)),
    "Min": (("grep",), ("ok", lambda: T.Min(1, 2) == 1)),
    "Max": (("grep",), ("ok", lambda: T.Max(1, 2) == 2)),
    "floordiv": (("grep",), ("error", lambda: T.floordiv(1, 0), r"T.floordiv: argument 'b' must be a non-zero divisor")),
    "floormod": (("grep",), ("ok", lambda: T.floormod(-1, 4) == 3)),
    # placement and scheduling hints (test_tla_annot.py)
    "annotate_address": (("grep",), ("error", lambda: T.annotate_address({1: 0}), r"T.annotate_address: expected a buffer")),
    "annotate_l2_cache": (("grep",), ("error", lambda: T.annotate_l2_cache({1: "disable"}), r"T.annotate_l2_cache: expected a GM tensor")),
    "annotate_layout": (("grep",), ("error", lambda: T.annotate_layout([]), r"argument 'layout_map' must be a dict")),
    "use_swizzle": (("grep",), ("ok", lambda: T.use_swizzle(5, 64, 64, 64, 16, 16, off=3) == 9)),
    **{n: (("value", f"T.{n}"), ("ok", (lambda f: lambda: f(*([2.0, 3.0] if f.__name__ == "pow" else [2.0])).dtype
                                         == "float32")(getattr(T, n))))
       for n in ("exp", "log", "sqrt", "rsqrt", "abs", "sigmoid", "pow")},
    # dtypes: immediates (T.float32(1.0)) and dtype names
    **{d: (("here", f"dtype:{d}"), ("ok", (lambda d: lambda: getattr(T, d)(1) is not None)(d))) for d in DTYPES},
    # T.tile: the registry's vector ops (value-tested) and the sort family's TileLang names
    **{f"tile.{n[5:]}": (("value", n), ("error", (lambda f: lambda: f(1, 2))(getattr(T.tile, n[5:])),
                                        r"T.tile.\w+: " + NOT_TILE + r"|T.tile.\w+ takes"))
       for n in VALUE_TESTS if n.startswith("tile.")},
    "tile.sort": (("value", "sort"), ("error", lambda: T.tile.sort(1, 2, 3), r"T.sort: " + NOT_TILE)),
    "tile.topk": (("value", "topk"), ("error", lambda: T.tile.topk(1, 2, 3, 4), r"T.topk: " + NOT_TILE)),
    "tile.merge_sort": (("value", "merge_sort"), ("error", lambda: T.tile.merge_sort(1, 2, 3), r"T.merge_sort: " + NOT_TILE)),
    # TileLang-Ascend's names of shift_right / shift_left / T.atomic_add (test_tla_tile_names.py).
    "tile.bitwise_rshift": (("grep",), ("error", lambda: T.tile.bitwise_rshift(1, 2, 3), r"T.tile.shift_right: " + NOT_TILE)),
    "tile.bitwise_lshift": (("grep",), ("error", lambda: T.tile.bitwise_lshift(1, 2, 3), r"T.tile.shift_left: " + NOT_TILE)),
    "tile.atomic_add": (("grep",), ("error", lambda: T.tile.atomic_add(1, 2), r"T.atomic_add: " + NOT_TILE)),
    # TVMScript's if frames and T.tile.mul_add_dst (test_tla_surf_ops.py)
    "If": (("grep",), ("error", lambda: T.If("x"), r"T.If: argument 'condition' " + NOT_EXPR)),
    "Then": (("grep",), ("ok", lambda: T.Then() is not None)),
    "Else": (("grep",), ("ok", lambda: T.Else() is not None)),
    "tile.mul_add_dst": (("grep",), ("error", lambda: T.tile.mul_add_dst(1, 2, 3), r"T.tile.mul_add_dst: " + NOT_TILE)),
}


def test_table_covers_every_public_name() -> None:
    names = public_names()
    assert sorted(PUBLIC) == names, (f"no row for {sorted(set(names) - set(PUBLIC))}; "
                                     f"rows for names that are gone: {sorted(set(PUBLIC) - set(names))}")


def _pattern(name: str) -> str:
    return r"T\.tile\." + name[5:] + r"\b" if name.startswith("tile.") else r"\bT\." + name + r"\b"


_SOURCE_TEXT = {p: open(p, encoding="utf-8").read() for p in SOURCES}


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_called_in_a_kernel(name: str) -> None:
    kind, *rest = PUBLIC[name][0]
    if kind == "value":
        assert rest[0] in VALUE_TESTS, f"{name}: no VALUE_TESTS entry {rest[0]!r}"
    elif kind == "grep":
        users = [os.path.relpath(p, HERE) for p, text in _SOURCE_TEXT.items() if re.search(_pattern(name), text)]
        assert users, f"no test or example calls T.{name} in a kernel"
    elif kind == "here":
        HERE_KERNELS[rest[0]]()
    else:
        assert kind == "host" and rest and rest[0], name


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_called_outside_a_kernel(name: str) -> None:
    kind, fn, *rest = PUBLIC[name][1]
    if kind == "ok":
        assert fn() is not False, name
    else:
        with pytest.raises(tilelang.Error, match=rest[0]) as e:
            fn()
        assert "test_public_names.py:" in str(e.value), f"the error should name the calling line: {e.value}"


@pytest.mark.parametrize("call, message", [
    # before: 1, -24 and 255 (the value changed silently)
    (lambda: T.int32(1.5), r"T.int32: argument 'value' must be an integer for int32, got float 1.5"),
    (lambda: T.int8(1000), r"T.int8: argument 'value' must be in int8's range \[-128, 127\], got int 1000"),
    (lambda: T.uint8(-1), r"T.uint8: argument 'value' must be in uint8's range \[0, 255\], got int -1"),
    # before: inf in the kernel (T.tile.fill(y, T.float16(70000)) filled y with inf)
    (lambda: T.float16(70000), r"T.float16: argument 'value' must be finite in float16 \(\|value\| < 65520"),
    (lambda: T.float8_e4m3(1000), r"T.float8_e4m3: argument 'value' must be finite in float8_e4m3"),
    # before: tl_ascend.InternalError (a FloatImm of an integer dtype)
    (lambda: T.infinity("int32"), r"T.infinity: argument 'dtype' must be a float dtype"),
    # before: ZeroDivisionError; and `6 // 0` built into the kernel
    (lambda: T.ceildiv(7, 0), r"T.ceildiv: argument 'b' must be a non-zero divisor, got int 0"),
    (lambda: T.ceildiv(T.int32(7), 0), r"T.ceildiv: argument 'b' must be a non-zero divisor"),
    # before: the float expression (7.0 + 2 - 1) // 2
    (lambda: T.ceildiv(7.0, 2), r"T.ceildiv: argument 'a' must be an integer or an integer expression, got float 7.0"),
    # before: raw TypeError / AttributeError / ValueError without the argument's name
    (lambda: T.exp("x"), r"T.exp: argument 'x' " + NOT_EXPR),
    (lambda: T.pow(2.0), r"T.pow\(x, y\) takes 2 argument\(s\), got 1"),
    (lambda: T.max("x", 1), r"T.max: argument 'a' " + NOT_EXPR),
    (lambda: T.min(1), r"T.min\(a, b\): missing a required argument: 'b'"),
    (lambda: T.if_then_else("x", 1, 2), r"T.if_then_else: argument 'cond' " + NOT_EXPR),
    (lambda: T.cast(None, "float16"), r"T.cast: argument 'value' must be an int, float, bool or kernel expression, got NoneType"),
    (lambda: T.float32(), r"T.float32: argument 'value' must be an int, float, bool or kernel expression, got NoneType"),
    (lambda: T.float32("x"), r"T.float32: argument 'value' " + NOT_EXPR),
    (lambda: T.Tensor(None), r"T.Tensor: argument 'shape' must be a shape"),
    (lambda: T.Tensor((4,), "float99"), r"T.Tensor: argument 'dtype': unknown dtype 'float99'"),
    (lambda: T.alloc_ub("x"), r"T.alloc_ub: argument 'shape' must be a shape"),
    (lambda: T.copy(None, None), r"T.copy: operand 'src' must be a buffer or buffer region, got NoneType None"),
    (lambda: T.tile.add(None, None, "oops"), r"T.tile.add: operand 'dst' is missing"),
    (lambda: T.tile.add(1, 2, [3]), r"T.tile.add: operand 'src1' must be a buffer, a buffer region or a scalar "
                                    r"expression, got list \[3\]"),
    (lambda: T.sort(1, 2, "n"), r"T.sort: operand 'actual_num' must be an int, float, bool or kernel expression, got str 'n'"),
    # before: "unknown pipe 'X'" (no argument named) and a nanobind signature dump for None
    (lambda: T.wait_flag("MTE2", "X", 0), r"T.wait_flag: argument 'dst': unknown pipe 'X': expected one of S, V"),
    (lambda: T.set_flag(None, "V", 0), r"T.set_flag: argument 'src' must be a pipe name, one of S, V, M, MTE1, "
                                       r"MTE2, MTE3, FIX, ALL \(any case\), got NoneType None"),
    (lambda: T.pipe_barrier(1), r"T.pipe_barrier: argument 'pipe' must be a pipe name"),
    # before: ValueError: could not convert string to float
    (lambda: T.copy(1, 2, pad_value="a"), r"T.copy: argument 'pad_value' must be a number or a constant expression \(e.g. -T.infinity\(dtype\)\), got str 'a'"),
])
def test_bad_arguments_are_errors_naming_the_argument(call: Callable[[], Any], message: str) -> None:
    with pytest.raises(tilelang.Error, match=message):
        call()


def test_immediates_at_the_edge_of_their_dtype_still_work() -> None:
    """The range checks above reject only what would change: the extremes themselves pass."""
    assert T.float16(65504).const_value() == 65504.0 and T.float16(float("inf")) is not None
    assert T.int8(-128).const_value() == -128 and T.uint8(255).const_value() == 255
    assert T.int32(2.0).const_value() == 2 and T.uint64(2**63 - 1) is not None
    # before: a raw TypeError from the binding (the IR's integer immediates are int64)
    with pytest.raises(tilelang.Error, match=r"T.uint64: argument 'value' must be in uint64's range"):
        T.uint64(2**64 - 1)


def test_scalar_intrinsics_work_outside_a_kernel() -> None:
    """Issue 27 bug 4: every intrinsic builds an expression outside a kernel (no crash)."""
    for name in ("exp", "log", "sqrt", "rsqrt", "abs", "sigmoid"):
        assert str(getattr(T, name)(T.float32(2.0))) == f"T.{name}(2.0)"
    assert str(T.pow(2.0, 3.0)) == "T.pow(2.0, 3.0)"


def test_float_intrinsics_of_an_integer_expression_are_errors() -> None:
    """T.exp/log/sqrt/rsqrt/sigmoid/pow compute in float: of an int32 element they truncated the
    result to int32 (before: y[i] = T.exp(a[i]) for a = 0..7 gave [1, 2, 7, 20, 54, 148, 403,
    1096]). Now an Error at the kernel line; a Python int argument is a float literal."""

    def build() -> None:
        @T.prim_func
        def k(X: T.Tensor((8,), "int32"), Y: T.Tensor((8,), "int32")):
            with T.Kernel(1, threads=1) as cid:
                a = T.alloc_shared((8,), "int32")
                y = T.alloc_shared((8,), "int32")
                T.copy(X, a)
                for i in T.Parallel(8):
                    y[i] = T.exp(a[i])  # MARK
                T.copy(y, Y)

    lines, start = inspect.getsourcelines(build)
    mark = start + next(i for i, l in enumerate(lines) if "# MARK" in l)
    with pytest.raises(tilelang.Error, match=rf"test_public_names.py:{mark}.*T.exp: argument 'x' must be a float "
                                             rf"expression, got int32 'a\[i\]'"):
        build()
    assert T.exp(1).dtype == "float32" and T.pow(T.float16(2.0), 2) is not None
