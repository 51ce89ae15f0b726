"""TileLang-Ascend's developer-form kernels, in its own syntax (issue 29, "TileLang-Ascend's mode
model"): our own kernels, written the way its developer_mode / gemm examples are, each against a
torch reference on tails (M, N, K in 1, 7, 33 and sizes that are no multiple of the block).

* `as (cid, _)` with `T.alloc_shared` / `T.alloc_fragment` tiles, no T.Scope, under
  `TL_ASCEND_AUTO_CV_COMBINE`: a developer kernel (combine_cv makes it one). Before: an Error,
  "... is cube work in a kernel without T.Scope" (gemm_developer.py, example_gemm_infer_scope.py).
* `T.gemm_v0` on developer tiles is `T.gemm` (same arguments). Before, in a developer kernel
  (`T.Kernel(n, threads=2) as (cid)`): an Error, "T.gemm_v0: operand 'A': buffer 'A_L1' (UB) is
  used outside the block of its allocation" (matmul_add_developer.py).
* Copies between developer tiles on different cores (`T.copy(C_L0, c_ub)` fragment -> shared,
  a vector-written shared tile copied into the one a gemm reads) go through compiler-made
  workspaces. Before (gemm_v0 not seen as a gemm): on tails an Error, "... stores 'o_ub', which
  holds stale data past its valid part", on whole blocks the verifier's gemm_v0 errors.
* An expert GEMM's tail blocks (example_gemm_tail_block_developer.py): its cube loads and its
  store are clipped. Before: "T.copy: out-of-bounds access to 'A' ..." at launch.
* `T.exp` in an element loop is the chip's vector exp by default (allow_inexact_math on, as on
  the chip). Before: an Error, "T.Parallel: cannot vectorise: unsupported operation: T.exp on
  float32 ..." (sparse_flash_attn_developer_vid_reduce.py). `TL_DEV_ALLOW_INEXACT_MATH: False`
  asks for exact math and gives that error again.
* A developer-tile kernel with cube work that reads vid by hand is a hybrid kernel now
  (python/tests/test_tla_capacity.py).
Every kernel runs under the hazard checker (and with it the stale-data checker).
"""

import pytest
import torch

import tl_ascend as tilelang
import tl_ascend.language as T

AUTO = {tilelang.PassConfigKey.TL_ASCEND_AUTO_CV_COMBINE: True,
        tilelang.PassConfigKey.TL_ASCEND_AUTO_SYNC: True,
        tilelang.PassConfigKey.TL_ASCEND_MEMORY_PLANNING: True,
        tilelang.PassConfigKey.TL_ASCEND_AUTO_CV_SYNC: True}

# (M, N, K): tails on each dimension, and sizes that are no multiple of the 32 x 32 x 32 blocks.
SHAPES = [(1, 32, 32), (7, 33, 7), (33, 1, 33), (32, 7, 1), (100, 70, 45), (64, 64, 64)]


def _ab(M: int, N: int, K: int) -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(M * 10007 + N * 101 + K)
    return torch.randn(M, K).half(), torch.randn(K, N).half()


def _ref(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (a.float() @ b.float()).half()


@tilelang.jit(out_idx=[-1], pass_configs=AUTO, check_hazards=True)
def gemm_cid_underscore(M: int, N: int, K: int, block_M: int = 32, block_N: int = 32,
                        K_L1: int = 32, dtype: str = "float16", accum_dtype: str = "float"):
    """The developer GEMM of TileLang-Ascend's gemm_developer.py: `as (cid, _)`, shared and
    fragment tiles, gemm_v0 with init=(k == 0), no T.Scope, no flags."""
    m_num = T.ceildiv(M, block_M)
    n_num = T.ceildiv(N, block_N)

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(m_num * n_num, is_npu=True) as (cid, _):
            bx = cid // n_num
            by = cid % n_num
            A_L1 = T.alloc_shared((block_M, K_L1), dtype)
            B_L1 = T.alloc_shared((K_L1, block_N), dtype)
            C_L0 = T.alloc_fragment((block_M, block_N), accum_dtype)
            for k in T.serial(T.ceildiv(K, K_L1)):
                T.copy(A[bx * block_M, k * K_L1], A_L1)
                T.copy(B[k * K_L1, by * block_N], B_L1)
                T.gemm_v0(A_L1, B_L1, C_L0, init=(k == 0))
            T.copy(C_L0, C[bx * block_M, by * block_N])

    return main


@pytest.mark.parametrize("M,N,K", SHAPES)
def test_cid_underscore_with_developer_tiles_is_a_developer_kernel(M: int, N: int, K: int) -> None:
    a, b = _ab(M, N, K)
    torch.testing.assert_close(gemm_cid_underscore(M, N, K)(a, b), _ref(a, b), rtol=1e-2, atol=1e-2)


def test_the_kernel_after_combine_cv_is_lowered_as_a_developer_kernel() -> None:
    """The gates read the kernel each pass gets: after combine_cv the developer passes run (the
    gemm becomes loads and mmas in a Cube scope, the compiler writes the syncs)."""
    src = gemm_cid_underscore(64, 64, 64).get_tile_ir()
    assert "lowered_from_developer=1" in src
    assert "T.gemm_v0" not in src and "T.mma" in src


@tilelang.jit(out_idx=[3], pass_configs=AUTO, check_hazards=True)
def matmul_add_threads2(M: int, N: int, K: int, block_M: int = 32, block_N: int = 32,
                        block_K: int = 32, dtype: str = "float16", accum_dtype: str = "float"):
    """matmul_add_developer.py's form: `threads=2 ... as (cid)`, gemm_v0 on developer tiles, the
    accumulator copied to a shared tile (a crossing the compiler moves through a workspace), a
    vector add, whole-block UB tiles the compiler halves between the AIVs."""
    m_num = T.ceildiv(M, block_M)
    n_num = T.ceildiv(N, block_N)

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), D: T.Tensor((M, N), dtype),
             C: T.Tensor((M, N), dtype)):
        with T.Kernel(m_num * n_num, threads=2, is_npu=True) as (cid):
            bx = cid // n_num
            by = cid % n_num
            A_L1 = T.alloc_shared((block_M, block_K), dtype)
            B_L1 = T.alloc_shared((block_K, block_N), dtype)
            C_L0 = T.alloc_fragment((block_M, block_N), accum_dtype)
            c_ub = T.alloc_shared((block_M, block_N), accum_dtype)
            d_ub = T.alloc_shared((block_M, block_N), dtype)
            d_f = T.alloc_shared((block_M, block_N), accum_dtype)
            o_ub = T.alloc_shared((block_M, block_N), dtype)
            for k in T.serial(T.ceildiv(K, block_K)):
                T.copy(A[bx * block_M, k * block_K], A_L1)
                T.copy(B[k * block_K, by * block_N], B_L1)
                if k == 0:
                    T.gemm_v0(A_L1, B_L1, C_L0, init=True)
                else:
                    T.gemm_v0(A_L1, B_L1, C_L0)
            T.copy(C_L0, c_ub)
            T.copy(D[bx * block_M, by * block_N], d_ub)
            T.tile.cast(d_f, d_ub, "CAST_NONE")
            T.tile.add(c_ub, c_ub, d_f)
            T.tile.cast(o_ub, c_ub, "CAST_RINT")
            T.copy(o_ub, C[bx * block_M, by * block_N])

    return main


@pytest.mark.parametrize("M,N,K", SHAPES)
def test_gemm_v0_on_developer_tiles_is_gemm_and_the_accumulator_crosses_cores(M: int, N: int, K: int) -> None:
    a, b = _ab(M, N, K)
    d = torch.randn(M, N).half()
    ref = (a.float() @ b.float() + d.float()).half()
    torch.testing.assert_close(matmul_add_threads2(M, N, K)(a, b, d), ref, rtol=1e-2, atol=1e-2)


@tilelang.jit(out_idx=[2], pass_configs=AUTO, check_hazards=True)
def scaled_then_gemm(M: int, N: int, K: int, block_M: int = 32, block_N: int = 32,
                     dtype: str = "float16", accum_dtype: str = "float"):
    """A shared tile the vector unit writes, copied into the shared tile a gemm_v0 reads as A
    (flash_attn_bshd_developer.py's `T.copy(acc_s_half, acc_s_l1)`): (2 * A) @ B, K whole."""
    m_num = T.ceildiv(M, block_M)
    n_num = T.ceildiv(N, block_N)

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(m_num * n_num, threads=2, is_npu=True) as (cid):
            bx = cid // n_num
            by = cid % n_num
            a_ub = T.alloc_shared((block_M, K), dtype)
            a_l1 = T.alloc_shared((block_M, K), dtype)
            b_l1 = T.alloc_shared((K, block_N), dtype)
            c_l0 = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.copy(A[bx * block_M, 0], a_ub)
            T.tile.mul(a_ub, a_ub, 2.0)
            T.copy(a_ub, a_l1)
            T.copy(B[0, by * block_N], b_l1)
            T.gemm_v0(a_l1, b_l1, c_l0, init=True)
            T.copy(c_l0, C[bx * block_M, by * block_N])

    return main


@pytest.mark.parametrize("M,N", [(1, 32), (7, 33), (33, 7), (100, 70)])
def test_a_vector_written_tile_copied_into_a_gemm_operand_crosses_cores(M: int, N: int) -> None:
    K = 32
    a, b = _ab(M, N, K)
    ref = ((2 * a).float() @ b.float()).half()
    torch.testing.assert_close(scaled_then_gemm(M, N, K)(a, b), ref, rtol=1e-2, atol=1e-2)


def softmax_rows(M: int, N: int, block_M: int = 8, exact: bool = False):
    """Row softmax with T.exp in an element loop (sparse_flash_attn_developer_vid_reduce.py's
    form)."""
    configs = {tilelang.PassConfigKey.TL_DEV_ALLOW_INEXACT_MATH: False} if exact else None

    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), threads=2) as cid:
            x = T.alloc_shared((block_M, N), "float32")
            m = T.alloc_fragment((block_M,), "float32")
            s = T.alloc_fragment((block_M,), "float32")
            T.copy(X[cid * block_M, 0], x)
            T.reduce_max(x, m, dim=-1)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = T.exp(x[i, j] - m[i])
            T.reduce_sum(x, s, dim=-1)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = x[i, j] / s[i]
            T.copy(x, Y[cid * block_M, 0])

    return tilelang.compile(main, out_idx=[1], pass_configs=configs, check_hazards=True)


@pytest.mark.parametrize("M", [1, 7, 33, 1000])
def test_exp_in_an_element_loop_is_the_chips_exp_by_default(M: int) -> None:
    torch.manual_seed(M)
    x = torch.randn(M, 64)
    torch.testing.assert_close(softmax_rows(M, 64)(x), torch.softmax(x, dim=-1), rtol=1e-5, atol=1e-6)


def test_exact_math_asked_for_makes_exp_in_an_element_loop_an_error() -> None:
    with pytest.raises(tilelang.Error, match=r"cannot vectorise: unsupported operation: T.exp on float32"):
        softmax_rows(16, 64, exact=True)


@tilelang.jit(out_idx=[-1], pass_configs={tilelang.PassConfigKey.TL_ASCEND_AUTO_SYNC: True},
              check_hazards=True)
def expert_gemm_tail_blocks(M: int, N: int, K: int, block_M: int = 32, block_N: int = 32,
                            K_L1: int = 32, dtype: str = "float16", accum_dtype: str = "float"):
    """example_gemm_tail_block_developer.py's form: an *expert* kernel (alloc_L1 / alloc_L0C,
    T.Scope("C")) whose blocks pass the tensors' ends on M, N and K. Its cube loads and its store
    are clipped (clip_expert_copies), a partial L1 tile zero-filled first."""
    m_num = T.ceildiv(M, block_M)
    n_num = T.ceildiv(N, block_N)

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(m_num * n_num, is_npu=True) as (cid, _):
            bx = cid // n_num
            by = cid % n_num
            A_L1 = T.alloc_L1((block_M, K_L1), dtype)
            B_L1 = T.alloc_L1((K_L1, block_N), dtype)
            C_L0 = T.alloc_L0C((block_M, block_N), accum_dtype)
            with T.Scope("C"):
                for k in T.serial(T.ceildiv(K, K_L1)):
                    T.copy(A[bx * block_M, k * K_L1], A_L1)
                    T.copy(B[k * K_L1, by * block_N], B_L1)
                    T.gemm_v0(A_L1, B_L1, C_L0, init=(k == 0))
                T.copy(C_L0, C[bx * block_M, by * block_N])

    return main


@pytest.mark.parametrize("M,N,K", SHAPES)
def test_an_expert_gemms_tail_blocks_are_clipped(M: int, N: int, K: int) -> None:
    """Before: every shape with a tail stopped the launch, "T.copy: out-of-bounds access to 'A'
    (global, shape [7, 7]) by operand 'src': dimension 1 covers [0, 32), outside [0, 7)"."""
    a, b = _ab(M, N, K)
    torch.testing.assert_close(expert_gemm_tail_blocks(M, N, K)(a, b), _ref(a, b), rtol=1e-2, atol=1e-2)


@tilelang.jit(out_idx=[-2])
def matmul_add_infer_scope(M: int, N: int, K: int, block_M: int = 32, block_N: int = 32,
                           block_K: int = 32, dtype: str = "float16", accum_dtype: str = "float"):
    """matmul_add_infer_scope.py's form: an expert kernel (hand-written T.Scope and flags, no pass
    config) whose tiles come from T.alloc_shared / T.alloc_fragment; each is placed by the scope
    that uses it (place_expert_tiles). Before: the verifier's "'A_L1' is a developer-mode shared
    buffer; expert-mode kernels place every buffer explicitly"."""
    m_num = M // block_M
    n_num = N // block_N
    half = block_M // 2

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype),
             D: T.Tensor((M, N), dtype)):
        with T.Kernel(m_num * n_num, is_npu=True) as (cid, vid):
            bx = cid // n_num
            by = cid % n_num
            A_L1 = T.alloc_shared((block_M, block_K), dtype)
            B_L1 = T.alloc_shared((block_K, block_N), dtype)
            C_L0 = T.alloc_fragment((block_M, block_N), accum_dtype)
            d_ub = T.alloc_shared((half, block_N), dtype)
            c_ub = T.alloc_shared((half, block_N), dtype)
            with T.Scope("C"):
                for k in T.serial(T.ceildiv(K, block_K)):
                    T.copy(A[bx * block_M, k * block_K], A_L1)
                    T.copy(B[k * block_K, by * block_N], B_L1)
                    T.barrier_all()
                    T.gemm_v0(A_L1, B_L1, C_L0, init=(k == 0))
                    T.barrier_all()
                T.copy(C_L0, C[bx * block_M, by * block_N])
                T.set_cross_flag("FIX", 0)
            with T.Scope("V"):
                T.wait_cross_flag(0)
                T.copy(C[bx * block_M + vid * half, by * block_N], c_ub)
                T.copy(D[bx * block_M + vid * half, by * block_N], d_ub)
                T.barrier_all()
                T.tile.add(c_ub, c_ub, d_ub)
                T.barrier_all()
                T.copy(c_ub, C[bx * block_M + vid * half, by * block_N])

    return main


@pytest.mark.parametrize("M,N,K", [(32, 32, 32), (64, 96, 7), (96, 32, 33), (32, 64, 100)])
def test_an_expert_kernels_shared_and_fragment_tiles_are_placed_by_their_scope(M: int, N: int, K: int) -> None:
    """Whole M and N blocks (the vector side's GM -> UB loads are not clipped in an expert
    kernel); K has tails (the cube side's loads are clipped)."""
    a, b = _ab(M, N, K)
    d = torch.randn(M, N).half()
    out = matmul_add_infer_scope(M, N, K).run(a, b, d, check_hazards=True)
    ref = (a.float() @ b.float()).half().float() + d.float()
    torch.testing.assert_close(out.float(), ref, rtol=1e-2, atol=1e-2)


def test_an_expert_tile_both_scopes_use_is_an_error_naming_both() -> None:
    @T.prim_func
    def main(A: T.Tensor((32, 32), "float16"), C: T.Tensor((32, 32), "float16")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            a = T.alloc_shared((32, 32), "float16")
            with T.Scope("C"):
                T.copy(A, a)
            with T.Scope("V"):
                T.copy(a, C)

    with pytest.raises(tilelang.Error, match=r"test_tla_developer.py:\d+: tile 'a' .* is used as L1 by .* and as UB by"):
        tilelang.compile(main, out_idx=[1])
