"""cann_ops_tilelang's top-k gate backward from Python and PyTorch: topk_gate_backward on tails
(T = 1, 7, 33, 4001; E = 256, k = 8) against torch autograd of a float64 torch gate with the
indices held fixed (references live only here), the torch op's autograd (logits.grad through
torch.ops.cann_ops_tilelang.topk_gate), forced ties, T = 0, opcheck, and bad input with the
library's located message.

Before: topk_gate_backward did not exist and topk_gate had no autograd (backward() raised
"does not require grad" / the op had no autograd kernel), so every test here failed.

Data: each test's seed (seed_plugin.py: from --seed and the test's node id) seeds torch's
global generator before it runs; a test's own generators take it from the `seed` fixture.
"""

from __future__ import annotations

import pytest
import torch

import cann_ops_tilelang as ops

OPS = torch.ops.cann_ops_tilelang
_SCORE = {"sigmoid": torch.sigmoid, "softmax": lambda t: torch.softmax(t, -1), "none": lambda t: t}


def _weights_ref(z: torch.Tensor, idx: torch.Tensor, scoring: str, normalize: bool, scale: float) -> torch.Tensor:
    """The forward's weights for the given indices, in float64 torch (differentiable in z)."""
    w = _SCORE[scoring](z).gather(1, idx.long())
    if normalize:
        w = w / (1e-20 + w.sum(-1, keepdim=True))
    return w * scale


def _grad_ref(z: torch.Tensor, dw: torch.Tensor, idx: torch.Tensor, scoring: str, normalize: bool,
              scale: float) -> torch.Tensor:
    zd = z.detach().double().requires_grad_(True)
    (_weights_ref(zd, idx, scoring, normalize, scale) * dw.double()).sum().backward()
    return zd.grad


def _random_indices(t: int, e: int, k: int, g: torch.Generator) -> torch.Tensor:
    return torch.stack([torch.randperm(e, generator=g)[:k] for _ in range(t)]).int().reshape(t, k)


@pytest.mark.parametrize("tokens", [1, 7, 33, 4001])
@pytest.mark.parametrize("scoring,normalize", [("sigmoid", True), ("softmax", True), ("none", False)])
def test_backward_tails_against_torch_autograd(tokens: int, scoring: str, normalize: bool, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(tokens, 256, generator=g)
    dw = torch.randn(tokens, 8, generator=g)
    idx = _random_indices(tokens, 256, 8, g)
    dz = ops.topk_gate_backward(dw, z, idx, k=8, scoring=scoring, normalize=normalize, route_scale=2.5)
    assert dz.shape == (tokens, 256) and dz.dtype == torch.float32
    # The chip's sigmoid / exp are approximations (1e-4 relative at worst, docs/virtual_npu.md).
    torch.testing.assert_close(dz.double(), _grad_ref(z, dw, idx, scoring, normalize, 2.5), rtol=2e-3,
                               atol=2e-4)


def test_torch_autograd_through_the_gate_with_ties_bf16(seed: int) -> None:
    """logits.grad through the torch op, logits from 9 values (many equal keys), bf16."""
    g = torch.Generator().manual_seed(seed)
    z = (torch.randint(-4, 5, (33, 256), generator=g).float() / 2).to(torch.bfloat16).requires_grad_(True)
    bias = torch.randint(0, 2, (256,), generator=g).float() / 4
    w, idx = OPS.topk_gate(z, bias, 8, "sigmoid", True, 2.5)
    dw = torch.randn(33, 8, generator=g)
    (w * dw).sum().backward()
    assert z.grad is not None and z.grad.dtype == torch.bfloat16
    want = _grad_ref(z.float(), dw, idx, "sigmoid", True, 2.5)
    torch.testing.assert_close(z.grad.double(), want, rtol=1.6e-2, atol=1e-3)
    # exactly the chosen experts get a gradient (sigmoid: the others' d w / d z is 0)
    chosen = torch.zeros(33, 256, dtype=torch.bool).scatter_(1, idx.long(), True)
    assert torch.all(z.grad[~chosen] == 0)


def test_empty_and_opcheck(seed: int) -> None:
    dz = ops.topk_gate_backward(torch.empty(0, 8), torch.empty(0, 256), torch.empty(0, 8, dtype=torch.int32))
    assert dz.shape == (0, 256)
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(9, 64, generator=g)
    idx = _random_indices(9, 64, 16, g)
    torch.library.opcheck(OPS.topk_gate_backward, (torch.randn(9, 16, generator=g), z, idx, 16, "softmax", True, 1.0))
    zr = torch.randn(9, 64, generator=g, requires_grad=True)
    torch.library.opcheck(OPS.topk_gate, (zr, None, 16, "sigmoid", True, 2.5))


def test_bad_indices_name_the_argument() -> None:
    z = torch.randn(4, 256)
    with pytest.raises(ops.Error, match=r"topk_gate_backward: argument 'indices' holds an expert out of range: "
                                        r"expected values in \[0, 256\), got 300 at token 0, slot 0") as e:
        ops.topk_gate_backward(torch.randn(4, 8), z, torch.full((4, 8), 300, dtype=torch.int32))
    assert "test_opslib_gate_bwd.py" in str(e.value)
    with pytest.raises(ops.Error, match="argument 'dweights' has the wrong shape"):
        ops.topk_gate_backward(torch.randn(4, 16), z, torch.zeros(4, 8, dtype=torch.int32))


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize("scoring", [0, 1, 2])
@pytest.mark.parametrize("normalize", [False, True])
def test_twin_builds_the_cpp_ir(dtype: str, scoring: int, normalize: bool) -> None:
    """kernels.topk_gate_bwd_kernel (TileLang-Ascend syntax) prints the C++ generator's IR."""
    from cann_ops_tilelang import kernels
    from tl_ascend import _core
    key = kernels.topk_gate_bwd_key(dtype, 256, 8, scoring, normalize)
    assert kernels.topk_gate_bwd_kernel(**key).script(False) == _core.ops_topk_gate_bwd_kernel(key).script(False)
