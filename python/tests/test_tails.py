"""Developer kernels on tails (docs/developer_mode.md, "Tails"): the stale part of a tile filled by
a clipped copy never reaches a result. Each kernel accumulates or combines tiles over a loop
whose last copy is clipped, and runs on sizes that are not multiples of the tile (1, 7, 33,
1000, 4097 and rows not a multiple of the block) under the hazard checker, against torch.

Regression for issue 27, bug 1: before mask_tails, `acc[i, j] = acc[i, j] + x[i, j] * x[i, j]`
over 64-column chunks carried the last chunk's stale columns into the sums (13 x 100: 41 %
relative error), and the column-sum analogue (13 rows in tiles of 8) was off by 5.9.
"""

from __future__ import annotations

import pytest
import torch

import tl_ascend as tilelang
import tl_ascend.language as T


@tilelang.jit(out_idx=[1])
def row_sum_of_squares(M: int, N: int, block_M: int = 8, block_N: int = 64):
    @T.prim_func
    def k(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), threads=1) as cid:
            x = T.alloc_shared((block_M, block_N), "float32")
            acc = T.alloc_fragment((block_M, block_N), "float32")
            s = T.alloc_fragment((block_M,), "float32")
            T.clear(acc)
            for c in T.serial(T.ceildiv(N, block_N)):
                T.copy(X[cid * block_M, c * block_N], x)
                for i, j in T.Parallel(block_M, block_N):
                    acc[i, j] = acc[i, j] + x[i, j] * x[i, j]
            T.reduce_sum(acc, s, dim=-1)
            T.copy(s, Y[cid * block_M])

    return k


@tilelang.jit(out_idx=[1])
def row_sum_abs_plus_one(M: int, N: int, block_M: int = 8, block_N: int = 64):
    """No fill makes `acc + |x| + 1` a no-op: the clipped chunk's update selects the old value."""

    @T.prim_func
    def k(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), threads=1) as cid:
            x = T.alloc_shared((block_M, block_N), "float32")
            acc = T.alloc_fragment((block_M, block_N), "float32")
            s = T.alloc_fragment((block_M,), "float32")
            T.clear(acc)
            for c in T.serial(T.ceildiv(N, block_N)):
                T.copy(X[cid * block_M, c * block_N], x)
                for i, j in T.Parallel(block_M, block_N):
                    acc[i, j] = acc[i, j] + T.abs(x[i, j]) + 1.0
            T.reduce_sum(acc, s, dim=-1)
            T.copy(s, Y[cid * block_M])

    return k


@tilelang.jit(out_idx=[1])
def column_sums(M: int, N: int, block_M: int = 8):
    @T.prim_func
    def k(X: T.Tensor((M, N), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=1) as cid:
            x = T.alloc_shared((block_M, N), "float32")
            acc = T.alloc_fragment((block_M, N), "float32")
            s = T.alloc_fragment((N,), "float32")
            T.clear(acc)
            for r in T.serial(T.ceildiv(M, block_M)):
                T.copy(X[r * block_M, 0], x)
                for i, j in T.Parallel(block_M, N):
                    acc[i, j] = acc[i, j] + x[i, j]
            T.reduce_sum(acc, s, dim=0)
            T.copy(s, Y)

    return k


@tilelang.jit(out_idx=[1], pass_configs={tilelang.PassConfigKey.TL_DEV_ALLOW_INEXACT_MATH: True})
def row_max_and_sum_exp(M: int, N: int, block_M: int = 8, block_N: int = 64):
    """Per row: max over chunks with an elementwise op, then sum(exp(x - max)) in a second pass:
    an accumulating tile op (identity -inf) and an element loop whose expression maps a zero
    fill to 1 (only a masked update is right there)."""

    @T.prim_func
    def k(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), threads=1) as cid:
            x = T.alloc_shared((block_M, block_N), "float32")
            m = T.alloc_fragment((block_M, block_N), "float32")
            mr = T.alloc_fragment((block_M,), "float32")
            acc = T.alloc_fragment((block_M, block_N), "float32")
            s = T.alloc_fragment((block_M,), "float32")
            T.tile.fill(m, -T.infinity("float32"))
            for c in T.serial(T.ceildiv(N, block_N)):
                T.copy(X[cid * block_M, c * block_N], x)
                T.tile.max(m, m, x)
            T.reduce_max(m, mr, dim=-1)
            T.clear(acc)
            for c in T.serial(T.ceildiv(N, block_N)):
                T.copy(X[cid * block_M, c * block_N], x)
                for i, j in T.Parallel(block_M, block_N):
                    acc[i, j] = acc[i, j] + T.exp(x[i, j] - mr[i])
            T.reduce_sum(acc, s, dim=-1)
            T.copy(s, Y[cid * block_M])

    return k


@tilelang.jit(out_idx=[1])
def padded_chunk_max(M: int, N: int, block_M: int = 8, block_N: int = 64):
    """The author's pad_value defines the tail: -inf past the tensor, then a plain max."""

    @T.prim_func
    def k(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), threads=1) as cid:
            x = T.alloc_shared((block_M, block_N), "float32")
            m = T.alloc_fragment((block_M, block_N), "float32")
            s = T.alloc_fragment((block_M,), "float32")
            T.tile.fill(m, -T.infinity("float32"))
            for c in T.serial(T.ceildiv(N, block_N)):
                T.copy(X[cid * block_M, c * block_N], x, pad_value=float("-inf"))
                for i, j in T.Parallel(block_M, block_N):
                    m[i, j] = T.max(m[i, j], x[i, j])
            T.reduce_max(m, s, dim=-1)
            T.copy(s, Y[cid * block_M])

    return k


SHAPES = [(1, 1), (7, 7), (13, 33), (13, 100), (9, 1000), (3, 4097)]


@pytest.mark.parametrize("M,N", SHAPES)
def test_chunked_row_sum_of_squares_reads_no_stale_column(M: int, N: int) -> None:
    torch.manual_seed(M * 7919 + N)
    x = torch.randn(M, N)
    y = row_sum_of_squares(M, N).run(x, check_hazards=True)
    ref = (x.double() ** 2).sum(-1)
    torch.testing.assert_close(y.double(), ref, rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("M,N", SHAPES)
def test_an_update_no_fill_neutralises_is_masked_on_tails(M: int, N: int) -> None:
    torch.manual_seed(5 * M + N)
    x = torch.randn(M, N)
    y = row_sum_abs_plus_one(M, N).run(x, check_hazards=True)
    ref = (x.double().abs() + 1.0).sum(-1)
    torch.testing.assert_close(y.double(), ref, rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("M,N", [(1, 64), (7, 64), (13, 64), (33, 128), (1000, 32)])
def test_column_sums_over_a_tail_block_read_no_stale_row(M: int, N: int) -> None:
    torch.manual_seed(M + N)
    x = torch.randn(M, N)
    y = column_sums(M, N).run(x, check_hazards=True)
    torch.testing.assert_close(y.double(), x.double().sum(0), rtol=1e-5, atol=1e-6 * M)


@pytest.mark.parametrize("M,N", SHAPES)
def test_max_then_sum_of_exponentials_over_tails(M: int, N: int) -> None:
    torch.manual_seed(3 * M + N)
    x = torch.randn(M, N)
    y = row_max_and_sum_exp(M, N).run(x, check_hazards=True)
    xd = x.double()
    ref = torch.exp(xd - xd.max(-1, keepdim=True).values).sum(-1)
    torch.testing.assert_close(y.double(), ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("M,N", [(7, 7), (13, 100), (3, 4097)])
def test_pad_value_defines_the_tail(M: int, N: int) -> None:
    torch.manual_seed(M * N)
    x = -torch.rand(M, N) - 1.0  # all negative: a stale or zero tail would win the max
    y = padded_chunk_max(M, N).run(x, check_hazards=True)
    torch.testing.assert_close(y, x.max(-1).values)


def test_a_masked_accumulation_runs_in_timed_mode_with_the_program_order_result() -> None:
    torch.manual_seed(1)
    x = torch.randn(13, 100)
    kern = row_sum_of_squares(13, 100)
    fast = kern.run(x)
    timed = kern.run(x, mode="timed", check_hazards=True)
    assert torch.equal(fast, timed)


def test_switching_mask_tails_off_brings_the_stale_columns_back() -> None:
    # With the pass off the bug is back: the option is what the fix hangs on. The stale-data
    # checker names it (the stored sums come from the clipped copy's stale columns); with the
    # checker off the wrong sums come out.
    torch.manual_seed(0)
    x = torch.randn(13, 100)
    off = tilelang.compile(row_sum_of_squares(13, 100).func, out_idx=[1],
                           pass_configs={tilelang.PassConfigKey.TL_DEV_MASK_TAILS: False})
    with pytest.raises(tilelang.Error, match=r"into 'Y'.*stale since the clipped copy at \S*test_tails\.py:30 "):
        off.run(x, check_stale=True)
    y = off.run(x, check_stale=False)
    ref = (x.double() ** 2).sum(-1)
    assert ((y.double() - ref).abs() / ref).max().item() > 0.05


@tilelang.jit(out_idx=[1])
def clamp_gradient_mask(M: int, N: int, block_M: int = 16):
    """A compare's bitmask and the select it drives pair with the tile's rows: the tail tile's rows
    past M stay known (stale in rows only), so the store of the select's result stays clipped."""

    @T.prim_func
    def k(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), threads=2) as cid:
            x = T.alloc_shared((block_M, N), "float32")
            m = T.alloc_shared((block_M, N // 8), "uint8")
            T.copy(X[cid * block_M, 0], x)
            T.tile.compare(m, x, 0.5, "LE")
            T.tile.mul(x, x, 3.0)
            T.tile.select(x, m, x, 0.0, mode=1)
            T.copy(x, Y[cid * block_M, 0])

    return k


@pytest.mark.parametrize("M", [1, 7, 33, 1000])
def test_compare_and_select_on_a_tail_tile_keep_its_rows(M: int) -> None:
    torch.manual_seed(M)
    x = torch.randn(M, 64)
    y = clamp_gradient_mask(M, 64).run(x, check_hazards=True, check_stale=True)
    torch.testing.assert_close(y, torch.where(x <= 0.5, 3.0 * x, torch.zeros_like(x)))
