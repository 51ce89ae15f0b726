"""An expert kernel whose UB fits only if a buffer reuses bytes ordered by a cross-core round trip.

TileLang-Ascend's linear_attention_and_rnn/opt_gdn/opt_gdn_chunk_o.py declares 212,992 B of UB
(196,608 B on A2) and fits with its memory planning, which shares bytes between buffers whose
live ranges are disjoint. tl-ascend shares them only where the program orders the old owner's
last access before the new owner's first; in that script the order runs through the AIC: the
AIV's set_cross_flag(MTE3, ...) after its V -> MTE3 flag, the AIC's wait for it and then its own
set_cross_flag, the AIV's wait (docs/compiler.md, plan_memory). Our own kernel in TileLang-Ascend
syntax with that round trip, run under the hazard and stale-data checkers on both AIVs against a
torch reference (this file only); and its twin whose AIC sets before it waits, which must stay a
capacity error.
"""

from typing import Any

import pytest
import torch

import tl_ascend as tilelang
import tl_ascend.language as T

KEY = tilelang.PassConfigKey
EXPERT = {KEY.TL_ASCEND_MEMORY_PLANNING: True, KEY.TL_ASCEND_AUTO_SYNC: False}
R, N = 104, 128  # rows per AIV, columns: 52 KiB of fp32 per tile


def round_trip(round_trip_first: bool = True) -> Any:
    """Per AIV (rows vid*R ...): W = exp(x); Y = x + exp(x) + 1, four 52 KiB tiles."""

    @T.prim_func
    def main(X: T.Tensor((2 * R, N), "float32"), W: T.Tensor((2 * R, N), "float32"),
             Y: T.Tensor((2 * R, N), "float32")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            a = T.alloc_ub([R, N], "float32")
            b = T.alloc_ub([R, N], "float32")
            e = T.alloc_ub([R, N], "float32")
            c = T.alloc_ub([R, N], "float32")
            with T.Scope("C"):
                if round_trip_first:
                    T.wait_cross_flag(1)
                    T.set_cross_flag("FIX", 2)
                else:
                    T.set_cross_flag("FIX", 2)
                    T.wait_cross_flag(1)
            with T.Scope("V"):
                T.tile.fill(e, 1.0)
                T.copy(X[vid * R:(vid + 1) * R, :], a)
                T.set_flag("mte2", "v", 0)
                T.wait_flag("mte2", "v", 0)
                T.tile.exp(b, a)
                T.set_flag("v", "mte3", 0)
                T.wait_flag("v", "mte3", 0)
                T.copy(b, W[vid * R:(vid + 1) * R, :])
                T.set_cross_flag("MTE3", 1)
                T.wait_cross_flag(2)
                T.copy(X[vid * R:(vid + 1) * R, :], c)
                T.set_flag("mte2", "v", 0)
                T.wait_flag("mte2", "v", 0)
                T.tile.add(c, c, b)
                T.pipe_barrier("v")
                T.tile.add(c, c, e)
                T.set_flag("v", "mte3", 0)
                T.wait_flag("v", "mte3", 0)
                T.copy(c, Y[vid * R:(vid + 1) * R, :])

    return tilelang.compile(main, out_idx=[1, 2], pass_configs=EXPERT, check_hazards=True,
                            check_stale=True)


@pytest.mark.parametrize("seed", (0, 1))
def test_reuse_ordered_by_a_cross_core_round_trip(seed: int) -> None:
    """Before: "UB needs 212,992 bytes, capacity 196,608 on A2" at compile time."""
    torch.manual_seed(seed)
    x = torch.randn(2 * R, N)
    w, y = round_trip()(x)
    want_w = torch.exp(x.double())
    torch.testing.assert_close(w.double(), want_w, rtol=1e-6, atol=0)
    torch.testing.assert_close(y.double(), x.double() + want_w + 1.0, rtol=1e-6, atol=1e-6)


def test_no_round_trip_when_the_other_core_sets_before_it_waits() -> None:
    with pytest.raises(tilelang.Error) as e:
        round_trip(round_trip_first=False)
    msg = str(e.value)
    assert "UB needs 212,992 bytes, capacity 196,608" in msg
    assert "'c' after 'a'" in msg
