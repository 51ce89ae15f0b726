"""T.tile.broadcast from a source with leading unit dimensions, in TileLang-Ascend syntax (issue 29).

TileLang-Ascend's flash-attention scripts keep per-row statistics in a [2, rows, 1] UB buffer and
broadcast one slot of it across a tile: `T.tile.broadcast(buf_2d, neg_sm[0, :, :])`, a
[1, rows, 1] source into a [rows, cols] destination; they also broadcast a [1, 1, cols] row. The
verifier accepted both (it reads the source after dropping leading unit dimensions) but the
simulator did not: the launch stopped with "T.tile.broadcast: 'src' has rank 3, 'dst' rank 2".
The rule now lives in one place (tl/shape_rules.h, broadcast_source_skip) that the simulator's
semantics and the stale-data checker's rule both read (src/npu/broadcast_rows.h).

Each kernel runs on the virtual NPU with the hazard checker (and the stale-data checker) on,
against a torch reference living only here, on row tails (1, 7, 33, 1000 rows: not a multiple of
the block) and column counts that are and are not a multiple of eight.
"""

import pytest
import torch

import tl_ascend as tilelang
import tl_ascend.language as T

SYNC = {tilelang.PassConfigKey.TL_ASCEND_AUTO_SYNC: True,
        tilelang.PassConfigKey.TL_ASCEND_MEMORY_PLANNING: True}


def centre_rows(M: int, N: int, block_M: int = 16):
    """Y = X - rowmax(X) + rowsum(X) + C: the row statistics live in slots 0 and 1 of a
    [2, half, 1] buffer and are broadcast one slot at a time ([1, half, 1] sources; slot 1 checks
    that the region's start is honoured), and C ([1, N] in GM) is broadcast from a [1, 1, N]
    buffer."""
    half = block_M // 2

    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), C: T.Tensor((1, N), "float32"), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), is_npu=True) as (cid, vid):
            x = T.alloc_ub((half, N), "float32")
            row = T.alloc_ub((half, N), "float32")
            stat = T.alloc_ub((2, half, 1), "float32")
            c = T.alloc_ub((1, 1, N), "float32")
            with T.Scope("V"):
                T.copy(X[cid * block_M + vid * half, 0], x)
                T.copy(C[0, 0], c[0, :, :])
                T.reduce_max(x, stat[0, :, :], dim=-1)
                T.reduce_sum(x, stat[1, :, :], dim=-1)
                T.tile.broadcast(row, stat[0, :, :])
                T.tile.sub(x, x, row)
                T.tile.broadcast(row, stat[1, :, :])
                T.tile.add(x, x, row)
                T.tile.broadcast(row, c)
                T.tile.add(x, x, row)
                T.copy(x, Y[cid * block_M + vid * half, 0])

    return main


@pytest.mark.parametrize("M", (1, 7, 16, 33, 1000))
@pytest.mark.parametrize("N", (8, 40))
def test_a_source_with_leading_unit_dims_broadcasts_across_rows(M: int, N: int) -> None:
    torch.manual_seed(M * 100 + N)
    x = torch.randn(M, N)
    c = torch.randn(1, N)
    kernel = tilelang.compile(centre_rows(M, N), out_idx=[2], pass_configs=SYNC, check_hazards=True)
    y = kernel(x, c)
    ref = (x.double() - x.double().amax(dim=1, keepdim=True) + x.double().sum(dim=1, keepdim=True)
           + c.double()).float()
    torch.testing.assert_close(y, ref, rtol=1e-5, atol=1e-4)


def test_a_source_of_higher_rank_without_unit_leading_dims_is_an_error() -> None:
    """The whole [2, half, 1] buffer has no leading unit dimension to drop: it cannot broadcast
    into a [half, N] tile, and the verifier says so at the broadcast's line."""
    half, N = 8, 16

    @T.prim_func
    def main(X: T.Tensor((16, N), "float32"), Y: T.Tensor((16, N), "float32")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            x = T.alloc_ub((half, N), "float32")
            stat = T.alloc_ub((2, half, 1), "float32")
            with T.Scope("V"):
                T.copy(X[vid * half, 0], x)
                T.reduce_max(x, stat[0, :, :], dim=-1)
                T.tile.broadcast(x, stat)
                T.copy(x, Y[vid * half, 0])

    with pytest.raises(tilelang.Error, match=r"cannot broadcast \[2, 8, 1\] to \[8, 16\]"):
        tilelang.compile(main, out_idx=[1], pass_configs=SYNC)
