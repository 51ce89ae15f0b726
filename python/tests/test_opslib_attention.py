"""cann_ops_tilelang's FlashAttention forward from Python and PyTorch: the twin
(cann_ops_tilelang/kernels/attention.py) builds the C++ generator's IR for BSHD/BHSD, causal or
not; the plain function on sequence tails against a float64 torch reference (o and lse), numpy in
and out, empty tensors; the torch.library operator (opcheck, its fake under FakeTensor shapes); and
bad input with the library's located message.

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
@pytest.mark.parametrize("tiles", [None, (64, 256, 2, 1)])
def test_twin_builds_the_cpp_ir(causal: bool, layout: str, dtype: str, dim: int, tiles) -> None:
    key = kernels.flash_attention_key(dtype, 3, dim, causal, layout, seq=4096)
    assert key["blocks"] > 0 and key["causal"] == causal and key["layout"] == layout
    # The library's key: 128 x 128 tiles, 3 stages, the cube two kv steps ahead, for every length.
    assert (key["block_m"], key["block_n"], key["stages"], key["skew"]) == (128, 128, 3, 2)
    assert kernels.flash_attention_key(dtype, 3, dim, causal, layout) == key
    if tiles:  # the generator's other row-vector order (64-row tiles) and a one-step skew
        key.update(zip(("block_m", "block_n", "stages", "skew"), tiles))
    py = kernels.flash_attention_kernel(**key).script(False)
    cpp = _core.ops_flash_attention_kernel(key).script(False)
    assert py == cpp
    assert ("skew=2" in py) == (tiles is None)


def _ref(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, layout: str,
         scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    """float64 o (in `layout`) and lse [B, H, S]."""
    if layout == "BSHD":
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
    s = torch.einsum("bhid,bhjd->bhij", q.double(), k.double()) * scale
    if causal:
        n = s.shape[-1]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
    lse = torch.logsumexp(s, -1)
    o = torch.softmax(s, -1) @ v.double()
    return (o.transpose(1, 2) if layout == "BSHD" else o), lse


@pytest.mark.parametrize("seq", [1, 7, 33, 273])
@pytest.mark.parametrize("causal", [False, True])
def test_tails_against_torch(seq: int, causal: bool, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    layout = "BSHD" if seq % 2 else "BHSD"
    dt = torch.bfloat16 if causal else torch.float16
    shape = (2, seq, 2, 64) if layout == "BSHD" else (2, 2, seq, 64)
    q, k, v = (torch.randn(shape, generator=g).to(dt) for _ in range(3))
    r = ops.flash_attention(q, k, v, causal=causal, layout=layout)
    o, lse = _ref(q, k, v, causal, layout, 1 / math.sqrt(64))
    assert r.o.dtype == dt and r.o.shape == q.shape and r.lse.dtype == torch.float32
    tol = 1.6e-2 if dt == torch.bfloat16 else 4e-3
    torch.testing.assert_close(r.o.double(), o, rtol=tol, atol=tol)
    torch.testing.assert_close(r.lse.double(), lse, rtol=1e-3, atol=1e-3)


def test_scale_numpy_and_empty(seed: int) -> None:
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((1, 3, 40, 128)).astype(np.float16) for _ in range(3))
    r = ops.flash_attention(q, k, v, layout="BHSD", scale=0.05)
    assert isinstance(r.o, np.ndarray) and r.o.dtype == np.float16 and r.lse.shape == (1, 3, 40)
    o, lse = _ref(*(torch.from_numpy(t) for t in (q, k, v)), False, "BHSD", 0.05)
    np.testing.assert_allclose(r.o.astype(np.float64), o.numpy(), rtol=4e-3, atol=4e-3)
    np.testing.assert_allclose(r.lse, lse.numpy(), rtol=1e-3, atol=1e-3)
    e = torch.empty((2, 0, 4, 64), dtype=torch.float16)
    out = ops.flash_attention(e, e, e)
    assert out.o.shape == (2, 0, 4, 64) and out.lse.shape == (2, 4, 0)


def test_torch_op_opcheck_and_fake(seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(1, 70, 2, 64, generator=g).half() for _ in range(3))
    o, lse = OPS.flash_attention(q, k, v, True, "BSHD", None)
    want_o, want_lse = _ref(q, k, v, True, "BSHD", 1 / 8)
    torch.testing.assert_close(o.double(), want_o, rtol=4e-3, atol=4e-3)
    torch.testing.assert_close(lse.double(), want_lse, rtol=1e-3, atol=1e-3)
    torch.library.opcheck(OPS.flash_attention, (q, k, v), {"causal": True, "layout": "BSHD"},
                          test_utils=("test_schema", "test_faketensor"))
    with torch._subclasses.fake_tensor.FakeTensorMode():
        fq = torch.empty(2, 4, 9, 128, dtype=torch.bfloat16)
        fo, flse = OPS.flash_attention(fq, fq, fq, False, "BHSD", None)
        assert fo.shape == (2, 4, 9, 128) and flse.shape == (2, 4, 9) and flse.dtype == torch.float32


def test_bad_input_is_located_at_the_caller() -> None:
    q = torch.randn(1, 8, 2, 96).half()
    with pytest.raises(ops.Error) as e:
        ops.flash_attention(q, q, q)
    msg = str(e.value)
    assert "test_opslib_attention.py:" in msg
    assert "flash_attention: argument 'q' has an unsupported head dimension: expected D = 64 or 128" in msg
    q = torch.randn(1, 8, 2, 64).half()
    with pytest.raises(ops.Error, match="argument 'k' has the wrong dtype: expected float16"):
        ops.flash_attention(q, q.float(), q)
    with pytest.raises(ops.Error, match="argument 'layout' is unknown: expected 'BSHD' or 'BHSD', got 'SBHD'"):
        ops.flash_attention(q, q, q, layout="SBHD")
