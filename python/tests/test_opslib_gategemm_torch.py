"""cann_ops_tilelang's MoE top-k gate and GEMM from Python and PyTorch: the plain functions on
tails against torch references (float64; a stable descending sort for the gate's ties), numpy
in and out, empty tensors, the torch.library operators (opcheck; GEMM's autograd against torch
matmul; a module using both under torch.compile(fullgraph=True) trains one step), and bad input
with the library's located message.

References (torch) live only here, never in the package. Before: neither op existed in the
library, the bindings or the package, so every test here failed (AttributeError at ops.topk_gate,
torch.ops.cann_ops_tilelang.gemm missing).

Data: each test's seed (seed_plugin.py: from --seed and the test's node id) seeds torch's
global generator before it runs; a test's own generators take it from the `seed` fixture.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import cann_ops_tilelang as ops

OPS = torch.ops.cann_ops_tilelang


def _gate_ref(z: torch.Tensor, bias: torch.Tensor | None, k: int, scoring: str, normalize: bool,
              scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    zd = z.double()
    s = {"sigmoid": torch.sigmoid, "softmax": lambda t: torch.softmax(t, -1), "none": lambda t: t}[scoring](zd)
    key = s.float() + (bias if bias is not None else 0)  # the kernel ranks fp32 keys
    idx = torch.sort(key, dim=-1, descending=True, stable=True).indices[:, :k]  # ties: smaller first
    w = s.gather(1, idx)
    if normalize:
        w = w / (1e-20 + w.sum(-1, keepdim=True))
    return w * scale, idx.int()


@pytest.mark.parametrize("tokens", [1, 7, 33, 1000])
@pytest.mark.parametrize("scoring", ["sigmoid", "softmax", "none"])
def test_topk_gate_tails_with_ties(tokens: int, scoring: str, seed: int) -> None:
    """Logits from 9 values: many exact ties per token, ordered by the smaller expert."""
    g = torch.Generator().manual_seed(seed)
    z = torch.randint(-4, 5, (tokens, 256), generator=g).float() / 2
    bias = torch.randint(0, 2, (256,), generator=g).float() / 4
    out = ops.topk_gate(z, bias, k=8, scoring=scoring, route_scale=2.5)
    w, idx = _gate_ref(z, bias, 8, scoring, True, 2.5)
    assert out.indices.dtype == torch.int32 and torch.equal(out.indices, idx)
    torch.testing.assert_close(out.weights.double(), w, rtol=2e-5, atol=1e-6)


def test_topk_gate_bf16_numpy_and_empty(seed: int) -> None:
    ml = pytest.importorskip("ml_dtypes")
    z = np.random.default_rng(seed).standard_normal((9, 64)).astype(ml.bfloat16)
    out = ops.topk_gate(z, k=16, scoring="softmax", normalize=False)
    assert isinstance(out.indices, np.ndarray) and out.indices.shape == (9, 16)
    w, idx = _gate_ref(torch.from_numpy(z.astype(np.float32)), None, 16, "softmax", False, 1.0)
    assert np.array_equal(out.indices, idx.numpy())
    np.testing.assert_allclose(out.weights, w.numpy(), rtol=1e-4, atol=1e-6)
    e = ops.topk_gate(torch.empty(0, 256))
    assert e.weights.shape == (0, 8) and e.indices.shape == (0, 8)


@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (7, 33, 7), (33, 7, 33), (130, 72, 300)])
@pytest.mark.parametrize("trans_a,trans_b", [(False, False), (True, False), (False, True), (True, True)])
def test_gemm_tails_and_transposes(m: int, n: int, k: int, trans_a: bool, trans_b: bool) -> None:
    a = torch.randn(k, m) if trans_a else torch.randn(m, k)
    b = torch.randn(n, k) if trans_b else torch.randn(k, n)
    a, b = a.half(), b.bfloat16().half()
    c = ops.gemm(a, b, trans_a=trans_a, trans_b=trans_b, out_dtype="float32")
    want = (a.double().t() if trans_a else a.double()) @ (b.double().t() if trans_b else b.double())
    assert c.dtype == torch.float32 and c.shape == (m, n)
    torch.testing.assert_close(c.double(), want, rtol=1e-5, atol=1e-5 * k)


def test_gemm_empty_and_k_zero() -> None:
    assert ops.gemm(torch.empty(0, 8).half(), torch.randn(8, 5).half()).shape == (0, 5)
    c = ops.gemm(torch.empty(3, 0).bfloat16(), torch.empty(0, 4).bfloat16(), out_dtype="float32")
    assert torch.equal(c, torch.zeros(3, 4))


def test_opcheck() -> None:
    z, bias = torch.randn(9, 256), torch.randn(256) * 0.1
    torch.library.opcheck(OPS.topk_gate, (z, bias, 8, "sigmoid", True, 2.5))
    a = torch.randn(33, 40).half().requires_grad_()
    b = torch.randn(24, 40).half().requires_grad_()
    torch.library.opcheck(OPS.gemm, (a, b, False, True, torch.float32))
    torch.library.opcheck(OPS.gemm, (a.detach().t().contiguous(), b.detach(), True, True, None))


@pytest.mark.parametrize("trans_a,trans_b", [(False, False), (True, False), (False, True), (True, True)])
def test_gemm_autograd_matches_torch(trans_a: bool, trans_b: bool) -> None:
    a = (torch.randn(40, 33) if trans_a else torch.randn(33, 40)).half()
    b = (torch.randn(24, 40) if trans_b else torch.randn(40, 24)).half()
    dc = torch.randn(33, 24)
    grads = []
    for f in (lambda x, y: OPS.gemm(x, y, trans_a, trans_b, torch.float32),
              lambda x, y: (x.float().t() if trans_a else x.float()) @ (y.float().t() if trans_b else y.float())):
        x, y = a.clone().requires_grad_(), b.clone().requires_grad_()
        f(x, y).backward(dc)
        grads.append((x.grad.double(), y.grad.double()))
    for got, want in zip(grads[0], grads[1]):
        torch.testing.assert_close(got, want, rtol=2e-3, atol=2e-2)  # dC rounded to fp16 first


class _Router(torch.nn.Module):
    def __init__(self, hidden: int, experts: int) -> None:
        super().__init__()
        self.w = torch.nn.Parameter((torch.randn(experts, hidden) * 0.1).half())

    def forward(self, x: torch.Tensor, mm, gate) -> torch.Tensor:
        logits = mm(x, self.w)  # [T, E] float32
        _, idx = gate(logits.detach())
        return logits.gather(1, idx.long()).sigmoid().sum()


def test_router_trains_one_step_under_torch_compile() -> None:
    """Logits by our gemm (w stored [E, H]: trans_b), experts by our gate, compiled with
    fullgraph=True: the gradient and the SGD step match torch matmul + torch.topk's module."""
    ours, theirs = _Router(64, 256), _Router(64, 256)
    theirs.load_state_dict(ours.state_dict())
    x = torch.randn(7, 64).half()
    compiled = torch.compile(ours, fullgraph=True)
    loss = compiled(x, lambda a, w: OPS.gemm(a, w, False, True, torch.float32),
                    lambda z: OPS.topk_gate(z, None, 8, "sigmoid", True, 1.0))
    loss_t = theirs(x, lambda a, w: a.float() @ w.float().t(),
                    lambda z: (None, torch.sort(torch.sigmoid(z), dim=-1, descending=True, stable=True).indices[:, :8]))
    loss.backward()
    loss_t.backward()
    torch.testing.assert_close(loss, loss_t, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(ours.w.grad.float(), theirs.w.grad.float(), rtol=2e-3, atol=2e-3)
    for m in (ours, theirs):
        torch.optim.SGD(m.parameters(), lr=0.1).step()
    torch.testing.assert_close(ours.w.float(), theirs.w.float(), rtol=2e-3, atol=2e-3)


def _raises(match: str):
    return pytest.raises(ops.Error, match=r"test_opslib_gategemm_torch\.py:\d+: " + match)


def test_bad_inputs_get_the_librarys_located_message() -> None:
    z = torch.randn(4, 256)
    with _raises(r"topk_gate: argument 'logits' has the wrong dtype: expected bfloat16 or float16 or float32, "
                 r"got float64"):
        OPS.topk_gate(z.double(), None, 8, "sigmoid", True, 1.0)
    with _raises(r"topk_gate: argument 'k' is out of range: expected a multiple of 8 in \[8, 256\] \(E\), got 5"):
        ops.topk_gate(z, k=5)
    with _raises(r"topk_gate: argument 'bias' has the wrong shape: expected \[256\], got \[64\]"):
        ops.topk_gate(z, torch.randn(64))
    with _raises(r"topk_gate: argument 'scoring' is unknown: expected one of 'none', 'sigmoid', 'softmax', "
                 r"got 'relu'"):
        ops.topk_gate(z, scoring="relu")
    a, b = torch.randn(4, 8).half(), torch.randn(8, 3).half()
    with _raises(r"gemm: argument 'b' has the wrong shape: expected 8 \(K of 'a'\) in dimension 0, got shape "
                 r"\[9, 3\]"):
        OPS.gemm(a, torch.randn(9, 3).half(), False, False, None)
    with _raises(r"gemm: argument 'a' has the wrong dtype: expected float16 or bfloat16, got float32"):
        ops.gemm(a.float(), b)
    with _raises(r"gemm: argument 'b' must be on the CPU"):
        ops.gemm(a, b.to("meta"))
