"""TileLang-Ascend's vid reduction: a row split combined with a gather loop taken in turns.

The construct of tilelang-ascend's docs/tutorials/vid_reduction_and_auto_cv_ratio.md as
sparse_flash_attn_developer_vid_reduce.py uses it: `threads=2`, no vid in the kernel; the score
tiles' rows are split between the two AIVs (split_aiv's row split), and the KV rows the cube
multiplies are gathered one by one through a UB tile addressed by an index read from UB
(`KV[idx_ub[bi], :]`), which stays whole. The gather loop is taken in turns: AIV v runs the
iterations t with (t - min) % 2 == v, so an odd trip count gives AIV 0 the extra one and no row
is dropped or gathered twice (src/pass/split_aiv_turns.cpp). The gemm reads the gathered tile
above the gather, in TileLang-Ascend's order (the read pairs with the write of its iteration:
src/pass/order_crossings.cpp).

Each kernel: O[r, t * BI + j] = 2 * sum_d X[r, d] * KV[Idx[r // BM, t * BI + j], d], the sum in two gemms
(the first D columns and a tail of DT, each gathered into its own L1 tile, as the script does), against
torch, on rows 1, 7, 33, 1000, 4097 (the last block short), one, two and three index tiles
(odd and even outer trip counts) and gather loops of 1 and BI - 1 iterations (odd) and BI
(even), with the hazard and stale-data checkers on.
"""

import pytest
import torch

import tl_ascend as tilelang
import tl_ascend.language as T

BM, BI, D, DT, S = 64, 16, 64, 32, 300


def _kernel(R: int, NT: int, split_gather: bool):
    nblk = T.ceildiv(R, BM)

    @T.prim_func
    def main(X: T.Tensor((R, D + DT), "float16"), KV: T.Tensor((S, D + DT), "float16"),
             Idx: T.Tensor((nblk, NT * BI), "int32"), O: T.Tensor((R, NT * BI), "float32")):
        with T.Kernel(nblk, threads=2, is_npu=True) as (cid):
            q_l1 = T.alloc_shared((BM, D), "float16")
            q_tail_l1 = T.alloc_shared((BM, DT), "float16")
            kv_l1 = T.alloc_shared((BI, D), "float16")
            kv_tail_l1 = T.alloc_shared((BI, DT), "float16")
            s_l0 = T.alloc_fragment((BM, BI), "float32")
            idx_ub = T.alloc_shared((BI,), "int32")
            kv_ub = T.alloc_shared((D,), "float16")
            kv_tail_ub = T.alloc_shared((DT,), "float16")
            s_ub = T.alloc_shared((BM, BI), "float32")
            o_ub = T.alloc_shared((BM, BI), "float32")
            T.copy(X[cid * BM:cid * BM + BM, 0:D], q_l1)
            T.copy(X[cid * BM:cid * BM + BM, D:D + DT], q_tail_l1)
            for t in T.serial(NT):
                T.gemm_v0(q_l1, kv_l1, s_l0, transpose_B=True, init=True)
                T.gemm_v0(q_tail_l1, kv_tail_l1, s_l0, transpose_B=True)
                T.copy(s_l0, s_ub)
                T.copy(Idx[cid, t * BI:t * BI + BI], idx_ub)
                if split_gather:
                    # Row 0 by a loop of one iteration, rows 1..BI-1 by one of BI - 1 (both
                    # odd, the second starting at 1).
                    for b0 in T.serial(1):
                        T.copy(KV[idx_ub[b0], 0:D], kv_ub)
                        T.copy(KV[idx_ub[b0], D:D + DT], kv_tail_ub)
                        T.copy(kv_ub, kv_l1[b0, :])
                        T.copy(kv_tail_ub, kv_tail_l1[b0, :])
                    for bi in T.serial(1, BI):
                        T.copy(KV[idx_ub[bi], 0:D], kv_ub)
                        T.copy(KV[idx_ub[bi], D:D + DT], kv_tail_ub)
                        T.copy(kv_ub, kv_l1[bi, :])
                        T.copy(kv_tail_ub, kv_tail_l1[bi, :])
                else:
                    for bi in T.serial(BI):
                        T.copy(KV[idx_ub[bi], 0:D], kv_ub)
                        T.copy(KV[idx_ub[bi], D:D + DT], kv_tail_ub)
                        T.copy(kv_ub, kv_l1[bi, :])
                        T.copy(kv_tail_ub, kv_tail_l1[bi, :])
                for i, j in T.Parallel(BM, BI):
                    o_ub[i, j] = s_ub[i, j] * 2.0
                T.copy(o_ub, O[cid * BM, t * BI])

    return main


CASES = [(R, NT, split) for R in (1, 7, 33, 1000, 4097) for NT, split in ((1, False), (2, True))]
CASES += [(65, 3, False), (65, 3, True)]


@pytest.mark.parametrize("R,NT,split_gather", CASES)
def test_rows_split_and_gather_in_turns_match_torch(R: int, NT: int, split_gather: bool) -> None:
    torch.manual_seed(R * 3 + NT)
    nblk = (R + BM - 1) // BM
    x = torch.randn(R, D + DT).half()
    kv = torch.randn(S, D + DT).half()
    idx = torch.randint(0, S, (nblk, NT * BI), dtype=torch.int32)
    kernel = tilelang.compile(_kernel(R, NT, split_gather), out_idx=[3], check_hazards=True)
    out = kernel(x, kv, idx)
    rows_idx = idx.long()[torch.arange(R) // BM]  # [R, NT * BI]: each row's block's indices
    ref = 2 * torch.einsum("rd,rkd->rk", x.double(), kv.double()[rows_idx])
    torch.testing.assert_close(out.double(), ref, rtol=1e-3, atol=1e-3)


def test_the_vector_work_is_split_between_the_aivs(capfd) -> None:
    """Without the turns the whole kv_ub keeps every AIV-side op on AIV 0 (a remark)."""
    tilelang.compile(_kernel(128, 2, True), out_idx=[3])
    err = capfd.readouterr().err
    assert "stays on AIV 0" not in err, err
