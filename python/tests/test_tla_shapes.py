"""Kernel argument shapes and `real_shape=` reductions of TileLang-Ascend scripts (issue 29).

Argument shapes. The chip takes a GM pointer, and TileLang-Ascend's adapter passes data pointers
(its shape check is commented out), so its scripts pass tensors whose shape differs from the
declared one: scale_a [M, 1] for [M], a mask [8192] for [32, 256], weights [B, S, N, G, 1] for
[B, S, N, G], workspaces sized for two stages. tl-ascend's rule (docs/python.md, "Argument
shapes"): same element count and contiguous -> the row-major view of the declared shape; more
elements, of a parameter the kernel writes -> its first elements (the rest untouched); more
elements of a parameter the kernel only reads, fewer elements, or a non-contiguous tensor of
another shape -> an error naming the argument, the declared shape and the one given. Before this
change every one of these was "argument 'X' must have shape [..], got [..]".

real_shape=[rows, cols] on T.reduce_max / reduce_min / reduce_sum reduces the top-left corner of a
2-D tile (TileLang-Ascend's slice-buffer reduce), 0 meaning the whole extent, and writes the
results to the first elements of dst. Before: "T.reduce_max(src, dst, dim=-1, clear=True): got an
unexpected keyword argument 'real_shape'".
References are torch's and live here; sizes on the tails 1, 7, 33, 1000, 4097.
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


# ---- argument shapes --------------------------------------------------------------------------------


@tilelang.jit(pass_configs=AUTO, check_hazards=True)
def scaled_rows(M: int, N: int = BLOCK):
    """Y[r, :] = X[r, :] * S[r]: one row per AIV, S declared [M] as scale_a is in int8_gemm."""
    blocks = (M + 1) // 2

    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), S: T.Tensor((M,), "float32"), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(blocks, is_npu=True) as (cid, vid):
            r = cid * 2 + vid
            x = T.alloc_ub((1, N), "float32")
            s = T.alloc_ub((8,), "float32")
            if r < M:
                T.copy(X[r, 0], x)
                T.copy(S[r], s[0:1], pad_value=0.0)
                T.tile.mul(x, x, s[0])
                T.copy(x, Y[r, 0])

    return main


@pytest.mark.parametrize("m", TAILS)
def test_a_tensor_of_the_same_element_count_is_the_row_major_view(m: int) -> None:
    # Before: "argument 'X' must have shape [m, 64], got [64m]" and "'S' must have shape [m],
    # got [m, 1]" (int8_gemm.py, rope_mask.py, lightning_indexer's weights).
    x, s = torch.randn(m, BLOCK), torch.randn(m, 1)
    y = torch.zeros(m * BLOCK)
    scaled_rows(m)(x.reshape(-1), s, y)
    torch.testing.assert_close(y.view(m, BLOCK), x * s)


@pytest.mark.parametrize("m", (1, 7, 33))
def test_a_larger_output_gets_its_first_elements_written_and_the_rest_kept(m: int) -> None:
    # A workspace or output sized for more (two pipeline stages, as sparse_flash_attn_gqa_pipeline_
    # pto.py passes them): the kernel writes the first m * 64 elements, as on the chip.
    # Before: "argument 'Y' must have shape [m, 64], got [2m, 64]".
    x, s = torch.randn(m, BLOCK), torch.randn(m)
    y = torch.full((2 * m, BLOCK), 7.0)
    scaled_rows(m)(x, s, y)
    torch.testing.assert_close(y[:m], x * s[:, None])
    assert bool((y[m:] == 7.0).all())


def test_a_larger_input_is_refused_naming_what_the_kernel_would_read() -> None:
    # An input the kernel only reads, larger than declared: the kernel would read the first rows of
    # a larger tensor (swi_glu_grad.py's dY [M, 2N] for [M, N]: its first M/2 rows, not the first
    # half of each row). Before: the same refusal without the reason.
    k = scaled_rows(7)
    with pytest.raises(tilelang.Error, match=r"argument 'X' must have shape \[7, 64\], got \[14, 64\]: it has "
                                             r"896 elements, more than the 448 the kernel reads"):
        k(torch.randn(14, BLOCK), torch.randn(7), torch.zeros(7, BLOCK))


@pytest.mark.parametrize("given,why", [
    ((6, BLOCK), r"'X' must have shape \[7, 64\], got \[6, 64\]: it has 384 elements, the kernel addresses 448"),
    ((7 * BLOCK - 1,), r"'X' must have shape \[7, 64\], got \[447\]: it has 447 elements"),
])
def test_a_smaller_tensor_is_an_error_naming_argument_expected_and_got(given, why: str) -> None:
    with pytest.raises(tilelang.Error, match=why):
        scaled_rows(7)(torch.randn(*given), torch.randn(7), torch.zeros(7, BLOCK))


def test_a_non_contiguous_tensor_of_another_shape_is_an_error() -> None:
    x = torch.randn(BLOCK, 14)[:, ::2]  # 448 elements, strided
    with pytest.raises(tilelang.Error, match=r"'X' must have shape \[7, 64\], got \[64, 7\]: a tensor of another "
                                             r"shape is read as a row-major view, and this one is not contiguous"):
        scaled_rows(7)(x, torch.randn(7), torch.zeros(7, BLOCK))


@tilelang.jit(out_idx=[-1], pass_configs=AUTO, check_hazards=True)
def dynamic_scale(N: int = BLOCK):
    M = T.symbolic("M")

    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), W: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(M, is_npu=True) as (cid, vid):
            x = T.alloc_ub((1, N), "float32")
            w = T.alloc_ub((1, N), "float32")
            if vid == 0:
                T.copy(X[cid, 0], x)
                T.copy(W[cid, 0], w)
                T.tile.mul(x, x, w)
                T.copy(x, Y[cid, 0])

    return main


@pytest.mark.parametrize("m", (1, 7, 33))
def test_a_dynamic_size_binds_from_a_tensor_of_the_declared_rank(m: int) -> None:
    # W comes as [M, N, 1] (lightning_indexer_dynamic_shape.py's weights): M binds from X, whose
    # dimensions line up with the declaration, and W is its row-major view.
    # Before: "argument 'W' must have shape [m, 64], got [m, 64, 1]".
    x, w = torch.randn(m, BLOCK), torch.randn(m, BLOCK, 1)
    torch.testing.assert_close(dynamic_scale()(x, w), x * w[..., 0])


# ---- real_shape= on reductions --------------------------------------------------------------------


@tilelang.jit(out_idx=[1], pass_configs=AUTO, check_hazards=True)
def corner_reduce(op: str, rows: int, cols: int, dim: int, R: int = 8, C: int = 16):
    @T.prim_func
    def main(X: T.Tensor((R, C), "float32"), Y: T.Tensor((1, C), "float32")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            a = T.alloc_ub((R, C), "float32")
            o = T.alloc_ub((1, C), "float32")  # the physical row layout TileLang-Ascend keeps
            if vid == 0:
                T.copy(X, a)
                T.tile.fill(o, 0.0)
                getattr(T, op)(a, o, dim=dim, real_shape=[rows, cols])
                T.copy(o, Y)

    return main


_TORCH = {"reduce_max": lambda t, d: t.amax(d), "reduce_min": lambda t, d: t.amin(d),
          "reduce_sum": lambda t, d: t.sum(d)}


@pytest.mark.parametrize("op", sorted(_TORCH))
@pytest.mark.parametrize("rows,cols,dim", [(8, 4, -1), (1, 7, -1), (5, 0, -1), (3, 16, 0), (7, 1, 0), (0, 9, 0)])
def test_real_shape_reduces_the_top_left_corner(op: str, rows: int, cols: int, dim: int) -> None:
    # Before: "T.reduce_max(src, dst, dim=-1, clear=True): got an unexpected keyword argument
    # 'real_shape'".
    x = torch.randn(8, 16)
    corner = x[: rows or 8, : cols or 16]
    want = _TORCH[op](corner, 1 if dim == -1 else 0)
    got = corner_reduce(op, rows, cols, dim)(x)
    torch.testing.assert_close(got[0, : want.numel()], want)
    assert bool((got[0, want.numel():] == 0).all())  # the rest of dst is left as it was


@pytest.mark.parametrize("real_shape,why", [
    ([9, 4], r"real_shape\[0\] = 9 exceeds the extent 8 of tile 'a'"),
    ([4], r"argument 'real_shape' must be a list \[rows, cols\]"),
    ([4, -1], r"argument 'real_shape\[1\]' must be >= 0"),
    ([4, 2.5], r"argument 'real_shape\[1\]' must be an int or kernel expression"),
])
def test_a_bad_real_shape_is_an_error_at_its_line(real_shape, why: str) -> None:
    with pytest.raises(tilelang.Error, match=r"test_tla_shapes.py:\d+: T.reduce_max: .*" + why):
        @T.prim_func
        def main(X: T.Tensor((8, 16), "float32"), Y: T.Tensor((1, 16), "float32")):
            with T.Kernel(1, is_npu=True) as (cid, vid):
                a = T.alloc_ub((8, 16), "float32")
                o = T.alloc_ub((1, 16), "float32")
                T.copy(X, a)
                T.reduce_max(a, o, -1, real_shape=real_shape)
                T.copy(o, Y)
