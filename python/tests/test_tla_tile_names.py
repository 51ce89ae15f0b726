"""TileLang-Ascend's names of T.tile ops tl-ascend has under other names (issue 29, the runner's
table: dequantize_gemm/example_dequant_gemm_w4a8.py stopped at `T.tile.bitwise_rshift`,
gemm_splitk/example_tilelang_gemm_splitk.py at `T.tile.atomic_add`): `T.tile.bitwise_rshift` /
`bitwise_lshift` are T.tile.shift_right / shift_left, `T.tile.atomic_add(dst, src)` is
T.atomic_add. Written in TileLang-Ascend's syntax, checked against torch on tails.
"""

import pytest
import torch

import tl_ascend as tilelang
import tl_ascend.language as T

TAILS = (1, 7, 33, 1000, 4097)


@tilelang.jit(out_idx=[1, 2])
def shifts(N: int, bits: int):
    @T.prim_func
    def main(X: T.Tensor((N,), "int32"), R: T.Tensor((N,), "int32"), L: T.Tensor((N,), "int32")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            x = T.alloc_ub((N,), "int32")
            r = T.alloc_ub((N,), "int32")
            lft = T.alloc_ub((N,), "int32")
            with T.Scope("V"):
                if vid == 0:
                    T.copy(X, x)
                    T.set_flag("mte2", "v", 0)
                    T.wait_flag("mte2", "v", 0)
                    T.tile.bitwise_rshift(r, x, bits)
                    T.tile.bitwise_lshift(lft, x, bits)
                    T.set_flag("v", "mte3", 0)
                    T.wait_flag("v", "mte3", 0)
                    T.copy(r, R)
                    T.copy(lft, L)

    return main


@pytest.mark.parametrize("N", TAILS)
def test_bitwise_shifts_are_the_shift_ops(N: int) -> None:
    # Before: UnknownNameError "T.tile.bitwise_rshift is not in tl-ascend: T.tile.shift_right".
    torch.manual_seed(N)
    x = torch.randint(-(1 << 20), 1 << 20, (N,), dtype=torch.int32)
    r, lft = shifts(N, 3)(x)
    torch.testing.assert_close(r, x >> 3)  # arithmetic on int32, as torch's
    torch.testing.assert_close(lft, x << 3)


@tilelang.jit
def add_rows(blocks: int, N: int):
    @T.prim_func
    def main(X: T.Tensor((blocks, N), "float32"), Out: T.Tensor((N,), "float32")):
        with T.Kernel(blocks, is_npu=True) as (cid, vid):
            x = T.alloc_ub((N,), "float32")
            with T.Scope("V"):
                if vid == 0:
                    T.copy(X[cid, 0], x)
                    T.set_flag("mte2", "mte3", 0)
                    T.wait_flag("mte2", "mte3", 0)
                    T.tile.atomic_add(Out, x)

    return main


@pytest.mark.parametrize("N", (8, 64, 1000))
def test_tile_atomic_add_is_atomic_add(N: int) -> None:
    # Before: UnknownNameError "T.tile.atomic_add is not in tl-ascend: T.atomic_add(dst, src)".
    torch.manual_seed(N)
    x = torch.randn(3, N)
    out = torch.randn(N)
    want = out.double() + x.double().sum(0)
    add_rows(3, N)(x, out)
    torch.testing.assert_close(out.double(), want, rtol=1e-6, atol=1e-6)


def test_jit_impl_gives_the_target_the_decorator_got() -> None:
    # Before: AttributeError "'_JITGenerator' object has no attribute '__jit_impl__'"
    # (gemv/example_gemv_v.py, linear_attention_normalize.py, gdn_solve_tril.py read it).
    @tilelang.jit(out_idx=[-1], target="pto")
    def a(N: int):
        return None

    @tilelang.jit(out_idx=[-1])
    def b(N: int):
        return None

    assert a.__jit_impl__.target == "pto" and a.__jit_impl__.out_idx == [-1]
    assert b.__jit_impl__.target == "auto"  # TileLang-Ascend's default
