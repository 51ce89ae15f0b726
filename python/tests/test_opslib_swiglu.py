"""cann_ops_tilelang's SwiGLU from Python and PyTorch: the twin generators against the C++ ones
(identical IR for every branch combination), the plain functions on tails, split on rows, numpy
bf16 and empty tensors, the torch.library operators (opcheck, autograd against torch's own
silu-and-multiply including the clamp and the per-token weight, torch.compile(fullgraph=True)
training one step), and bad input with the library's located message.

References (torch in float64) live only here, never in the package.
Before: there was no SwiGLU in cann_ops_tilelang: this file failed at collection
(AttributeError: module 'cann_ops_tilelang.kernels' has no attribute 'swiglu_key').

Data: each test's seed (seed_plugin.py: from --seed and the test's node id) seeds torch's
global generator before it runs; a test's own generators take it from the `seed` fixture.
"""

from __future__ import annotations

import itertools
from typing import Optional

import numpy as np
import pytest
import torch

import cann_ops_tilelang as ops
from cann_ops_tilelang import kernels
from tl_ascend import _core

OPS = torch.ops.cann_ops_tilelang
TOL = {torch.bfloat16: 2e-2, torch.float16: 2e-3, torch.float32: 1e-4}


def _ref(x: torch.Tensor, w: Optional[torch.Tensor] = None, split: str = "columns",
         clamp: Optional[float] = None) -> torch.Tensor:
    """torch float64: y = silu(a') b' (* w), a' = min(a, L), b' = clamp(b, -L, L)."""
    xd = x.double()
    a, b = xd.chunk(2, dim=0 if split == "rows" else -1)
    if clamp is not None:
        a, b = a.clamp(max=clamp), b.clamp(-clamp, clamp)
    y = torch.nn.functional.silu(a) * b
    return y if w is None else y * w.double().unsqueeze(-1)


def _close(got: torch.Tensor, want: torch.Tensor, tol: float) -> None:
    torch.testing.assert_close(got.double(), want.double(), rtol=tol, atol=tol)


# ---- The twins: identical IR ---------------------------------------------------------------------

_KEYS = [kernels.swiglu_key(dt, h, bwd, rows, clamp, w)
         for dt, h, bwd, rows, clamp, w in itertools.product(["bfloat16", "float16", "float32"], [512, 9216],
                                                             [False, True], [False, True], [False, True],
                                                             [False, True])]
_KEYS.append(dict(dtype="float16", hidden=512, rows_per_tile=16, chunk=128, blocks=3, rows=False, clamp=True,
                  weight=True))


def _id(k: dict) -> str:
    return (f"{k['dtype']}-H{k['hidden']}-bN{k['chunk']}-b{k['blocks']}-rows{int(k['rows'])}"
            f"-clamp{int(k['clamp'])}-w{int(k['weight'])}")


@pytest.mark.parametrize("key", _KEYS, ids=_id)
def test_swiglu_twins_build_the_cpp_ir(key: dict) -> None:
    assert kernels.swiglu_fwd_kernel(**key).script(False) == _core.ops_swiglu_fwd_kernel(key).script(False)
    assert kernels.swiglu_bwd_kernel(**key).script(False) == _core.ops_swiglu_bwd_kernel(key).script(False)
    if key["weight"]:
        p = key["hidden"] // key["chunk"]
        assert (kernels.swiglu_dw_reduce_kernel(**key, partials=p).script(False)
                == _core.ops_swiglu_dw_reduce_kernel(key, p).script(False))


def test_swiglu_keys_come_from_the_target() -> None:
    """A2's 48 AIVs are 24 blocks; the chunk divides H and fits UB (narrower for the backward)."""
    f, b = kernels.swiglu_key("bfloat16", 9216), kernels.swiglu_key("bfloat16", 9216, backward=True, clamp=True)
    assert f["blocks"] == 24 and 9216 % f["chunk"] == 0 and f["chunk"] <= 1024
    assert 9216 % b["chunk"] == 0 and b["chunk"] < f["chunk"]


# ---- The plain functions ---------------------------------------------------------------------------

@pytest.mark.parametrize("tokens", [1, 7, 33, 1000, 4097])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_swiglu_tails(tokens: int, dtype: torch.dtype) -> None:
    x = (3 * torch.randn(tokens, 2 * 112)).to(dtype)  # H = 112: not a multiple of a wider tile
    w = torch.rand(tokens)
    _close(ops.swiglu(x), _ref(x), TOL[dtype])
    _close(ops.swiglu(x, w, clamp=2.0), _ref(x, w, clamp=2.0), TOL[dtype])


def test_swiglu_rows_leading_dims_numpy_and_empty() -> None:
    ml = pytest.importorskip("ml_dtypes")
    x = torch.randn(2 * 33, 256)
    _close(ops.swiglu(x, split="rows"), _ref(x, split="rows"), 1e-4)
    x3 = torch.randn(2, 3, 512)
    assert ops.swiglu(x3).shape == (2, 3, 256)
    _close(ops.swiglu(x3), _ref(x3), 1e-4)
    xn = x3.numpy().astype(ml.bfloat16)
    y = ops.swiglu(xn)
    assert isinstance(y, np.ndarray) and y.dtype == ml.bfloat16 and y.shape == (2, 3, 256)
    _close(torch.from_numpy(y.astype(np.float32)), _ref(torch.from_numpy(xn.astype(np.float32))), 2e-2)
    assert ops.swiglu(torch.empty(0, 512, dtype=torch.bfloat16)).shape == (0, 256)
    dx, dw = ops.swiglu_backward(torch.empty(0, 256), torch.empty(0, 512), torch.empty(0))
    assert dx.shape == (0, 512) and dw.shape == (0,)


def test_nan_stays_in_its_element() -> None:
    x = torch.randn(9, 512)
    x[2, 17] = float("nan")
    y = OPS.swiglu(x, None, "columns", 10.0)
    assert torch.isnan(y).nonzero().tolist() == [[2, 17]]


# ---- The torch operators ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_opcheck(dtype: torch.dtype) -> None:
    x = torch.randn(7, 512, dtype=dtype, requires_grad=True)
    w = torch.rand(7, requires_grad=True)
    dy = torch.randn(7, 256, dtype=dtype)
    torch.library.opcheck(OPS.swiglu, (x, None, "columns", None))
    torch.library.opcheck(OPS.swiglu, (x, w, "columns", 10.0))
    torch.library.opcheck(OPS.swiglu, (x.detach().reshape(14, 256).requires_grad_(), None, "rows", 1.0))
    torch.library.opcheck(OPS.swiglu_backward, (dy, x.detach(), w.detach(), "columns", 1.5))


@pytest.mark.parametrize("split,clamp,weighted", [("columns", None, False), ("columns", 1.5, True),
                                                  ("rows", 1.5, True)])
def test_autograd_matches_torch(split: str, clamp: Optional[float], weighted: bool) -> None:
    x = 2 * torch.randn(66, 256) if split == "rows" else 2 * torch.randn(33, 512)
    w = torch.rand(33) if weighted else None
    dy = torch.randn(33, 256)
    xa = x.clone().requires_grad_()
    wa = w.clone().requires_grad_() if weighted else None
    OPS.swiglu(xa, wa, split, clamp).backward(dy)
    xt = x.double().requires_grad_()
    wt = w.double().requires_grad_() if weighted else None
    _ref(xt, wt, split, clamp).backward(dy.double())
    _close(xa.grad, xt.grad, 1e-4)
    if weighted:
        _close(wa.grad, wt.grad, 1e-3)  # a sum of 256 fp32 terms


class _Mlp(torch.nn.Module):
    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.up = torch.nn.Linear(hidden, 4 * hidden, bias=False)
        self.down = torch.nn.Linear(2 * hidden, hidden, bias=False)

    def forward(self, x: torch.Tensor, act) -> torch.Tensor:
        return self.down(act(self.up(x)))


def test_mlp_trains_one_step_under_torch_compile() -> None:
    """up -> our SwiGLU (clamp 10) -> down, compiled with fullgraph=True: one forward, backward and
    SGD step gives the gradients and weights of the same module with torch's silu * b."""
    ours, theirs = _Mlp(64), _Mlp(64)
    theirs.load_state_dict(ours.state_dict())
    x = torch.randn(7, 64)
    compiled = torch.compile(ours, fullgraph=True)
    loss = compiled(x, lambda h: OPS.swiglu(h, None, "columns", 10.0)).pow(2).mean()
    loss_t = theirs(x, lambda h: _ref(h, clamp=10.0).float()).pow(2).mean()
    loss.backward()
    loss_t.backward()
    torch.testing.assert_close(loss, loss_t, rtol=1e-4, atol=1e-5)
    for p, q in zip(ours.parameters(), theirs.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-3, atol=1e-5)
    for m in (ours, theirs):
        torch.optim.SGD(m.parameters(), lr=0.1).step()
    for p, q in zip(ours.parameters(), theirs.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-5)


# ---- Bad input: the library's message, at the caller's line ----------------------------------------

def _raises(match: str):
    return pytest.raises(ops.Error, match=r"test_opslib_swiglu\.py:\d+: " + match)


def test_bad_inputs_get_the_librarys_located_message() -> None:
    x = torch.randn(4, 512)
    with _raises(r"swiglu: argument 'x' has the wrong dtype: expected bfloat16 or float16 or float32, got float64"):
        OPS.swiglu(x.double(), None, "columns", None)
    with _raises(r"swiglu: argument 'x' has a last dimension that cannot be split into a \| b: expected an even "
                 r"size of at least 2, got 33"):
        ops.swiglu(torch.randn(4, 33))
    with _raises(r"swiglu: argument 'weight' has the wrong shape: expected \[4\], got \[5\]"):
        OPS.swiglu(x, torch.rand(5), "columns", None)
    with _raises(r"swiglu: argument 'clamp' is out of range: expected a finite limit >= 2\^-60"):
        ops.swiglu(x, clamp=-1.0)
    with _raises(r"swiglu: argument 'split' is not a split: expected 'columns' or 'rows', got 'cols'"):
        ops.swiglu(x, split="cols")
    with _raises(r"swiglu: argument 'clamp' must be a number or None"):
        ops.swiglu(x, clamp="10")
    with _raises(r"swiglu_backward: argument 'dy' has the wrong shape: expected \[4, 256\], got \[4, 512\]"):
        OPS.swiglu_backward(x, x, None, "columns", None)
    with _raises(r"swiglu: argument 'x' must be on the CPU"):
        ops.swiglu(x.to("meta"))
