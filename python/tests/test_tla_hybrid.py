"""TileLang-Ascend hybrid kernels with cube work (issue 29, "mode model"), in its own syntax.

`T.Kernel(n, is_npu=True) as (cid, vid)`, hardware buffers (alloc_L1 / alloc_L0C / alloc_ub), no
T.Scope, GM workspaces passed as `workspace_idx` parameters, and the pass configs
TL_ASCEND_AUTO_CV_COMBINE + TL_ASCEND_AUTO_CV_SYNC (+ AUTO_SYNC): the compiler splits the body
into cube and vector code and puts cross-core flags on each workspace (docs/python.md, "Hybrid
kernels"). Before, every kernel here stopped at compile time with "is cube work in a kernel
without T.Scope".

* a GEMM whose L0C goes through a workspace to a vector epilogue (relu), each core looping over
  several tiles, so the workspace is reused and the consumer's credit (WAR) is exercised;
* the reverse: each AIV writes its rows of a workspace one by one, the cube copies it into L1;
* tails: expert copies are not clipped at the tensor yet (issue 29, "Surface"), so on the tail
  sizes the launch stops with an error naming the copy and the tensor, never a silent result;
* every run under the hazard checker (and the stale-data checker), which stays quiet; without
  TL_ASCEND_AUTO_CV_SYNC the same kernel has no cross-core flags and the checker reports it;
* cube code reading vid, and a workspace the protocol cannot pair, are errors at the line.
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
NO_CV_SYNC = {KEY.TL_ASCEND_AUTO_CV_COMBINE: True, KEY.TL_ASCEND_AUTO_SYNC: True}
TAILS = (1, 7, 33, 1000, 4097)


def gemm_relu(M: int, N: int, K: int, configs: dict, bM: int = 32, bN: int = 64, bK: int = 64,
              cores: int = 2) -> Any:
    """C = relu(A @ B): the cube's L0C to a workspace, each AIV's half of its rows to the vector
    epilogue. Each of `cores` blocks loops over the tiles t = r * cores + cid."""
    n_num = T.ceildiv(N, bN)
    tiles = T.ceildiv(M, bM) * n_num
    rounds = T.ceildiv(tiles, cores)
    half = bM // 2

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
             C: T.Tensor((M, N), "float32"), ws: T.Tensor((cores, bM, bN), "float32")):
        with T.Kernel(cores, is_npu=True) as (cid, vid):
            a_l1 = T.alloc_L1((bM, bK), "float16")
            b_l1 = T.alloc_L1((bK, bN), "float16")
            c_l0 = T.alloc_L0C((bM, bN), "float32")
            c_ub = T.alloc_ub((half, bN), "float32")
            for r in T.serial(rounds):
                t = r * cores + cid
                if t < tiles:
                    bx = t // n_num
                    by = t % n_num
                    for k in T.serial(T.ceildiv(K, bK)):
                        T.copy(A[bx * bM:(bx + 1) * bM, k * bK:(k + 1) * bK], a_l1)
                        T.copy(B[k * bK:(k + 1) * bK, by * bN:(by + 1) * bN], b_l1)
                        T.gemm_v0(a_l1, b_l1, c_l0, init=(k == 0))
                    T.copy(c_l0, ws[cid, :, :])
                    T.copy(ws[cid, vid * half:vid * half + half, :], c_ub)
                    T.tile.max(c_ub, c_ub, 0.0)
                    T.copy(c_ub, C[bx * bM + vid * half:bx * bM + vid * half + half,
                                   by * bN:(by + 1) * bN])

    return tilelang.compile(main, out_idx=[2], workspace_idx=[3], pass_configs=configs,
                            check_hazards=True)


def scaled_gemm(M: int, N: int, configs: dict, bM: int = 32, K: int = 64) -> Any:
    """C = (2 X) @ B: each AIV scales its half of a block's rows of X row by row into a
    workspace (a loop the cube does not run), the cube copies the whole workspace into L1."""
    half = bM // 2

    @T.prim_func
    def main(X: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
             C: T.Tensor((M, N), "float32"), ws: T.Tensor((M // bM, bM, K), "float16")):
        with T.Kernel(M // bM, is_npu=True) as (cid, vid):
            x_ub = T.alloc_ub((1, K), "float16")
            a_l1 = T.alloc_L1((bM, K), "float16")
            b_l1 = T.alloc_L1((K, N), "float16")
            c_l0 = T.alloc_L0C((bM, N), "float32")
            for j in T.serial(half):
                row = cid * bM + vid * half + j
                T.copy(X[row:row + 1, :], x_ub)
                T.tile.mul(x_ub, x_ub, 2.0)
                T.copy(x_ub, ws[cid, vid * half + j:vid * half + j + 1, :])
            T.copy(ws[cid, :, :], a_l1)
            T.copy(B, b_l1)
            T.gemm_v0(a_l1, b_l1, c_l0, init=True)
            T.copy(c_l0, C[cid * bM:(cid + 1) * bM, :])

    return tilelang.compile(main, out_idx=[2], workspace_idx=[3], pass_configs=configs,
                            check_hazards=True)


def ref_gemm_relu(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.relu(a.float() @ b.float())


@pytest.mark.parametrize("M,N,K", [(32, 64, 64), (96, 128, 128), (256, 192, 64)])
def test_a_gemm_through_a_workspace_to_a_vector_epilogue_matches_torch(M: int, N: int, K: int) -> None:
    torch.manual_seed(M + N + K)
    a = torch.randn(M, K, dtype=torch.float16)
    b = torch.randn(K, N, dtype=torch.float16)
    kernel = gemm_relu(M, N, K, HYBRID)
    torch.testing.assert_close(kernel(a, b), ref_gemm_relu(a, b), rtol=1e-3, atol=1e-3)
    # Timed mode too: the flags order the cores whatever their relative speed.
    c = kernel.run(a, b, mode="timed")
    torch.testing.assert_close(c, ref_gemm_relu(a, b), rtol=1e-3, atol=1e-3)


def test_the_split_kernel_has_both_scopes_and_the_workspace_flags() -> None:
    src = gemm_relu(64, 64, 64, HYBRID).get_tile_ir()
    assert 'T.Scope("Cube")' in src and 'T.Scope("Vector")' in src
    assert 'T.set_cross_flag("FIX", 0, mode=2, auto=True)' in src  # the cube's data flag
    assert 'T.set_cross_flag("MTE2", 1, mode=2, auto=True)' in src  # the vector's credit


@pytest.mark.parametrize("M", TAILS)
def test_a_tail_block_is_clipped_and_matches_torch(M: int) -> None:
    """Rows M not a multiple of bM: the expert copies at A's and C's end are clipped at the tensor
    (clip_expert_copies, docs/python.md "Automation inside expert scopes"). Before that pass the
    launch stopped with "T.copy: out-of-bounds access to 'A'"."""
    torch.manual_seed(M)
    a = torch.randn(M, 64, dtype=torch.float16)
    b = torch.randn(64, 64, dtype=torch.float16)
    c = gemm_relu(M, 64, 64, HYBRID)(a, b)
    torch.testing.assert_close(c, ref_gemm_relu(a, b), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("M,N", [(32, 64), (128, 32), (1024, 16)])
def test_a_vector_to_cube_workspace_written_row_by_row_matches_torch(M: int, N: int) -> None:
    torch.manual_seed(M * N)
    x = torch.randn(M, 64, dtype=torch.float16)
    b = torch.randn(64, N, dtype=torch.float16)
    c = scaled_gemm(M, N, HYBRID)(x, b)
    torch.testing.assert_close(c, (2 * x.float()) @ b.float(), rtol=1e-3, atol=1e-3)


def test_without_auto_cv_sync_the_missing_cross_core_flag_is_reported() -> None:
    # The author's flags stand without TL_ASCEND_AUTO_CV_SYNC; this kernel has none, so the
    # vector side reads the workspace before the cube has written it: the hazard checker names
    # the pair (with the key the same kernel is quiet: the tests above).
    kernel = gemm_relu(32, 64, 64, NO_CV_SYNC)
    assert "cross_flag" not in kernel.get_tile_ir()
    with pytest.raises(tilelang.Error, match=r"RAW hazard on GM: copy .* reads ws elements"):
        kernel(torch.randn(32, 64, dtype=torch.float16), torch.randn(64, 64, dtype=torch.float16))


def test_cube_code_reading_vid_is_an_error_at_its_line() -> None:
    @T.prim_func
    def main(A: T.Tensor((64, 32), "float16"), C: T.Tensor((32, 32), "float32")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            a = T.alloc_L1((32, 32), "float16")
            c = T.alloc_L0C((32, 32), "float32")
            T.copy(A[vid * 32:vid * 32 + 32, :], a)  # MARK: vid
            T.gemm_v0(a, a, c, init=True)
            T.copy(c, C)

    with pytest.raises(tilelang.Error,
                       match=r"test_tla_hybrid.py:\d+: .*is cube work in a hybrid kernel .*reads 'vid'"):
        tilelang.compile(main, out_idx=[1], pass_configs=HYBRID)


def test_a_workspace_written_twice_per_read_is_an_error_naming_it() -> None:
    @T.prim_func
    def main(A: T.Tensor((32, 32), "float16"), C: T.Tensor((32, 32), "float32"),
             ws: T.Tensor((2, 32, 32), "float32")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            a = T.alloc_L1((32, 32), "float16")
            c = T.alloc_L0C((32, 32), "float32")
            u = T.alloc_ub((16, 32), "float32")
            T.copy(A, a)
            T.gemm_v0(a, a, c, init=True)
            T.copy(c, ws[0, :, :])
            T.copy(c, ws[1, :, :])
            T.copy(ws[0, vid * 16:vid * 16 + 16, :], u)
            T.copy(u, C[vid * 16:vid * 16 + 16, :])

    with pytest.raises(tilelang.Error, match=r"test_tla_hybrid.py:\d+: .*'ws' is written by .* and "
                                             r"again by .*two writes per iteration"):
        tilelang.compile(main, out_idx=[1], workspace_idx=[2], pass_configs=HYBRID)


def test_removing_the_cubes_wait_for_the_credit_is_caught() -> None:
    # The lowered kernel without the cube's wait for the vector's credit (its WAR guard): the
    # cube's next tile overwrites the workspace while the AIVs may still read it. The hazard
    # checker reports the unordered workspace accesses and the credits nobody consumed.
    lines = gemm_relu(96, 64, 64, HYBRID).get_tile_ir().split("\n")
    wait = next(n for n, line in enumerate(lines) if "T.wait_cross_flag(1, auto=True)" in line)
    assert "T.copy(c_l0, ws[" in lines[wait + 1]  # the wait right before the cube's write
    del lines[wait]
    kernel = tilelang.compile(tilelang.parse_ir("\n".join(lines)), out_idx=[2], workspace_idx=[3],
                              check_hazards=True)
    with pytest.raises(tilelang.Error) as e:
        kernel(torch.randn(96, 64, dtype=torch.float16), torch.randn(64, 64, dtype=torch.float16))
    assert "hazard on GM: copy" in str(e.value) and "ws elements" in str(e.value)
    assert "cross-core flag 1" in str(e.value)
