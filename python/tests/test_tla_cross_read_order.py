"""A developer kernel whose cube reads a tile that the vector unit writes further down the loop.

TileLang-Ascend (sparse_flash_attn_developer_vid_reduce.py) writes the gemm at the top of its kv
loop and the gather that fills the gemm's L1 tile from UB at the bottom. It splits the kernel
into one program per core, turns the UB -> L1 copy into a GM workspace, and its auto cross-core
sync pairs the k-th write with the k-th read per iteration, so the gemm reads the tile of its
own iteration. tl-ascend now gives such a block that meaning (src/pass/order_crossings.cpp; the
verifier's developer-read-before-write lets the pair through), and keeps the error where the
write is on the cube itself (a GM -> L1 copy further down: program order on one core, as in
TileLang-Ascend) or where the two cores would wait for each other.

Each kernel computes C = sum_k A_k @ (2 B_k) with the B chunk scaled on the vector unit, against
torch, on row and column tails, with the hazard checker on.
"""

import pytest
import torch

import tl_ascend as tilelang
import tl_ascend.language as T

BM, BN, BK = 32, 32, 32


def _kernel(M: int, N: int, K: int, threads: int, form: str):
    nb = T.ceildiv(N, BN)
    nk = K // BK

    @T.prim_func
    def late_crossing(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
                      C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, BM) * nb, threads=threads) as cid:
            a_l1 = T.alloc_shared((BM, BK), "float16")
            b_l1 = T.alloc_shared((BK, BN), "float16")
            c_l0 = T.alloc_fragment((BM, BN), "float32")
            b_ub = T.alloc_shared((BK, BN), "float16")
            c_ub = T.alloc_shared((BM, BN), "float32")
            acc = T.alloc_shared((BM, BN), "float32")
            T.tile.fill(acc, 0.0)
            for k in T.serial(nk):
                T.copy(A[cid // nb * BM, k * BK], a_l1)
                T.gemm_v0(a_l1, b_l1, c_l0, init=True)  # b_l1: written below, this iteration
                T.copy(c_l0, c_ub)
                T.copy(B[k * BK, cid % nb * BN], b_ub)
                for i, j in T.Parallel(BK, BN):
                    b_ub[i, j] = b_ub[i, j] * T.float16(2.0)
                T.copy(b_ub, b_l1)
                for i, j in T.Parallel(BM, BN):
                    acc[i, j] = acc[i, j] + c_ub[i, j]
            T.copy(acc, C[cid // nb * BM, cid % nb * BN])

    @T.prim_func
    def cycle(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
              C: T.Tensor((M, N), "float32")):
        # The vector unit's B chunk depends on the gemm's result: no order of the two programs.
        with T.Kernel(T.ceildiv(M, BM) * nb, threads=threads) as cid:
            a_l1 = T.alloc_shared((BM, BK), "float16")
            b_l1 = T.alloc_shared((BK, BN), "float16")
            c_l0 = T.alloc_fragment((BM, BN), "float32")
            b_ub = T.alloc_shared((BK, BN), "float16")
            c_ub = T.alloc_shared((BM, BN), "float32")
            for k in T.serial(nk):
                T.copy(A[cid // nb * BM, k * BK], a_l1)
                T.gemm_v0(a_l1, b_l1, c_l0, init=True)
                T.copy(c_l0, c_ub)
                for i, j in T.Parallel(BK, BN):
                    b_ub[i, j] = T.cast(c_ub[i, j], "float16")
                T.copy(b_ub, b_l1)
            T.copy(c_ub, C[cid // nb * BM, cid % nb * BN])

    return {"late_crossing": late_crossing, "cycle": cycle}[form]


CASES = [(M, N, K, threads) for M, N, K in [(1, 32, 32), (7, 33, 64), (33, 7, 96), (64, 64, 64)]
         for threads in (1, 2)]


@pytest.mark.parametrize("M,N,K,threads", CASES)
def test_a_gemm_reads_the_tile_the_vector_unit_writes_later_in_its_iteration(
        M: int, N: int, K: int, threads: int) -> None:
    torch.manual_seed(M * 7 + N * 3 + K + threads)
    a, b = torch.randn(M, K).half(), torch.randn(K, N).half()
    kernel = tilelang.compile(_kernel(M, N, K, threads, "late_crossing"), out_idx=[2],
                              check_hazards=True)
    ref = a.double() @ (b.double() * 2)
    torch.testing.assert_close(kernel(a, b).double(), ref, rtol=1e-3, atol=1e-3)


def test_two_cores_that_would_wait_for_each_other_are_an_error() -> None:
    with pytest.raises(tilelang.Error) as e:
        tilelang.compile(_kernel(64, 64, 64, 1, "cycle"), out_idx=[2])
    msg = str(e.value)
    assert "the two cores would wait for each other" in msg
    assert "test_tla_cross_read_order.py:" in msg
