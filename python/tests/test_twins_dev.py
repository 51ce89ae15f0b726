"""The developer-mode Python examples against their C++ twins and torch references.

* Twin: each python/examples/<name>_dev.py kernel builds the very IR that the C++ example
  examples/<name>_dev.cpp registers under the same name (printed without source locations,
  compared as text), for the default parameters and for others (tails, stages, tiles, dtypes).
* Reference: each kernel runs on the virtual NPU at a small shape, tails included, and matches
  a torch fp32 reference.
"""

import math

import pytest
import torch

from twins import cpp_ir, python_ir

# (module = C++ kernel name, generator, python args, C++ parameters)
TWINS = [
    ("add_dev", "elementwise_add", dict(M=96, N=2048), {}),
    ("add_dev", "elementwise_add", dict(M=37, N=1029, block_M=8, dtype="float32"),
     dict(M=37, N=1029, bM=8, dtype="float32")),
    ("add_dev", "elementwise_add", dict(M=97, N=8192, block_M=2, tiles=2), dict(M=97, N=8192, bM=2, tiles=2)),
    ("add_dev", "elementwise_add", dict(M=33, N=1000, block_M=4, tiles=3, dtype="float32"),
     dict(M=33, N=1000, bM=4, tiles=3, dtype="float32")),
    ("gelu_dev", "gelu", dict(M=96, N=2048), {}),
    ("gelu_dev", "gelu", dict(M=100, N=2048, block_M=4, tiles=3, dtype="float16"),
     dict(M=100, N=2048, bM=4, tiles=3, dtype="float16")),
    ("rms_norm_dev", "rms_norm", dict(M=256, N=1024), {}),
    ("rms_norm_dev", "rms_norm", dict(M=100, N=1029, block_M=16, tiles=2, dtype="float16"),
     dict(M=100, N=1029, rM=16, tiles=2, dtype="float16")),
    ("softmax_dev", "softmax", dict(M=128, N=1024), {}),
    ("softmax_dev", "softmax", dict(M=50, N=37, block_M=16, tiles=3), dict(M=50, N=37, bM=16, tiles=3)),
    ("gemm_dev", "matmul", dict(M=1024, N=1024, K=1024), {}),
    ("gemm_dev", "matmul", dict(M=200, N=136, K=100, block_M=64, block_N=128, block_K=32, dtype="bfloat16",
                                num_stages=1),
     dict(M=200, N=136, K=100, bM=64, bN=128, bK=32, dtype="bfloat16", num_stages=1)),
    ("gemm_dev", "matmul", dict(M=512, N=512, K=512, num_stages=3), dict(M=512, N=512, K=512, num_stages=3)),
    ("gemm_dev", "matmul", dict(M=300, N=520, K=256, blocks=3), dict(M=300, N=520, K=256, blocks=3)),
    ("matmul_add_dev", "matmul_add", dict(M=256, N=256, K=256), {}),
    ("matmul_add_dev", "matmul_add", dict(M=130, N=100, K=72, block_M=32, block_N=64, block_K=32,
                                          dtype="bfloat16"),
     dict(M=130, N=100, K=72, bM=32, bN=64, bK=32, dtype="bfloat16")),
    ("flash_attention_dev", "flash_attention", dict(B=1, H=1, S=256, D=128), {}),
    ("flash_attention_dev", "flash_attention", dict(B=2, H=2, S=200, D=128, num_stages=1),
     dict(B=2, H=2, S=200, num_stages=1)),
    ("flash_attention_dev", "flash_attention", dict(B=1, H=3, S=100, D=64, block_M=64, block_N=128,
                                                    dtype="bfloat16", num_stages=3),
     dict(B=1, H=3, S=100, D=64, bM=64, bN=128, dtype="bfloat16", num_stages=3)),
]


@pytest.mark.parametrize("module,generator,args,params", TWINS, ids=[f"{t[0]}-{i}" for i, t in enumerate(TWINS)])
def test_dev_example_builds_the_ir_of_its_cpp_twin(module, generator, args, params):
    assert python_ir(module, generator, args) == cpp_ir(module, params)


# ---- Runs on the virtual NPU against torch fp32 references ---------------------------------------------


@pytest.mark.parametrize("M,N,block_M,dtype,tiles", [(96, 2048, 4, "float16", 1), (37, 1029, 8, "float32", 1),
                                                     (13, 100, 4, "int32", 1), (1, 4097, 2, "float16", 2),
                                                     (7, 1000, 2, "float32", 3), (33, 4097, 2, "float16", 2),
                                                     (1000, 33, 4, "float16", 2), (4097, 7, 2, "float32", 2)])
def test_add_dev_matches_torch(M, N, block_M, dtype, tiles):
    import add_dev

    torch.manual_seed(0)
    t = getattr(torch, dtype)
    if t.is_floating_point:
        x, y = torch.randn(M, N).to(t), torch.randn(M, N).to(t)
    else:
        x, y = torch.randint(-1000, 1000, (M, N), dtype=t), torch.randint(-1000, 1000, (M, N), dtype=t)
    z = add_dev.elementwise_add(M, N, block_M=block_M, dtype=dtype, tiles=tiles)(x, y)
    torch.testing.assert_close(z, (x.double() + y.double()).to(t), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("M,N,tiles,dtype,tol", [(96, 512, 1, "float32", 1e-4), (50, 200, 3, "float32", 1e-4),
                                                 (33, 256, 2, "float16", 5e-3)])
def test_gelu_dev_matches_torch(M, N, tiles, dtype, tol):
    import gelu_dev

    torch.manual_seed(0)
    x = torch.randn(M, N).to(getattr(torch, dtype))
    y = gelu_dev.gelu(M, N, tiles=tiles, dtype=dtype)(x)
    xf = x.float()
    torch.testing.assert_close(y.float(), xf * torch.sigmoid(1.702 * xf), rtol=tol, atol=tol)


@pytest.mark.parametrize("M,N,block_M,tiles,dtype", [(64, 1024, 8, 1, "bfloat16"), (45, 1029, 8, 2, "float16"),
                                                     (100, 256, 16, 3, "bfloat16")])
def test_rms_norm_dev_matches_torch(M, N, block_M, tiles, dtype):
    import rms_norm_dev

    torch.manual_seed(0)
    t = getattr(torch, dtype)
    x, w, eps = torch.randn(M, N).to(t), torch.randn(N).to(t), 1e-6
    y = rms_norm_dev.rms_norm(M, N, block_M=block_M, tiles=tiles, dtype=dtype)(x, w, eps)
    xf = x.float()
    ref = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w.float()
    torch.testing.assert_close(y.float(), ref, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("M,N,block_M,tiles", [(128, 1024, 8, 1), (50, 37, 16, 3), (21, 300, 8, 2)])
def test_softmax_dev_matches_torch(M, N, block_M, tiles):
    import softmax_dev

    torch.manual_seed(0)
    x = torch.randn(M, N) * 4
    y = softmax_dev.softmax(M, N, block_M=block_M, tiles=tiles)(x)
    torch.testing.assert_close(y, torch.softmax(x, dim=-1), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("M,N,K,blocks,dtype,num_stages", [
    (256, 512, 384, (128, 256, 128), "float16", 2),
    (200, 136, 100, (64, 128, 32), "bfloat16", 1),
    (128, 128, 320, (64, 64, 64), "float16", 3),
])
def test_gemm_dev_matches_torch(M, N, K, blocks, dtype, num_stages):
    import gemm_dev

    torch.manual_seed(0)
    t = getattr(torch, dtype)
    a, b = torch.randn(M, K).to(t), torch.randn(K, N).to(t)
    bM, bN, bK = blocks
    c = gemm_dev.matmul(M, N, K, block_M=bM, block_N=bN, block_K=bK, dtype=dtype, num_stages=num_stages)(a, b)
    torch.testing.assert_close(c.float(), a.float() @ b.float(), rtol=2e-2, atol=5e-2 * math.sqrt(K / 64))


@pytest.mark.parametrize("M,N,K,blocks,dtype", [(256, 256, 256, (64, 128, 64), "float16"),
                                                (130, 100, 72, (32, 64, 32), "bfloat16")])
def test_matmul_add_dev_matches_torch(M, N, K, blocks, dtype):
    import matmul_add_dev

    torch.manual_seed(0)
    t = getattr(torch, dtype)
    a, b, d = torch.randn(M, K).to(t), torch.randn(K, N).to(t), torch.randn(M, N).to(t)
    bM, bN, bK = blocks
    c = matmul_add_dev.matmul_add(M, N, K, block_M=bM, block_N=bN, block_K=bK, dtype=dtype)(a, b, d)
    ref = a.float() @ b.float() + d.float()
    torch.testing.assert_close(c.float(), ref, rtol=2e-2, atol=5e-2 * math.sqrt(K / 64))


@pytest.mark.parametrize("B,H,S,D,blocks,dtype,num_stages", [
    (1, 1, 256, 128, (64, 64), "float16", 2),
    (2, 2, 100, 64, (64, 64), "float16", 1),
    (1, 3, 100, 64, (64, 128), "bfloat16", 3),
])
def test_flash_attention_dev_matches_torch(B, H, S, D, blocks, dtype, num_stages):
    import flash_attention_dev

    torch.manual_seed(0)
    t = getattr(torch, dtype)
    q, k, v = (torch.randn(B, H, S, D).to(t) for _ in range(3))
    bM, bN = blocks
    o = flash_attention_dev.flash_attention(B, H, S, D, block_M=bM, block_N=bN, dtype=dtype,
                                            num_stages=num_stages)(q, k, v)
    scores = q.float() @ k.float().transpose(-1, -2) / math.sqrt(D)
    ref = torch.softmax(scores, dim=-1) @ v.float()
    tol = 1e-2 if dtype == "float16" else 3e-2
    torch.testing.assert_close(o.float(), ref, rtol=tol, atol=tol)
