"""TileLang-Ascend's mode model (issue 29, "TileLang-Ascend's mode model"), in its own syntax.

* `TL_ASCEND_AUTO_SYNC` on an expert kernel: the compiler writes the syncs of each scope that has
  none of its own (before: "pass config 'tl.ascend.auto_sync' is not supported for the expert
  kernel"); `T.func_attr({"enable_auto_sync": True})` does it for one kernel (before: an Error,
  "T.func_attr: not supported yet").
* `TL_ASCEND_AUTO_CV_COMBINE` on a hybrid kernel (`as (cid, vid)`, no T.Scope, vid used by hand)
  whose body is vector work only: a vector kernel (before: "pass config 'tl.ascend.auto_cv_combine'
  is not supported"; without the key the verifier still rejects the unscoped ops).
* The keys are TileLang-Ascend's strings (`tl.ascend_auto_sync`, ...), and their earlier tl-ascend
  spellings stay accepted.
Every kernel runs under the hazard checker (a missing sync is an error there), against torch.
Tails: an expert copy past its tensor is clipped there, as TileLang-Ascend clips it (issue 29;
before, the launch stopped with "T.copy: out-of-bounds access to 'A'"), so the tail sizes 1, 7,
33, 1000 and 4097 rows match too (test_tla_expert.py has the clipping's own tests).
"""


import pytest
import torch

import tl_ascend as tilelang
import tl_ascend.language as T

ROWS = (16, 48, 4096)
TAILS = (1, 7, 33, 1000, 4097)
AUTO = {tilelang.PassConfigKey.TL_ASCEND_AUTO_CV_COMBINE: True,
        tilelang.PassConfigKey.TL_ASCEND_AUTO_SYNC: True,
        tilelang.PassConfigKey.TL_ASCEND_MEMORY_PLANNING: True}


def test_the_keys_are_tilelang_ascends_strings() -> None:
    assert tilelang.PassConfigKey.TL_ASCEND_AUTO_SYNC == "tl.ascend_auto_sync"
    assert tilelang.PassConfigKey.TL_ASCEND_MEMORY_PLANNING == "tl.ascend_memory_planning"
    assert tilelang.PassConfigKey.TL_ASCEND_AUTO_CV_COMBINE == "tl.ascend_auto_cv_combine"
    assert tilelang.PassConfigKey.TL_ASCEND_AUTO_CV_SYNC == "tl.ascend_auto_cross_core_sync"


@tilelang.jit(out_idx=[1], pass_configs=AUTO, check_hazards=True)
def hybrid_sigmoid(M, N, block_M, block_N, dtype="float32"):
    """A hybrid kernel as TileLang-Ascend's activation examples write them: each AIV takes half
    of a block's rows by its vid, UB tiles from alloc_shared, no T.Scope, no flags."""
    n_num = T.ceildiv(N, block_N)
    half = block_M // 2

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M) * n_num, is_npu=True) as (cid, vid):
            bx = cid // n_num
            by = cid % n_num
            a = T.alloc_shared((half, block_N), dtype)
            b = T.alloc_ub((half, block_N), dtype)
            T.copy(A[bx * block_M + vid * half, by * block_N], a)
            T.tile.mul(a, a, -1.0)
            T.tile.exp(a, a)
            T.tile.add(a, a, 1.0)
            T.tile.reciprocal(b, a)
            T.copy(b, B[bx * block_M + vid * half, by * block_N])

    return main


@pytest.mark.parametrize("M", ROWS)
def test_a_vector_only_hybrid_kernel_is_a_vector_kernel(M: int) -> None:
    torch.manual_seed(M)
    N = 128
    x = torch.randn(M, N)
    kernel = hybrid_sigmoid(M, N, 16, 64)
    torch.testing.assert_close(kernel(x), torch.sigmoid(x), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("M", TAILS)
def test_a_tail_block_the_expert_copy_would_read_past_is_clipped(M: int) -> None:
    torch.manual_seed(M)
    x = torch.randn(M, 128)
    torch.testing.assert_close(hybrid_sigmoid(M, 128, 16, 64)(x), torch.sigmoid(x), rtol=1e-3, atol=1e-3)


def expert_exp(M, N, block_M, attr: bool):
    """An expert kernel with its scope and no flags: the compiler writes them when asked (by
    the pass config, or by T.func_attr for this kernel only)."""

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        if attr:
            T.func_attr({"enable_auto_sync": True, "tir.noalias": True})
        with T.Kernel(T.ceildiv(M, block_M), is_npu=True) as (cid, vid):
            with T.Scope("V"):
                a = T.alloc_ub((block_M // 2, N), "float32")
                T.copy(A[cid * block_M + vid * (block_M // 2), 0], a)
                T.tile.exp(a, a)
                T.copy(a, B[cid * block_M + vid * (block_M // 2), 0])

    return main


@pytest.mark.parametrize("M", ROWS)
@pytest.mark.parametrize("how", ["pass_config", "func_attr"])
def test_auto_sync_writes_an_expert_kernels_syncs(M: int, how: str) -> None:
    torch.manual_seed(M)
    x = torch.randn(M, 64)
    if how == "pass_config":
        kernel = tilelang.compile(expert_exp(M, 64, 16, False), out_idx=[1],
                                  pass_configs={tilelang.PassConfigKey.TL_ASCEND_AUTO_SYNC: True}, check_hazards=True)
    else:
        kernel = tilelang.compile(expert_exp(M, 64, 16, True), out_idx=[1], check_hazards=True)
    torch.testing.assert_close(kernel(x), x.exp(), rtol=1e-5, atol=1e-5)


def test_without_auto_sync_the_missing_flags_are_named_by_the_hazard_checker() -> None:
    kernel = tilelang.compile(expert_exp(32, 64, 16, False), out_idx=[1], check_hazards=True)
    with pytest.raises(tilelang.Error, match="hazard"):
        kernel(torch.randn(32, 64))


def test_without_auto_cv_combine_unscoped_work_is_an_error_naming_the_key() -> None:
    with pytest.raises(tilelang.Error, match="tl.ascend_auto_cv_combine"):
        tilelang.compile(_unscoped(), out_idx=[1])


def _unscoped():
    @T.prim_func
    def main(A: T.Tensor((16, 64), "float32"), B: T.Tensor((16, 64), "float32")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            a = T.alloc_ub((8, 64), "float32")
            T.copy(A[vid * 8, 0], a)
            T.copy(a, B[vid * 8, 0])

    return main


def test_a_hybrid_kernel_of_cube_work_alone_is_a_cube_kernel() -> None:
    # Before the split (test_tla_hybrid.py has the kernels with both cores' work) this was the
    # error "cube work in a kernel without T.Scope".
    @T.prim_func
    def main(A: T.Tensor((32, 32), "float16"), C: T.Tensor((32, 32), "float32")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            a = T.alloc_L1((32, 32), "float16")
            c = T.alloc_L0C((32, 32), "float32")
            T.copy(A, a)
            T.gemm_v0(a, a, c, init=True)
            T.copy(c, C)

    kernel = tilelang.compile(main, out_idx=[1], pass_configs=AUTO, check_hazards=True)
    assert 'T.Scope("Cube")' in kernel.get_tile_ir()
    assert 'T.Scope("Vector")' not in kernel.get_tile_ir()
    a = torch.randn(32, 32, dtype=torch.float16)
    torch.testing.assert_close(kernel(a), a.float() @ a.float(), rtol=1e-3, atol=1e-3)


def test_func_attr_rejects_an_unknown_attribute_naming_it() -> None:
    with pytest.raises(tilelang.Error, match="T.func_attr: unknown attribute 'enable_auto_cv'"):
        @T.prim_func
        def main(A: T.Tensor((16,), "float32")):
            T.func_attr({"enable_auto_cv": True})
            with T.Kernel(1, is_npu=True) as (cid, vid):
                with T.Scope("V"):
                    a = T.alloc_ub((16,), "float32")
                    T.copy(A, a)


def test_the_earlier_spellings_stay_accepted() -> None:
    kernel = tilelang.compile(expert_exp(32, 64, 16, False), out_idx=[1],
                              pass_configs={"tl.ascend.auto_sync": True, "tl.ascend.memory_planning": True},
                              check_hazards=True)
    x = torch.randn(32, 64)
    torch.testing.assert_close(kernel(x), x.exp())


def scaled_matmul(N: int, K: int, block: int = 32):
    """int8_gemm.py's shape, our code: C scope accumulates A @ B^T into a GM workspace, raises a
    cross-core flag; V scope waits on it, scales the rows and stores. The author wrote the
    cross-core flags; TL_ASCEND_AUTO_SYNC writes each core's own syncs around them."""
    M = T.symbolic("M")
    half = block // 2

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((N, K), "float16"), S: T.Tensor((M,), "float32"),
             C: T.Tensor((M, N), "float32"), W: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, block) * (N // block), is_npu=True) as (cid, vid):
            bm, bn = cid // (N // block), cid % (N // block)
            with T.Scope("C"):
                a = T.alloc_L1((block, K), "float16")
                b = T.alloc_L1((block, K), "float16")
                c = T.alloc_L0C((block, block), "float32")
                T.copy(A[bm * block, 0], a)
                T.copy(B[bn * block, 0], b)
                T.gemm_v0(a, b, c, transpose_B=True, init=True)
                T.copy(c, W[bm * block, bn * block])
                T.set_cross_flag("FIX", 0)
            with T.Scope("V"):
                w = T.alloc_ub((half, block), "float32")
                s = T.alloc_ub((half,), "float32")
                T.wait_cross_flag(0)
                T.copy(W[bm * block + vid * half, bn * block], w)
                T.copy(S[bm * block + vid * half], s)
                for i, j in T.Parallel(half, block):
                    w[i, j] *= s[i]
                T.copy(w, C[bm * block + vid * half, bn * block])

    return main


@pytest.mark.parametrize("M", (1, 7, 33, 1000))
def test_auto_sync_orders_a_scope_whose_author_wrote_only_cross_core_flags(M: int) -> None:
    # Before: the V scope's own wait_cross_flag counted as "syncs of its own", so insert_syncs left
    # the scope without any: the hazard checker stopped the launch with a "RAW hazard on UB"
    # (int8_gemm.py's next blocker: "copy (MTE3) reads c_out ... is not ordered after tile.cast
    # (V) writes c_out"). The fast-mode result was right only because fast mode runs in program order.
    torch.manual_seed(M)
    a, b, s = torch.randn(M, 64).half(), torch.randn(64, 64).half(), torch.randn(M)
    kernel = tilelang.compile(scaled_matmul(64, 64), out_idx=[3], workspace_idx=[4],
                              pass_configs={tilelang.PassConfigKey.TL_ASCEND_AUTO_SYNC: True}, check_hazards=True)
    want = (a.float() @ b.float().T) * s[:, None]
    torch.testing.assert_close(kernel(a, b, s), want, rtol=1e-3, atol=1e-3)
