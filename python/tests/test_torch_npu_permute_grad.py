"""The gradient of tl_ascend.torch_npu.npu_moe_token_permute (the reference of
moe_token_permute/moe_token_permute_grad.py, issue 29): each token's topK rows of the permuted
gradient summed in float32 and rounded once, against an fp64 sum; before, autograd of the
indexing added them in the tokens' dtype (fp16: 25 of 256 gradients off by up to 6 %, and the
script's fp32-accumulating kernel failed its own check against it).
"""

import pytest
import torch

import tl_ascend.torch_npu as torch_npu


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("tokens,topk,clip", [(1, 1, None), (7, 2, None), (33, 4, 50), (1000, 8, None)])
def test_permute_grad_sums_in_float32(dtype, tokens: int, topk: int, clip) -> None:
    torch.manual_seed(tokens * topk)
    x = torch.randn(tokens, 16).to(dtype).requires_grad_()
    idx = torch.randint(0, 8, (tokens, topk))
    out, sorted_idx = torch_npu.npu_moe_token_permute(x, idx, num_out_tokens=clip)
    grad = torch.randn_like(out)
    out.backward(grad)
    # fp64 reference: token t gets the rows sorted_idx[t * topk + j] of grad (those kept).
    want = torch.zeros(tokens, 16, dtype=torch.float64)
    s = sorted_idx.long().reshape(-1)
    for e in range(s.numel()):
        if s[e] < out.shape[0]:
            want[e // topk] += grad[s[e]].double()
    if dtype == torch.float32:  # a float32 sum rounds at each add
        torch.testing.assert_close(x.grad.double(), want, rtol=1e-6, atol=1e-6)
    else:  # the float32 sum of a few fp16 / bf16 values, rounded once: the fp64 sum rounded
        torch.testing.assert_close(x.grad, want.to(dtype), rtol=0, atol=0)
    assert x.grad.dtype == dtype
