"""cann_ops_tilelang from Python and PyTorch: the plain functions, the torch.library operators
(opcheck, autograd against torch's own rms_norm, torch.compile(fullgraph=True) training one
step), tails and empty tensors, and bad input from torch with the library's located message.

References (torch in float64, torch.nn.functional.rms_norm) live only here, never in the package.
Before: there was no Python package cann_ops_tilelang and no binding of the library, so every
test here failed at the import.

Data: each test's seed (seed_plugin.py: from --seed and the test's node id) seeds torch's
global generator before it runs; a test's own generators take it from the `seed` fixture.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import cann_ops_tilelang as ops

OPS = torch.ops.cann_ops_tilelang
TOL = {torch.bfloat16: 2e-2, torch.float16: 2e-3, torch.float32: 1e-4}


def _ref(x: torch.Tensor, w: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    xd = x.double()
    return xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + eps) * w.double()


def _close(got: torch.Tensor, want: torch.Tensor, tol: float) -> None:
    torch.testing.assert_close(got.double(), want.double(), rtol=tol, atol=tol)


# ---- The plain functions: tails, dtypes, numpy, empty ---------------------------------------------

@pytest.mark.parametrize("rows", [1, 7, 33, 1000])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_rms_norm_tails(rows: int, dtype: torch.dtype) -> None:
    x, w, r = torch.randn(rows, 256).to(dtype), torch.randn(256).to(dtype), torch.randn(rows, 256).to(dtype)
    out = ops.rms_norm(x, w, residual=r, return_rstd=True)
    h = x.double() + r.double()  # y and rstd come from h in fp32; the stored h is rounded to dtype
    torch.testing.assert_close(out.residual, h.to(dtype), rtol=0, atol=0)
    _close(out.y, _ref(h, w), TOL[dtype])
    _close(out.rstd, torch.rsqrt(h.pow(2).mean(-1) + 1e-6), 1e-4)
    assert out.rstd.shape == (rows,)


def test_rms_norm_leading_dims_and_numpy_bf16() -> None:
    ml = pytest.importorskip("ml_dtypes")
    x, w = torch.randn(2, 3, 512), torch.randn(512)
    _close(ops.rms_norm(x, w).y, _ref(x, w), 1e-4)
    xn = x.numpy().astype(ml.bfloat16)
    wn = w.numpy().astype(ml.bfloat16)
    y = ops.rms_norm(xn, wn).y
    assert isinstance(y, np.ndarray) and y.dtype == ml.bfloat16 and y.shape == (2, 3, 512)
    want = _ref(torch.from_numpy(xn.astype(np.float32)), torch.from_numpy(wn.astype(np.float32)))
    _close(torch.from_numpy(y.astype(np.float32)), want, 2e-2)


def test_empty_tensors_give_empty_outputs() -> None:
    x, w = torch.empty(0, 256, dtype=torch.bfloat16), torch.ones(256, dtype=torch.bfloat16)
    assert OPS.rms_norm(x, w, 1e-6).shape == (0, 256)
    dx, dw = OPS.rms_norm_backward(x, x, w, 1e-6)
    assert dx.shape == (0, 256) and torch.equal(dw, torch.zeros(256, dtype=torch.bfloat16))


def test_nan_stays_in_its_row_through_the_torch_op() -> None:
    x, w = torch.randn(9, 256).bfloat16(), torch.randn(256).bfloat16()
    x[8, 5] = float("nan")  # the tail tile's row
    y = OPS.rms_norm(x, w, 1e-6)
    assert torch.isnan(y[8]).all() and torch.isfinite(y[:8]).all()


@pytest.mark.parametrize("rows", [1, 7, 33, 1000])
def test_backward_tails_match_torch_autograd(rows: int) -> None:
    x, w, dy = torch.randn(rows, 256), torch.randn(256), torch.randn(rows, 256)
    dx, dw = OPS.rms_norm_backward(dy, x, w, 1e-6)
    xd, wd = x.double().requires_grad_(), w.double().requires_grad_()
    _ref(xd, wd).backward(dy.double())
    # Sums that cancel agree to ~1e-4 of their terms' magnitudes (docs/ops.md, precision).
    torch.testing.assert_close(dx.double(), xd.grad, rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(dw.double(), wd.grad, rtol=1e-3, atol=1e-3 * rows ** 0.5)


# ---- The torch operators ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_opcheck(dtype: torch.dtype) -> None:
    x = torch.randn(7, 256, dtype=dtype, requires_grad=True)
    w = torch.randn(256, dtype=dtype, requires_grad=True)
    r = torch.randn(7, 256, dtype=dtype, requires_grad=True)
    dy = torch.randn(7, 256, dtype=dtype)
    # test_autograd_registration and the fake / schema checks; dW is deterministic, so the
    # aot_dispatch checks compare bits.
    torch.library.opcheck(OPS.rms_norm, (x, w, 1e-6))
    torch.library.opcheck(OPS.rms_norm_residual, (x, r, w, 1e-6))
    torch.library.opcheck(OPS.rms_norm_backward, (dy, x.detach(), w.detach(), 1e-6))


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-4), (torch.bfloat16, 3e-2)])
def test_autograd_matches_torch_rms_norm(dtype: torch.dtype, tol: float) -> None:
    x = torch.randn(33, 512, dtype=dtype)
    w = torch.randn(512, dtype=dtype)
    dy = torch.randn(33, 512, dtype=dtype)
    grads = []
    for f in (lambda a, b: OPS.rms_norm(a, b, 1e-6),
              lambda a, b: torch.nn.functional.rms_norm(a.float(), (512,), b.float(), 1e-6).to(dtype)):
        a, b = x.clone().requires_grad_(), w.clone().requires_grad_()
        f(a, b).backward(dy)
        grads.append((a.grad, b.grad))
    (dx, dw), (dx_t, dw_t) = grads
    _close(dx, dx_t, tol)
    # dW sums 33 rows that cancel: fp32 agrees to ~1e-4 of the sum of the terms' magnitudes
    # (rsqrt is the chip's approximation, docs/ops.md), bf16's rounding of each term shows too.
    _close(dw, dw_t, tol * 10 if dtype == torch.bfloat16 else tol * 33)


def test_residual_autograd_matches_torch() -> None:
    x, r, w = (torch.randn(7, 256, requires_grad=True), torch.randn(7, 256, requires_grad=True),
               torch.randn(256, requires_grad=True))
    y, h = OPS.rms_norm_residual(x, r, w, 1e-6)
    (y.sum() + (h * h).sum()).backward()  # both outputs carry gradient
    xt, rt, wt = (t.detach().clone().requires_grad_() for t in (x, r, w))
    ht = xt + rt
    yt = torch.nn.functional.rms_norm(ht, (256,), wt, 1e-6)
    (yt.sum() + (ht * ht).sum()).backward()
    for got, want in ((x.grad, xt.grad), (r.grad, rt.grad), (w.grad, wt.grad)):
        torch.testing.assert_close(got, want, rtol=1e-3, atol=1e-3)


class _Block(torch.nn.Module):
    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(hidden, hidden, bias=False)
        self.norm_weight = torch.nn.Parameter(torch.ones(hidden) + 0.1 * torch.randn(hidden))

    def forward(self, x: torch.Tensor, norm) -> torch.Tensor:
        return self.proj(norm(x, self.norm_weight))


def test_module_trains_one_step_under_torch_compile() -> None:
    """A Linear after our RMSNorm, compiled with fullgraph=True: one forward, backward and SGD
    step gives the gradients and new weights of the same module with torch's rms_norm."""
    hidden = 256
    ours, theirs = _Block(hidden), _Block(hidden)
    theirs.load_state_dict(ours.state_dict())
    x = torch.randn(7, hidden)
    compiled = torch.compile(ours, fullgraph=True)
    loss = compiled(x, lambda a, w: OPS.rms_norm(a, w, 1e-6)).pow(2).mean()
    loss_t = theirs(x, lambda a, w: torch.nn.functional.rms_norm(a, (hidden,), w, 1e-6)).pow(2).mean()
    loss.backward()
    loss_t.backward()
    torch.testing.assert_close(loss, loss_t, rtol=1e-4, atol=1e-5)
    for p, q in zip(ours.parameters(), theirs.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-3, atol=1e-5)
    for m in (ours, theirs):
        torch.optim.SGD(m.parameters(), lr=0.1).step()
    for p, q in zip(ours.parameters(), theirs.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-5)


# ---- Bad input from torch: the library's message, at the caller's line --------------------------

def _raises(match: str):
    return pytest.raises(ops.Error, match=r"test_opslib_torch\.py:\d+: " + match)


def test_bad_inputs_get_the_librarys_located_message() -> None:
    """Each message names this file's line: without ScopedCaller (core.h) the Checker would name
    the binding's own line, python/src/bind_ops.cpp:NN."""
    x, w = torch.randn(4, 256), torch.randn(256)
    with _raises(r"rms_norm: argument 'x' has the wrong dtype: expected bfloat16 or float16 or float32, "
                 r"got float64"):
        OPS.rms_norm(x.double(), w.double(), 1e-6)
    with _raises(r"rms_norm: argument 'x' must be contiguous"):
        OPS.rms_norm(torch.randn(256, 4).t(), w, 1e-6)
    with _raises(r"rms_norm: argument 'x' must be on the CPU: .* got a tensor on device 'meta'"):
        ops.rms_norm(x.to("meta"), w)
    with _raises(r"rms_norm: argument 'weight' has the wrong shape: expected \[256\], got \[128\]"):
        OPS.rms_norm(x, torch.randn(128), 1e-6)
    with _raises(r"rms_norm: argument 'residual' has the wrong dtype"):
        OPS.rms_norm_residual(x, torch.randn(4, 256).bfloat16(), w, 1e-6)
    with _raises(r"rms_norm_backward: argument 'dy' has the wrong shape"):
        OPS.rms_norm_backward(torch.randn(3, 256), x, w, 1e-6)
    with _raises(r"rms_norm: argument 'x' must be a tensor: expected a torch tensor or a numpy array, got list"):
        ops.rms_norm([1.0] * 256, w)
    with _raises(r"rms_norm: argument 'eps' must be a number"):
        ops.rms_norm(x, w, eps="small")
