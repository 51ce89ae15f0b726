"""Regression: split_aiv gave AIV 1 the mask bits of AIV 0's rows (a silent wrong result).

In a developer kernel with `threads=2`, split_aiv halves the rows of every tile labelled "rows"
between the two AIVs (docs/developer_mode.md, "Two AIVs"). A T.if_then_else (or T.max) in an
element loop becomes tile.compare into a bit mask and tile.select by it. The labels skipped the
bit mask, so a tile compared into it that no other op tied to the rows (a per-row mask or scale
tile built once before the loop, an index tile of a causal mask) stayed whole on both AIVs: the
compare on AIV 1 produced the bits of rows [0, R/2) and the select over AIV 1's half read them.
Rows 8-15 of every 16-row block came out wrong, with no error. Now the mask carries the rows of
the tile compared into it, so that tile splits with the rows (or, when it cannot, the split falls
back with a remark) and every row matches torch.

Sizes: rows 1, 7, 33, 1000, 4097 (a tail block, fewer rows than one AIV's half, odd) and
columns 1, 70 (a clipped column tile, two column tiles) against torch; each kernel runs under the
hazard checker.
"""

import pytest
import torch

import tl_ascend as tilelang
import tl_ascend.language as T

BM, BN = 16, 64
SHAPES = [(1, 70), (7, 1), (33, 70), (1000, 70), (4097, 1)]


def _launch(func, n_out: int):
    return tilelang.compile(func, out_idx=[n_out], check_hazards=True)


def mask_from_row_vector(M: int, N: int):
    """The reproducer: W[i] > 0 selects row i of X, W copied once before the column loop."""

    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), W: T.Tensor((M,), "float32"),
             Y: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, BM), threads=2) as cid:
            x = T.alloc_shared((BM, BN), "float32")
            w = T.alloc_fragment((BM,), "float32")
            T.copy(W[cid * BM], w)
            for k in T.serial(T.ceildiv(N, BN)):
                T.copy(X[cid * BM, k * BN], x)
                for i, j in T.Parallel(BM, BN):
                    x[i, j] = T.if_then_else(w[i] > 0, x[i, j], 0.0)
                T.copy(x, Y[cid * BM, k * BN])

    return _launch(main, 2)


def mask_tile_built_before_the_loop(M: int, N: int):
    """A whole 2-D mask tile filled once from the per-row vector, compared in the loop."""

    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), W: T.Tensor((M,), "float32"),
             Y: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, BM), threads=2) as cid:
            x = T.alloc_shared((BM, BN), "float32")
            w = T.alloc_fragment((BM,), "float32")
            mk = T.alloc_fragment((BM, BN), "float32")
            T.copy(W[cid * BM], w)
            for i, j in T.Parallel(BM, BN):
                mk[i, j] = w[i]
            for k in T.serial(T.ceildiv(N, BN)):
                T.copy(X[cid * BM, k * BN], x)
                for i, j in T.Parallel(BM, BN):
                    x[i, j] = T.if_then_else(mk[i, j] > 0.5, x[i, j], -x[i, j])
                T.copy(x, Y[cid * BM, k * BN])

    return _launch(main, 2)


def causal_mask(M: int, N: int):
    """A mask from the positions (an index tile, which no AIV may split by rows)."""

    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, BM), threads=2) as cid:
            x = T.alloc_shared((BM, BN), "float32")
            for k in T.serial(T.ceildiv(N, BN)):
                T.copy(X[cid * BM, k * BN], x)
                for i, j in T.Parallel(BM, BN):
                    x[i, j] = T.if_then_else(cid * BM + i >= k * BN + j, x[i, j], 0.0)
                T.copy(x, Y[cid * BM, k * BN])

    return _launch(main, 1)


def max_with_row_vector(M: int, N: int):
    """T.max(x, 2 w[i]) is compare + select too, w scaled once before the loop."""

    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), W: T.Tensor((M,), "float32"),
             Y: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, BM), threads=2) as cid:
            x = T.alloc_shared((BM, BN), "float32")
            w = T.alloc_fragment((BM,), "float32")
            T.copy(W[cid * BM], w)
            for i in T.Parallel(BM):
                w[i] = w[i] * 2.0
            for k in T.serial(T.ceildiv(N, BN)):
                T.copy(X[cid * BM, k * BN], x)
                for i, j in T.Parallel(BM, BN):
                    x[i, j] = T.max(x[i, j], w[i])
                T.copy(x, Y[cid * BM, k * BN])

    return _launch(main, 2)


def mask_from_column_vector(M: int, N: int):
    """C[j] > 0 selects column j: C's tile is columns, whole on both AIVs, x split by rows."""

    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), C: T.Tensor((BN,), "float32"),
             Y: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, BM), threads=2) as cid:
            x = T.alloc_shared((BM, BN), "float32")
            c = T.alloc_fragment((BN,), "float32")
            T.copy(C[0], c)
            for k in T.serial(T.ceildiv(N, BN)):
                T.copy(X[cid * BM, k * BN], x)
                for i, j in T.Parallel(BM, BN):
                    x[i, j] = T.if_then_else(c[j] > 0, x[i, j], 0.0)
                T.copy(x, Y[cid * BM, k * BN])

    return _launch(main, 2)


def _inputs(M: int, N: int):
    torch.manual_seed(M * 131 + N)
    return torch.randn(M, N), torch.randn(M)


def _split_by_rows(kernel) -> bool:
    # AIV v's GM copies start at row cid * 16 + v * 8: the rows were split, not left to AIV 0.
    return "vid * 8" in kernel.get_tile_ir()


@pytest.mark.parametrize("M,N", SHAPES)
def test_a_row_vector_compared_in_the_loop_selects_each_aivs_own_rows(M: int, N: int) -> None:
    x, w = _inputs(M, N)
    kernel = mask_from_row_vector(M, N)
    assert _split_by_rows(kernel)
    ref = torch.where(w[:, None] > 0, x, torch.zeros_like(x))
    torch.testing.assert_close(kernel(x, w), ref, rtol=0, atol=0)


@pytest.mark.parametrize("M,N", SHAPES)
def test_a_mask_tile_built_before_the_loop_splits_with_the_rows(M: int, N: int) -> None:
    x, w = _inputs(M, N)
    kernel = mask_tile_built_before_the_loop(M, N)
    assert _split_by_rows(kernel)
    ref = torch.where(w[:, None] > 0.5, x, -x)
    torch.testing.assert_close(kernel(x, w), ref, rtol=0, atol=0)


@pytest.mark.parametrize("M,N", SHAPES)
def test_a_causal_mask_is_not_split_by_rows(M: int, N: int) -> None:
    """Before: rows 8-15 of each block kept the mask of rows 0-7. Now the index tile pins the
    rows, and the AIVs take alternate column tiles instead (a remark says so)."""
    x, _ = _inputs(M, N)
    kernel = causal_mask(M, N)
    assert not _split_by_rows(kernel)
    keep = torch.arange(M)[:, None] >= torch.arange(N)[None, :]
    torch.testing.assert_close(kernel(x), torch.where(keep, x, torch.zeros_like(x)), rtol=0, atol=0)


@pytest.mark.parametrize("M,N", SHAPES)
def test_max_with_a_row_vector_built_before_the_loop(M: int, N: int) -> None:
    x, w = _inputs(M, N)
    kernel = max_with_row_vector(M, N)
    assert _split_by_rows(kernel)
    torch.testing.assert_close(kernel(x, w), torch.maximum(x, 2 * w[:, None]), rtol=0, atol=0)


@pytest.mark.parametrize("M", [1, 7, 33, 1000, 4097])
def test_a_column_vector_compared_in_the_loop_stays_whole(M: int) -> None:
    x, _ = _inputs(M, BN)
    c = torch.randn(BN)
    kernel = mask_from_column_vector(M, BN)
    assert _split_by_rows(kernel)
    ref = torch.where(c[None, :] > 0, x, torch.zeros_like(x))
    torch.testing.assert_close(kernel(x, c), ref, rtol=0, atol=0)
