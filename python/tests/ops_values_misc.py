"""Value checks for the registry's ops outside `T.tile.*` (data movement, cube, reductions,
sorting, debug) and for the scalar intrinsics (`T.exp`, ..., `T.max`, `T.min`) used in element
loops. test_ops_values.py runs them (VALUE_TESTS maps each name to a `check_*` here).

Kernels are small and built once per op and dtype; sizes with a `T.dynamic` length run on tails
(1, 7, 33, 1000). References are numpy, computed here in float64.
"""

import contextlib
import io
from typing import Callable, Optional, Sequence

import numpy as np
import pytest

import tl_ascend as tilelang
import tl_ascend.language as T

from ops_values_vector import FLOAT, NP, SIZES, assert_close, rand

_rng = np.random.default_rng(2027)


# ---- data movement ------------------------------------------------------------------------------


@tilelang.jit(out_idx=[-1])
def copy_kernel(dtype: str, block: int):
    """Y = X through a developer tile: GM -> tile -> GM, the last tile clipped."""
    N = T.dynamic("N")

    @T.prim_func
    def k(X: T.Tensor((N,), dtype), Y: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block), threads=1) as cid:
            x = T.alloc_shared((block,), dtype)
            T.copy(X[cid * block], x)
            T.copy(x, Y[cid * block])

    return k


@tilelang.jit(out_idx=[-1])
def padded_copy_kernel(n: int, pad: float):
    """Expert GM -> UB copy with pad_value: the 32-byte tail past n holds `pad`, which a
    row sum then sees (Y[0] = sum(X) + (padded - n) * pad)."""
    padded = (n + 7) // 8 * 8

    @T.prim_func
    def k(X: T.Tensor((n,), "float32"), Y: T.Tensor((8,), "float32")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            with T.Scope("V"):
                x = T.alloc_ub((padded,), "float32")
                s = T.alloc_ub((8,), "float32")
                if vid == 0:
                    T.tile.fill(s, 0.0)
                    T.copy(X, x[0:n], pad_value=pad)
                    T.set_flag("MTE2", "V", 0)
                    T.wait_flag("MTE2", "V", 0)
                    T.reduce_sum(x, s[0:1], dim=-1)
                    T.set_flag("V", "MTE3", 0)
                    T.wait_flag("V", "MTE3", 0)
                    T.copy(s, Y)

    return k


def check_copy() -> None:
    for dtype in ("int8", "float16", "int32", "float32"):
        for block in (32, 256):
            k = copy_kernel(dtype, block)
            for n in SIZES + (4097,):
                x = rand(n, dtype) if dtype != "int8" else _rng.integers(-128, 128, n).astype(np.int8)
                np.testing.assert_array_equal(k(x), x, err_msg=f"copy {dtype} block={block} n={n}")
    # the fixpipe's options: enable_relu and the fp32 -> fp16 cast on the way out of L0C
    a = rand(32 * 32, "float16", -1, 1).reshape(32, 32)
    b = rand(32 * 48, "float16", -1, 1).reshape(32, 48)
    c = gemm_v0_kernel(32, 48, 32, 16, False, relu=True, out="float16")(a, b)
    assert_close(c, np.maximum(_matmul_ref(a, b), 0.0), "float16", "copy L0C -> GM enable_relu, fp32 -> fp16")
    for n in (1, 7, 13):
        x = rand(n, "float32")
        y = padded_copy_kernel(n, 2.0)(x)
        padded = (n + 7) // 8 * 8
        assert_close(y[0], x.astype(np.float64).sum() + (padded - n) * 2.0, "float32", f"copy pad_value n={n}",
                     (1e-5, 1e-5))


@tilelang.jit
def atomic_add_kernel(dtype: str, blocks: int, n: int):
    """Out += X[b] for every block b, all blocks adding into the same GM row at once."""

    @T.prim_func
    def k(X: T.Tensor((blocks, n), dtype), Out: T.Tensor((n,), dtype)):
        with T.Kernel(blocks, is_npu=True) as (cid, vid):
            with T.Scope("V"):
                x = T.alloc_ub((n,), dtype)
                if vid == 0:
                    T.copy(X[cid, 0], x)
                    T.set_flag("MTE2", "MTE3", 0)
                    T.wait_flag("MTE2", "MTE3", 0)
                    T.atomic_add(Out, x)

    return k


def check_atomic_add() -> None:
    for dtype in ("int16", "int32", "float16", "float32"):
        for blocks, n in ((1, 16), (3, 64), (7, 128)):
            x = rand(blocks * n, dtype, -3, 3).reshape(blocks, n)
            out = rand(n, dtype, -3, 3)
            want = out.astype(np.float64) + x.astype(np.float64).sum(axis=0)
            atomic_add_kernel(dtype, blocks, n)(x, out)
            # fp16 rounds after every add (blocks roundings of values up to ~16: 1e-2 absolute)
            tol = (2e-3, 1e-2) if dtype == "float16" else None
            assert_close(out, want, dtype, f"atomic_add {dtype} blocks={blocks} n={n}", tol)


@tilelang.jit
def dcci_kernel(n: int, with_dcci: bool = True):
    """AIV 0 writes W[i] = 2 i + 1 by scalar stores (they sit in its data cache), T.dcci writes
    the lines back, then DMA copies W through UB to Z: Z shows what DMA saw."""
    padded = (n + 7) // 8 * 8

    @T.prim_func
    def k(W: T.Tensor((padded,), "int32"), Z: T.Tensor((padded,), "int32")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            with T.Scope("V"):
                z = T.alloc_ub((padded,), "int32")
                if vid == 0:
                    for i in T.serial(n):
                        W[i] = i * 2 + 1
                    if with_dcci:
                        T.dcci(W, entire=True)
                    T.copy(W, z)
                    T.set_flag("MTE2", "MTE3", 0)
                    T.wait_flag("MTE2", "MTE3", 0)
                    T.copy(z, Z)

    return k


def check_dcci() -> None:
    for n in (1, 7, 33):
        padded = (n + 7) // 8 * 8
        want = np.zeros(padded, np.int32)
        want[:n] = 2 * np.arange(n) + 1
        for mode in ("fast", "timed"):
            w, z = np.zeros(padded, np.int32), np.zeros(padded, np.int32)
            dcci_kernel(n).run(w, z, check_hazards=True, mode=mode)
            np.testing.assert_array_equal(z, want, err_msg=f"dcci n={n} {mode}")
    # Without it the DMA reads GM before the cached stores reach it: the hazard checker says so,
    # and a timed run computes what the chip would, the zeros GM still held.
    with pytest.raises(tilelang.Error, match="dcci"):
        dcci_kernel(7, False).run(np.zeros(8, np.int32), np.zeros(8, np.int32), check_hazards=True)
    z = np.ones(8, np.int32)
    dcci_kernel(7, False).run(np.zeros(8, np.int32), z, mode="timed")
    np.testing.assert_array_equal(z, np.zeros(8, np.int32), err_msg="no dcci, timed")


# ---- cube -----------------------------------------------------------------------------------------


@tilelang.jit(out_idx=[-1])
def dev_gemm_kernel(M: int, N: int, K: int, dtype: str, transpose_B: bool, bM: int = 32, bN: int = 32, bK: int = 32):
    """Developer GEMM: C = A x op(B) in (bM, bN) tiles with a K loop of bK."""
    b_shape = (N, K) if transpose_B else (K, N)
    b_tile = (bN, bK) if transpose_B else (bK, bN)

    @T.prim_func
    def k(A: T.Tensor((M, K), dtype), B: T.Tensor(b_shape, dtype), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, bM) * T.ceildiv(N, bN), threads=1) as cid:
            bx = cid // T.ceildiv(N, bN)
            by = cid % T.ceildiv(N, bN)
            a = T.alloc_shared((bM, bK), dtype)
            b = T.alloc_shared(b_tile, dtype)
            c = T.alloc_fragment((bM, bN), "float32")
            for ko in T.serial(T.ceildiv(K, bK)):
                T.copy(A[bx * bM, ko * bK], a)
                if transpose_B:
                    T.copy(B[by * bN, ko * bK], b)
                else:
                    T.copy(B[ko * bK, by * bN], b)
                T.gemm(a, b, c, transpose_B=transpose_B, init=(ko == 0))
            T.copy(c, C[bx * bM, by * bN])

    return k


def _matmul_ref(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a.astype(np.float64) @ b.astype(np.float64)


def check_gemm() -> None:
    for M, N, K in ((1, 16, 16), (7, 33, 40), (33, 48, 70)):
        for transpose_B in (False, True):
            a = rand(M * K, "float16", -1, 1).reshape(M, K)
            b = rand(N * K, "float16", -1, 1).reshape((N, K) if transpose_B else (K, N))
            c = dev_gemm_kernel(M, N, K, "float16", transpose_B)(a, b)
            want = _matmul_ref(a, b.T if transpose_B else b)
            assert_close(c, want, "float32", f"gemm {M}x{N}x{K} transpose_B={transpose_B}", (1e-4, 1e-4))


@tilelang.jit(out_idx=[-1])
def gemm_v0_kernel(M: int, N: int, K: int, bK: int, transpose_A: bool, const_A: float = 0.0, relu: bool = False,
                   out: str = "float32"):
    """Expert GEMM on one block: C = op(A) x B through L1 and L0C, K in panels of bK (the
    accumulation across panels: init on the first). `const_A`: A_L1 is set by init_const instead;
    `relu`, `out`: the fixpipe copy's enable_relu and its cast to the output dtype."""

    @T.prim_func
    def k(A: T.Tensor((K, M) if transpose_A else (M, K), "float16"), B: T.Tensor((K, N), "float16"),
          C: T.Tensor((M, N), out)):
        with T.Kernel(1, is_npu=True) as (cid, _):
            with T.Scope("C"):
                A_L1 = T.alloc_L1((bK, M) if transpose_A else (M, bK), "float16")
                B_L1 = T.alloc_L1((bK, N), "float16")
                C_L0C = T.alloc_L0C((M, N), "float32")
                for ko in T.serial(K // bK):
                    if const_A != 0.0:
                        T.init_const(A_L1, T.float16(const_A))
                    elif transpose_A:
                        T.copy(A[ko * bK, 0], A_L1)
                    else:
                        T.copy(A[0, ko * bK], A_L1)
                    T.copy(B[ko * bK, 0], B_L1)
                    T.set_flag("MTE2", "MTE1", 0)
                    T.wait_flag("MTE2", "MTE1", 0)
                    T.gemm_v0(A_L1, B_L1, C_L0C, transpose_A=transpose_A, init=(ko == 0))
                    T.set_flag("M", "MTE2", 0)
                    T.wait_flag("M", "MTE2", 0)
                T.set_flag("M", "FIX", 0)
                T.wait_flag("M", "FIX", 0)
                T.copy(C_L0C, C, enable_relu=relu)

    return k


def check_gemm_v0() -> None:
    for M, N, K, bK in ((16, 16, 16, 16), (32, 48, 64, 32)):
        for transpose_A in (False, True):
            a = rand(M * K, "float16", -1, 1).reshape((K, M) if transpose_A else (M, K))
            b = rand(K * N, "float16", -1, 1).reshape(K, N)
            c = gemm_v0_kernel(M, N, K, bK, transpose_A)(a, b)
            want = _matmul_ref(a.T if transpose_A else a, b)
            assert_close(c, want, "float32", f"gemm_v0 {M}x{N}x{K} transpose_A={transpose_A}", (1e-4, 1e-4))


def check_init_const() -> None:
    """init_const(A_L1, 0.5) then C = A x B: every C[i, j] = 0.5 * sum_k B[k, j]."""
    M, N, K, bK = 16, 32, 32, 16
    a = np.zeros((M, K), np.float16)
    b = rand(K * N, "float16", -1, 1).reshape(K, N)
    c = gemm_v0_kernel(M, N, K, bK, False, 0.5)(a, b)
    want = np.tile(0.5 * b.astype(np.float64).sum(axis=0), (M, 1))
    assert_close(c, want, "float32", "init_const", (1e-4, 1e-4))


@tilelang.jit(out_idx=[-1])
def mma_kernel(M: int, N: int, K: int):
    """C = A x B with the L1 -> L0A/L0B loads written out and one T.mma."""

    @T.prim_func
    def k(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, is_npu=True) as (cid, _):
            with T.Scope("C"):
                a1 = T.alloc_L1((M, K), "float16")
                b1 = T.alloc_L1((K, N), "float16")
                a0 = T.alloc_L0A((M, K), "float16")
                b0 = T.alloc_L0B((K, N), "float16")
                c0 = T.alloc_L0C((M, N), "float32")
                T.copy(A, a1)
                T.copy(B, b1)
                T.set_flag("MTE2", "MTE1", 0)
                T.wait_flag("MTE2", "MTE1", 0)
                T.copy(a1, a0)
                T.copy(b1, b0)
                T.set_flag("MTE1", "M", 0)
                T.wait_flag("MTE1", "M", 0)
                T.mma(a0, b0, c0, True)
                T.set_flag("M", "FIX", 0)
                T.wait_flag("M", "FIX", 0)
                T.copy(c0, C)

    return k


def check_mma() -> None:
    for M, N, K in ((16, 16, 16), (32, 48, 64)):
        a = rand(M * K, "float16", -1, 1).reshape(M, K)
        b = rand(K * N, "float16", -1, 1).reshape(K, N)
        assert_close(mma_kernel(M, N, K)(a, b), _matmul_ref(a, b), "float32", f"mma {M}x{N}x{K}", (1e-4, 1e-4))


# ---- reductions -----------------------------------------------------------------------------------

RED = {"sum": np.sum, "max": np.max, "min": np.min}
RCOLS = 64


@tilelang.jit(out_idx=[-1])
def reduce_rows_kernel(op: str, dtype: str, rows: int = 8):
    """Y[i] = op over X[i, :] (dim=-1), tiles of `rows` rows; the last tile clipped."""
    M = T.dynamic("M")
    f = getattr(T, "reduce_" + op)

    @T.prim_func
    def k(X: T.Tensor((M, RCOLS), dtype), Y: T.Tensor((M,), dtype)):
        with T.Kernel(T.ceildiv(M, rows), threads=1) as cid:
            x = T.alloc_shared((rows, RCOLS), dtype)
            y = T.alloc_shared((rows,), dtype)
            T.copy(X[cid * rows, 0], x)
            f(x, y, dim=-1)
            T.copy(y, Y[cid * rows])

    return k


@tilelang.jit(out_idx=[-1])
def reduce_cols_kernel(op: str, dtype: str, rows: int):
    """Y[j] = op(Y0[j], op over X[:, j]): dim=0 with clear=False on a tile of Y0."""

    @T.prim_func
    def k(X: T.Tensor((rows, RCOLS), dtype), Y0: T.Tensor((RCOLS,), dtype), Y: T.Tensor((RCOLS,), dtype)):
        with T.Kernel(1, threads=1) as cid:
            x = T.alloc_shared((rows, RCOLS), dtype)
            y = T.alloc_shared((RCOLS,), dtype)
            T.copy(X, x)
            T.copy(Y0, y)
            f = getattr(T, "reduce_" + op)
            f(x, y, dim=0, clear=False)
            T.copy(y, Y)

    return k


def reduce_check(op: str) -> Callable[[], None]:
    def check() -> None:
        ref = RED[op]
        for dtype in FLOAT:
            tol = (2e-3, 2e-2) if dtype == "float16" else (1e-5, 1e-5)  # fp16 sums of 64 terms
            k = reduce_rows_kernel(op, dtype)
            for m in SIZES:
                x = rand(m * RCOLS, dtype, -2, 2).reshape(m, RCOLS)
                assert_close(k(x), ref(x.astype(np.float64), axis=1), dtype, f"reduce_{op} dim=-1 {dtype} m={m}", tol)
            for rows in (1, 7):
                x = rand(rows * RCOLS, dtype, -2, 2).reshape(rows, RCOLS)
                y0 = rand(RCOLS, dtype, -2, 2)
                x64, y64 = x.astype(np.float64), y0.astype(np.float64)
                want = y64 + x64.sum(axis=0) if op == "sum" else ref(np.vstack([x64, y64[None]]), axis=0)
                assert_close(reduce_cols_kernel(op, dtype, rows)(x, y0), want, dtype,
                             f"reduce_{op} dim=0 clear=False {dtype} rows={rows}", tol)

    return check


# ---- sorting --------------------------------------------------------------------------------------

SORT_TILE = 64  # elements of a sort source tile (a multiple of 32)


def _sorted_pairs(x: np.ndarray) -> np.ndarray:
    """(value, index) pairs of x descending, ties to the smaller index, flattened."""
    order = sorted(range(len(x)), key=lambda i: (-float(x[i]), i))
    return np.array([[x[i], i] for i in order], np.float64).reshape(-1)


@tilelang.jit
def sort_kernel(op: str, n: int, k: int = 0):
    """op == "sort": Y = T.tile.sort(src, n) (2 * SORT_TILE lanes); "topk": Y = T.tile.topk(src, k, n)."""
    out = 2 * SORT_TILE

    @T.prim_func
    def kern(X: T.Tensor((n,), "float32"), Y: T.Tensor((out,), "float32")):
        with T.Kernel(1, threads=1) as cid:
            x = T.alloc_shared((SORT_TILE,), "float32")
            y = T.alloc_shared((out,), "float32")
            T.tile.fill(y, 0.0)
            T.copy(X, x[0:n])
            if op == "sort":
                T.tile.sort(y, x, n)
            else:
                T.tile.topk(y, x, k, n)
            T.copy(y, Y)

    return kern


def check_sort() -> None:
    for n in (1, 7, 33, 64):
        x = np.round(rand(n, "float32", -4, 4) * 2) / 2  # halves: ties occur
        x = x.astype(np.float32)
        y = np.zeros(2 * SORT_TILE, np.float32)
        sort_kernel("sort", n)(x, y)
        want = _sorted_pairs(x)
        np.testing.assert_array_equal(y[:2 * n], want, err_msg=f"sort n={n}")
        pad = (n + 31) // 32 * 32
        assert np.all(y[2 * n:2 * pad:2] == -np.inf), f"sort n={n}: padding values {y[2 * n:2 * pad:2]}"


def check_topk() -> None:
    for n, k in ((7, 1), (33, 5), (64, 16)):
        x = np.round(rand(n, "float32", -4, 4) * 2) / 2
        x = x.astype(np.float32)
        y = np.zeros(2 * SORT_TILE, np.float32)
        sort_kernel("topk", n, k)(x, y)
        np.testing.assert_array_equal(y[:2 * k], _sorted_pairs(x)[:2 * k], err_msg=f"topk n={n} k={k}")


@tilelang.jit(out_idx=[-1])
def merge_sort_kernel(queues: int, length: int):
    """Y = T.tile.merge_sort of `queues` descending pair queues of `length` pairs each."""

    @T.prim_func
    def k(Q: T.Tensor((queues, 2 * length), "float32"), Y: T.Tensor((queues * 2 * length,), "float32")):
        with T.Kernel(1, threads=1) as cid:
            q = T.alloc_shared((queues, 2 * length), "float32")
            y = T.alloc_shared((queues * 2 * length,), "float32")
            T.copy(Q, q)
            T.tile.merge_sort(y, *[q[i, :] for i in range(queues)])
            T.copy(y, Y)

    return k


def check_merge_sort() -> None:
    length = 32
    for queues in (2, 3, 4):
        qs = []
        for i in range(queues):
            v = np.sort(np.round(rand(length, "float32", -4, 4) * 2) / 2)[::-1]
            qs.append(np.stack([v, np.arange(length) + 100 * i], axis=1).reshape(-1))
        q = np.stack(qs).astype(np.float32)
        # ties between queues: the lower queue first (a stable merge in queue order)
        pairs = [(q[i, 2 * j], i, j) for i in range(queues) for j in range(length)]
        pairs.sort(key=lambda p: (-float(p[0]), p[1], p[2]))
        want = np.array([[q[i, 2 * j], q[i, 2 * j + 1]] for _, i, j in pairs], np.float32).reshape(-1)
        np.testing.assert_array_equal(merge_sort_kernel(queues, length)(q), want, err_msg=f"merge_sort {queues} queues")


@tilelang.jit
def init_sort_buf_kernel(num: int, value):
    @T.prim_func
    def k(Y: T.Tensor((2 * num,), "float32")):
        with T.Kernel(1, threads=1) as cid:
            y = T.alloc_shared((2 * num,), "float32")
            if value is None:
                T.init_sort_buf(y, num)
            else:
                T.init_sort_buf(y, num, value)
            T.copy(y, Y)

    return k


def check_init_sort_buf() -> None:
    for num, value in ((8, None), (32, None), (16, -3.5)):
        y = np.zeros(2 * num, np.float32)
        init_sort_buf_kernel(num, value)(y)
        want_v = -np.inf if value is None else value
        np.testing.assert_array_equal(y[0::2], np.full(num, want_v, np.float32), err_msg=f"init_sort_buf {num} {value}")
        assert np.all(y[1::2].view(np.uint32) == 0xFFFFFFFF), f"init_sort_buf index lanes {y[1::2].view(np.uint32)}"


# ---- debug: printf and dump_tensor print what the kernel holds --------------------------------------


def _stdout_of(fn: Callable[[], None]) -> str:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        fn()
    return buf.getvalue()


@tilelang.jit
def printf_kernel():
    @T.prim_func
    def k(X: T.Tensor((4,), "int32"), s: T.int32):
        with T.Kernel(2, threads=1) as cid:
            x = T.alloc_shared((4,), "int32")
            T.copy(X, x)
            T.printf("block %d s=%d x2=%d\n", cid, s * 3, x[2])
            T.print("half=%f\n", T.float32(0.5))

    return k


def check_printf() -> None:
    x = np.array([5, 6, 7, 8], np.int32)
    out = _stdout_of(lambda: printf_kernel()(x, 11))
    for b in (0, 1):
        assert f"block {b} s=33 x2=7" in out, out
    assert "half=0.5" in out, out


@tilelang.jit
def dump_kernel():
    @T.prim_func
    def k(X: T.Tensor((2, 8), "float32")):
        with T.Kernel(1, threads=1) as cid:
            x = T.alloc_shared((2, 8), "float32")
            T.copy(X, x)
            T.dump_tensor(x, desc=7)

    return k


def check_dump_tensor() -> None:
    x = (np.arange(16, dtype=np.float32) * 0.5 - 3).reshape(2, 8)
    out = _stdout_of(lambda: dump_kernel()(x))
    assert "7" in out, out
    nums = [float(t) for t in out.replace(",", " ").replace("[", " ").replace("]", " ").split()
            if _is_number(t.strip(",[]"))]
    # the 16 elements appear in row-major order among the printed numbers
    it = iter(nums)
    assert all(any(v == w for w in it) for v in x.reshape(-1)), out


def _is_number(t: str) -> bool:
    try:
        float(t)
        return True
    except ValueError:
        return False


# ---- scalar intrinsics in element loops ---------------------------------------------------------------


_VECTOR = {tilelang.PassConfigKey.TL_DEV_ALLOW_INEXACT_MATH: True}
_SCALAR = {tilelang.PassConfigKey.TL_DEV_VECTORIZE: False}


def intrinsic_kernel(name: str, dtype: str, arity: int, scalar: bool):
    """The element loop on the vector unit (its tile ops, inexact math allowed) or, `scalar`,
    on the scalar unit (the loop kept serial): both must give the intrinsic's value."""
    return (_intrinsic_scalar if scalar else _intrinsic_vector)(name, dtype, arity)


def _intrinsic_kernel(name: str, dtype: str, arity: int, block: int = 64):
    """Y[i] = T.<name>(X0[i][, X1[i]]) in a T.Parallel element loop."""
    N = T.dynamic("N")
    f = getattr(T, name)

    @T.prim_func
    def k(X0: T.Tensor((N,), dtype), X1: T.Tensor((N,), dtype), Y: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block), threads=1) as cid:
            a = T.alloc_shared((block,), dtype)
            b = T.alloc_shared((block,), dtype)
            y = T.alloc_fragment((block,), dtype)
            T.copy(X0[cid * block], a)
            T.copy(X1[cid * block], b)
            for i in T.Parallel(block):
                if arity == 2:
                    y[i] = f(a[i], b[i])
                else:
                    y[i] = f(a[i])
            T.copy(y, Y[cid * block])

    return k


_intrinsic_vector = tilelang.jit(out_idx=[-1], pass_configs=_VECTOR)(_intrinsic_kernel)
_intrinsic_scalar = tilelang.jit(out_idx=[-1], pass_configs=_SCALAR)(_intrinsic_kernel)


def intrinsic(name: str, ref: Callable, arity: int = 1, lo: float = -4.0, hi: float = 4.0,
              dtypes: Sequence[str] = FLOAT, tol: Optional[dict] = None,
              vector: bool = True) -> Callable[[], None]:
    """`vector=False`: the op has no vector form (T.pow, integer T.abs); the scalar unit only."""

    def check() -> None:
        for dtype in dtypes:
            for scalar in (False, True) if vector else (True,):
                k = intrinsic_kernel(name, dtype, arity, scalar)
                for n in SIZES if not scalar else SIZES[:3]:
                    a, b = rand(n, dtype, lo, hi), rand(n, dtype, lo, hi)
                    args = (a.astype(np.float64), b.astype(np.float64))[:arity]
                    assert_close(k(a, b), ref(*args), dtype, f"T.{name} {dtype} n={n} scalar={scalar}",
                                 (tol or {}).get(dtype))

    check.__name__ = f"check_{name}"
    return check


INTRINSICS = {
    "T.exp": intrinsic("exp", np.exp),
    "T.log": intrinsic("log", np.log, lo=0.05, hi=8.0),
    "T.sqrt": intrinsic("sqrt", np.sqrt, lo=0.0, hi=8.0),
    "T.rsqrt": intrinsic("rsqrt", lambda x: 1.0 / np.sqrt(x), lo=0.05, hi=8.0,
                         tol={"float16": (2e-3, 2e-3), "float32": (1e-4, 1e-6)}),
    "T.abs": intrinsic("abs", np.abs),
    "T.abs int": intrinsic("abs", np.abs, dtypes=("int16", "int32"), vector=False),
    "T.sigmoid": intrinsic("sigmoid", lambda x: 1.0 / (1.0 + np.exp(-x))),
    "T.pow": intrinsic("pow", np.power, 2, lo=0.1, hi=3.0,
                       tol={"float16": (3e-3, 3e-3), "float32": (1e-5, 1e-6)}, vector=False),
    "T.max": intrinsic("max", np.maximum, 2, dtypes=("int16", "int32", "float16", "float32")),
    "T.min": intrinsic("min", np.minimum, 2, dtypes=("int16", "int32", "float16", "float32")),
}
