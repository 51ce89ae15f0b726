"""An input tensor larger than its declared shape, as TileLang-Ascend's scripts pass one (issue 29).

activation/swi_glu_grad.py declares `dY: T.Tensor((M, N // 2), dtype)` and passes a [M, N]
tensor, to its kernel and to its reference `torch.ops.npu.npu_swiglu_backward(dy, a)` alike. On
the chip both read the tensor's first M * N / 2 elements: TileLang-Ascend's adapter passes only
the data pointer (its static shape check is commented out, cython_wrapper.pyx), and CANN's
SwiGluGrad kernel views yGrad as totalBlockLen / 2 elements of x's tiling without checking its
shape (CANN ops-nn issue 7173). tl-ascend refuses such an input unless TL_LARGER_INPUTS=prefix
(`python -m tl_ascend.run` sets it), then reads the same prefix with a remark on stderr; its CPU
npu_swiglu_backward does the same. Our own SwiGLU-backward kernel in TileLang-Ascend syntax, on
row tails, under the hazard checker, against a torch reference that lives here.
"""

import os
import subprocess
import sys

import pytest
import torch

import tl_ascend as tilelang
import tl_ascend.language as T

AUTO = {tilelang.PassConfigKey.TL_ASCEND_AUTO_CV_COMBINE: True,
        tilelang.PassConfigKey.TL_ASCEND_AUTO_SYNC: True}
H = 64  # half a row of x: 256 B of fp32


@tilelang.jit(out_idx=[2], pass_configs=AUTO, check_hazards=True)
def swiglu_grad(M: int):
    @T.prim_func
    def main(X: T.Tensor((M, 2 * H), "float32"), DY: T.Tensor((M, H), "float32"),
             DX: T.Tensor((M, 2 * H), "float32")):
        with T.Kernel(M, is_npu=True) as (cid, vid):
            a = T.alloc_ub((1, H), "float32")
            b = T.alloc_ub((1, H), "float32")
            g = T.alloc_ub((1, H), "float32")
            s = T.alloc_ub((1, H), "float32")
            t = T.alloc_ub((1, H), "float32")
            one = T.alloc_ub((1, H), "float32")
            da = T.alloc_ub((1, H), "float32")
            db = T.alloc_ub((1, H), "float32")
            if vid == 0:
                T.copy(X[cid, 0], a)
                T.copy(X[cid, H], b)
                T.copy(DY[cid, 0], g)
                T.tile.fill(one, 1.0)
                T.tile.sub(t, one, a)
                T.tile.sub(t, t, one)  # -a
                T.tile.exp(t, t)
                T.tile.add(t, t, 1.0)
                T.tile.div(s, one, t)  # sigmoid(a)
                T.tile.mul(db, a, s)
                T.tile.mul(db, db, g)  # g * silu(a)
                T.tile.sub(t, one, s)
                T.tile.mul(t, t, s)
                T.tile.mul(t, t, a)
                T.tile.add(t, t, s)  # silu'(a)
                T.tile.mul(da, g, b)
                T.tile.mul(da, da, t)
                T.copy(da, DX[cid, 0])
                T.copy(db, DX[cid, H])

    return main


def reference(x: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    a, b = x.double().chunk(2, dim=-1)
    s = torch.sigmoid(a)
    g = g.double()
    return torch.cat([g * b * (s + a * s * (1 - s)), g * a * s], dim=-1)


@pytest.mark.parametrize("M", (1, 7, 33))
def test_a_larger_input_reads_its_prefix_with_tl_larger_inputs(M: int, monkeypatch, capfd) -> None:
    # Before: "argument 'DY' must have shape [M, 64], got [M, 128]: it has ... elements, more than
    # the ... the kernel reads" for swi_glu_grad.py's call, whatever the environment.
    monkeypatch.setenv("TL_LARGER_INPUTS", "prefix")
    torch.manual_seed(M)
    x, dy = torch.randn(M, 2 * H), torch.randn(M, 2 * H)
    got = swiglu_grad(M)(x, dy)
    prefix = dy.reshape(-1)[:M * H].reshape(M, H)  # rows 0 .. M/2 of dy, not each row's first half
    torch.testing.assert_close(got.double(), reference(x, prefix), rtol=1e-5, atol=1e-5)
    err = capfd.readouterr().err
    assert (f"remark: kernel main: argument 'DY' has shape [{M}, 128], larger than the declared [{M}, 64]: "
            f"the kernel reads its first {M * H} of {2 * M * H} elements in row-major order") in err


def test_without_tl_larger_inputs_a_larger_input_stays_an_error(monkeypatch) -> None:
    monkeypatch.delenv("TL_LARGER_INPUTS", raising=False)
    with pytest.raises(tilelang.Error, match=r"argument 'DY' must have shape \[7, 64\], got \[7, 128\]: it has 896 "
                                             r"elements, more than the 448 the kernel reads.*TL_LARGER_INPUTS=prefix"):
        swiglu_grad(7)(torch.randn(7, 2 * H), torch.randn(7, 2 * H))
    monkeypatch.setenv("TL_LARGER_INPUTS", "yes")
    with pytest.raises(tilelang.Error, match=r"TL_LARGER_INPUTS must be empty or 'prefix', got 'yes'"):
        swiglu_grad(7)(torch.randn(7, 2 * H), torch.randn(7, 2 * H))


REFERENCE_CHECK = r"""
import sys
import torch
import tl_ascend
import tl_ascend.torch_npu as torch_npu

def want(x, g):
    x = x.double().requires_grad_()
    a, b = x.chunk(2, dim=-1)
    (torch.nn.functional.silu(a) * b).backward(g.double())
    return x.grad

for n in (1, 7, 33, 1000, 4097):
    torch.manual_seed(n)
    x, g = torch.randn(3, 2 * n), torch.randn(3, n)
    torch.testing.assert_close(torch_npu.npu_swiglu_backward(g, x).double(), want(x, g), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(torch.ops.npu.npu_swiglu_backward(g, x).double(), want(x, g), rtol=1e-5, atol=1e-5)
    xb = x.bfloat16()
    out = torch.ops.npu.npu_swiglu_backward(g.bfloat16(), xb)
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out.double(), want(xb.float(), g.bfloat16().float()), rtol=1e-2, atol=1e-2)
    # swi_glu_grad.py's call: grad_output of x's shape, read as its first x.numel() / 2 elements.
    big = torch.randn(3, 2 * n)
    torch.testing.assert_close(torch.ops.npu.npu_swiglu_backward(big, x).double(),
                               want(x, big.reshape(-1)[:3 * n].reshape(3, n)), rtol=1e-5, atol=1e-5)
for bad in (torch.randn(2, 2), torch.randn(4, 4).t()):  # too few elements; not contiguous
    try:
        torch_npu.npu_swiglu_backward(bad, torch.randn(3, 4))
        raise SystemExit(f"no error for grad_output {list(bad.shape)}")
    except tl_ascend.Error as e:
        assert "grad_output must have shape [3, 2]" in str(e), e
print("OK")
"""


def test_npu_swiglu_backward_follows_the_formula_and_reads_a_larger_grad_as_the_chip() -> None:
    """Before: torch.ops.npu.npu_swiglu_backward was an AttributeError. Against autograd of
    silu(a) * b in float64, sizes 1 ... 4097; a grad_output as large as x (swi_glu_grad.py) is
    read as its first half in memory order, with a remark."""
    r = subprocess.run([sys.executable, "-c", REFERENCE_CHECK], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ))
    assert r.returncode == 0 and r.stdout.strip().endswith("OK"), r.stdout + r.stderr
    assert "remark: torch_npu.npu_swiglu_backward: grad_output has shape [3, 2], not [3, 1]" in r.stderr
