"""The index lanes of sort / top-k results, read the way TileLang-Ascend's scripts read them.

TileLang-Ascend's top-k selector and lightning indexer extract the index lanes of
`T.tile.topk`'s (value, index) pairs with `T.tile.gather_mask(..., "P1010")` into a float
buffer and convert them with `T.tile.cast(..., "CAST_ROUND", k)`. On the chip that gives the
positions, because TileLang-Ascend's Sort feeds Sort32 indices made by
ArithProgression<float> (0.0, 1.0, 2.0, ...): the index lanes hold floats.

Regression (issue 27, item 3): tl-ascend stored the uint32 position there instead, so the
float -> int32 cast read denormals (i * 2^-149) and every index came out 0; on the code before
the fix `test_topk_selector_indices_match_torch` got 0 for all 64 x 128 indices of the float32
case (and the float16 index lanes, 4 bytes into 8-byte entries, failed the verifier's
sort-buffer-size rule). The kernel below is written in TileLang-Ascend's syntax (expert mode,
explicit flags, their `T.tile.*` names and element counts).
"""

import pytest
import torch

import tl_ascend as tilelang
from tl_ascend import language as T


@tilelang.jit(out_idx=[-1])
def topk_selector(B: int, N: int, top_k: int, block_N: int, dtype: str = "float32"):
    VEC_NUM = 2
    INDEX_DTYPE = "int32"
    b_num = T.ceildiv(B, VEC_NUM)
    n_num = T.ceildiv(N, block_N)

    @T.prim_func
    def main(
        x: T.Tensor([B, N], dtype),  # type: ignore
        indices: T.Tensor([B, top_k], INDEX_DTYPE),  # type: ignore
    ):
        with T.Kernel(b_num, is_npu=True) as (cid, vid):
            row_id = (cid * VEC_NUM + vid) % B  # one v-core for one row

            score_accum = T.alloc_ub([N], dtype)
            topk_dst = T.alloc_ub([2 * top_k], dtype)
            topk_index = T.alloc_ub([top_k], dtype)
            output_index = T.alloc_ub([top_k], INDEX_DTYPE)

            with T.Scope("V"):
                for bn in T.serial(n_num):
                    T.copy(x[row_id, bn * block_N : (bn + 1) * block_N], score_accum[bn * block_N : (bn + 1) * block_N])
                T.set_flag("mte2", "v", 0)
                T.wait_flag("mte2", "v", 0)

                # Sort all N elements and extract top_k
                T.tile.topk(topk_dst, score_accum, top_k, N)
                T.pipe_barrier("v")
                T.tile.gather_mask(topk_index, topk_dst, "P1010")  # [value, idx] => [idx]
                T.pipe_barrier("v")
                T.tile.cast(output_index, topk_index, "CAST_ROUND", top_k)

                T.set_flag("v", "mte3", 0)
                T.wait_flag("v", "mte3", 0)
                T.copy(output_index, indices[row_id, 0:top_k])

    return main


def reference_topk(x: torch.Tensor, k: int) -> torch.Tensor:
    """torch.topk's values in order, ties to the smaller index (a stable descending sort)."""
    order = torch.sort(x.float(), dim=-1, descending=True, stable=True).indices[:, :k]
    values = torch.topk(x.float(), k, dim=-1).values
    assert torch.equal(torch.gather(x.float(), 1, order), values)  # the same top-k as torch.topk
    return order.to(torch.int32)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_topk_selector_indices_match_torch(dtype: str) -> None:
    B, N, top_k = 64, 512, 128
    torch.manual_seed(0)
    # Scores with many ties (small integers and halves) and some distinct ones.
    x = (torch.randint(-8, 8, (B, N)).float() / 2).to(getattr(torch, dtype))
    x[:, ::7] = torch.randn(B, (N + 6) // 7).to(x.dtype)
    got = topk_selector(B, N, top_k, N // 4, dtype)(x)
    want = reference_topk(x, top_k)
    assert got.dtype == torch.int32
    bad = (got != want).nonzero()
    assert bad.numel() == 0, (
        f"{bad.shape[0]} of {B * top_k} indices differ; first at {bad[0].tolist()}: "
        f"got {got[tuple(bad[0])].item()}, want {want[tuple(bad[0])].item()}"
    )


def test_topk_selector_a_row_of_equal_scores_keeps_source_order() -> None:
    B, N, top_k = 2, 256, 64
    x = torch.zeros(B, N, dtype=torch.float32)
    got = topk_selector(B, N, top_k, 64)(x)
    assert torch.equal(got, torch.arange(top_k, dtype=torch.int32).expand(B, top_k))


@tilelang.jit(out_idx=[-1])
def sort_then_merge(N: int, dtype: str = "float32"):
    HALF = N // 2

    @T.prim_func
    def main(x: T.Tensor([N], dtype), out: T.Tensor([2 * N], dtype)):  # type: ignore
        with T.Kernel(1, is_npu=True) as (cid, vid):
            s = T.alloc_ub([N], dtype)
            q0 = T.alloc_ub([N], dtype)
            q1 = T.alloc_ub([N], dtype)
            merged = T.alloc_ub([2 * N], dtype)
            with T.Scope("V"):
                T.copy(x[0:N], s)
                T.set_flag("mte2", "v", 0)
                T.wait_flag("mte2", "v", 0)
                T.tile.sort(q0, s[0:HALF], HALF)
                T.tile.sort(q1, s[HALF:N], HALF)
                T.pipe_barrier("v")
                T.tile.merge_sort(merged, q0, q1)
                T.set_flag("v", "mte3", 0)
                T.wait_flag("v", "mte3", 0)
                T.copy(merged, out[0:2 * N])

    return main


def test_sort_and_merge_sort_pairs_hold_float_index_lanes() -> None:
    N = 128
    torch.manual_seed(1)
    x = torch.randn(N)
    pairs = sort_then_merge(N)(x).view(N, 2)
    # Each half numbers its positions from 0 (as TileLang-Ascend's merge example builds its
    # queues), as floats; the merge orders by score, ties by queue.
    halves = torch.cat([torch.arange(N // 2), torch.arange(N // 2)]).float()
    values = torch.sort(x, descending=True, stable=True)
    assert torch.equal(pairs[:, 0], values.values)
    assert torch.equal(pairs[:, 1], halves[values.indices])


def test_merge_sort_of_float16_queues_is_an_error() -> None:
    # MrgSort reads 8-byte entries whatever the score type; float16 pairs are 4 bytes, so the
    # chip would read each queue twice as far. tl-ascend refuses instead of computing that.
    with pytest.raises(tilelang.Error, match=r"merge_sort on A2 takes \{float32\}, got float16"):
        sort_then_merge(128, "float16")
