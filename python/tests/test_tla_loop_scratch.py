"""Expert kernels whose UB fits only with per-iteration live ranges of loop scratch (issue 29).

TileLang-Ascend's memory planning (TL_ASCEND_MEMORY_PLANNING) gives a buffer first and last
touched inside one loop body the range between those touches, so two such buffers of one
iteration may share bytes; linear_attention_and_rnn/opt_gdn/opt_gdn_chunk_h.py (UB 214,272 B as
declared, 196,608 B on A2) fits only so. tl-ascend does the same for an expert kernel with its
author's syncs, but only where those syncs order the reuse both ways: within the iteration and
around the loop's back edge (docs/compiler.md, plan_memory). Our own kernel in TileLang-Ascend's
syntax, four 52 KiB tiles per AIV (212,992 B), run under the hazard and stale-data checkers for
several trip counts against a torch reference that lives only in this file; and the same kernel
with the flag that orders the reuse moved, which must stay a capacity error naming the refused
pair (sharing would be a race: the MTE3 store of `h` in one iteration against the write of `a` in
the next, `h` being read after the loop too).
"""

from typing import Any

import pytest
import torch

import tl_ascend as tilelang
import tl_ascend.language as T

KEY = tilelang.PassConfigKey
EXPERT = {KEY.TL_ASCEND_MEMORY_PLANNING: True, KEY.TL_ASCEND_AUTO_SYNC: False}
R, N = 104, 128  # rows per AIV, columns: 52 KiB of fp32 per tile


def loop_scratch(n: int, ordered: bool = True) -> Any:
    """Per AIV (rows vid*R ...): acc = 0; for k < n: a = x * x; acc += a; h = exp(acc);
    Z[k] = h; finally Y = h. `ordered`: the MTE3 -> V flag that orders the store of h before the
    next iteration's writes sits before `a` is written (else after `a`, before `h` is)."""

    @T.prim_func
    def main(X: T.Tensor((2 * R, N), "float32"), Z: T.Tensor((n * 2 * R, N), "float32"),
             Y: T.Tensor((2 * R, N), "float32")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            acc = T.alloc_ub([R, N], "float32")
            d = T.alloc_ub([R, N], "float32")
            a = T.alloc_ub([R, N], "float32")
            h = T.alloc_ub([R, N], "float32")
            with T.Scope("V"):
                T.copy(X[vid * R:(vid + 1) * R, :], d)
                T.tile.fill(acc, 0.0)
                T.set_flag("mte2", "v", 0)
                T.wait_flag("mte2", "v", 0)
                T.set_flag("mte3", "v", 0)
                for k in T.serial(n):
                    if ordered:
                        T.wait_flag("mte3", "v", 0)
                    else:
                        T.pipe_barrier("v")
                    T.tile.mul(a, d, d)
                    T.pipe_barrier("v")
                    T.tile.add(acc, acc, a)
                    T.pipe_barrier("v")
                    if not ordered:
                        T.wait_flag("mte3", "v", 0)
                    T.tile.exp(h, acc)
                    T.set_flag("v", "mte3", 0)
                    T.wait_flag("v", "mte3", 0)
                    T.copy(h, Z[(k * 2 + vid) * R:(k * 2 + vid + 1) * R, :])
                    T.set_flag("mte3", "v", 0)
                T.wait_flag("mte3", "v", 0)
                T.copy(h, Y[vid * R:(vid + 1) * R, :])

    return tilelang.compile(main, out_idx=[1, 2], pass_configs=EXPERT, check_hazards=True,
                            check_stale=True)


@pytest.mark.parametrize("n", (1, 2, 7))
def test_loop_scratch_shares_ub_when_the_syncs_order_it(n: int) -> None:
    """Before: "UB needs 212,992 bytes, capacity 196,608 on A2" at compile time."""
    torch.manual_seed(n)
    x = torch.randn(2 * R, N) * 0.3
    z, y = loop_scratch(n)(x)
    sq = x.double() * x.double()
    want = torch.cat([torch.stack([torch.exp((k + 1) * sq[v * R:(v + 1) * R]) for v in range(2)])
                      .reshape(2 * R, N) for k in range(n)])
    torch.testing.assert_close(z.double(), want, rtol=1e-5, atol=0)
    torch.testing.assert_close(y.double(), want[-2 * R:], rtol=1e-5, atol=0)


def test_loop_scratch_reuse_the_syncs_do_not_order_stays_an_error() -> None:
    """With the flag after `a`'s accesses, `a` of iteration k+1 could overwrite `h` while the
    MTE3 store of iteration k still reads it: no sharing, and the overflow names the pair."""
    with pytest.raises(tilelang.Error) as e:
        loop_scratch(2, ordered=False)
    msg = str(e.value)
    assert "UB needs 212,992 bytes, capacity 196,608" in msg
    assert "'h' after 'a'" in msg
    assert "reads 'h', then T.tile.mul (V)" in msg
    assert "writes 'a' in the next iteration: nothing orders MTE3 before V" in msg
