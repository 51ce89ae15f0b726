"""Regressions of issue 27's developer-mode findings, written as TileLang-Ascend kernels.

Developer mode silently dropped GM element stores and every loop or branch holding only scalar
work, and its syncs did not order a branch on a tile element (docs/developer_mode.md, "Scalar
work and GM element stores"). Each kernel runs fast, under the hazard checker and timed (data in
simulated-time order) and is checked against torch; each test says what the code before the fix
computed. The tails are sizes 1, 7, 33 and 1000: rows shorter than, equal to and longer than a
32-byte block, on both sides of the scalar-or-staged choice for GM element loops.
"""

from typing import Callable, List

import pytest
import torch

import tl_ascend as tilelang
import tl_ascend.language as T

SIZES = [1, 7, 33, 1000]


def run3(func, make: Callable[[], List[torch.Tensor]]) -> List[List[torch.Tensor]]:
    """The tensors of three launches of `func` on fresh inputs: fast, hazard-checked, timed."""
    kernel = tilelang.compile(func)
    out = []
    for mode in ("fast", "hazards", "timed"):
        args = make()
        if mode == "timed":
            kernel.profile(*args)
        else:
            kernel.run(*args, check_hazards=mode == "hazards")
        out.append(args)
    return out


def gm_store_kernel(n: int, loop: str):
    if loop == "parallel":
        @T.prim_func
        def k(X: T.Tensor((n,), "float32")):
            with T.Kernel(1) as cid:
                for i in T.Parallel(n):
                    X[i] = X[i] + 1.0
    elif loop == "serial":
        @T.prim_func
        def k(X: T.Tensor((n,), "float32")):
            with T.Kernel(1) as cid:
                for i in T.serial(n):
                    X[i] = X[i] + 1.0
    else:
        @T.prim_func
        def k(X: T.Tensor((n,), "float32")):
            with T.Kernel(1) as cid:
                X[n - 1] = X[n - 1] + 1.0
    return k


@pytest.mark.parametrize("loop", ["parallel", "serial", "top"])
@pytest.mark.parametrize("n", SIZES)
def test_gm_element_stores_are_kept(n: int, loop: str) -> None:
    # Before: the lowered kernel was `pass`; X came back unchanged (1.0 off).
    x = torch.arange(n, dtype=torch.float32) + 0.5
    want = x.clone()
    if loop == "top":
        want[n - 1] += 1
    else:
        want += 1
    for (got,) in run3(gm_store_kernel(n, loop), lambda: [x.clone()]):
        assert torch.equal(got, want)


@pytest.mark.parametrize("n", SIZES)
def test_gm_element_stores_from_a_tile_are_kept(n: int) -> None:
    # Before: Y kept its zeros (4.25 off at n = 7, 500.75 at n = 1000).
    @T.prim_func
    def k(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
        with T.Kernel(1) as cid:
            y = T.alloc_shared((n,), "float32")
            T.copy(X, y)
            for i in T.Parallel(n):
                Y[i] = y[i] * 0.5 + 1.0

    x = torch.arange(n, dtype=torch.float32) + 0.5
    for _, got in run3(k, lambda: [x.clone(), torch.zeros(n)]):
        assert torch.equal(got, x * 0.5 + 1.0)


def test_an_if_holding_only_a_scalar_store_is_kept() -> None:
    # Before: `if cid == 1: bias = 100.0` was dropped, block 1's rows 100.0 too small.
    @T.prim_func
    def k(X: T.Tensor((16, 64), "float32"), Y: T.Tensor((16, 64), "float32")):
        with T.Kernel(2) as cid:
            x = T.alloc_shared((8, 64), "float32")
            bias = T.alloc_var("float32")
            bias = 0.0
            if cid == 1:
                bias = 100.0
            T.copy(X[cid * 8, 0], x)
            for i, j in T.Parallel(8, 64):
                x[i, j] = x[i, j] + bias
            T.copy(x, Y[cid * 8, 0])

    x = torch.randn(16, 64)
    want = x.clone()
    want[8:] += 100.0
    for _, got in run3(k, lambda: [x.clone(), torch.zeros(16, 64)]):
        assert torch.equal(got, want)


def test_a_scalar_row_sum_loop_is_kept() -> None:
    # Before: the loop was dropped and s stayed 0 (outputs off by the row sum, 5.93 here).
    @T.prim_func
    def k(X: T.Tensor((8, 64), "float32"), Y: T.Tensor((8, 64), "float32")):
        with T.Kernel(1) as cid:
            x = T.alloc_shared((8, 64), "float32")
            s = T.alloc_var("float32")
            T.copy(X, x)
            s = 0.0
            for j in T.serial(64):
                s = s + x[0, j]
            for i, j in T.Parallel(8, 64):
                x[i, j] = x[i, j] - s
            T.copy(x, Y)

    torch.manual_seed(0)
    x = torch.randn(8, 64)
    s = torch.tensor(0.0)
    for j in range(64):  # the scalar unit's order, rounded to fp32 at each step
        s = s + x[0, j]
    for _, got in run3(k, lambda: [x.clone(), torch.zeros(8, 64)]):
        assert torch.equal(got, x - s)


def test_a_counter_in_the_gemm_k_loop_reaches_the_vector_side() -> None:
    # Before: the vector side's copy of the K loop was dropped, n stayed 0 there (2.0 off).
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1) as cid:
            a = T.alloc_shared((64, 32), "float16")
            b = T.alloc_shared((32, 64), "float16")
            c = T.alloc_fragment((64, 64), "float32")
            d = T.alloc_shared((64, 64), "float32")
            n = T.alloc_var("int32")
            n = 0
            T.clear(c)
            for ko in T.serial(2):
                T.copy(A[0, ko * 32], a)
                T.copy(B[ko * 32, 0], b)
                T.gemm(a, b, c)
                n = n + 1
            for i, j in T.Parallel(64, 64):
                d[i, j] = c[i, j] + T.cast(n[0], "float32")
            T.copy(d, C)

    torch.manual_seed(0)
    a, b = torch.randn(64, 64).half(), torch.randn(64, 64).half()
    want = a.float() @ b.float() + 2.0
    for _, _, got in run3(k, lambda: [a.clone(), b.clone(), torch.zeros(64, 64)]):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("first", [1.0, -1.0])
def test_a_branch_on_a_tile_element_is_ordered_after_its_copy(first: float) -> None:
    # Before: the hazard checker found 3 unordered pairs (the branch's vector work after the copy)
    # and timed mode failed ("took a different path in simulated-time order").
    @T.prim_func
    def k(X: T.Tensor((8, 64), "float32"), Y: T.Tensor((8, 64), "float32")):
        with T.Kernel(1) as cid:
            x = T.alloc_shared((8, 64), "float32")
            T.copy(X, x)
            if x[0, 0] > 0:
                for i, j in T.Parallel(8, 64):
                    x[i, j] = x[i, j] * 2.0
            T.copy(x, Y)

    x = torch.randn(8, 64)
    x[0, 0] = first
    for _, got in run3(k, lambda: [x.clone(), torch.zeros(8, 64)]):
        assert torch.equal(got, x * 2 if first > 0 else x)


def test_a_blocks_gm_store_runs_once_with_two_aivs() -> None:
    # Before: with the split's fix alone, both AIVs ran `C[0] = C[0] + 1` (C[0] = 2).
    @T.prim_func
    def k(X: T.Tensor((16, 64), "float32"), Y: T.Tensor((16, 64), "float32"), C: T.Tensor((8,), "int32")):
        with T.Kernel(1, threads=2) as cid:
            x = T.alloc_shared((16, 64), "float32")
            T.copy(X, x)
            for i, j in T.Parallel(16, 64):
                x[i, j] = x[i, j] * 2.0
            T.copy(x, Y)
            C[0] = C[0] + 1

    x = torch.randn(16, 64)
    for _, y, c in run3(k, lambda: [x.clone(), torch.zeros(16, 64), torch.zeros(8, dtype=torch.int32)]):
        assert torch.equal(y, x * 2)
        assert c.tolist() == [1, 0, 0, 0, 0, 0, 0, 0]
