"""A UB tile filled row by row in a loop, in TileLang-Ascend syntax, against torch (issue 29).

deepseek_v4/sparse_attention.py gathers its kv tile one row per iteration: the indexed kv row,
or a zero row where the index is -1 (an if whose both branches write `kv_ub[b_i, :]`). That loop
overwrites the whole tile before anything reads it, so the tile's previous contents are dead
before the loop and a scratch tile used earlier in the iteration may share its bytes. Before,
only a fill loop without an if counted as a whole write; the tile stayed live across the outer
loop and UB overflowed ("UB needs 198,272 bytes, capacity 196,352"). Here three 64 KiB fp32 tiles
fit A2's UB only so (src/pass/liveness.h). A fill that skips rows (no else) still keeps the tile
live: the overflow stays an error. Every kernel runs under the hazard checker, on tails of the
index count and of the table.
"""

import pytest
import torch

import tl_ascend as tilelang
import tl_ascend.language as T

AUTO = {tilelang.PassConfigKey.TL_ASCEND_AUTO_CV_COMBINE: True,
        tilelang.PassConfigKey.TL_ASCEND_AUTO_SYNC: True,
        tilelang.PassConfigKey.TL_ASCEND_MEMORY_PLANNING: True}
R, D = 64, 256  # rows per index tile, row width: 64 KiB per fp32 tile


def gather_decay(B: int, n: int, topk: int, with_else: bool = True):
    """Out[b] = sum over index tiles t of 1.5^(tiles - 1 - t) * rows_t, rows_t[i] = KV[idx] for
    the t-th tile of Idx[b] (a zero row where the index is -1 or past topk)."""
    tiles = (topk + R - 1) // R

    @tilelang.jit(out_idx=[2], pass_configs=AUTO, check_hazards=True)
    def build(B: int, n: int, topk: int, with_else: bool, dtype: str = "float32"):
        @T.prim_func
        def main(KV: T.Tensor((n, D), dtype), Idx: T.Tensor((B, topk), "int32"),
                 Out: T.Tensor((B, R, D), dtype)):
            with T.Kernel(B, is_npu=True) as (cid, vid):
                acc = T.alloc_ub((R, D), dtype)
                s = T.alloc_ub((R, D), dtype)
                rows = T.alloc_ub((R, D), dtype)
                zero = T.alloc_ub((D,), dtype)
                idx = T.alloc_ub((R,), "int32")
                T.tile.fill(acc, 0.0)
                T.tile.fill(zero, 0.0)
                for t in T.serial(tiles):
                    T.tile.mul(s, acc, 0.5)  # a scratch tile, dead before the fill below
                    T.tile.add(acc, acc, s)
                    T.copy(Idx[cid, t * R:t * R + R], idx)
                    for i in T.serial(R):
                        if t * R + i >= topk:
                            idx[i] = -1
                    for i in T.serial(R):
                        j = idx[i]
                        if with_else:
                            if j != -1:
                                T.copy(KV[j, :], rows[i, :])
                            else:
                                T.copy(zero, rows[i, :])
                        else:
                            if j != -1:
                                T.copy(KV[j, :], rows[i, :])
                    T.tile.add(acc, acc, rows)
                T.copy(acc, Out[cid, :, :])

        return main

    return build(B, n, topk, with_else)


def reference(kv: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    B, topk = idx.shape
    tiles = (topk + R - 1) // R
    out = torch.zeros(B, R, D, dtype=torch.float64)
    for b in range(B):
        for t in range(tiles):
            rows = torch.zeros(R, D, dtype=torch.float64)
            for i in range(R):
                k = t * R + i
                if k < topk and idx[b, k] != -1:
                    rows[i] = kv[idx[b, k]].double()
            out[b] = out[b] * 1.5 + rows
    return out.float()


@pytest.mark.parametrize("n,topk", [(1, 1), (7, 7), (33, 33), (1000, 100), (4097, 65)])
def test_a_row_fill_in_both_branches_of_an_if_frees_the_tile_before_the_loop(n: int, topk: int) -> None:
    torch.manual_seed(n + topk)
    B = 2
    kv = torch.randn(n, D)
    idx = torch.randint(0, n, (B, topk), dtype=torch.int32)
    idx[torch.rand(B, topk) < 0.3] = -1  # the gather's invalid entries
    torch.testing.assert_close(gather_decay(B, n, topk)(kv, idx), reference(kv, idx))


def test_a_row_fill_that_skips_rows_keeps_the_tile_live() -> None:
    # Without the else a row whose index is -1 keeps the previous tile's value: the tile holds a
    # value across iterations, and the three tiles do not fit.
    kv = torch.randn(7, D)
    idx = torch.zeros(1, 7, dtype=torch.int32)
    with pytest.raises(tilelang.Error, match=r"UB needs [0-9,]+ bytes, capacity 196,608"):
        gather_decay(1, 7, 7, with_else=False)(kv, idx)
