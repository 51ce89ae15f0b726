"""TileLang-Ascend scripts that computed the right figures but that the hazard checker rejected
(issue 29, `run_tla_examples.py --check-hazards`), in TileLang-Ascend syntax, against torch.

* A vector kernel (`as (cid, vid)`, `TL_ASCEND_AUTO_CV_COMBINE`) that never reads vid computes
  the same on both AIVs. TileLang-Ascend launches it on both and each stores the same bytes; when
  that is provably so (no atomic op, no GM tensor both read and written, no cross-core flag)
  tl-ascend runs it on AIV 0 alone, which leaves GM as the chip leaves it, and the checker is
  quiet. Before: "hazard check of kernel main: 1 unordered access pair(s)", a WAW on GM between
  AIV0's and AIV1's store (activation/sigmoidv2.py). A body whose two copies would really race
  (an in-place update of a GM tensor) still runs on both AIVs and stays reported.
* `T.Persistent(domain, num_workers, cid)` in a kernel launching more blocks than num_workers:
  block b >= num_workers takes tile b, which block b - num_workers takes again in its second
  wave, and both store it unordered (gemm/example_gemm_persistent.py: 32 blocks, 24 workers).
  Both store the same bytes, so the chip's result is right whichever lands last: a remark at
  T.Persistent's line (the work is done twice) and the hazard checker's duplicate-store remarks
  (docs/virtual_npu.md, "Duplicate stores"). Before: a compile-time error (and earlier, "WAW
  hazard on GM" at the store).
Every kernel runs with check_hazards=True (and the suite's TL_CHECK_STALE=1), tails included.
"""

import re

import pytest
import torch

import tl_ascend as tilelang
import tl_ascend.language as T

TAILS = (1, 7, 33, 1000, 4097)
AUTO = {tilelang.PassConfigKey.TL_ASCEND_AUTO_CV_COMBINE: True,
        tilelang.PassConfigKey.TL_ASCEND_AUTO_SYNC: True,
        tilelang.PassConfigKey.TL_ASCEND_MEMORY_PLANNING: True}


@tilelang.jit(out_idx=[1], pass_configs=AUTO, check_hazards=True)
def abs_affine(M: int, N: int, block_M: int, dtype: str = "float32"):
    """y = 2 |x| + 1 by blocks of rows; vid is bound but never read, so both AIVs of a block
    would move the same rows."""

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), is_npu=True) as (cid, vid):
            x = T.alloc_ub((block_M, N), dtype)
            y = T.alloc_ub((block_M, N), dtype)
            T.copy(X[cid * block_M, 0], x)
            T.tile.abs(y, x)
            T.tile.mul(y, y, 2.0)
            T.tile.add(y, y, 1.0)
            T.copy(y, Y[cid * block_M, 0])

    return main


@pytest.mark.parametrize("M", (8,) + TAILS)
def test_a_vector_kernel_that_never_reads_vid_stores_once(M: int) -> None:
    # Before: tl_ascend.Error "1 unordered access pair(s)": WAW on GM, copy (MTE3, block 0 AIV1)
    # not ordered after copy (MTE3, block 0 AIV0), the same rows of Y.
    torch.manual_seed(M)
    x = torch.randn(M, 64)
    torch.testing.assert_close(abs_affine(M, 64, 8)(x), 2 * x.abs() + 1)


@tilelang.jit(pass_configs=AUTO, check_hazards=True)
def bump_in_place(M: int, N: int, dtype: str = "float32"):
    """X += 1 in place, vid never read: the two AIVs' read-modify-writes of X race on the chip
    (each may read what the other already stored), so both still run it."""

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype)):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            x = T.alloc_ub((M, N), dtype)
            T.copy(X[0, 0], x)
            T.tile.add(x, x, 1.0)
            T.copy(x, X[0, 0])

    return main


def test_an_in_place_update_without_vid_stays_a_reported_race() -> None:
    x = torch.zeros(8, 64)
    with pytest.raises(tilelang.Error, match=r"unordered access pair.*\n.*X"):
        bump_in_place(8, 64)(x)


def scaled_rows(M: int, N: int, R: int, tiles: int, auto_sync: bool):
    """Y = 3 X through one UB tile reused by `tiles` row tiles per block, each AIV on its half of
    the columns, the author's barriers as TileLang-Ascend's MoE scripts write them: barrier_all
    after each copy in, pipe_barrier("mte3") after each copy out. That pipe_barrier orders MTE3
    only, so the next tile's MTE2 copy into `buf` may overwrite it while the copy out still reads
    it: TileLang-Ascend's auto sync (TL_ASCEND_AUTO_SYNC) adds the missing order over the
    author's barriers."""
    cfg = dict(AUTO) if auto_sync else {tilelang.PassConfigKey.TL_ASCEND_MEMORY_PLANNING: True}
    half = N // 2

    @tilelang.jit(out_idx=[1], pass_configs=cfg, check_hazards=True)
    def build(M: int, N: int, R: int, tiles: int, dtype: str = "float32"):
        @T.prim_func
        def main(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
            with T.Kernel(T.ceildiv(M, R * tiles), is_npu=True) as (cid, vid):
                buf = T.alloc_ub((R, half), dtype)
                with T.Scope("V"):
                    for t in T.serial(tiles):
                        row = (cid * tiles + t) * R
                        T.copy(X[row, vid * half], buf)
                        T.barrier_all()
                        T.tile.mul(buf, buf, 3.0)
                        T.barrier_all()
                        T.copy(buf, Y[row, vid * half])
                        T.pipe_barrier("mte3")

        return main

    return build(M, N, R, tiles)


@pytest.mark.parametrize("M", (32,) + TAILS)
def test_auto_sync_orders_what_the_authors_barriers_leave_unordered(M: int) -> None:
    # Before: tl_ascend.Error "1 unordered access pair(s)": WAR on UB, copy (MTE2) writes buf
    # not ordered after copy (MTE3) reads buf (moe_token_unpermute.py:419 and :427): a scope with
    # any sync of its author's got none of the compiler's.
    torch.manual_seed(M)
    x = torch.randn(M, 64)
    torch.testing.assert_close(scaled_rows(M, 64, 4, 4, auto_sync=True)(x), 3 * x)


def test_without_auto_sync_the_authors_barriers_stay_a_reported_race() -> None:
    x = torch.randn(32, 64)
    with pytest.raises(tilelang.Error, match=r"WAR hazard on UB.*\n.*is not ordered after copy \(MTE3"):
        scaled_rows(32, 64, 4, 4, auto_sync=False)(x)


def persistent_plus_one(M: int, blocks: int, workers: int):
    """Y = X + 1 by 8-row tiles dealt by T.Persistent; each AIV on half the columns."""

    @tilelang.jit(out_idx=[1], pass_configs=AUTO, check_hazards=True)
    def build(M: int, blocks: int, workers: int, dtype: str = "float32"):
        @T.prim_func
        def main(X: T.Tensor((M, 64), dtype), Y: T.Tensor((M, 64), dtype)):
            with T.Kernel(blocks, is_npu=True) as (cid, vid):
                buf = T.alloc_ub((8, 32), dtype)
                with T.Scope("V"):
                    for (t,) in T.Persistent([T.ceildiv(M, 8)], workers, cid):
                        T.copy(X[t * 8, vid * 32], buf)
                        T.tile.add(buf, buf, 1.0)
                        T.copy(buf, Y[t * 8, vid * 32])

        return main

    return build(M, blocks, workers)


@pytest.mark.parametrize("M", (64,) + TAILS)
def test_persistent_with_as_many_blocks_as_workers(M: int) -> None:
    torch.manual_seed(M)
    x = torch.randn(M, 64)
    torch.testing.assert_close(persistent_plus_one(M, 3, 3)(x), x + 1)


@pytest.mark.parametrize("M", (64, 33, 1000, 4097))
def test_persistent_over_more_blocks_than_workers_stores_tiles_twice_with_remarks(M: int, capfd) -> None:
    # Before: "T.Persistent: num_workers is 3 but the kernel launches 5 blocks ..." a compile-time
    # error, though blocks 3 and 4 store the same bytes as blocks 0 and 1 in their second wave.
    torch.manual_seed(M)
    x = torch.randn(M, 64)
    torch.testing.assert_close(persistent_plus_one(M, 5, 3)(x), x + 1)  # check_hazards=True
    err = capfd.readouterr().err
    assert re.search(r"test_tla_hazards.py:\d+: remark: T.Persistent: num_workers is 3 but the kernel launches "
                     r"5 blocks and worker is cid: blocks 3 to 4 take tiles 3 to 4", err), err
    assert "remark: hazard checker: duplicate store on GM: copy (MTE3, block 3 AIV0) writes Y" in err, err
