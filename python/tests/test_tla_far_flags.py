"""Flags with event ids past 7 under TileLang-Ascend's targets "pto" and "ascendc" (issue 29:
moe_token_permute.py, moe_token_permute_grad.py, bench_sfa).

AscendC's SetFlag/WaitFlag take event ids 0-7 on A2/A3 (hiascend.com, ascendcopapi
atlasascendc_api_07_0270). TileLang-Ascend's pto code generator emits flags through a helper that
does nothing for an id outside 0-7, so moe_token_permute.py's MTE2 -> MTE3 flags `cur + 10` order
nothing on the chip. Before, tl-ascend refused the script ("expected an event id in [0, 8) on A2,
got 10"). Now, under target "pto", the flags of such a pipe pair keep their ordering on ids the
pair does not use, with a remark; the hazard checker shows that dropping them would race. The
ascendc code generator (TileLang-Ascend's default) passes such an id to AscendC's SetFlag, outside
its range: the same applies. With every id of the pair taken, a far set_flag waited for at once
takes the id of its low three bits (checked at run time). Under tl-ascend's own targets, or with
no id found, the id stays an error. The kernels are written
in TileLang-Ascend's syntax; the reference is torch.
"""

from typing import Any

import pytest
import torch

import tl_ascend as tilelang
import tl_ascend.language as T

# A double-buffered row copy as moe_token_permute.py writes it: MTE2 loads row i + 1 into one
# slot while MTE3 stores row i from the other; MTE3 -> MTE2 flags free a slot, MTE2 -> MTE3
# flags `slot + far` say a slot is loaded. Each AIV takes half of each row. `far=None` leaves the
# MTE2 -> MTE3 flags out (what TileLang-Ascend's pto target makes of ids past 7); `near` adds a
# flag pair of MTE2 -> MTE3 on that id before the loop.


def row_copy(N: int, H: int, dtype: str, target: str, far: Any = 10, near: Any = None,
             blocks: int = 4) -> Any:
    per = (N + blocks - 1) // blocks
    half = H // 2

    @tilelang.jit(out_idx=[1], target=target, check_hazards=True)
    def build():
        @T.prim_func
        def main(x: T.Tensor((N, H), dtype), y: T.Tensor((N, H), dtype)):
            with T.Kernel(blocks, is_npu=True) as (cid, vid):
                buf = T.alloc_ub((2, half), dtype)
                with T.Scope("V"):
                    r0 = cid * per
                    h = vid * half
                    if near is not None:
                        T.set_flag("mte2", "mte3", near)
                        T.wait_flag("mte2", "mte3", near)
                    T.set_flag("mte3", "mte2", 0)
                    T.set_flag("mte3", "mte2", 1)
                    T.wait_flag("mte3", "mte2", 0)
                    if r0 < N:
                        T.copy(x[r0, h], buf[0, :])
                    if far is not None:
                        T.set_flag("mte2", "mte3", far)
                    for i in T.serial(per):
                        cur = i % 2
                        nxt = (i + 1) % 2
                        if i + 1 < per:
                            T.wait_flag("mte3", "mte2", nxt)
                            if r0 + i + 1 < N:
                                T.copy(x[r0 + i + 1, h], buf[nxt, :])
                            if far is not None:
                                T.set_flag("mte2", "mte3", nxt + far)
                        if far is not None:
                            T.wait_flag("mte2", "mte3", cur + far)
                        if r0 + i < N:
                            T.copy(buf[cur, :], y[r0 + i, h])
                        T.set_flag("mte3", "mte2", cur)
                    T.wait_flag("mte3", "mte2", 0)
                    T.wait_flag("mte3", "mte2", 1)

        return main

    return build()


TORCH = {"float16": torch.float16, "float32": torch.float32, "bfloat16": torch.bfloat16}


@pytest.mark.parametrize("N", [1, 7, 33, 1000])
@pytest.mark.parametrize("dtype,H", [("float16", 64), ("float32", 128), ("bfloat16", 32)])
def test_far_ids_keep_their_order_under_pto(N: int, dtype: str, H: int, capfd: Any) -> None:
    kernel = row_copy(N, H, dtype, "pto")
    x = torch.randn(N, H).to(TORCH[dtype])
    y = kernel(x)  # the hazard checker is on: an unordered pair would raise
    torch.testing.assert_close(y, x, rtol=0, atol=0)
    err = capfd.readouterr().err
    assert "remark: far_flag_ids: MTE2 -> MTE3 flags use event ids 10-11" in err, err
    assert "keeps the ordering on ids 0-1" in err, err


def test_dropping_far_flags_would_race() -> None:
    # What the chip runs under TileLang-Ascend's pto target: the same kernel without its
    # MTE2 -> MTE3 flags. The checker reports MTE3's store reading a slot MTE2 may still load.
    kernel = row_copy(33, 64, "float16", "pto", far=None)
    x = torch.randn(33, 64).half()
    with pytest.raises(tilelang.Error, match=r"RAW hazard on UB of block 0 AIV0: copy \(MTE3"):
        kernel(x)


def test_moved_ids_avoid_the_pairs_own(capfd: Any) -> None:
    # The pair also uses id 0 by hand: ids 10-11 move to 1-2, never onto the author's 0.
    kernel = row_copy(7, 64, "float16", "pto", near=0)
    x = torch.randn(7, 64).half()
    torch.testing.assert_close(kernel(x), x, rtol=0, atol=0)
    flags = [line.strip().split("  #")[0] for line in kernel.get_tile_ir().splitlines()
             if '"MTE2", "MTE3"' in line]
    assert flags == ['T.set_flag("MTE2", "MTE3", 0)', 'T.wait_flag("MTE2", "MTE3", 0)',
                     'T.set_flag("MTE2", "MTE3", 1)', 'T.set_flag("MTE2", "MTE3", nxt + 1)',
                     'T.wait_flag("MTE2", "MTE3", cur + 1)'], flags
    assert "keeps the ordering on ids 1-2" in capfd.readouterr().err


@pytest.mark.parametrize("target", ["A2", None])
def test_far_ids_stay_errors_under_tl_ascends_own_targets(target: Any) -> None:
    # No TileLang-Ascend code generator is involved (None: the alias is not installed here).
    with pytest.raises(tilelang.Error, match=r"expected an event id in \[0, 8\) on A2, got 10"):
        row_copy(7, 64, "float16", target)


@pytest.mark.parametrize("target", ["ascendc", "auto"])
@pytest.mark.parametrize("N", [1, 33, 1000])
def test_far_ids_keep_their_order_under_ascendc(target: str, N: int, capfd: Any) -> None:
    # TileLang-Ascend's ascendc code generator (its default, "auto") passes the id to AscendC's
    # SetFlag, which takes 0-7 (bench_sfa's V -> MTE3 id 9). Before: "expected an event id in
    # [0, 8) on A2, got 10".
    kernel = row_copy(N, 64, "float16", target)
    x = torch.randn(N, 64).half()
    torch.testing.assert_close(kernel(x), x, rtol=0, atol=0)  # hazard checker on
    err = capfd.readouterr().err
    assert "remark: far_flag_ids: MTE2 -> MTE3 flags use event ids 10-11" in err, err
    assert "ascendc target passes the id to AscendC SetFlag/WaitFlag unchanged" in err, err
    assert "keeps the ordering on ids 0-1" in err, err


def all_ids_taken(far_between: bool, pending_low_id: bool = False):
    """Every MTE2 -> MTE3 id 0-7 used by a loop of set/wait pairs, then a far flag 10 ordering a
    store after a load (moe_token_permute_grad.py's MTE2 -> V id 10 after its eight stages).
    far_between: an instruction between the far set and its wait. pending_low_id: id 2 (10's
    low three bits) is still set at the far flag."""

    @T.prim_func
    def main(x: T.Tensor((1, 16), "float16"), y: T.Tensor((1, 16), "float16")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            t = T.alloc_ub((1, 16), "float16")
            u = T.alloc_ub((1, 16), "float16")
            with T.Scope("V"):
                for e in T.serial(8):
                    T.set_flag("mte2", "mte3", e)
                    T.wait_flag("mte2", "mte3", e)
                if pending_low_id:
                    T.set_flag("mte2", "mte3", 2)
                T.copy(x, t)
                if far_between:
                    T.set_flag("mte2", "mte3", 10)
                    T.copy(x, u)
                    T.wait_flag("mte2", "mte3", 10)
                else:
                    T.set_flag("mte2", "mte3", 10)
                    T.wait_flag("mte2", "mte3", 10)
                if pending_low_id:
                    T.wait_flag("mte2", "mte3", 2)
                T.copy(t, y)

    return main


@pytest.mark.parametrize("target", ["pto", "ascendc"])
def test_a_far_flag_waited_at_once_takes_its_low_bits_when_every_id_is_taken(target: str, capfd: Any) -> None:
    # Before: "expected an event id in [0, 8) on A2, got 10" (moe_token_permute_grad.py).
    kernel = tilelang.compile(all_ids_taken(far_between=False), out_idx=[1], target=target, check_hazards=True)
    x = torch.randn(1, 16).half()
    torch.testing.assert_close(kernel(x), x, rtol=0, atol=0)
    err = capfd.readouterr().err
    assert "remark: far_flag_ids: MTE2 -> MTE3 flags use event id 10" in err, err
    assert "issues it on the id of its low three bits (id 2)" in err, err
    assert 'T.set_flag("MTE2", "MTE3", 2)' in kernel.get_tile_ir()


def test_a_low_bits_id_still_set_there_stops_the_launch() -> None:
    kernel = tilelang.compile(all_ids_taken(far_between=False, pending_low_id=True), out_idx=[1], target="ascendc")
    with pytest.raises(tilelang.Error, match=r'T.set_flag\("MTE2", "MTE3", 2\): the flag is already set'):
        kernel(torch.randn(1, 16).half())


def test_far_ids_with_no_free_id_stay_errors() -> None:
    # The far flag is live over an instruction (the second copy): no id of the pair is free.
    with pytest.raises(tilelang.Error, match=r"expected an event id in \[0, 8\) on A2, got 10"):
        tilelang.compile(all_ids_taken(far_between=True), out_idx=[1], target="pto")
