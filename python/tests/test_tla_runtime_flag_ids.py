"""TL_ASCEND_AUTO_SYNC over an author's flags whose event ids are run-time values (issue 29).

moe_token_permute/moe_token_permute_grad.py's lane-pipelined kernel writes its own MTE2 <-> V and
MTE3 <-> V flags with ids `it % stages` and leaves the rest to TileLang-Ascend's auto sync, which
runs over any author flags (src/transform/ascend_sync_insert.cc: a PipeBarrier between dependent
ops of one pipe, a flag pair between pipes, PipeBarrier(PIPE_ALL) around each `if`). tl-ascend's
insert_syncs left such a scope as written, so the checker found 14 unordered pairs (V after V on
the row tiles, a scalar read of the index tile after its MTE2 load). Now the pairs the author's
run-time ids order are left to the author and the rest is planned (docs/tla_races.md, corpus2).
Our own gather-and-sum kernel in TileLang-Ascend syntax, built like that one, under the hazard
and stale-data checkers on token tails, against a torch reference that lives here.
"""

import pytest
import torch

import tl_ascend as tilelang
import tl_ascend.language as T

AUTO = {tilelang.PassConfigKey.TL_ASCEND_AUTO_CV_COMBINE: True,
        tilelang.PassConfigKey.TL_ASCEND_AUTO_SYNC: True,
        tilelang.PassConfigKey.TL_ASCEND_MEMORY_PLANNING: True}
K, HALF, STAGES = 4, 64, 4  # lanes per token, half a row (one AIV's), pipeline depth


@tilelang.jit(out_idx=[2], pass_configs=AUTO, check_hazards=True)
def gather_sum(tokens: int, rows: int):
    iters = tokens * K

    @T.prim_func
    def main(P: T.Tensor([rows, 2 * HALF], "float16"), Idx: T.Tensor([1, iters], "int32"),
             Out: T.Tensor([tokens, 2 * HALF], "float16")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            idx_ub = T.alloc_ub([1, iters], "int32")
            row_buf = T.alloc_ub([STAGES, HALF], "float16")
            row_tmp = T.alloc_ub([1, HALF], "float16")
            row_f32 = T.alloc_ub([1, HALF], "float32")
            acc = T.alloc_ub([1, HALF], "float32")
            out = T.alloc_ub([1, HALF], "float16")
            h_off = vid * HALF
            with T.Scope("V"):
                T.copy(Idx[0, 0], idx_ub)
                T.set_flag("mte2", "v", 7)
                T.wait_flag("mte2", "v", 7)
                for s in range(STAGES):
                    T.set_flag("v", "mte2", s)
                T.set_flag("mte3", "v", 0)
                for i in T.serial(STAGES - 1):
                    if i < iters:
                        T.wait_flag("v", "mte2", i)
                        src = idx_ub[0, i]
                        T.copy(P[src, h_off], row_buf[i, :])
                        T.set_flag("mte2", "v", i)
                for it in T.serial(iters):
                    cur = it % STAGES
                    nxt_it = it + STAGES - 1
                    nxt = nxt_it % STAGES
                    if nxt_it < iters:
                        T.wait_flag("v", "mte2", nxt)
                        src_n = idx_ub[0, nxt_it]
                        T.copy(P[src_n, h_off], row_buf[nxt, :])
                        T.set_flag("mte2", "v", nxt)
                    T.wait_flag("mte2", "v", cur)
                    if it % K == 0:
                        T.tile.fill(acc, 0.0)
                    T.copy(row_buf[cur, :], row_tmp)
                    T.tile.cast(row_f32, row_tmp, "CAST_NONE", HALF)
                    T.tile.add(acc, acc, row_f32)
                    T.set_flag("v", "mte2", cur)
                    if it % K == K - 1:
                        T.wait_flag("mte3", "v", 0)
                        T.tile.cast(out, acc, "CAST_RINT", HALF)
                        T.set_flag("v", "mte3", 0)
                        T.wait_flag("v", "mte3", 0)
                        T.copy(out, Out[it // K, h_off])
                        T.set_flag("mte3", "v", 0)
                for s in range(STAGES):
                    T.wait_flag("v", "mte2", s)
                T.wait_flag("mte3", "v", 0)

    return main


@pytest.mark.parametrize("tokens", (1, 7, 33))
def test_auto_sync_orders_what_run_time_flag_ids_leave(tokens: int) -> None:
    # Before: "hazard check of kernel main: ... unordered access pair(s)" (tile.cast reads row_tmp
    # not ordered after the copy, tile.add after tile.fill on acc, the scalar read of idx_ub
    # after its MTE2 load), as moe_token_permute_grad.py's 14.
    torch.manual_seed(tokens)
    rows = 3 * tokens + 2
    p = torch.randn(rows, 2 * HALF).half()
    idx = torch.randint(0, rows, (1, tokens * K), dtype=torch.int32)
    lanes = p.float()[idx[0].long()].reshape(tokens, K, 2 * HALF)
    acc = torch.zeros(tokens, 2 * HALF)
    for lane in range(K):  # the kernel's order: fp32 sums lane by lane, then one rounding
        acc = acc + lanes[:, lane]
    want = acc.half()
    torch.testing.assert_close(gather_sum(tokens, rows)(p, idx), want, rtol=0, atol=0)
