"""cann_ops_tilelang's softmax / log-softmax from Python and PyTorch: the plain functions on tails
(rows 1, 7, 33, 1000, 4097; 34 x 130 columns that are not whole 32-byte blocks; a chunked row),
the torch.library operators (opcheck, autograd against torch's, torch.compile(fullgraph=True)
training one step), empty tensors, NaN, bad input with the library's located message, and the
twin: kernels/softmax.py builds the IR the C++ generator builds, for every schedule.

References (torch in float64) live only here, never in the package.
Before: there was no softmax in the package, the bindings or the library, so every test here
failed (AttributeError: module 'cann_ops_tilelang' has no attribute 'softmax').

Data: each test's seed (seed_plugin.py: from --seed and the test's node id) seeds torch's
global generator before it runs; a test's own generators take it from the `seed` fixture.
"""

from __future__ import annotations

import itertools

import pytest
import torch

import cann_ops_tilelang as ops
from cann_ops_tilelang import kernels
from tl_ascend import _core

OPS = torch.ops.cann_ops_tilelang
TOL = {torch.bfloat16: 2e-2, torch.float16: 2e-3, torch.float32: 1e-4}


def _ref(x: torch.Tensor, log: bool) -> torch.Tensor:
    return (torch.log_softmax if log else torch.softmax)(x.double(), dim=-1)


@pytest.mark.parametrize("shape", [(1, 7168), (7, 130), (33, 130), (34, 130), (1000, 37), (4097, 16), (2, 3, 100)])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_softmax_tails(shape: tuple, dtype: torch.dtype) -> None:
    x = (4 * torch.randn(*shape)).to(dtype)
    for log in (False, True):
        y = (ops.log_softmax if log else ops.softmax)(x)
        assert y.dtype == dtype and y.shape == x.shape
        torch.testing.assert_close(y.double(), _ref(x, log), rtol=TOL[dtype], atol=TOL[dtype])


def test_vocabulary_rows_are_chunked() -> None:
    """A row larger than UB (100003 fp32, not a multiple of the chunk) takes the two-pass schedule."""
    key = kernels.softmax_key("float32", 100003)
    assert key["chunk"] < 100003 and key["rows_per_tile"] == 16
    x = 4 * torch.randn(3, 100003)
    torch.testing.assert_close(ops.softmax(x).double(), _ref(x, False), rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(ops.log_softmax(x).double(), _ref(x, True), rtol=1e-4, atol=1e-4)


def test_empty_nan_and_masking() -> None:
    assert ops.softmax(torch.empty(0, 130)).shape == (0, 130)
    assert OPS.log_softmax_backward(torch.empty(0, 7), torch.empty(0, 7)).shape == (0, 7)
    x = torch.randn(9, 130)
    x[3, 129] = float("nan")
    x[5, :60] = float("-inf")  # masked logits: exact zeros, the rest a softmax over the others
    y = ops.softmax(x)
    assert torch.isnan(y[3]).all() and not torch.isnan(y[torch.arange(9) != 3]).any()
    assert torch.equal(y[5, :60], torch.zeros(60))
    torch.testing.assert_close(y[5].double(), torch.softmax(x[5].double(), -1), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_opcheck(dtype: torch.dtype) -> None:
    x = torch.randn(7, 130, dtype=dtype, requires_grad=True)
    dy = torch.randn(7, 130, dtype=dtype)
    torch.library.opcheck(OPS.softmax, (x,))
    torch.library.opcheck(OPS.log_softmax, (x,))
    y = OPS.softmax(x.detach())
    torch.library.opcheck(OPS.softmax_backward, (dy, y))
    torch.library.opcheck(OPS.log_softmax_backward, (dy, torch.log(y)))


@pytest.mark.parametrize("rows", [1, 7, 33])
@pytest.mark.parametrize("log", [False, True])
def test_autograd_matches_torch(rows: int, log: bool) -> None:
    x, dy = 4 * torch.randn(rows, 130), torch.randn(rows, 130)
    a = x.clone().requires_grad_()
    (OPS.log_softmax if log else OPS.softmax)(a).backward(dy)
    b = x.double().requires_grad_()
    _ref(b, log).backward(dy.double())
    torch.testing.assert_close(a.grad.double(), b.grad, rtol=1e-3, atol=1e-5)


class _Head(torch.nn.Module):
    def __init__(self, hidden: int, vocab: int) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(hidden, vocab, bias=False)

    def forward(self, x: torch.Tensor, log_softmax) -> torch.Tensor:
        return log_softmax(self.proj(x))


def test_lm_head_trains_one_step_under_torch_compile() -> None:
    """A Linear + our log-softmax (an LM head with an NLL loss), compiled with fullgraph=True: one
    forward, backward and SGD step gives torch's gradients and new weights."""
    ours, theirs = _Head(64, 130), _Head(64, 130)
    theirs.load_state_dict(ours.state_dict())
    x, target = torch.randn(7, 64), torch.randint(0, 130, (7,))
    compiled = torch.compile(ours, fullgraph=True)
    loss = torch.nn.functional.nll_loss(compiled(x, OPS.log_softmax), target)
    loss_t = torch.nn.functional.nll_loss(theirs(x, lambda z: torch.log_softmax(z, -1)), target)
    loss.backward()
    loss_t.backward()
    torch.testing.assert_close(loss, loss_t, rtol=1e-4, atol=1e-5)
    for p, q in zip(ours.parameters(), theirs.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-3, atol=1e-5)
    for m in (ours, theirs):
        torch.optim.SGD(m.parameters(), lr=0.1).step()
    for p, q in zip(ours.parameters(), theirs.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-5)


def _raises(match: str):
    return pytest.raises(ops.Error, match=r"test_opslib_softmax\.py:\d+: " + match)


def test_bad_inputs_get_the_librarys_located_message() -> None:
    x = torch.randn(4, 130)
    with _raises(r"softmax: argument 'x' has the wrong dtype: expected bfloat16 or float16 or float32, got float64"):
        OPS.softmax(x.double())
    with _raises(r"log_softmax: argument 'x' must be contiguous"):
        OPS.log_softmax(torch.randn(130, 4).t())
    with _raises(r"softmax_backward: argument 'dy' has the wrong shape: expected \[4, 130\], got \[3, 130\]"):
        OPS.softmax_backward(torch.randn(3, 130), x)
    with _raises(r"softmax: argument 'dim' is not supported: expected the last dimension \(-1 or 1\), got 0"):
        ops.softmax(x, dim=0)
    with _raises(r"log_softmax: argument 'x' has an empty last dimension"):
        ops.log_softmax(torch.empty(3, 0))
    with _raises(r"softmax: argument 'x' must be on the CPU"):
        ops.softmax(x.to("meta"))


# ---- The twin: kernels/softmax.py builds the C++ generator's IR ------------------------------------

def _keys() -> list[dict]:
    keys = [kernels.softmax_key(dt, n, log, bw)
            for dt, n, log, bw in itertools.product(["bfloat16", "float16", "float32"], [130, 7168, 60000, 129280],
                                                    [False, True], [False, True])]
    keys.append(dict(dtype="bfloat16", cols=130, rows_per_tile=16, chunk=48, blocks=3, log=True, backward=False,
                     resident=False, streamed=False, split=False))
    # The split backward forced onto 6336 in chunks of 1056 and 288 (rows and halves off the 512-byte grid,
    # the copies split; 288: 11 chunks a half, so softmax's resident half is in two pieces; 129280's 16-bit
    # backward keys above are split keys).
    for dt, n, bn, log in [("float16", 6336, 1056, False), ("bfloat16", 6336, 1056, True),
                           ("bfloat16", 6336, 288, False), ("float16", 6336, 288, True)]:
        keys.append(dict(dtype=dt, cols=n, rows_per_tile=1, chunk=bn, blocks=24, log=log, backward=True,
                         resident=False, streamed=False, split=True))
    return keys


def _id(k: dict) -> str:
    return (f"{k['dtype']}-N{k['cols']}-bM{k['rows_per_tile']}-bN{k['chunk']}-log{int(k['log'])}"
            f"-bwd{int(k['backward'])}-res{int(k['resident'])}-str{int(k['streamed'])}-spl{int(k['split'])}")


@pytest.mark.parametrize("key", _keys(), ids=_id)
def test_softmax_twin_builds_the_cpp_ir(key: dict) -> None:
    assert kernels.softmax_kernel(**key).script(False) == _core.ops_softmax_kernel(key).script(False)


def test_the_twin_compiles_and_runs_as_the_library_does() -> None:
    import tl_ascend as tilelang

    key = kernels.softmax_key("bfloat16", 130)
    x = torch.randn(34, 130).bfloat16()
    y = torch.empty_like(x)
    tilelang.compile(kernels.softmax_kernel(**key))(x, y)
    assert torch.equal(y, ops.softmax(x))


def test_a_key_with_a_missing_field_is_refused() -> None:
    with pytest.raises(ops.Error, match="a softmax key needs the field 'chunk'"):
        _core.ops_softmax_kernel(dict(dtype="bfloat16", cols=130, rows_per_tile=8))


# ---- layer_norm (forward) ---------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(1, 7168), (7, 5120), (33, 130), (1000, 64)])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_layer_norm_matches_torch(shape: tuple, dtype: torch.dtype) -> None:
    x = (3 + 2 * torch.randn(*shape)).to(dtype)
    w, b = torch.rand(shape[-1]).to(dtype) + 0.5, torch.randn(shape[-1]).to(dtype)
    out = ops.layer_norm(x, w, b, eps=1e-5, return_stats=True)
    want = torch.nn.functional.layer_norm(x.double(), shape[-1:], w.double(), b.double(), 1e-5)
    tol = 3e-2 if dtype == torch.bfloat16 else 1e-3
    torch.testing.assert_close(out.y.double(), want, rtol=tol, atol=tol)
    torch.testing.assert_close(out.mean.double(), x.double().mean(-1), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(OPS.layer_norm(x, None, None, 1e-5).double(),
                               torch.nn.functional.layer_norm(x.double(), shape[-1:], eps=1e-5), rtol=tol, atol=tol)


def test_layer_norm_opcheck_and_errors() -> None:
    x = torch.randn(7, 130)
    torch.library.opcheck(OPS.layer_norm, (x, torch.ones(130), torch.zeros(130), 1e-5))
    with _raises(r"layer_norm: argument 'weight' has the wrong shape: expected \[130\], got \[3\]"):
        OPS.layer_norm(x, torch.ones(3), None, 1e-5)
    assert ops.layer_norm(torch.empty(0, 130)).y.shape == (0, 130)
