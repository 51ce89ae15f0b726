"""A call that passes the outputs too, as TileLang-Ascend's scripts do (issue 29).

dequantize_gemm/example_dequant_gemm_w4a8.py declares `@tilelang.jit(out_idx=[-1])` on
`main(A, B_packed, workspace, C)` and calls `kernel(A, qB, workspace, C_output)`. TileLang-Ascend's
adapter (cython_wrapper.pyx, `forward`) binds its inputs to the first arguments in order, allocates
the out_idx / workspace_idx parameters itself and never reads the rest, so the call returns a new
C and leaves C_output as it was. tl-ascend does the same, with a remark on stderr, when the extra
arguments are exactly the allocated parameters, last in the signature, each of its parameter's
dtype and shape; any other count stays an error. Before: "kernel 'main' takes 3 arguments (A,
B_packed, workspace), got 4". Kernels in TileLang-Ascend syntax, under the hazard checker, against
torch references that live here; sizes on the tails 1, 7, 33, 1000, 4097.
"""

from __future__ import annotations

import pytest
import torch

import tl_ascend as tilelang
import tl_ascend.language as T

TAILS = (1, 7, 33, 1000, 4097)
AUTO = {tilelang.PassConfigKey.TL_ASCEND_AUTO_CV_COMBINE: True,
        tilelang.PassConfigKey.TL_ASCEND_AUTO_SYNC: True,
        tilelang.PassConfigKey.TL_ASCEND_MEMORY_PLANNING: True}
BLOCK = 64


@tilelang.jit(out_idx=[-1], pass_configs=AUTO, check_hazards=True)
def add_rows(M: int, N: int = BLOCK):
    """C[r, :] = A[r, :] + B[r, :], one row per AIV."""
    blocks = (M + 1) // 2

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(blocks, is_npu=True) as (cid, vid):
            r = cid * 2 + vid
            a = T.alloc_ub((1, N), "float32")
            b = T.alloc_ub((1, N), "float32")
            if r < M:
                T.copy(A[r, 0], a)
                T.copy(B[r, 0], b)
                T.tile.add(a, a, b)
                T.copy(a, C[r, 0])

    return main


@tilelang.jit(out_idx=[1], pass_configs=AUTO, check_hazards=True)
def add_rows_out_first(M: int, N: int = BLOCK):
    """B[r, :] = A[r, :] + S[r, :] with the output declared before an input (out_idx=[1] of three)."""
    blocks = (M + 1) // 2

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32"), S: T.Tensor((M, N), "float32")):
        with T.Kernel(blocks, is_npu=True) as (cid, vid):
            r = cid * 2 + vid
            a = T.alloc_ub((1, N), "float32")
            s = T.alloc_ub((1, N), "float32")
            if r < M:
                T.copy(A[r, 0], a)
                T.copy(S[r, 0], s)
                T.tile.add(a, a, s)
                T.copy(a, B[r, 0])

    return main


@pytest.mark.parametrize("m", TAILS)
def test_a_passed_output_is_ignored_and_a_new_one_returned(m: int, capfd: pytest.CaptureFixture[str]) -> None:
    a, b = torch.randn(m, BLOCK), torch.randn(m, BLOCK)
    c_passed = torch.full((m, BLOCK), 7.0)
    c = add_rows(m)(a, b, c_passed)
    torch.testing.assert_close(c, a + b, rtol=0, atol=0)
    # As TileLang-Ascend's adapter: the tensor passed is not the output and is not written.
    assert c is not c_passed and bool((c_passed == 7.0).all())
    err = capfd.readouterr().err
    assert "the call passes 3 arguments; the last 1 ('C')" in err and "not written" in err


def test_the_inputs_alone_still_run_without_a_remark(capfd: pytest.CaptureFixture[str]) -> None:
    a, b = torch.randn(7, BLOCK), torch.randn(7, BLOCK)
    torch.testing.assert_close(add_rows(7)(a, b), a + b, rtol=0, atol=0)
    assert "remark" not in capfd.readouterr().err


@pytest.mark.parametrize("bad", ["dtype", "shape", "count"])
def test_extra_arguments_that_are_not_the_outputs_are_refused(bad: str) -> None:
    a, b = torch.randn(7, BLOCK), torch.randn(7, BLOCK)
    extra = {"dtype": (torch.zeros(7, BLOCK, dtype=torch.float16),),
             "shape": (torch.zeros(8, BLOCK),),
             "count": (torch.zeros(7, BLOCK), torch.zeros(7, BLOCK))}[bad]
    with pytest.raises(TypeError, match=r"kernel 'main' takes 2 arguments \(A, B\), got [34]"):
        add_rows(7)(a, b, *extra)


def test_an_output_before_an_input_is_not_bound_by_position() -> None:
    # TileLang-Ascend would bind the three arguments' first two to A and S, i.e. the tensor meant
    # for B to S: not what the caller meant, so tl-ascend refuses the call.
    a, s = torch.randn(7, BLOCK), torch.randn(7, BLOCK)
    with pytest.raises(TypeError, match=r"takes 2 arguments \(A, S\), got 3"):
        add_rows_out_first(7)(a, torch.zeros(7, BLOCK), s)
    torch.testing.assert_close(add_rows_out_first(7)(a, s), a + s, rtol=0, atol=0)
