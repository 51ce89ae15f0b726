"""TileLang-Ascend kernels that fit the chip only when the compiler sees what is live (issue 29).

Two forms from TileLang-Ascend's examples, written here as our own kernels in its syntax, each
against a torch (fp32) reference that lives only in this file, under the hazard checker (and the
stale-data checker), with row tails:

* **Two accumulators never live together** (developer_mode/sparse_flash_attn_developer.py:
  scores 64 x 64 and output 64 x 512 fp32, 144 KiB of a 128 KiB L0C). Each is written from
  scratch by a `T.gemm_v0(..., init=True)` in the loop and copied out before the next is
  written, so the planner may give them the same bytes (insert_syncs orders the reuse). Before,
  a loop-level buffer counted as live across the whole loop body and the kernel stopped with
  "L0C needs 147,456 bytes, capacity 131,072 on A2".
* **vid read in a kernel of developer tiles with cube work** (pipeline/matmul_add_pipeline.py:
  `as (cid, vid)`, `T.alloc_shared` / `T.alloc_fragment`, `T.gemm_v0`, a vector epilogue on each
  AIV's own half of the rows, indexed by vid). The meaning is defined, each AIV its own rows, so
  it is a hybrid kernel whose tiles are placed by use (gemm operands L1, accumulator L0C, the rest
  UB). Before, it stopped with "reads vid in a kernel of developer tiles ... with cube work".
"""

from typing import Any

import pytest
import torch

import tl_ascend as tilelang
import tl_ascend.language as T

KEY = tilelang.PassConfigKey
HYBRID = {KEY.TL_ASCEND_AUTO_CV_COMBINE: True, KEY.TL_ASCEND_AUTO_CV_SYNC: True,
          KEY.TL_ASCEND_AUTO_SYNC: True, KEY.TL_ASCEND_MEMORY_PLANNING: True}
ROW_TAILS = (1, 7, 33, 100)


def two_products(M: int, K: int = 64, N1: int = 512, N2: int = 64, bM: int = 64,
                 cores: int = 2) -> Any:
    """C1 = A @ B1 and C2 = A @ B2, one accumulator each (bM x N1 is all of L0C), every row
    tile t = r * cores + cid of a block computing both in turn."""
    rounds = T.ceildiv(T.ceildiv(M, bM), cores)
    tiles = T.ceildiv(M, bM)

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B1: T.Tensor((K, N1), "float16"),
             B2: T.Tensor((K, N2), "float16"), C1: T.Tensor((M, N1), "float32"),
             C2: T.Tensor((M, N2), "float32")):
        with T.Kernel(cores, is_npu=True) as (cid, vid):
            a_l1 = T.alloc_L1((bM, K), "float16")
            b1_l1 = T.alloc_L1((K, N1), "float16")
            b2_l1 = T.alloc_L1((K, N2), "float16")
            big = T.alloc_L0C((bM, N1), "float32")
            small = T.alloc_L0C((bM, N2), "float32")
            T.copy(B1, b1_l1)
            T.copy(B2, b2_l1)
            for r in T.serial(rounds):
                t = r * cores + cid
                if t < tiles:
                    T.copy(A[t * bM:(t + 1) * bM, :], a_l1)
                    T.gemm_v0(a_l1, b2_l1, small, init=True)
                    T.copy(small, C2[t * bM:(t + 1) * bM, :])
                    T.gemm_v0(a_l1, b1_l1, big, init=True)
                    T.copy(big, C1[t * bM:(t + 1) * bM, :])

    return tilelang.compile(main, out_idx=[3, 4], pass_configs=HYBRID, check_hazards=True)


@pytest.mark.parametrize("M", (64,) + ROW_TAILS)
def test_accumulators_never_live_together_share_l0c(M: int) -> None:
    """Before: "L0C needs 147,456 bytes, capacity 131,072 on A2" at compile time."""
    torch.manual_seed(M)
    a = torch.randn(M, 64).half()
    b1 = torch.randn(64, 512).half()
    b2 = torch.randn(64, 64).half()
    c1, c2 = two_products(M)(a, b1, b2)
    torch.testing.assert_close(c1, a.float() @ b1.float(), rtol=1e-3, atol=1e-2)
    torch.testing.assert_close(c2, a.float() @ b2.float(), rtol=1e-3, atol=1e-2)


def test_accumulators_live_together_still_overflow() -> None:
    """An accumulator read after the other is written (both live at once) keeps its own bytes:
    the overflow stays an error naming L0C and both tiles."""
    M, K, bM = 64, 64, 64

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B1: T.Tensor((K, 512), "float16"),
             B2: T.Tensor((K, 64), "float16"), C1: T.Tensor((M, 512), "float32"),
             C2: T.Tensor((M, 64), "float32")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            a_l1 = T.alloc_L1((bM, K), "float16")
            b1_l1 = T.alloc_L1((K, 512), "float16")
            b2_l1 = T.alloc_L1((K, 64), "float16")
            big = T.alloc_L0C((bM, 512), "float32")
            small = T.alloc_L0C((bM, 64), "float32")
            T.copy(B1, b1_l1)
            T.copy(B2, b2_l1)
            for r in T.serial(2):
                T.copy(A, a_l1)
                T.gemm_v0(a_l1, b2_l1, small, init=True)
                T.gemm_v0(a_l1, b1_l1, big, init=True)
                T.copy(small, C2)
                T.copy(big, C1)

    with pytest.raises(tilelang.Error, match=r"L0C needs 147,456 bytes, capacity 131,072.*\n.*big|small"):
        tilelang.compile(main, out_idx=[3, 4], pass_configs=HYBRID)


def matmul_add_vid(M: int, N: int, K: int, bM: int = 64, bN: int = 64, bK: int = 64,
                   parts: int = 2) -> Any:
    """C = A @ B + D: the accumulator through a workspace, each AIV adding D to its own half of
    the rows (vid by hand), in `parts` column chunks of a T.Pipelined loop."""
    n_num = N // bN
    half, w = bM // 2, bN // parts

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
             D: T.Tensor((M, N), "float16"), C: T.Tensor((M, N), "float16"),
             ws: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(M, bM) * n_num, is_npu=True) as (cid, vid):
            bx = cid // n_num
            by = cid % n_num
            a_s = T.alloc_shared((bM, bK), "float16")
            b_s = T.alloc_shared((bK, bN), "float16")
            acc = T.alloc_fragment((bM, bN), "float32")
            c_ub = T.alloc_shared((half, w), "float16")
            d_ub = T.alloc_shared((half, w), "float16")
            e_ub = T.alloc_shared((half, w), "float16")
            for k in T.Pipelined(T.ceildiv(K, bK), num_stages=2):
                T.copy(A[bx * bM, k * bK], a_s)
                T.copy(B[k * bK, by * bN], b_s)
                T.gemm_v0(a_s, b_s, acc, init=(k == 0))
            T.copy(acc, ws[bx * bM, by * bN])
            for i in T.Pipelined(parts, num_stages=2):
                T.copy(ws[bx * bM + vid * half, by * bN + i * w], c_ub)
                T.copy(D[bx * bM + vid * half, by * bN + i * w], d_ub)
                for r, c in T.Parallel(half, w):
                    e_ub[r, c] = c_ub[r, c] + d_ub[r, c]
                T.copy(e_ub, C[bx * bM + vid * half, by * bN + i * w])

    return tilelang.compile(main, out_idx=[3], workspace_idx=[4], pass_configs=HYBRID,
                            check_hazards=True)


@pytest.mark.parametrize("M", (64,) + ROW_TAILS)
def test_vid_in_a_kernel_of_developer_tiles_with_cube_work(M: int) -> None:
    """Before: "reads vid in a kernel of developer tiles (T.alloc_shared / T.alloc_fragment)
    with cube work" at compile time."""
    torch.manual_seed(M)
    N, K = 128, 128
    a, b, d = torch.randn(M, K).half(), torch.randn(K, N).half(), torch.randn(M, N).half()
    c = matmul_add_vid(M, N, K)(a, b, d)
    ref = (a.float() @ b.float()).half().float() + d.float()
    torch.testing.assert_close(c.float(), ref, rtol=1e-2, atol=1e-2)


def test_a_fragment_as_a_gemm_operand_is_an_error_at_the_line() -> None:
    """Placement by use: a gemm_v0 operand made by T.alloc_fragment has no memory to go to."""

    @T.prim_func
    def main(A: T.Tensor((32, 32), "float16"), B: T.Tensor((32, 32), "float16"),
             C: T.Tensor((32, 32), "float16")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            a = T.alloc_fragment((32, 32), "float16")
            b = T.alloc_shared((32, 32), "float16")
            c = T.alloc_fragment((32, 32), "float32")
            c_ub = T.alloc_shared((16, 32), "float16")
            T.copy(A, a)
            T.copy(B, b)
            T.gemm_v0(a, b, c, init=True)
            T.copy(c, C)
            T.copy(C[vid * 16, 0], c_ub)

    with pytest.raises(tilelang.Error, match=r"test_tla_capacity.py:\d+: .*operand A .*T.alloc_fragment"):
        tilelang.compile(main, out_idx=[2], pass_configs=HYBRID)


def test_auto_sync_leaves_an_author_synced_scope_s_bytes_unshared_unless_ordered() -> None:
    """TL_ASCEND_AUTO_SYNC leaves a scope with its author's syncs as written, so the planner
    may not give a later tile the bytes of an earlier one there unless the author's syncs order
    the two: `y`'s load (MTE2) after `x`'s last read (V) has no sync between them. Reasoned,
    not run on the old code: plan_memory took every disjoint pair as shareable under auto_sync,
    so `y` could take `x`'s bytes and its load race the exp reading `x` (a WAR the hazard
    checker reports). Now `y` gets bytes of its own and the checker stays quiet."""
    N = 2048

    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32"),
             Z: T.Tensor((N,), "float32")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            x = T.alloc_ub((N,), "float32")
            y = T.alloc_ub((N,), "float32")
            z = T.alloc_ub((N,), "float32")
            with T.Scope("V"):
                if vid == 0:
                    T.copy(X, x)
                    T.barrier_all()
                    T.tile.exp(z, x)
                    T.copy(Y, y)
                    T.barrier_all()
                    T.tile.add(z, z, y)
                    T.barrier_all()
                    T.copy(z, Z)

    kernel = tilelang.compile(main, out_idx=[2], pass_configs={KEY.TL_ASCEND_AUTO_SYNC: True},
                              check_hazards=True)
    x, y = torch.randn(N), torch.randn(N)
    torch.testing.assert_close(kernel(x, y), torch.exp(x) + y, rtol=1e-5, atol=1e-5)
