"""Hybrid kernels whose cube work and vector work are SEPARATE loops (issue 29), in TileLang-Ascend
syntax: a cube loop over the key tiles, then a vector loop over the same tiles, the workspaces
between them written in one loop and read in the other, iteration k with iteration k
(TileLang-Ascend's auto cross-core sync pairs a workspace's producer and consumer by equal loop
trip counts: src/transform/ascend_combinecv.cc, FindTargetLoopDepth). tl-ascend pairs the two
loops the same way (hybrid::paired_loops, docs/python.md "Hybrid kernels").

Before, each side's whole loop was flagged as one write or one read: the cube waited before its
loop for data the vector loop raises only after its last iteration, and the vector loop waited
for the cube's, so every kernel here stopped with "deadlock in kernel main: a wait can never be
satisfied" (TileLang-Ascend's flash_attn_bhsd_cc_sync.py and example_sparse_flash_attn.py).
Loops whose trip counts differ cannot be paired: that is an error at compile time naming both
loops and their counts (before: the same run-time deadlock). Worse, with one direction only
(the cube loop writes, the vector loop reads), the vector loop read only the cube's last tile,
a silent wrong result: test_one_direction_across_separate_loops_reads_every_tile.

The references (torch, fp32) live only here.
"""

from typing import Any

import pytest
import torch

import tl_ascend as tilelang
import tl_ascend.language as T

KEY = tilelang.PassConfigKey
HYBRID = {KEY.TL_ASCEND_AUTO_CV_COMBINE: True, KEY.TL_ASCEND_AUTO_CV_SYNC: True,
          KEY.TL_ASCEND_AUTO_SYNC: True, KEY.TL_ASCEND_MEMORY_PLANNING: True}


def relu_attention(blocks: int, tiles: int, vec_tiles: int | None = None, bM: int = 32,
                   bN: int = 32, D: int = 64) -> Any:
    """O = relu(Q K^T) V, one block per bM rows of Q: the cube loop computes S_k = Q K_k^T into
    ws_s and P_k V_k (P_k from ws_p) into ws_o; the vector loop reads S_k (half the rows per
    AIV), writes P_k = relu(S_k) as fp16, and sums the P_k V_k. `vec_tiles` (default `tiles`)
    is the vector loop's trip count."""
    M, S, half = blocks * bM, tiles * bN, bM // 2
    vec_tiles = tiles if vec_tiles is None else vec_tiles

    @T.prim_func
    def main(Q: T.Tensor((M, D), "float16"), K: T.Tensor((S, D), "float16"),
             V: T.Tensor((S, D), "float16"), O: T.Tensor((M, D), "float32"),
             ws_s: T.Tensor((blocks, bM, bN), "float32"),
             ws_p: T.Tensor((blocks, bM, bN), "float16"),
             ws_o: T.Tensor((blocks, bM, D), "float32")):
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
            for k in T.serial(tiles):
                T.copy(K[k * bN:(k + 1) * bN, :], k_l1)
                T.gemm_v0(q_l1, k_l1, s_l0, transpose_B=True, init=True)
                T.copy(s_l0, ws_s[cid, :, :])
                T.copy(ws_p[cid, :, :], p_l1)
                T.copy(V[k * bN:(k + 1) * bN, :], v_l1)
                T.gemm_v0(p_l1, v_l1, o_l0, init=True)
                T.copy(o_l0, ws_o[cid, :, :])

            T.tile.fill(acc, 0.0)
            for j in T.serial(vec_tiles):  # MARK: vector loop
                T.copy(ws_s[cid, vid * half:vid * half + half, :], s_ub)
                T.tile.max(s_ub, s_ub, 0.0)
                T.copy(s_ub, p_ub)
                T.copy(p_ub, ws_p[cid, vid * half:vid * half + half, :])
                T.copy(ws_o[cid, vid * half:vid * half + half, :], o_ub)
                T.tile.add(acc, acc, o_ub)
            T.copy(acc, O[cid * bM + vid * half:cid * bM + vid * half + half, :])

    return tilelang.compile(main, out_idx=[3], workspace_idx=[4, 5, 6], pass_configs=HYBRID,
                            check_hazards=True)


def relu_row_sums(blocks: int, tiles: int, bM: int = 32, bN: int = 32, D: int = 64) -> Any:
    """R = sum over key tiles k of relu(Q K_k^T) (a [M, bN] sum): one direction only, the cube
    loop writes S_k into ws_s, the vector loop reads it and accumulates."""
    M, S, half = blocks * bM, tiles * bN, bM // 2

    @T.prim_func
    def main(Q: T.Tensor((M, D), "float16"), K: T.Tensor((S, D), "float16"),
             R: T.Tensor((M, bN), "float32"), ws_s: T.Tensor((blocks, bM, bN), "float32")):
        with T.Kernel(blocks, is_npu=True) as (cid, vid):
            q_l1 = T.alloc_L1((bM, D), "float16")
            k_l1 = T.alloc_L1((bN, D), "float16")
            s_l0 = T.alloc_L0C((bM, bN), "float32")
            s_ub = T.alloc_ub((half, bN), "float32")
            acc = T.alloc_ub((half, bN), "float32")

            T.copy(Q[cid * bM:(cid + 1) * bM, :], q_l1)
            for k in T.serial(tiles):
                T.copy(K[k * bN:(k + 1) * bN, :], k_l1)
                T.gemm_v0(q_l1, k_l1, s_l0, transpose_B=True, init=True)
                T.copy(s_l0, ws_s[cid, :, :])
            T.tile.fill(acc, 0.0)
            for j in T.serial(tiles):
                T.copy(ws_s[cid, vid * half:vid * half + half, :], s_ub)
                T.tile.max(s_ub, s_ub, 0.0)
                T.tile.add(acc, acc, s_ub)
            T.copy(acc, R[cid * bM + vid * half:cid * bM + vid * half + half, :])

    return tilelang.compile(main, out_idx=[2], workspace_idx=[3], pass_configs=HYBRID,
                            check_hazards=True)


def reversed_slots(tiles: int, bM: int = 32, bN: int = 32, D: int = 64) -> Any:
    """R = sum_t 2^t relu(Q K_t^T): the cube loop writes S_k into its own slot k of ws_s, the
    vector loop reads the slots in REVERSE order (slot tiles-1-j at iteration j) and accumulates
    acc = 2 acc + relu(slot), an order-dependent sum."""
    S, half = tiles * bN, bM // 2

    @T.prim_func
    def main(Q: T.Tensor((bM, D), "float16"), K: T.Tensor((S, D), "float16"),
             R: T.Tensor((bM, bN), "float32"), ws_s: T.Tensor((1, tiles, bM, bN), "float32")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            q_l1 = T.alloc_L1((bM, D), "float16")
            k_l1 = T.alloc_L1((bN, D), "float16")
            s_l0 = T.alloc_L0C((bM, bN), "float32")
            s_ub = T.alloc_ub((half, bN), "float32")
            acc = T.alloc_ub((half, bN), "float32")

            T.copy(Q, q_l1)
            for k in T.serial(tiles):
                T.copy(K[k * bN:(k + 1) * bN, :], k_l1)
                T.gemm_v0(q_l1, k_l1, s_l0, transpose_B=True, init=True)
                T.copy(s_l0, ws_s[cid, k, :, :])
            T.tile.fill(acc, 0.0)
            for j in T.serial(tiles):
                slot = tiles - 1 - j
                T.copy(ws_s[cid, slot, vid * half:vid * half + half, :], s_ub)
                T.tile.max(s_ub, s_ub, 0.0)
                T.tile.mul(acc, acc, 2.0)
                T.tile.add(acc, acc, s_ub)
            T.copy(acc, R[vid * half:vid * half + half, :])

    return tilelang.compile(main, out_idx=[2], workspace_idx=[3], pass_configs=HYBRID,
                            check_hazards=True)


def ref_relu_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    p = torch.relu(q.float() @ k.float().T).half().float()  # the kernel's P is fp16
    return p @ v.float()


# Trip counts 1, 2 and odd ones (7, 33); one and three blocks.
@pytest.mark.parametrize("blocks,tiles", [(1, 1), (1, 2), (3, 7), (2, 33)])
def test_separate_cube_and_vector_loops_pair_per_iteration_and_match_torch(blocks: int,
                                                                           tiles: int) -> None:
    torch.manual_seed(blocks * 100 + tiles)
    q = torch.randn(blocks * 32, 64, dtype=torch.float16) / 4
    k = torch.randn(tiles * 32, 64, dtype=torch.float16) / 4
    v = torch.randn(tiles * 32, 64, dtype=torch.float16)
    kernel = relu_attention(blocks, tiles)
    torch.testing.assert_close(kernel(q, k, v), ref_relu_attention(q, k, v), rtol=1e-2, atol=1e-2)
    if tiles <= 7:  # timed mode: the flags order the cores whatever their relative speed
        o = kernel.run(q, k, v, mode="timed")
        torch.testing.assert_close(o, ref_relu_attention(q, k, v), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("tiles", [1, 2, 7])
def test_one_direction_across_separate_loops_reads_every_tile(tiles: int) -> None:
    """Before the pairing, both whole loops were flagged as one write and one read: the vector
    loop started after the cube's last tile and summed that tile `tiles` times, with no error
    from the hazard checker (the flags did order the copies): 99 % of the elements wrong, off by
    up to 11.6, for tiles = 7; up to 1.69 for tiles = 2."""
    torch.manual_seed(tiles)
    q = torch.randn(32, 64, dtype=torch.float16) / 4
    k = torch.randn(tiles * 32, 64, dtype=torch.float16) / 4
    s = torch.relu(q.float() @ k.float().T).reshape(32, tiles, 32).sum(dim=1)
    torch.testing.assert_close(relu_row_sums(1, tiles)(q, k), s, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("tiles", [1, 3])
def test_a_slot_per_iteration_read_in_another_order_is_not_paired(tiles: int) -> None:
    """The copies move with the loops (slot k, read back as slot tiles-1-j): pairing iteration k
    with iteration j = k would let the vector read slot tiles-1 before the cube wrote it. Such
    loops stay flagged whole (all writes, then all reads), which is right for any order
    (hybrid::moves_with); this guards the pairing against that case. With the pairing but
    without moves_with, tiles = 3 gave 50 % of the elements wrong, off by up to 6.3, silently."""
    torch.manual_seed(tiles)
    q = torch.randn(32, 64, dtype=torch.float16) / 4
    k = torch.randn(tiles * 32, 64, dtype=torch.float16) / 4
    s = torch.relu(q.float() @ k.float().T).reshape(32, tiles, 32)
    w = (2.0 ** torch.arange(tiles, dtype=torch.float32)).reshape(1, tiles, 1)  # slot t: 2^t
    torch.testing.assert_close(reversed_slots(tiles)(q, k), (s * w).sum(dim=1), rtol=1e-3,
                               atol=1e-3)


def test_each_copy_of_the_paired_loops_gets_its_own_flags() -> None:
    # Flagged per iteration inside both loops, not around them: the cube's first wait is for
    # ws_p's data inside its loop, right before its copy.
    src = relu_attention(1, 2).get_tile_ir()
    lines = src.split("\n")
    copy = next(n for n, line in enumerate(lines) if "T.copy(ws_p[" in line and "p_l1" in line)
    assert "T.wait_cross_flag(" in lines[copy - 1]
    assert src.count("T.set_cross_flag(") >= 6  # three data flags and three credits per side


def test_loops_of_different_trip_counts_are_an_error_naming_both() -> None:
    with pytest.raises(tilelang.Error,
                       match=r"test_tla_cv_loops.py:\d+: .*'ws_s' is written by .* \(cube\) in the "
                             r"loop at line \d+ \(4 iterations\) and read by .* \(vector\) in the "
                             r"loop at line \d+ \(3 iterations\): separate cube and vector loops "
                             r"pair per iteration only with the same trip count"):
        relu_attention(1, 4, vec_tiles=3)
