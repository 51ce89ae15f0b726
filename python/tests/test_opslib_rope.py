"""cann_ops_tilelang's RoPE from Python and PyTorch: the twin generator against the C++ one
(identical IR for every branch combination), the plain functions on token tails with both
styles, partial rotation and positions against a torch float64 reference, numpy and empty
tensors, the torch.library operators (opcheck, autograd through rope_backward, a rotary attention
score trained one step under torch.compile(fullgraph=True)), and bad input with the library's
located message.

References (torch in float64) live only here, never in the package.
Before: there was no RoPE in cann_ops_tilelang: this file failed at collection
(AttributeError: module 'cann_ops_tilelang.kernels' has no attribute 'rope_key').

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
TOL = {torch.bfloat16: 2e-2, torch.float16: 2e-3, torch.float32: 1e-5}


def _rotate(r: torch.Tensor, style: str) -> torch.Tensor:
    if style == "interleaved":
        pairs = r.unflatten(-1, (-1, 2))
        return torch.stack([-pairs[..., 1], pairs[..., 0]], dim=-1).flatten(-2)
    a, b = r.chunk(2, dim=-1)
    return torch.cat([-b, a], dim=-1)


def _ref(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, positions: Optional[torch.Tensor] = None,
         style: str = "half", rotate_last: bool = True) -> torch.Tensor:
    """torch float64 (differentiable): y = r * c + rotate(r) * s on each head's rotated part."""
    rot = cos.shape[-1]
    rows = torch.arange(x.shape[0]) if positions is None else positions.long()
    c, s = cos.double()[rows].unsqueeze(1), sin.double()[rows].unsqueeze(1)
    xd = x.double()
    lo = x.shape[-1] - rot if rotate_last else 0
    r = xd[..., lo:lo + rot]
    y = r * c + _rotate(r, style) * s
    return torch.cat([xd[..., :lo], y, xd[..., lo + rot:]], dim=-1)


def _close(got: torch.Tensor, want: torch.Tensor, tol: float) -> None:
    torch.testing.assert_close(got.double(), want.double(), rtol=tol, atol=tol)


def _tables(rows: int, rot: int, style: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Standard tables: theta_i = p * 10000^(-2i/rot), equal on a pair's two entries."""
    i = torch.arange(rot) // 2 if style == "interleaved" else torch.arange(rot) % (rot // 2)
    th = torch.arange(rows, dtype=torch.float64)[:, None] * 10000.0 ** (-2.0 * i / rot)
    return th.cos().float(), th.sin().float()


# ---- The twin: identical IR ----------------------------------------------------------------------

_KEYS = [kernels.rope_key(dt, h, d, r, style, last, bwd, pos)
         for dt, (h, d, r), style, last, bwd, pos in itertools.product(
             ["bfloat16", "float16", "float32"], [(64, 512, 256), (5, 128, 64), (1, 64, 64)],
             ["half", "interleaved"], [True, False], [False, True], [False, True])]


def _id(k: dict) -> str:
    return (f"{k['dtype']}-H{k['heads']}-D{k['head_dim']}-R{k['rot_dim']}-off{k['rot_offset']}"
            f"-{'inter' if k['interleaved'] else 'half'}-bwd{int(k['backward'])}-pos{int(k['positions'])}")


@pytest.mark.parametrize("key", _KEYS, ids=_id)
def test_rope_twin_builds_the_cpp_ir(key: dict) -> None:
    assert kernels.rope_kernel(**key).script(False) == _core.ops_rope_kernel(key).script(False)


def test_rope_keys_come_from_the_target() -> None:
    """A2's 48 AIVs are 24 blocks; a tile is at least 8 tokens, its heads divide H and fit UB."""
    k = kernels.rope_key("float16", 64, 512, 256)
    assert k["blocks"] == 24 and k["tokens_per_tile"] >= 8 and 64 % k["heads_per_tile"] == 0
    one = kernels.rope_key("float32", 1, 64, 64, "interleaved")
    assert one["heads_per_tile"] == 1 and one["tokens_per_tile"] >= 8


# ---- The plain functions ---------------------------------------------------------------------------

@pytest.mark.parametrize("tokens", [1, 7, 33, 1000, 4097])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_rope_tails(tokens: int, dtype: torch.dtype) -> None:
    x = torch.randn(tokens, 3, 128).to(dtype)
    for style, last in [("half", True), ("interleaved", False)]:
        cos, sin = _tables(tokens + 5, 64, style)
        pos = torch.randint(0, tokens + 5, (tokens,), dtype=torch.int32) if style == "half" else None
        _close(ops.rope(x, cos, sin, pos, style, last), _ref(x, cos, sin, pos, style, last), TOL[dtype])
        dy = torch.randn_like(x)
        xr = x.double().requires_grad_()
        _ref(xr, cos, sin, pos, style, last).backward(dy.double())
        _close(ops.rope_backward(dy, cos, sin, pos, style, last), xr.grad, TOL[dtype])


def test_rope_numpy_and_empty(seed: int) -> None:
    x = np.random.default_rng(seed).standard_normal((7, 2, 64)).astype(np.float32)
    cos, sin = _tables(7, 64, "half")
    y = ops.rope(x, cos.numpy(), sin.numpy())
    assert isinstance(y, np.ndarray)
    _close(torch.from_numpy(y), _ref(torch.from_numpy(x), cos, sin), 1e-5)
    assert ops.rope(torch.empty(0, 4, 128, dtype=torch.bfloat16), cos, sin).shape == (0, 4, 128)


def test_nan_stays_in_its_pair() -> None:
    x = torch.randn(9, 2, 64)
    x[8, 1, 4] = float("nan")
    cos, sin = _tables(9, 64, "interleaved")
    cos[:], sin[:] = 0.6, 0.8  # no zero entry: a NaN reaches both elements of its pair
    y = OPS.rope(x, cos, sin, None, "interleaved", True)
    assert torch.isnan(y).nonzero().tolist() == [[8, 1, 4], [8, 1, 5]]


# ---- The torch operators ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_opcheck(dtype: torch.dtype) -> None:
    x = torch.randn(7, 3, 128, dtype=dtype, requires_grad=True)
    cos, sin = _tables(9, 64, "half")
    pos = torch.tensor([0, 8, 3, 3, 1, 7, 2], dtype=torch.int32)
    torch.library.opcheck(OPS.rope, (x, cos, sin, None, "half", True))
    torch.library.opcheck(OPS.rope, (x, cos, sin, pos, "interleaved", False))
    torch.library.opcheck(OPS.rope_backward, (x.detach(), cos, sin, pos, "half", True))


@pytest.mark.parametrize("style", ["half", "interleaved"])
def test_autograd_matches_torch(style: str) -> None:
    x = torch.randn(33, 4, 128)
    cos, sin = torch.rand(40, 64) * 2 - 1, torch.rand(40, 64) * 2 - 1  # any table: the exact adjoint
    pos = torch.randint(0, 40, (33,), dtype=torch.int32)
    dy = torch.randn(33, 4, 128)
    xa = x.clone().requires_grad_()
    OPS.rope(xa, cos, sin, pos, style, False).backward(dy)
    xt = x.double().requires_grad_()
    _ref(xt, cos, sin, pos, style, False).backward(dy.double())
    _close(xa.grad, xt.grad, 1e-5)


class _Scores(torch.nn.Module):
    """q = Wq x, k = Wk x, rotated; the scores q . k per head (a rotary attention's logits)."""

    def __init__(self, hidden: int, heads: int, dim: int) -> None:
        super().__init__()
        self.heads, self.dim = heads, dim
        self.q = torch.nn.Linear(hidden, heads * dim, bias=False)
        self.k = torch.nn.Linear(hidden, heads * dim, bias=False)

    def forward(self, x: torch.Tensor, rot) -> torch.Tensor:
        q = rot(self.q(x).unflatten(-1, (self.heads, self.dim)))
        k = rot(self.k(x).unflatten(-1, (self.heads, self.dim)))
        return torch.einsum("thd,shd->hts", q, k)


def test_rotary_scores_train_one_step_under_torch_compile() -> None:
    ours, theirs = _Scores(32, 2, 64), _Scores(32, 2, 64)
    theirs.load_state_dict(ours.state_dict())
    x = torch.randn(11, 32)
    cos, sin = _tables(11, 32, "half")
    compiled = torch.compile(ours, fullgraph=True)
    loss = compiled(x, lambda t: OPS.rope(t.contiguous(), cos, sin, None, "half", True)).pow(2).mean()
    loss_t = theirs(x, lambda t: _ref(t, cos, sin).float()).pow(2).mean()
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
    return pytest.raises(ops.Error, match=r"test_opslib_rope\.py:\d+: " + match)


def test_bad_inputs_get_the_librarys_located_message() -> None:
    x = torch.randn(4, 2, 128)
    cos, sin = _tables(8, 64, "half")
    with _raises(r"rope: argument 'x' has the wrong dtype: expected bfloat16 or float16 or float32, got float64"):
        OPS.rope(x.double(), cos, sin, None, "half", True)
    with _raises(r"rope: argument 'x' has the wrong rank: expected 3 dimensions \[tokens, heads, head_dim\], "
                 r"got 2"):
        ops.rope(x.reshape(8, 128), cos, sin)
    with _raises(r"rope: argument 'sin' has the wrong shape: expected \[8, 64\], got \[8, 32\]"):
        ops.rope(x, cos, sin[:, :32].contiguous())
    with _raises(r"rope: argument 'positions' has a value out of range: expected 0 <= positions\[t\] < 8 "
                 r"\(cos rows\), got positions\[1\] = -1"):
        ops.rope(x, cos, sin, torch.tensor([0, -1, 2, 3], dtype=torch.int32))
    with _raises(r"rope: argument 'style' is not a RoPE style: expected 'half' or 'interleaved', got 'neox'"):
        ops.rope(x, cos, sin, style="neox")
    with _raises(r"rope_backward: argument 'dy' must be on the CPU"):
        ops.rope_backward(x.to("meta"), cos, sin)
