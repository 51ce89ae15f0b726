"""The developer rule `developer-read-before-write` (src/verify/first_reads.cpp).

A developer kernel whose gemm reads an L1 tile that the loop writes only further down computes
its first iteration from uninitialised memory (TileLang-Ascend's
sparse_flash_attn_developer_vid_reduce.py, which then fails its own assert_close with no hint).
The verifier rejects it, naming the tile, the reading line and the later write. A gemm reading a
tile written before the loop (and rewritten later in each iteration), or reading inside an `if`
that skips the first iteration, is accepted and matches torch on tails.
"""

import pytest
import torch

import tl_ascend as tilelang
import tl_ascend.language as T

BM = BN = BK = 32


def _kernel(M: int, N: int, K: int, form: str):
    """C = A @ B per K chunk, with the gemm's B tile loaded in one of three orders."""
    nb = T.ceildiv(N, BN)

    @T.prim_func
    def late(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
             C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, BM) * nb, threads=2) as cid:
            a_l1 = T.alloc_shared((BM, BK), "float16")
            b_l1 = T.alloc_shared((BK, BN), "float16")
            c_l0 = T.alloc_fragment((BM, BN), "float32")
            for k in T.serial(T.ceildiv(K, BK)):
                T.copy(A[cid // nb * BM, k * BK], a_l1)
                T.gemm_v0(a_l1, b_l1, c_l0, init=(k == 0))  # b_l1: not written yet
                T.copy(B[k * BK, cid % nb * BN], b_l1)
            T.copy(c_l0, C[cid // nb * BM, cid % nb * BN])

    @T.prim_func
    def in_order(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
                 C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, BM) * nb, threads=2) as cid:
            a_l1 = T.alloc_shared((BM, BK), "float16")
            b_l1 = T.alloc_shared((BK, BN), "float16")
            c_l0 = T.alloc_fragment((BM, BN), "float32")
            for k in T.serial(T.ceildiv(K, BK)):
                T.copy(A[cid // nb * BM, k * BK], a_l1)
                T.copy(B[k * BK, cid % nb * BN], b_l1)
                T.gemm_v0(a_l1, b_l1, c_l0, init=(k == 0))
            T.copy(c_l0, C[cid // nb * BM, cid % nb * BN])

    @T.prim_func
    def preloaded(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
                  C: T.Tensor((M, N), "float32")):
        # b_l1 written before the loop, rewritten (with the same chunk: K is one chunk) after
        # the gemm in each iteration: the gemm's first read sees the write before the loop.
        with T.Kernel(T.ceildiv(M, BM) * nb, threads=2) as cid:
            a_l1 = T.alloc_shared((BM, BK), "float16")
            b_l1 = T.alloc_shared((BK, BN), "float16")
            c_l0 = T.alloc_fragment((BM, BN), "float32")
            T.copy(B[0, cid % nb * BN], b_l1)
            for k in T.serial(T.ceildiv(K, BK)):
                T.copy(A[cid // nb * BM, k * BK], a_l1)
                T.gemm_v0(a_l1, b_l1, c_l0, init=(k == 0))
                T.copy(B[k * BK, cid % nb * BN], b_l1)
            T.copy(c_l0, C[cid // nb * BM, cid % nb * BN])

    return {"late": late, "in_order": in_order, "preloaded": preloaded}[form]


def test_a_gemm_reading_a_tile_the_loop_writes_later_is_an_error() -> None:
    with pytest.raises(tilelang.Error) as e:
        tilelang.compile(_kernel(64, 64, 64, "late"), out_idx=[2])
    msg = str(e.value)
    assert "developer-read-before-write" in msg
    assert "reads tile 'b_l1' before any statement writes it" in msg
    assert "comes later and reaches only the next iteration" in msg
    # The reading gemm's line and the later write's line (the test file's).
    assert msg.count("test_developer_read_before_write.py:") >= 2
    assert "'a_l1'" not in msg  # written before its read: no error


CASES = [("in_order", M, N, K) for M, N, K in [(1, 32, 32), (7, 33, 64), (33, 7, 32), (64, 64, 96)]]
# The preloaded form rereads the same chunk: K is one chunk.
CASES += [("preloaded", M, N, 32) for M, N in [(1, 32), (7, 33), (33, 7), (64, 64)]]


@pytest.mark.parametrize("form,M,N,K", CASES)
def test_a_gemm_reading_a_tile_written_before_it_is_accepted(form: str, M: int, N: int,
                                                              K: int) -> None:
    torch.manual_seed(M * 7 + N * 3 + K)
    a, b = torch.randn(M, K).half(), torch.randn(K, N).half()
    kernel = tilelang.compile(_kernel(M, N, K, form), out_idx=[2], check_hazards=True)
    torch.testing.assert_close(kernel(a, b), a.float() @ b.float(), rtol=1e-3, atol=1e-3)
