"""cann_ops_tilelang's FlashAttention backward from Python and PyTorch: the twins
(cann_ops_tilelang/kernels/attention_bwd.py) build the C++ generators' IR (dq pass with and without
dlse, dk/dv pass, cast pass; BSHD/BHSD, causal or not); the plain function on sequence tails
against torch's scaled_dot_product_attention backward in float64; numpy in and out and empty
tensors; the torch.library operators (opcheck of the backward op and of the forward with its
autograd, a gradcheck-style comparison of flash_attention's autograd with sdpa's, lse's own
gradient, one training step under torch.compile(fullgraph=True)); bad input with the library's located message.

References (torch) live only here, never in the package.

Data: each test's seed (seed_plugin.py: from --seed and the test's node id) seeds torch's
global generator before it runs; a test's own generators take it from the `seed` fixture.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import cann_ops_tilelang as ops
from cann_ops_tilelang import kernels
from tl_ascend import _core

OPS = torch.ops.cann_ops_tilelang


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("layout", ["BSHD", "BHSD"])
@pytest.mark.parametrize("dtype,dim", [("float16", 128), ("bfloat16", 64)])
def test_twins_build_the_cpp_ir(causal: bool, layout: str, dtype: str, dim: int) -> None:
    key = kernels.flash_attention_bwd_key(dtype, 3, dim, causal, layout)
    assert key["blocks"] > 0 and key["causal"] == causal and key["layout"] == layout
    for dlse in (False, True):
        py = kernels.flash_attention_bwd_dq_kernel(**key, dlse=dlse).script(False)
        assert py == _core.ops_flash_attention_bwd_dq_kernel(key, dlse).script(False)
    py = kernels.flash_attention_bwd_dkdv_kernel(**key).script(False)
    assert py == _core.ops_flash_attention_bwd_dkdv_kernel(key).script(False)
    py = kernels.flash_attention_bwd_cast_kernel(**key).script(False)
    assert py == _core.ops_flash_attention_bwd_cast_kernel(key).script(False)


def _to_bhsd(t: torch.Tensor, layout: str) -> torch.Tensor:
    return t.transpose(1, 2) if layout == "BSHD" else t


def _ref_grads(q, k, v, dout, causal: bool, layout: str, scale: float | None = None, dlse=None):
    """float64 (dq, dk, dv) in `layout` from torch's sdpa (and lse's own gradient dlse)."""
    qq, kk, vv = (_to_bhsd(t, layout).double().requires_grad_() for t in (q, k, v))
    o = torch.nn.functional.scaled_dot_product_attention(qq, kk, vv, is_causal=causal, scale=scale)
    loss = (o * _to_bhsd(dout, layout).double()).sum()
    if dlse is not None:
        s = qq @ kk.transpose(-1, -2) * (scale if scale is not None else 1 / math.sqrt(q.shape[-1]))
        if causal:
            n = s.shape[-1]
            s = s.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
        loss = loss + (torch.logsumexp(s, -1) * dlse.double()).sum()
    loss.backward()
    return tuple(_to_bhsd(t.grad, layout) for t in (qq, kk, vv))


def _assert_grads_close(got, want, dt) -> None:
    tol = 3e-2 if dt == torch.bfloat16 else 6e-3
    for g, w, name in zip(got, want, ("dq", "dk", "dv")):
        assert g.dtype == dt, name
        # Relative to the tensor's largest value; at S = 1 dq is exactly 0 and what comes is the
        # rounding of o (Delta - dP cancels), so the floor is the inputs' scale (~0.1 .. 10).
        atol = tol * max(w.abs().max().item(), 0.1)
        torch.testing.assert_close(g.double(), w, rtol=tol, atol=atol, msg=name)


@pytest.mark.parametrize("seq", [1, 7, 33, 273])
@pytest.mark.parametrize("causal", [False, True])
def test_tails_against_torch_sdpa_backward(seq: int, causal: bool, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    layout = "BSHD" if seq % 2 else "BHSD"
    dt = torch.bfloat16 if causal else torch.float16
    shape = (2, seq, 2, 64) if layout == "BSHD" else (2, 2, seq, 64)
    q, k, v, dout = (torch.randn(shape, generator=g).to(dt) for _ in range(4))
    r = ops.flash_attention(q, k, v, causal=causal, layout=layout)
    grads = ops.flash_attention_backward(dout, q, k, v, r.o, r.lse, causal=causal, layout=layout)
    assert all(t.shape == q.shape for t in grads)
    _assert_grads_close(grads, _ref_grads(q, k, v, dout, causal, layout), dt)


def test_scale_dlse_numpy_and_empty(seed: int) -> None:
    rng = np.random.default_rng(seed)
    q, k, v, dout = (rng.standard_normal((1, 3, 40, 128)).astype(np.float16) for _ in range(4))
    dlse = rng.standard_normal((1, 3, 40)).astype(np.float32)
    r = ops.flash_attention(q, k, v, layout="BHSD", scale=0.05)
    grads = ops.flash_attention_backward(dout, q, k, v, r.o, r.lse, layout="BHSD", scale=0.05, dlse=dlse)
    assert all(isinstance(t, np.ndarray) and t.dtype == np.float16 for t in grads)
    want = _ref_grads(*(torch.from_numpy(t) for t in (q, k, v, dout)), False, "BHSD", 0.05,
                      torch.from_numpy(dlse))
    _assert_grads_close([torch.from_numpy(t) for t in grads], want, torch.float16)
    e = torch.empty((2, 0, 4, 64), dtype=torch.bfloat16)
    out = ops.flash_attention_backward(e, e, e, e, e, torch.empty((2, 4, 0)))
    assert all(t.shape == (2, 0, 4, 64) for t in out)


def test_nan_reaches_the_gradients(seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    q, k, v, dout = (torch.randn(1, 1, 100, 64, generator=g).half() for _ in range(4))
    dout[0, 0, 70, 9] = float("nan")  # query 70 (q tile 1): dq row 70, every dv row it sees
    r = ops.flash_attention(q, k, v, causal=True, layout="BHSD")
    dq, dk, dv = ops.flash_attention_backward(dout, q, k, v, r.o, r.lse, causal=True, layout="BHSD")
    assert torch.isnan(dq[0, 0]).any(-1).nonzero().flatten().tolist() == [70]
    assert torch.isnan(dv[0, 0, :71]).any(-1).all()
    assert not torch.isnan(dq[0, 0, :70]).any()


def test_torch_ops_opcheck_and_autograd_against_sdpa(seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(1, 70, 2, 64, generator=g).half() for _ in range(3))
    dout = torch.randn(1, 70, 2, 64, generator=g).half()
    o, lse = OPS.flash_attention(q, k, v, True, "BSHD", None)
    torch.library.opcheck(OPS.flash_attention_backward, (dout, q, k, v, o, lse),
                          {"causal": True, "layout": "BSHD"}, test_utils=("test_schema", "test_faketensor"))
    # The forward with its autograd: opcheck's autograd tests, then the gradients against sdpa's.
    qg, kg, vg = (t.clone().requires_grad_() for t in (q, k, v))
    torch.library.opcheck(OPS.flash_attention, (qg, kg, vg), {"causal": True, "layout": "BSHD"})
    o, lse = OPS.flash_attention(qg, kg, vg, True, "BSHD", None)
    (o.float() * dout.float()).sum().backward()
    _assert_grads_close((qg.grad, kg.grad, vg.grad), _ref_grads(q, k, v, dout, True, "BSHD"), torch.float16)
    # lse's own gradient: d lse_i / d s_ij = P_ij.
    qg, kg, vg = (t.clone().requires_grad_() for t in (q, k, v))
    o, lse = OPS.flash_attention(qg, kg, vg, True, "BSHD", None)
    dlse = torch.randn(lse.shape, generator=g)
    ((o.float() * dout.float()).sum() + (lse * dlse).sum()).backward()
    _assert_grads_close((qg.grad, kg.grad, vg.grad), _ref_grads(q, k, v, dout, True, "BSHD", None, dlse),
                        torch.float16)
    with torch._subclasses.fake_tensor.FakeTensorMode():
        fq = torch.empty(2, 4, 9, 128, dtype=torch.bfloat16)
        fl = torch.empty(2, 4, 9)
        grads = OPS.flash_attention_backward(fq, fq, fq, fq, fq, fl, False, "BHSD", None)
        assert all(t.shape == (2, 4, 9, 128) and t.dtype == torch.bfloat16 for t in grads)


def test_attention_module_trains_one_step(seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(1, 40, 2, 64, generator=g).bfloat16()
    w = torch.nn.Parameter(torch.randn(64, 64, generator=g).bfloat16() * 0.1)
    opt = torch.optim.SGD([w], lr=0.1)
    def step(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        o, _ = OPS.flash_attention(x @ w, x, x, True, "BSHD", None)
        return o.float().square().mean()

    # fullgraph: the op traces (register_fake) and its backward joins the graph (register_autograd);
    # aot_eager runs that graph without inductor's code generation.
    loss = torch.compile(step, fullgraph=True, backend="aot_eager")(x, w)
    loss.backward()
    qq = (x @ w).detach().double().transpose(1, 2).requires_grad_()
    ref = torch.nn.functional.scaled_dot_product_attention(qq, x.double().transpose(1, 2), x.double().transpose(1, 2),
                                                           is_causal=True)
    ref.square().mean().backward()
    want_w = (x.double().reshape(-1, 64).t() @ qq.grad.transpose(1, 2).reshape(-1, 64))
    torch.testing.assert_close(w.grad.double(), want_w, rtol=5e-2, atol=5e-2 * want_w.abs().max().item())
    before = w.detach().clone()
    opt.step()
    assert not torch.equal(before, w.detach())


def test_bad_input_is_located_at_the_caller() -> None:
    q = torch.randn(1, 8, 2, 64).half()
    lse = torch.randn(1, 2, 8)
    with pytest.raises(ops.Error) as e:
        ops.flash_attention_backward(q, q, q, q, q, lse.half())
    msg = str(e.value)
    assert "test_opslib_attention_bwd.py:" in msg
    assert "flash_attention_backward: argument 'lse' has the wrong dtype: expected float32, got float16" in msg
    with pytest.raises(ops.Error, match="argument 'dout' has the wrong shape: expected \\[1, 8, 2, 64\\], got"):
        ops.flash_attention_backward(q[:, :7], q, q, q, q, lse)
    with pytest.raises(ops.Error, match="argument 'v' has the wrong dtype: expected float16"):
        ops.flash_attention_backward(q, q, q, q.bfloat16(), q, lse)
    with pytest.raises(ops.Error, match="argument 'dlse' has the wrong shape: expected \\[1, 2, 8\\], got"):
        ops.flash_attention_backward(q, q, q, q, q, lse, dlse=torch.randn(1, 8, 2))
    with pytest.raises(ops.Error, match="argument 'layout' is unknown: expected 'BSHD' or 'BHSD', got 'SBHD'"):
        ops.flash_attention_backward(q, q, q, q, q, lse, layout="SBHD")
