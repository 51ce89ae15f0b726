"""tl_ascend.torch_npu.npu_dynamic_quant, the third torch_npu reference issue 29 names (beside
npu_swiglu_backward and npu_moe_token_permute): per-token symmetric int8 quantisation as CANN's
aclnnDynamicQuant documents it (scale = row_max(abs(x * smooth)) / 127, y = round(x * smooth /
scale)), against a float64 loop that lives only here; the MoE form with group_index; the
dispatcher spelling torch.ops.npu.npu_dynamic_quant; and its bad inputs, named.
"""

import pytest
import torch

import tl_ascend
import tl_ascend.torch_npu as torch_npu


def want(x: torch.Tensor, smooth=None, ends=None):
    """Row by row in float64 (ties are measure-zero on random data; the cast to int8 is exact)."""
    rows = x.reshape(-1, x.shape[-1]).double()
    ys, scales = [], []
    for t in range(rows.shape[0]):
        r = rows[t]
        if smooth is not None:
            g = 0 if ends is None else int(sum(int(e) <= t for e in ends))
            r = r * (smooth if ends is None else smooth[g]).double()
        s = r.abs().max() / 127
        ys.append(torch.zeros_like(r) if s == 0 else torch.round(r / s))
        scales.append(s)
    return torch.stack(ys).reshape(x.shape), torch.stack(scales).reshape(x.shape[:-1])


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("h", [1, 7, 33, 1000, 4097])
def test_dynamic_quant_follows_the_formula(dtype: torch.dtype, h: int) -> None:
    torch.manual_seed(h)
    x = torch.randn(2, 3, h).to(dtype)
    sm = (torch.rand(h) + 0.5).to(dtype)
    for smooth in (None, sm):
        y, scale = torch_npu.npu_dynamic_quant(x, smooth_scales=smooth)
        wy, ws = want(x, smooth)
        assert y.dtype == torch.int8 and y.shape == x.shape
        assert scale.dtype == torch.float32 and scale.shape == (2, 3)
        torch.testing.assert_close(scale.double(), ws, rtol=1e-6, atol=0)
        # float32 against float64 may move a value sitting within an ulp of a .5 by one step
        assert (y.double() - wy).abs().max() <= 1
        assert (y.double() != wy).float().mean() < 1e-3
        assert int(y.abs().max()) == 127  # the row's largest magnitude maps to 127


def test_group_index_scales_each_group_and_zero_rows_quantise_to_zero() -> None:
    torch.manual_seed(1)
    x = torch.randn(7, 64).half()
    x[4] = 0
    smooth = (torch.rand(3, 64) + 0.5).half()
    ends = torch.tensor([2, 2, 7], dtype=torch.int32)  # tokens 0-1 group 0, none in 1, 2-6 group 2
    y, scale = torch_npu.npu_dynamic_quant(x, smooth_scales=smooth, group_index=ends)
    wy, ws = want(x, smooth, ends)
    assert (y.double() - wy).abs().max() <= 1
    torch.testing.assert_close(scale.double(), ws, rtol=1e-6, atol=0)
    assert scale[4] == 0 and not y[4].any()
    y2, s2 = torch.ops.npu.npu_dynamic_quant(x, smooth_scales=smooth, group_index=ends)
    assert torch.equal(y2, y) and torch.equal(s2, scale)


def test_bad_inputs_are_named() -> None:
    x = torch.randn(4, 32).half()
    cases = [
        (lambda: torch_npu.npu_dynamic_quant(x, dst_type=torch.quint4x2), "dst_type .* is not supported"),
        (lambda: torch_npu.npu_dynamic_quant(x[0]), "more than one dimension"),
        (lambda: torch_npu.npu_dynamic_quant(x.float()), "must be float16 or bfloat16"),
        (lambda: torch_npu.npu_dynamic_quant(x, smooth_scales=torch.ones(32).bfloat16()), "x's dtype"),
        (lambda: torch_npu.npu_dynamic_quant(x, smooth_scales=torch.ones(16).half()), r"shape \[32\]"),
        (lambda: torch_npu.npu_dynamic_quant(x, smooth_scales=torch.ones(2, 32).half(),
                                             group_index=torch.tensor([3, 1])), "non-decreasing"),
    ]
    for call, match in cases:
        with pytest.raises(tl_ascend.Error, match="torch_npu.npu_dynamic_quant: .*" + match):
            call()
