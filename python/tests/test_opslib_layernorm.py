"""LayerNorm in the operator library: the Python twins (python/cann_ops_tilelang/kernels/layer_norm.py)
against the C++ generators (cann_ops_tilelang/norm/layer_norm*_kernel.cpp) over many keys (the
library's own on A2 over dtypes, hidden sizes and the optional tensors, and hand-made ones), the
partials reduction's key, layer_norm_backward against torch (fp64 autograd of
torch.nn.functional.layer_norm) with row tails, the torch op's autograd and opcheck.

Data: each test's seed (seed_plugin.py: from --seed and the test's node id) seeds torch's
global generator before it runs; a test's own generators take it from the `seed` fixture.
"""

from __future__ import annotations

import itertools

import pytest

import cann_ops_tilelang
from cann_ops_tilelang import kernels
from tl_ascend import _core

torch = pytest.importorskip("torch")

DTYPES = ["bfloat16", "float16", "float32"]


def _fwd_keys() -> list[dict]:
    keys = [kernels.layer_norm_key(dt, h, w, b, s)
            for dt, h, (w, b, s) in itertools.product(DTYPES, [64, 130, 5120, 7168],
                                                      itertools.product([False, True], repeat=3))]
    keys.append(dict(dtype="float16", hidden=256, rows_per_tile=4, blocks=3, weight=True, bias=False, stats=True))
    return keys


def _bwd_keys() -> list[dict]:
    # 7, 33, 1000, 4097: rows that are not whole 32-byte blocks (1000 fp32 is whole).
    keys = [kernels.layer_norm_bwd_key(dt, h)
            for dt, h in itertools.product(DTYPES, [64, 512, 5120, 7168, 7, 33, 1000, 4097])]
    keys.append(dict(dtype="bfloat16", hidden=512, rows_per_tile=8, chunk=128, blocks=3))
    keys.append(dict(dtype="float32", hidden=256, rows_per_tile=8, chunk=64, blocks=1))
    # Whole rows: both slot rings, a tail-only tile count (rM 4), fp32.
    keys.append(dict(dtype="bfloat16", hidden=512, rows_per_tile=4, chunk=0, blocks=3, slots=3))
    keys.append(dict(dtype="float16", hidden=96, rows_per_tile=2, chunk=0, blocks=2, slots=5))
    keys.append(dict(dtype="float32", hidden=64, rows_per_tile=8, chunk=0, blocks=1, slots=3))
    return keys


def _fid(k: dict) -> str:
    return (f"{k['dtype']}-H{k['hidden']}-bM{k['rows_per_tile']}-b{k['blocks']}"
            f"-w{int(k['weight'])}b{int(k['bias'])}s{int(k['stats'])}")


def _bid(k: dict) -> str:
    return f"{k['dtype']}-H{k['hidden']}-rM{k['rows_per_tile']}-bN{k['chunk']}-b{k['blocks']}-s{k.get('slots', 3)}"


@pytest.mark.parametrize("key", _fwd_keys(), ids=_fid)
def test_layer_norm_fwd_twin_builds_the_cpp_ir(key: dict) -> None:
    assert kernels.layer_norm_kernel(**key).script(False) == _core.ops_layer_norm_kernel(key).script(False)


@pytest.mark.parametrize("key", _bwd_keys(), ids=_bid)
def test_layer_norm_bwd_twin_builds_the_cpp_ir(key: dict) -> None:
    assert kernels.layer_norm_bwd_kernel(**key).script(False) == _core.ops_layer_norm_bwd_kernel(key).script(False)


@pytest.mark.parametrize("key", _bwd_keys(), ids=_bid)
def test_layer_norm_partials_reduce_twin_builds_the_cpp_ir(key: dict) -> None:
    rkey = kernels.layer_norm_dwb_reduce_key(key)
    if key["chunk"]:  # chunked: whole chunks, the reduction's chunk the kernel's
        hp = -(-key["hidden"] // key["chunk"]) * key["chunk"]
        assert rkey["hidden"] == 2 * hp and rkey["chunk"] == key["chunk"]
    else:  # whole rows: the reduction's chunks at most one per AIV
        assert rkey["hidden"] == 2 * key["hidden"] and rkey["hidden"] // rkey["chunk"] <= 2 * key["blocks"]
    partials = 2 * key["blocks"]
    py = kernels.rms_norm_dw_reduce_kernel(**rkey, partials=partials).script(False)
    assert py == _core.ops_rms_norm_dw_reduce_kernel(rkey, partials).script(False)


def _ref(dy, x, w, b, eps):
    """fp64 torch autograd of F.layer_norm: (dx, dw, db)."""
    xd = x.double().requires_grad_()
    wd = w.double().requires_grad_()
    bd = b.double().requires_grad_()
    y = torch.nn.functional.layer_norm(xd, (x.shape[-1],), wd, bd, eps)
    y.backward(dy.double())
    return xd.grad, wd.grad, bd.grad


@pytest.mark.parametrize("rows,hidden,dtype", [(1, 512, torch.float32), (7, 64, torch.bfloat16),
                                                (33, 512, torch.float16), (1000, 64, torch.float32)])
def test_torch_autograd_matches_fp64_torch(rows: int, hidden: int, dtype, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    x = (torch.randn(rows, hidden, generator=g) * 2 + 3).to(dtype).requires_grad_()
    w = (torch.rand(hidden, generator=g) + 0.5).to(dtype).requires_grad_()
    b = torch.randn(hidden, generator=g).to(dtype).requires_grad_()
    dy = torch.randn(rows, hidden, generator=g).to(dtype)
    y = torch.ops.cann_ops_tilelang.layer_norm(x, w, b, 1e-5)
    y.backward(dy)
    want = _ref(dy, x.detach(), w.detach(), b.detach(), 1e-5)
    tol = {torch.float32: 1e-4, torch.float16: 2e-2, torch.bfloat16: 5e-2}[dtype]
    for got, ref, name in zip((x.grad, w.grad, b.grad), want, ("dx", "dw", "db")):
        scale = ref.abs().max().item() + 1e-6
        err = (got.double() - ref).abs().max().item()
        assert err <= tol * scale, f"{name}: max error {err} against scale {scale}"


def test_torch_autograd_without_weight_or_bias() -> None:
    x = (torch.randn(9, 64) * 2 + 3).requires_grad_()
    dy = torch.randn(9, 64)
    torch.ops.cann_ops_tilelang.layer_norm(x, None, None, 1e-5).backward(dy)
    xd = x.detach().double().requires_grad_()
    torch.nn.functional.layer_norm(xd, (64,), None, None, 1e-5).backward(dy.double())
    assert (x.grad.double() - xd.grad).abs().max().item() < 1e-4


def test_backward_bad_input_names_the_argument() -> None:
    x = torch.randn(4, 256)
    with pytest.raises(cann_ops_tilelang.Error, match="layer_norm_backward: argument 'dy' has the wrong shape"):
        cann_ops_tilelang.layer_norm_backward(torch.randn(4, 128), x, torch.ones(256))


def test_opcheck() -> None:
    x = torch.randn(7, 64) * 2 + 3
    w, b = torch.rand(64) + 0.5, torch.randn(64)
    torch.library.opcheck(torch.ops.cann_ops_tilelang.layer_norm, (x.requires_grad_(), w.requires_grad_(),
                                                                     b.requires_grad_(), 1e-5))
    torch.library.opcheck(torch.ops.cann_ops_tilelang.layer_norm_backward, (torch.randn(7, 64), x.detach(),
                                                                              w.detach(), 1e-5))
