"""Value checks for the AIV's `T.tile.*` ops (test_ops_values.py runs them; VALUE_TESTS there
maps each registry name to one of the `check_*` functions here).

Each check builds a small developer-mode kernel from Python, compiles it once per op and dtype
(the length is a `T.dynamic` size, so one compile serves every tail), runs it on the virtual NPU
on tails (1, 7, 33, 1000 elements: tiles of 128 with a clipped last tile) and compares the
result with a numpy reference computed here in float64 from the same (dtype-rounded) inputs.
"""

from typing import Callable, Optional, Sequence

import numpy as np

import tl_ascend as tilelang
import tl_ascend.language as T

SIZES = (1, 7, 33, 1000)
BLOCK = 128  # elements per tile: 256 B of fp16, 512 B of fp32 (compare needs 256 B multiples)
COLS = 16  # columns of the 2-D kernels (row_expand_*, reduce_*): 32 B of fp16 per row

# dtype-appropriate tolerances (rtol, atol) for results rounded to that dtype.
TOL = {"float16": (2e-3, 2e-3), "float32": (2e-5, 1e-6), "int16": (0, 0), "int32": (0, 0)}
NP = {"float16": np.float16, "float32": np.float32, "int16": np.int16, "int32": np.int32,
      "uint16": np.uint16, "int8": np.int8, "uint8": np.uint8, "int64": np.int64, "uint32": np.uint32}

_rng = np.random.default_rng(27)


def rand(n: int, dtype: str, lo: float = -4.0, hi: float = 4.0) -> np.ndarray:
    if dtype.startswith("float"):
        return _rng.uniform(lo, hi, n).astype(NP[dtype])
    return _rng.integers(int(lo), int(hi) + 1, n).astype(NP[dtype])


def assert_close(got: np.ndarray, want: np.ndarray, dtype: str, what: str, tol: Optional[tuple] = None) -> None:
    rtol, atol = tol or TOL[dtype]
    got64, want64 = np.asarray(got).astype(np.float64), np.asarray(want, dtype=np.float64)
    if rtol == 0 and atol == 0:
        want64 = want64.astype(NP[dtype]).astype(np.float64)  # integer results wrap to the dtype
    np.testing.assert_allclose(got64, want64, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)


# ---- generic kernels: y = op(x...) over 1-D tiles of BLOCK -----------------------------------------


@tilelang.jit(out_idx=[-1])
def elementwise(op: str, dtype: str, n_in: int, scalars: tuple = (), odtype: Optional[str] = None, attrs: tuple = ()):
    """Y = T.tile.<op>(y, x0[, x1], *scalars, **attrs), tile by tile."""
    N = T.dynamic("N")
    f = getattr(T.tile, op)
    od = odtype or dtype
    kw = dict(attrs)

    @T.macro
    def body(X0, X1, Y, cid):
        x0 = T.alloc_shared((BLOCK,), dtype)
        y = T.alloc_shared((BLOCK,), od)
        T.copy(X0[cid * BLOCK], x0)
        if n_in == 2:
            x1 = T.alloc_shared((BLOCK,), dtype)
            T.copy(X1[cid * BLOCK], x1)
            f(y, x0, x1, *scalars, **kw)
        else:
            f(y, x0, *scalars, **kw)
        T.copy(y, Y[cid * BLOCK])

    @T.prim_func
    def k(X0: T.Tensor((N,), dtype), X1: T.Tensor((N,), dtype), Y: T.Tensor((N,), od)):
        with T.Kernel(T.ceildiv(N, BLOCK), threads=1) as cid:
            body(X0, X1, Y, cid)

    return k


def run_elementwise(op: str, dtypes: Sequence[str], n_in: int, ref: Callable, lo: float = -4.0, hi: float = 4.0,
                    scalars: tuple = (), odtype: Optional[str] = None, attrs: tuple = (), tol: Optional[tuple] = None,
                    sizes: Sequence[int] = SIZES) -> None:
    for dtype in dtypes:
        k = elementwise(op, dtype, n_in, scalars, odtype, attrs)
        for n in sizes:
            a, b = rand(n, dtype, lo, hi), rand(n, dtype, lo, hi)
            y = k(a, b)
            want = ref(a.astype(np.float64), b.astype(np.float64)) if n_in == 2 else ref(a.astype(np.float64))
            assert_close(y, want, odtype or dtype, f"T.tile.{op} {dtype} n={n}", tol)


ARITH = ("int16", "int32", "float16", "float32")
FLOAT = ("float16", "float32")


def unary(op: str, ref: Callable, lo: float = -4.0, hi: float = 4.0, tol: Optional[tuple] = None,
          dtypes: Sequence[str] = FLOAT) -> Callable[[], None]:
    def check() -> None:
        run_elementwise(op, dtypes, 1, ref, lo, hi, tol=tol)

    check.__name__ = f"check_{op}"
    return check


def binary(op: str, ref: Callable, dtypes: Sequence[str] = ARITH, lo: float = -4.0, hi: float = 4.0) -> Callable[[], None]:
    def check() -> None:
        run_elementwise(op, dtypes, 2, ref, lo, hi)
        # src1 a scalar expression (TileLang's T.tile.mul(s, s, scale))
        for dtype in dtypes:
            s = 3 if dtype.startswith("int") else 0.75
            run_elementwise(op, [dtype], 1, lambda a: ref(a, np.float64(s)), lo, hi, scalars=(s,), sizes=(7, 33))

    check.__name__ = f"check_{op}"
    return check


# ---- per-op references ----------------------------------------------------------------------------


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


# rsqrt and reciprocal are the chip's approximations (relative error up to 5e-5 modelled).
APPROX = {"float16": (2e-3, 2e-3), "float32": (1e-4, 1e-6)}

UNARY = {
    "tile.exp": unary("exp", np.exp),
    "tile.ln": unary("ln", np.log, 0.05, 8.0),
    "tile.abs": unary("abs", np.abs),
    "tile.reciprocal": unary("reciprocal", lambda x: 1.0 / x, 0.25, 4.0, tol=None),
    "tile.sqrt": unary("sqrt", np.sqrt, 0.0, 8.0),
    "tile.rsqrt": unary("rsqrt", lambda x: 1.0 / np.sqrt(x), 0.05, 8.0),
    "tile.sigmoid": unary("sigmoid", _sigmoid),
    "tile.silu": unary("silu", lambda x: x * _sigmoid(x)),
    "tile.sin": unary("sin", np.sin),
    "tile.cos": unary("cos", np.cos),
    "tile.round": unary("round", np.round, -20.0, 20.0),  # np.round: ties to even, as the op
    "tile.tanh": unary("tanh", np.tanh),
    "tile.relu": unary("relu", lambda x: np.maximum(x, 0.0), dtypes=("float16", "int32", "float32")),
}


def _approx(op: str, ref: Callable, lo: float, hi: float) -> Callable[[], None]:
    def check() -> None:
        for dtype in FLOAT:
            run_elementwise(op, [dtype], 1, ref, lo, hi, tol=APPROX[dtype])

    return check


UNARY["tile.reciprocal"] = _approx("reciprocal", lambda x: 1.0 / x, 0.25, 4.0)
UNARY["tile.rsqrt"] = _approx("rsqrt", lambda x: 1.0 / np.sqrt(x), 0.05, 8.0)

BINARY = {
    "tile.add": binary("add", lambda a, b: a + b),
    "tile.sub": binary("sub", lambda a, b: a - b),
    "tile.mul": binary("mul", lambda a, b: a * b),
    "tile.div": binary("div", lambda a, b: a / b, FLOAT, 0.5, 4.0),
    "tile.max": binary("max", np.maximum),
    "tile.min": binary("min", np.minimum),
}


def check_scalar_operand_ops() -> None:
    """leaky_relu(dst, src, alpha), clamp(dst, src, lo, hi): float only."""
    run_elementwise("leaky_relu", FLOAT, 1, lambda x: np.where(x >= 0, x, 0.25 * x), scalars=(0.25,))
    run_elementwise("clamp", FLOAT, 1, lambda x: np.minimum(np.maximum(x, -1.5), 2.0), scalars=(-1.5, 2.0))


BITWISE_DTYPES = ("int16", "uint16")


def check_bitwise() -> None:
    for dtype in BITWISE_DTYPES:
        np_t = NP[dtype]
        k_and = elementwise("bitwise_and", dtype, 2)
        k_or = elementwise("bitwise_or", dtype, 2)
        k_xor = elementwise("bitwise_xor", dtype, 2)  # issue 29: was "T.tile.bitwise_xor ... not supported yet"
        k_not = elementwise("bitwise_not", dtype, 1)
        for n in SIZES:
            a = _rng.integers(0, 1 << 16, n).astype(np.uint16).view(np_t)
            b = _rng.integers(0, 1 << 16, n).astype(np.uint16).view(np_t)
            np.testing.assert_array_equal(k_and(a, b), a & b, err_msg=f"bitwise_and {dtype} n={n}")
            np.testing.assert_array_equal(k_or(a, b), a | b, err_msg=f"bitwise_or {dtype} n={n}")
            np.testing.assert_array_equal(k_xor(a, b), a ^ b, err_msg=f"bitwise_xor {dtype} n={n}")
            np.testing.assert_array_equal(k_not(a, b), ~a, err_msg=f"bitwise_not {dtype} n={n}")


def check_shifts() -> None:
    for dtype in ("int16", "uint16", "int32", "uint32"):
        np_t = NP[dtype]
        bits = 8 * np.dtype(np_t).itemsize
        for s in (0, 3, bits - 1):
            kl = elementwise("shift_left", dtype, 1, (s,))
            kr = elementwise("shift_right", dtype, 1, (s,))
            for n in SIZES:
                a = _rng.integers(0, 1 << bits, n, dtype=np.uint64).astype(np.dtype(f"uint{bits}")).view(np_t)
                np.testing.assert_array_equal(kl(a, a), (a << np_t(s)).astype(np_t), err_msg=f"shift_left {dtype} {s} n={n}")
                # shift_right on a signed dtype is arithmetic (numpy's >> on signed integers)
                np.testing.assert_array_equal(kr(a, a), (a >> np_t(s)).astype(np_t), err_msg=f"shift_right {dtype} {s} n={n}")


@tilelang.jit(out_idx=[-1])
def axpy_kernel(dtype: str, alpha: float):
    N = T.dynamic("N")

    @T.prim_func
    def k(X: T.Tensor((N,), dtype), D: T.Tensor((N,), dtype), Y: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, BLOCK), threads=1) as cid:
            x = T.alloc_shared((BLOCK,), dtype)
            d = T.alloc_shared((BLOCK,), dtype)
            T.copy(X[cid * BLOCK], x)
            T.copy(D[cid * BLOCK], d)
            T.tile.axpy(d, x, alpha)
            T.copy(d, Y[cid * BLOCK])

    return k


def check_axpy() -> None:
    for dtype in FLOAT:
        k = axpy_kernel(dtype, 0.5)
        for n in SIZES:
            x, d = rand(n, dtype), rand(n, dtype)
            assert_close(k(x, d), d.astype(np.float64) + 0.5 * x.astype(np.float64), dtype, f"axpy {dtype} n={n}")


# ---- rows: row_expand_*, broadcast ---------------------------------------------------------------

ROWS = 8  # rows per tile of the 2-D kernels


@tilelang.jit(out_idx=[-1])
def row_expand_kernel(op: str, dtype: str):
    """Y[i, j] = op(X[i, j], R[i]) over (ROWS, COLS) tiles of an (M, COLS) tensor."""
    M = T.dynamic("M")
    f = getattr(T.tile, "row_expand_" + op)

    @T.prim_func
    def k(X: T.Tensor((M, COLS), dtype), R: T.Tensor((M,), dtype), Y: T.Tensor((M, COLS), dtype)):
        with T.Kernel(T.ceildiv(M, ROWS), threads=1) as cid:
            x = T.alloc_shared((ROWS, COLS), dtype)
            r = T.alloc_shared((ROWS,), dtype)
            y = T.alloc_shared((ROWS, COLS), dtype)
            T.copy(X[cid * ROWS, 0], x)
            T.copy(R[cid * ROWS], r)
            f(y, x, r)
            T.copy(y, Y[cid * ROWS, 0])

    return k


def row_expand(op: str, ref: Callable, dtypes: Sequence[str] = ARITH, lo: float = -4.0) -> Callable[[], None]:
    def check() -> None:
        for dtype in dtypes:
            k = row_expand_kernel(op, dtype)
            for m in SIZES:
                x, r = rand(m * COLS, dtype).reshape(m, COLS), rand(m, dtype, lo, 4.0)
                want = ref(x.astype(np.float64), r.astype(np.float64)[:, None])
                assert_close(k(x, r), want, dtype, f"row_expand_{op} {dtype} m={m}")

    return check


ROW_EXPAND = {
    "tile.row_expand_add": row_expand("add", lambda a, b: a + b),
    "tile.row_expand_sub": row_expand("sub", lambda a, b: a - b),
    "tile.row_expand_mul": row_expand("mul", lambda a, b: a * b),
    "tile.row_expand_div": row_expand("div", lambda a, b: a / b, FLOAT, 0.5),
    "tile.row_expand_max": row_expand("max", np.maximum),
    "tile.row_expand_min": row_expand("min", np.minimum),
}


@tilelang.jit
def broadcast_kernel(dtype: str):
    """Y (M, COLS) = X (COLS,) on every row; Y is passed in (M appears in no input)."""
    M = T.dynamic("M")

    @T.prim_func
    def k(X: T.Tensor((COLS,), dtype), Y: T.Tensor((M, COLS), dtype)):
        with T.Kernel(T.ceildiv(M, ROWS), threads=1) as cid:
            x = T.alloc_shared((COLS,), dtype)
            y = T.alloc_shared((ROWS, COLS), dtype)
            T.copy(X, x)
            T.tile.broadcast(y, x)
            T.copy(y, Y[cid * ROWS, 0])

    return k


def check_broadcast() -> None:
    for dtype in ("int16", "float16", "int32", "float32"):
        k = broadcast_kernel(dtype)
        for m in SIZES:
            x = rand(COLS, dtype)
            y = np.zeros((m, COLS), NP[dtype])
            k(x, y)
            np.testing.assert_array_equal(y, np.tile(x, (m, 1)), err_msg=f"broadcast {dtype} m={m}")


# ---- cast ----------------------------------------------------------------------------------------


def _round_half_away(x: np.ndarray) -> np.ndarray:
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


TO_INT = {"CAST_RINT": np.rint, "CAST_FLOOR": np.floor, "CAST_CEIL": np.ceil, "CAST_ROUND": _round_half_away,
          "CAST_TRUNC": np.trunc}


def _to_half(x: np.ndarray, mode: str) -> np.ndarray:
    """fp32 -> fp16 with a rounding mode: RNE then one step toward the mode's direction."""
    h = x.astype(np.float16)
    hd = h.astype(np.float64)
    down = np.where(hd > x, np.nextafter(h, np.float16(-np.inf)), h)
    up = np.where(hd < x, np.nextafter(h, np.float16(np.inf)), h)
    if mode in ("CAST_NONE", "CAST_RINT"):
        return h
    if mode == "CAST_FLOOR":
        return down
    if mode == "CAST_CEIL":
        return up
    if mode == "CAST_TRUNC":
        return np.where(x >= 0, down, up)
    if mode == "CAST_ROUND":  # nearest, ties away from zero
        dd, ud = down.astype(np.float64), up.astype(np.float64)
        tie = (x - dd) == (ud - x)
        return np.where(tie & (down != up), np.where(x >= 0, up, down), h)
    if mode == "CAST_ODD":  # inexact results take the neighbour whose last mantissa bit is 1
        odd_up = (up.view(np.uint16) & 1) == 1
        return np.where(hd == x, h, np.where(odd_up, up, down))
    raise AssertionError(mode)


def _cast_case(src: str, dst: str, mode: str, lo: float, hi: float, ref: Callable) -> None:
    k = elementwise("cast", src, 1, odtype=dst, attrs=(("mode", mode),))
    for n in SIZES:
        x = rand(n, src, lo, hi)
        if src.startswith("float") and n >= 7:
            x[:6] = np.array([2.5, -2.5, 0.5, -1.5, 3.0, -0.0], NP[src])  # ties and exact values
        got = k(x, x)
        want = ref(x.astype(np.float64))
        np.testing.assert_array_equal(np.asarray(got).astype(np.float64), np.asarray(want).astype(np.float64),
                                      err_msg=f"cast {src}->{dst} {mode} n={n}")


def check_cast() -> None:
    for mode, f in TO_INT.items():
        _cast_case("float32", "int32", mode, -100.0, 100.0, f)
        _cast_case("float16", "int16", mode, -100.0, 100.0, f)
    for mode in ("CAST_NONE", "CAST_RINT", "CAST_FLOOR", "CAST_CEIL", "CAST_ROUND", "CAST_TRUNC", "CAST_ODD"):
        # values with more mantissa bits than fp16 keeps, so each mode's direction shows
        _cast_case("float32", "float16", mode, -3.0, 3.0, lambda x, m=mode: _to_half(x, m))
    _cast_case("float16", "float32", "CAST_NONE", -8.0, 8.0, lambda x: x)
    _cast_case("int32", "float32", "CAST_RINT", -100000, 100000, lambda x: x.astype(np.float32))
    _cast_case("int16", "float16", "CAST_RINT", -2000, 2000, lambda x: x.astype(np.float16))
    _cast_case("int32", "int16", "CAST_NONE", -30000, 30000, lambda x: x)


# ---- compare + select ------------------------------------------------------------------------------

CMP = {"LT": np.less, "GT": np.greater, "EQ": np.equal, "LE": np.less_equal, "GE": np.greater_equal,
       "NE": np.not_equal}


@tilelang.jit(out_idx=[-1])
def compare_select_kernel(dtype: str, mode: str, scalar_rhs: bool, scalar_other: bool, select_mode: int = 2):
    """Y = T.tile.select(mask, A, B or 0.5) with mask = T.tile.compare(A, B or 0.25, mode);
    select_mode 0 reuses the mask's first 256 bytes' worth of bits for every 256-byte repeat."""
    N = T.dynamic("N")

    @T.prim_func
    def k(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype), Y: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, BLOCK), threads=1) as cid:
            a = T.alloc_shared((BLOCK,), dtype)
            b = T.alloc_shared((BLOCK,), dtype)
            m = T.alloc_shared((BLOCK // 8,), "uint8")
            y = T.alloc_shared((BLOCK,), dtype)
            # select's mask consumption moves elements, so the clipped tail needs a defined value
            T.copy(A[cid * BLOCK], a, pad_value=0.0)
            T.copy(B[cid * BLOCK], b, pad_value=0.0)
            if scalar_rhs:
                T.tile.compare(m, a, 0.25, mode)
            else:
                T.tile.compare(m, a, b, mode=mode)
            if scalar_other:
                T.tile.select(y, m, a, 0.5, mode=1)
            elif select_mode == 0:
                T.tile.select(y, m, a, b, mode=0)
            else:
                T.tile.select(y, m, a, b)
            T.copy(y, Y[cid * BLOCK])

    return k


def check_compare_select() -> None:
    for dtype in FLOAT:
        for mode, f in CMP.items():
            for scalar_rhs, scalar_other in ((False, False), (True, True)):
                k = compare_select_kernel(dtype, mode, scalar_rhs, scalar_other)
                for n in SIZES:
                    a = np.round(rand(n, dtype, -2.0, 2.0) * 4) / 4  # quarters: equal values occur
                    b = np.round(rand(n, dtype, -2.0, 2.0) * 4) / 4
                    a, b = a.astype(NP[dtype]), b.astype(NP[dtype])
                    rhs = np.float64(0.25) if scalar_rhs else b
                    other = np.float64(0.5) if scalar_other else b
                    want = np.where(f(a.astype(np.float64), rhs), a, other)
                    assert_close(k(a, b), want, dtype, f"compare {mode} + select {dtype} n={n} "
                                 f"scalar_rhs={scalar_rhs} scalar_other={scalar_other}")
        # select mode 0: element i of a tile takes mask bit i % (256 / sizeof)
        per_repeat = 256 // np.dtype(NP[dtype]).itemsize
        k = compare_select_kernel(dtype, "GT", False, False, 0)
        for n in (BLOCK, 3 * BLOCK):
            a, b = rand(n, dtype, -2.0, 2.0), rand(n, dtype, -2.0, 2.0)
            i = np.arange(n)
            src = (i // BLOCK) * BLOCK + (i % BLOCK) % per_repeat
            want = np.where(a[src] > b[src], a, b)
            assert_close(k(a, b), want, dtype, f"select mode 0 {dtype} n={n}")


# ---- generators: fill, createvecindex, arith_progression --------------------------------------------


@tilelang.jit
def generator_kernel(op: str, dtype: str, args: tuple):
    """Y[tile] = T.tile.<op>(y, *args) for every tile of Y (Y passed in: no input has N)."""
    N = T.dynamic("N")
    f = getattr(T.tile, op)

    @T.prim_func
    def k(Y: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, BLOCK), threads=1) as cid:
            y = T.alloc_shared((BLOCK,), dtype)
            f(y, *args)
            T.copy(y, Y[cid * BLOCK])

    return k


def _generated(op: str, dtype: str, args: tuple, n: int) -> np.ndarray:
    y = np.zeros(n, NP[dtype])
    generator_kernel(op, dtype, args)(y)
    return y


def check_fill() -> None:
    for dtype, v in (("float16", 1.5), ("float32", -2.25), ("int16", -7), ("int32", 123456)):
        for n in SIZES:
            np.testing.assert_array_equal(_generated("fill", dtype, (v,), n), np.full(n, v, NP[dtype]),
                                          err_msg=f"fill {dtype} n={n}")


def _per_tile_index(n: int) -> np.ndarray:
    return np.arange(n) % BLOCK  # each tile restarts at its own element 0


def check_createvecindex() -> None:
    for dtype, first in (("int16", -5), ("int32", 1000), ("float16", 0.0), ("float32", 2.0)):
        for n in SIZES:
            want = (first + _per_tile_index(n)).astype(NP[dtype])
            np.testing.assert_array_equal(_generated("createvecindex", dtype, (first,), n), want,
                                          err_msg=f"createvecindex {dtype} n={n}")


def check_arith_progression() -> None:
    for dtype, first, diff in (("int16", 3, -2), ("int32", -10, 7), ("float16", 0.5, 0.25), ("float32", 1.0, -0.5)):
        for args in ((first, diff), (first, diff, BLOCK)):
            for n in SIZES:
                want = (first + diff * _per_tile_index(n)).astype(NP[dtype])
                np.testing.assert_array_equal(_generated("arith_progression", dtype, args, n), want,
                                              err_msg=f"arith_progression{args} {dtype} n={n}")


# ---- gathers and transpose --------------------------------------------------------------------------


@tilelang.jit(out_idx=[-1])
def gather_kernel(dtype: str, base: int):
    """Y[tile][i] = X[tile][(base + OFF[tile][i]) / sizeof]: offsets in bytes, per tile."""
    N = T.dynamic("N")

    @T.prim_func
    def k(X: T.Tensor((N,), dtype), OFF: T.Tensor((N,), "uint32"), Y: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, BLOCK), threads=1) as cid:
            x = T.alloc_shared((BLOCK,), dtype)
            off = T.alloc_shared((BLOCK,), "uint32")
            y = T.alloc_shared((BLOCK,), dtype)
            T.copy(X[cid * BLOCK], x, pad_value=0)
            T.copy(OFF[cid * BLOCK], off, pad_value=0)
            T.tile.gather(y, x, off, base)
            T.copy(y, Y[cid * BLOCK])

    return k


def check_gather() -> None:
    for dtype in ("int16", "float16", "int32", "float32"):
        size = np.dtype(NP[dtype]).itemsize
        for base_elems in (0, 2):
            k = gather_kernel(dtype, base_elems * size)
            for n in SIZES:
                x = rand(n, dtype)
                idx = np.concatenate([_rng.integers(0, min(BLOCK, n - t) - base_elems, min(BLOCK, n - t))
                                      if min(BLOCK, n - t) > base_elems else np.zeros(min(BLOCK, n - t), np.int64)
                                      for t in range(0, n, BLOCK)])
                if n <= base_elems:
                    continue
                off = (idx * size).astype(np.uint32)
                tile_start = (np.arange(n) // BLOCK) * BLOCK
                want = x[tile_start + base_elems + idx]
                np.testing.assert_array_equal(k(x, off), want, err_msg=f"gather {dtype} base={base_elems} n={n}")


PATTERN_KEEP = {"P0101": lambda i: i % 2 == 0, "P1010": lambda i: i % 2 == 1, "P0001": lambda i: i % 4 == 0,
                "P0010": lambda i: i % 4 == 1, "P0100": lambda i: i % 4 == 2, "P1000": lambda i: i % 4 == 3,
                "P1111": lambda i: np.ones_like(i, bool)}


@tilelang.jit
def gather_mask_kernel(dtype: str, pattern: str, kept: int):
    """Y[t] = the elements of row X[t] (one tile) the pattern keeps."""
    N = T.dynamic("N")

    @T.prim_func
    def k(X: T.Tensor((N, BLOCK), dtype), Y: T.Tensor((N, kept), dtype)):
        with T.Kernel(N, threads=1) as cid:
            x = T.alloc_shared((BLOCK,), dtype)
            y = T.alloc_shared((kept,), dtype)
            T.copy(X[cid, 0], x)
            T.tile.gather_mask(y, x, pattern)
            T.copy(y, Y[cid, 0])

    return k


def check_gather_mask() -> None:
    for dtype in ("float16", "float32", "int32"):
        for pattern, keep in PATTERN_KEEP.items():
            i = np.arange(BLOCK)
            kept = int(keep(i).sum())
            k = gather_mask_kernel(dtype, pattern, kept)
            for tiles in (1, 3):
                x = rand(tiles * BLOCK, dtype).reshape(tiles, BLOCK)
                want = x[:, keep(i)]
                y = np.zeros((tiles, kept), NP[dtype])
                k(x, y)
                np.testing.assert_array_equal(y, want, err_msg=f"gather_mask {pattern} {dtype} tiles={tiles}")


@tilelang.jit
def transpose_kernel(dtype: str):
    """Each 16 x 16 block of X (M, 16, 16) transposed."""
    M = T.dynamic("M")

    @T.prim_func
    def k(X: T.Tensor((M, 16, 16), dtype), Y: T.Tensor((M, 16, 16), dtype)):
        with T.Kernel(M, threads=1) as cid:
            x = T.alloc_shared((16, 16), dtype)
            y = T.alloc_shared((16, 16), dtype)
            T.copy(X[cid, 0, 0], x)
            T.tile.transpose(y, x)
            T.copy(y, Y[cid, 0, 0])

    return k


def check_transpose() -> None:
    for dtype in ("float16", "int16", "uint16"):
        k = transpose_kernel(dtype)
        for m in (1, 7):
            x = rand(m * 256, dtype, 0, 1000).reshape(m, 16, 16)
            want = x.transpose(0, 2, 1)
            y = np.zeros_like(x)
            k(x, y)
            np.testing.assert_array_equal(y, want, err_msg=f"transpose {dtype} m={m}")


@tilelang.jit
def gather_by_mask_kernel(dtype: str):
    """Y[t] = the elements of row A[t] equal to B[t] (T.tile.compare EQ), packed to the front by
    T.tile.gather_mask with the compare's bitmask; the rest of Y[t] keeps the fill value -1."""
    N = T.dynamic("N")

    @T.prim_func
    def k(A: T.Tensor((N, BLOCK), dtype), B: T.Tensor((N, BLOCK), dtype), Y: T.Tensor((N, BLOCK), dtype)):
        with T.Kernel(N, threads=1) as cid:
            a = T.alloc_shared((BLOCK,), dtype)
            b = T.alloc_shared((BLOCK,), dtype)
            m = T.alloc_shared((BLOCK // 8,), "uint8")
            y = T.alloc_shared((BLOCK,), dtype)
            T.copy(A[cid, 0], a)
            T.copy(B[cid, 0], b)
            T.tile.fill(y, -1)
            T.tile.compare(m, a, b, "EQ")
            T.tile.gather_mask(y, a, mask=m)
            T.copy(y, Y[cid, 0])

    return k


def check_gather_by_mask() -> None:
    """gather_mask's mask form, with compare's int32 EQ (the one integer compare on A2)."""
    for dtype in ("int32", "float32"):
        k = gather_by_mask_kernel(dtype)
        for tiles in (1, 3):
            a = rand(tiles * BLOCK, dtype, 0, 3).reshape(tiles, BLOCK)
            b = rand(tiles * BLOCK, dtype, 0, 3).reshape(tiles, BLOCK)
            if dtype == "float32":
                a, b = np.round(a), np.round(b)
            y = np.zeros((tiles, BLOCK), NP[dtype])
            k(a, b, y)
            for t in range(tiles):
                kept = a[t][a[t] == b[t]]
                np.testing.assert_array_equal(y[t, :len(kept)], kept, err_msg=f"gather_mask by mask {dtype} row {t}")
                assert np.all(y[t, len(kept):] == -1), f"gather_mask by mask {dtype} row {t}: {y[t, len(kept):]}"


def check_gather_mask_both_forms() -> None:
    check_gather_mask()
    check_gather_by_mask()
