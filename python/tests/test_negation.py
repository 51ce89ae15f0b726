"""Regression of issue 27 (adversarial review): `-x` on floats was built as `0 - x`.

So -(+0.0) was +0.0 and 1 / -(+0.0) was +inf (IEEE and torch: -0.0 and -inf), in vectorised
element loops and on the scalar unit, fp32 and fp16. Before the fix this kernel gave Z[0] =
ZS[0] = 0.0 and R[0] = RS[0] = inf for x[0] = +0.0. `-x` is now a sign flip (`x * -1`).
"""

import math

import pytest
import torch

import tl_ascend as tilelang
import tl_ascend.language as T


@tilelang.jit(out_idx=[1, 2, 3, 4])
def negate(N: int, dtype: str = "float32"):
    @T.prim_func
    def k(X: T.Tensor((N,), dtype), Z: T.Tensor((N,), dtype), R: T.Tensor((N,), dtype),
          ZS: T.Tensor((N,), dtype), RS: T.Tensor((N,), dtype)):
        with T.Kernel(1, threads=1) as cid:
            x = T.alloc_shared((N,), dtype)
            z = T.alloc_shared((N,), dtype)
            r = T.alloc_shared((N,), dtype)
            T.copy(X[0], x)
            for i in T.Parallel(N):
                z[i] = -x[i]
                r[i] = 1.0 / -x[i]
            T.copy(z, Z[0])
            T.copy(r, R[0])
            for i in T.serial(N):
                ZS[i] = -X[i]
                RS[i] = 1.0 / -X[i]

    return k


SPECIAL = [0.0, -0.0, 1.5, -2.0, 0.1, math.inf, -math.inf, math.nan, 1000.0]


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("n", [1, 7, 33, 1000])
def test_negation_flips_the_sign_of_zero(dtype: str, n: int) -> None:
    tdt = getattr(torch, dtype)
    x = torch.tensor([SPECIAL[i % len(SPECIAL)] * (1 + i / 1024) for i in range(n)], dtype=tdt)
    z, r, zs, rs = negate(n, dtype)(x)
    want = -x  # torch: a sign flip
    want_r = 1.0 / want
    for got, ref, rtol in ((z, want, 0.0), (zs, want, 0.0), (r, want_r, 1e-3), (rs, want_r, 1e-3)):
        num = ~torch.isnan(ref)  # assert_close does not compare the sign of zeros
        assert torch.equal(torch.signbit(got)[num], torch.signbit(ref)[num])
        torch.testing.assert_close(got, ref, rtol=rtol, atol=0, equal_nan=True)
    assert torch.signbit(z[0]) and torch.signbit(zs[0])
    assert r[0].item() == -math.inf and rs[0].item() == -math.inf
