"""Two L0B operands that fit only by sharing bytes, ordered by a workspace round trip (issue 29).

TileLang-Ascend's sparse_flash_attention/bench_sfa (sparse_flash_attn_pa_no_cv_pipeline.py)
declares 128 KB of L0B (64 KB on A2): the first product's `kv_l0b` and the second's
`mm2_kv_l0b`, each double-buffered by hand inside its own k loop. Its memory planner gives them
the same bytes because their live ranges are disjoint, without asking what orders them on the
chip. tl-ascend shares them only when it proves it (docs/compiler.md, plan_memory): within an
iteration, the second product's first L0B write waits for the AIV's P, which the AIV wrote after
reading the AIC's S, which the AIC stored after the first product's last mma; across iterations,
the next first product waits for the AIV's K, written after the AIV read the AIC's O, stored
after the second product's last mma. Those waits are the cross-core flags insert_channel_syncs
gives the hybrid kernel's workspaces, after plan_memory; plan_memory proves the reuse with them
and insert_channel_syncs proves it again on the flags it added.

Our own kernel in TileLang-Ascend syntax with bench_sfa's structure (hybrid: no T.Scope, hardware
buffers, the author's intra-core flags, auto_cv_combine and auto_cv_sync, no auto_sync), run under
the hazard checker against a torch reference (this file only): O = sum_i fp16(Q K_i^T) K_i.
Its twin, whose AIC loads K itself (no round trip closes the iteration), must stay a capacity
error naming the pair and the missing order.
"""

from typing import Any

import pytest
import torch

import tl_ascend as tilelang
import tl_ascend.language as T

KEY = tilelang.PassConfigKey
HYBRID = {KEY.TL_ASCEND_AUTO_CV_COMBINE: True, KEY.TL_ASCEND_AUTO_CV_SYNC: True,
          KEY.TL_ASCEND_MEMORY_PLANNING: True}
BM, D, BN = 16, 128, 256  # query rows, head dim, keys per tile
KL0, VL0 = 64, 32  # the two products' k steps: kv_l0b [2, 64, 256], v_l0b [2, 32, 128] (80 KB)
HALF = BM // 2


def attention_like(tiles: int, blocks: int = 1, via_vector: bool = True) -> Any:
    """Per block: O = sum over key tiles i of fp16(Q K_i^T) K_i, K_i gathered into ws_k by the
    AIVs (`via_vector`) or loaded by the AIC itself (the twin without the round trip)."""
    loop_kk, loop_vv = D // KL0, BN // VL0

    @T.prim_func
    def main(Q: T.Tensor((blocks * BM, D), "float16"), K: T.Tensor((tiles * BN, D), "float16"),
             O: T.Tensor((blocks * BM, D), "float32"),
             ws_k: T.Tensor((blocks, BN, D), "float16"),
             ws_s: T.Tensor((blocks, BM, BN), "float32"),
             ws_p: T.Tensor((blocks, BM, BN), "float16"),
             ws_o: T.Tensor((blocks, BM, D), "float32")):
        with T.Kernel(blocks, is_npu=True) as (cid, vid):
            q_l1 = T.alloc_L1([BM, D], "float16")
            k_l1 = T.alloc_L1([BN, D], "float16")
            p_l1 = T.alloc_L1([BM, BN], "float16")
            q_l0a = T.alloc_L0A([2, BM, KL0], "float16")
            kv_l0b = T.alloc_L0B([2, KL0, BN], "float16")
            s_l0c = T.alloc_L0C([BM, BN], "float32")
            p_l0a = T.alloc_L0A([2, BM, VL0], "float16")
            v_l0b = T.alloc_L0B([2, VL0, D], "float16")
            o_l0c = T.alloc_L0C([BM, D], "float32")
            k_ub = T.alloc_ub([BN // 2, D], "float16")
            s_ub = T.alloc_ub([HALF, BN], "float32")
            p_ub = T.alloc_ub([HALF, BN], "float16")
            o_ub = T.alloc_ub([HALF, D], "float32")
            acc = T.alloc_ub([HALF, D], "float32")

            T.copy(Q[cid * BM:(cid + 1) * BM, :], q_l1)
            T.tile.fill(acc, 0.0)
            for i in T.serial(tiles):
                # V0: each AIV gathers half of the key tile into the workspace.
                if via_vector:
                    T.copy(K[i * BN + vid * (BN // 2):i * BN + (vid + 1) * (BN // 2), :], k_ub)
                    T.set_flag("mte2", "mte3", 0)
                    T.wait_flag("mte2", "mte3", 0)
                    T.copy(k_ub, ws_k[cid, vid * (BN // 2):(vid + 1) * (BN // 2), :])
                    T.copy(ws_k[cid, :, :], k_l1)
                else:
                    T.copy(K[i * BN:(i + 1) * BN, :], k_l1)
                T.set_flag("mte2", "mte1", 1)
                T.wait_flag("mte2", "mte1", 1)
                # BMM1: S = Q K_i^T, k steps of 64 through kv_l0b's two halves.
                for kk in range(loop_kk):
                    task = kk % 2
                    if kk > 1:
                        T.wait_flag("m", "mte1", task)
                    T.copy(q_l1[:, kk * KL0:(kk + 1) * KL0], q_l0a[kk % 2, :, :])
                    T.copy(k_l1[:, kk * KL0:(kk + 1) * KL0], kv_l0b[kk % 2, :, :], transpose=True)
                    T.set_flag("mte1", "m", task)
                    T.wait_flag("mte1", "m", task)
                    T.pipe_barrier("m")
                    T.mma(q_l0a[kk % 2, :, :], kv_l0b[kk % 2, :, :], s_l0c, init=(kk == 0))
                    if kk < loop_kk - 2:
                        T.set_flag("m", "mte1", task)
                T.set_flag("m", "fix", 2)
                T.wait_flag("m", "fix", 2)
                T.copy(s_l0c, ws_s[cid, :, :])
                # V1: P = fp16(S), half the rows per AIV.
                T.copy(ws_s[cid, vid * HALF:(vid + 1) * HALF, :], s_ub)
                T.set_flag("mte2", "v", 0)
                T.wait_flag("mte2", "v", 0)
                T.copy(s_ub, p_ub)
                T.set_flag("v", "mte3", 1)
                T.wait_flag("v", "mte3", 1)
                T.copy(p_ub, ws_p[cid, vid * HALF:(vid + 1) * HALF, :])
                # BMM2: O_i = P K_i, k steps of 32 through v_l0b's two halves.
                T.copy(ws_p[cid, :, :], p_l1)
                T.set_flag("mte2", "mte1", 3)
                T.wait_flag("mte2", "mte1", 3)
                for kk in range(loop_vv):
                    task = kk % 2 + 2
                    if kk > 1:
                        T.wait_flag("m", "mte1", task)
                    T.copy(p_l1[:, kk * VL0:(kk + 1) * VL0], p_l0a[kk % 2, :, :])
                    T.copy(k_l1[kk * VL0:(kk + 1) * VL0, :], v_l0b[kk % 2, :, :])
                    T.set_flag("mte1", "m", task)
                    T.wait_flag("mte1", "m", task)
                    T.pipe_barrier("m")
                    T.mma(p_l0a[kk % 2, :, :], v_l0b[kk % 2, :, :], o_l0c, init=(kk == 0))
                    if kk < loop_vv - 2:
                        T.set_flag("m", "mte1", task)
                T.set_flag("m", "fix", 4)
                T.wait_flag("m", "fix", 4)
                T.copy(o_l0c, ws_o[cid, :, :])
                # V2: acc += O_i; the barrier closes the AIV's iteration (its UB is reused).
                T.copy(ws_o[cid, vid * HALF:(vid + 1) * HALF, :], o_ub)
                T.set_flag("mte2", "v", 2)
                T.wait_flag("mte2", "v", 2)
                T.tile.add(acc, acc, o_ub)
                T.pipe_barrier("ALL")
            T.set_flag("v", "mte3", 3)
            T.wait_flag("v", "mte3", 3)
            T.copy(acc, O[cid * BM + vid * HALF:cid * BM + (vid + 1) * HALF, :])

    return tilelang.compile(main, out_idx=[2], workspace_idx=[3, 4, 5, 6], pass_configs=HYBRID,
                            check_hazards=True)


def reference(q: torch.Tensor, k: torch.Tensor, blocks: int, tiles: int) -> torch.Tensor:
    out = torch.zeros(blocks * BM, D, dtype=torch.float64)
    for i in range(tiles):
        kt = k[i * BN:(i + 1) * BN].double()
        p = (q.double() @ kt.T).float().half().double()  # S in fp32, P stored as fp16
        out += p @ kt
    return out


@pytest.mark.parametrize("tiles,blocks", [(1, 1), (2, 1), (7, 1), (3, 2)])
def test_l0b_operands_share_bytes_ordered_by_the_workspace_round_trip(tiles: int,
                                                                      blocks: int) -> None:
    """Before: "L0B needs 81,920 bytes, capacity 65,536 on A2" at compile time."""
    torch.manual_seed(tiles * 10 + blocks)
    q = (torch.randn(blocks * BM, D) * 0.25).half()
    k = (torch.randn(tiles * BN, D) * 0.25).half()
    kernel = attention_like(tiles, blocks)
    src = kernel.get_tile_ir()
    assert 'kv_l0b = T.alloc_L0B((2, 64, 256), "float16", address=0)' in src
    assert 'v_l0b = T.alloc_L0B((2, 32, 128), "float16", address=0)' in src
    out = kernel(q, k)
    torch.testing.assert_close(out.double(), reference(q, k, blocks, tiles), rtol=2e-3, atol=2e-3)


def test_no_sharing_without_the_round_trip() -> None:
    """The AIC loads K itself: nothing orders the second product's last mma (reading v_l0b)
    before the next iteration's first L0B write, so the two keep separate bytes."""
    with pytest.raises(tilelang.Error) as e:
        attention_like(2, via_vector=False)
    msg = str(e.value)
    assert "L0B needs 81,920 bytes, capacity 65,536" in msg
    assert "with every such pair sharing, L0B would need 65,536 bytes" in msg
    assert "'kv_l0b' after 'v_l0b'" in msg or "'v_l0b' after 'kv_l0b'" in msg
    assert "nothing orders M before MTE1" in msg
