"""Hybrid kernels whose workspaces are written at several constant slots per iteration (issue 29),
in TileLang-Ascend syntax: the cube writes S of two key tiles to `ws_s[cid, 0]` and
`ws_s[cid, 1]`, the vector side reads them in the same order, writes P to two slots of `ws_p`,
and so on, as TileLang-Ascend's flash_attn_bhsd_auto_pipeline_h16_d128.py does. TileLang-Ascend
pairs such a workspace's producer and consumer slot by slot; tl-ascend does the same
(hybrid::mark_channels, src/pass/hybrid_channels.cpp): the counting cross-core flags match the
k-th read with the k-th write, and the channel gets one credit per slot.

Before, every kernel here was refused with "'ws_s' is written by ... and again by ...: two writes
per iteration, where the other side has one". Slots read in another order than written would
pair a read with the wrong write (a race): that stays an error naming both orders.

Each kernel runs on the virtual NPU with the hazard checker on, against a torch reference (fp64)
living only here; the accumulation is order-dependent (acc = acc / 2 + P V), so a tile read from
the wrong slot or at the wrong time changes the result.
"""

from typing import Any

import pytest
import torch

import tl_ascend as tilelang
import tl_ascend.language as T

KEY = tilelang.PassConfigKey
HYBRID = {KEY.TL_ASCEND_AUTO_CV_COMBINE: True, KEY.TL_ASCEND_AUTO_CV_SYNC: True,
          KEY.TL_ASCEND_AUTO_SYNC: True, KEY.TL_ASCEND_MEMORY_PLANNING: True}


def two_slot_attention(blocks: int, iters: int, reversed_read: bool = False, bM: int = 32, bN: int = 32,
                       D: int = 32) -> Any:
    """O = the ordered sum over key tiles t of relu(Q K_t^T) V_t (acc = acc / 2 + P_t V_t), two
    key tiles per iteration, each through its own slot of the three workspaces. With
    `reversed_read` the vector side reads S's slots as 1, 0."""
    M, S, half = blocks * bM, 2 * iters * bN, bM // 2
    first, second = (1, 0) if reversed_read else (0, 1)

    @T.prim_func
    def main(Q: T.Tensor((M, D), "float16"), K: T.Tensor((S, D), "float16"),
             V: T.Tensor((S, D), "float16"), O: T.Tensor((M, D), "float32"),
             ws_s: T.Tensor((blocks, 2, bM, bN), "float32"),
             ws_p: T.Tensor((blocks, 2, bM, bN), "float16"),
             ws_o: T.Tensor((blocks, 2, bM, D), "float32")):
        with T.Kernel(blocks, is_npu=True) as (cid, vid):
            q_l1 = T.alloc_L1((bM, D), "float16")
            k_l1 = T.alloc_L1((bN, D), "float16")
            v_l1 = T.alloc_L1((bN, D), "float16")
            p_l1 = T.alloc_L1((bM, bN), "float16")
            s_l0 = T.alloc_L0C((bM, bN), "float32")
            o_l0 = T.alloc_L0C((bM, D), "float32")
            s_ub = T.alloc_ub((half, bN), "float32")
            p_ub = T.alloc_ub((half, bN), "float16")
            o_ub = T.alloc_ub((half, D), "float32")
            acc = T.alloc_ub((half, D), "float32")

            T.copy(Q[cid * bM:(cid + 1) * bM, :], q_l1)
            T.tile.fill(acc, 0.0)
            for k in T.serial(iters):
                # Cube: S of key tiles 2k and 2k + 1 into slots 0 and 1.
                T.copy(K[(2 * k) * bN:(2 * k + 1) * bN, :], k_l1)
                T.gemm_v0(q_l1, k_l1, s_l0, transpose_B=True, init=True)
                T.copy(s_l0, ws_s[cid, 0, :, :])
                T.copy(K[(2 * k + 1) * bN:(2 * k + 2) * bN, :], k_l1)
                T.gemm_v0(q_l1, k_l1, s_l0, transpose_B=True, init=True)
                T.copy(s_l0, ws_s[cid, 1, :, :])
                # Vector: P = relu(S) per slot, half the rows per AIV.
                T.copy(ws_s[cid, first, vid * half:vid * half + half, :], s_ub)
                T.tile.max(s_ub, s_ub, 0.0)
                T.copy(s_ub, p_ub)
                T.copy(p_ub, ws_p[cid, 0, vid * half:vid * half + half, :])
                T.copy(ws_s[cid, second, vid * half:vid * half + half, :], s_ub)
                T.tile.max(s_ub, s_ub, 0.0)
                T.copy(s_ub, p_ub)
                T.copy(p_ub, ws_p[cid, 1, vid * half:vid * half + half, :])
                # Cube: P V per slot.
                T.copy(ws_p[cid, 0, :, :], p_l1)
                T.copy(V[(2 * k) * bN:(2 * k + 1) * bN, :], v_l1)
                T.gemm_v0(p_l1, v_l1, o_l0, init=True)
                T.copy(o_l0, ws_o[cid, 0, :, :])
                T.copy(ws_p[cid, 1, :, :], p_l1)
                T.copy(V[(2 * k + 1) * bN:(2 * k + 2) * bN, :], v_l1)
                T.gemm_v0(p_l1, v_l1, o_l0, init=True)
                T.copy(o_l0, ws_o[cid, 1, :, :])
                # Vector: the ordered accumulation.
                T.copy(ws_o[cid, 0, vid * half:vid * half + half, :], o_ub)
                T.tile.mul(acc, acc, 0.5)
                T.tile.add(acc, acc, o_ub)
                T.copy(ws_o[cid, 1, vid * half:vid * half + half, :], o_ub)
                T.tile.mul(acc, acc, 0.5)
                T.tile.add(acc, acc, o_ub)
            T.copy(acc, O[cid * bM + vid * half:cid * bM + vid * half + half, :])

    return main


def reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bN: int) -> torch.Tensor:
    acc = torch.zeros(q.shape[0], v.shape[1], dtype=torch.float64)
    for t in range(k.shape[0] // bN):
        s = q.double() @ k[t * bN:(t + 1) * bN].double().T
        p = torch.relu(s.float()).half().double()  # P goes through an fp16 workspace
        acc = acc / 2 + p @ v[t * bN:(t + 1) * bN].double()
    return acc.float()


@pytest.mark.parametrize("blocks,iters", [(1, 1), (1, 2), (3, 1), (2, 7)])
def test_slots_written_and_read_in_the_same_order_pair_slot_by_slot(blocks: int, iters: int) -> None:
    torch.manual_seed(blocks * 10 + iters)
    bM = bN = D = 32
    q = (torch.randn(blocks * bM, D) / 4).half()
    k = (torch.randn(2 * iters * bN, D) / 4).half()
    v = torch.randn(2 * iters * bN, D).half()
    kernel = tilelang.compile(two_slot_attention(blocks, iters), out_idx=[3], workspace_idx=[4, 5, 6],
                              pass_configs=HYBRID, check_hazards=True)
    torch.testing.assert_close(kernel(q, k, v), reference(q, k, v, bN), rtol=2e-3, atol=2e-3)


def test_the_same_kernel_gives_the_same_result_and_cycles_twice() -> None:
    torch.manual_seed(5)
    q, k, v = (torch.randn(32, 32) / 4).half(), (torch.randn(128, 32) / 4).half(), torch.randn(128, 32).half()
    kernel = tilelang.compile(two_slot_attention(1, 2), out_idx=[3], workspace_idx=[4, 5, 6],
                              pass_configs=HYBRID, check_hazards=True)
    a = kernel.run(q, k, v, mode="timed")
    cycles = kernel.last_profile["total_cycles"]
    b = kernel.run(q, k, v, mode="timed")
    assert torch.equal(a, b)
    assert cycles > 0 and kernel.last_profile["total_cycles"] == cycles
    torch.testing.assert_close(a, reference(q, k, v, 32), rtol=2e-3, atol=2e-3)


def test_slots_read_in_another_order_than_written_are_an_error_naming_both_orders() -> None:
    with pytest.raises(tilelang.Error, match=r"'ws_s' is written at slots \[0, 1\] by the cube and read at "
                                             r"slots \[1, 0\] by the vector each iteration"):
        tilelang.compile(two_slot_attention(1, 2, reversed_read=True), out_idx=[3], workspace_idx=[4, 5, 6],
                         pass_configs=HYBRID)
