"""The expert cube (and cube + vector) Python examples against their C++ twins and references.

* Twin: the Python kernel builds the very IR the C++ example registered under the same name
  builds (printed without source locations, compared as text), for the default parameters and
  for other parameter sets (other tiles, dtypes, shapes that change the unrolled structure).
* Reference: the kernel runs on the virtual NPU, at a small shape, on random inputs and matches
  a torch fp32 reference. The runs check hazards: these kernels synchronise by hand, and a
  missing flag or barrier (a race the functional run may not show) fails the launch.
"""

import importlib

import pytest
import torch

from twins import cpp_ir, python_ir

# (module, generator, C++ kernel name, python args, C++ parameters)
TWINS = [
    # gemm_pipelined: the defaults (4 panels of 4 steps, 32 tiles on 24 AICs: two rounds) ...
    ("gemm_pipelined", "matmul_pipelined", "gemm_pipelined", dict(M=1024, N=1024, K=1024), {}),
    # ... fp32 out from bfloat16, 8 tiles on 3 persistent AICs ...
    ("gemm_pipelined", "matmul_pipelined", "gemm_pipelined",
     dict(M=256, N=512, K=512, block_N=128, num_blocks=3, dtype="bfloat16", out_dtype="float32"),
     dict(M=256, N=512, K=512, bN=128, blocks=3, dtype="bfloat16", out_dtype="float32")),
    # ... and one panel of one step per tile, fewer tiles than blocks.
    ("gemm_pipelined", "matmul_pipelined", "gemm_pipelined",
     dict(M=128, N=512, K=64, block_M=64, block_N=128, block_K=64, K_L1=64),
     dict(M=128, N=512, K=64, bM=64, bN=128, bK=64, kL1=64)),
    # minicv: fp32 out (no cast), then fp16 out (a barrier and a vector cast) from bfloat16.
    ("minicv", "matmul_exp", "minicv", dict(M=1024, N=1024, K=256), {}),
    ("minicv", "matmul_exp", "minicv",
     dict(M=256, N=512, K=64, block_M=64, block_N=64, dtype="bfloat16", out_dtype="float16"),
     dict(M=256, N=512, K=64, bM=64, bN=64, dtype="bfloat16", out_dtype="float16")),
    # flash_attention: the defaults (two PV chunks: the FIX -> M flag inside the chunk loop) ...
    ("flash_attention", "flash_attention_fwd", "flash_attention", dict(batch=1, heads=1, seq_len=512, dim=512),
     {}),
    # ... several heads and batches, bfloat16, small tiles (the M barrier after each Mmad) ...
    ("flash_attention", "flash_attention_fwd", "flash_attention",
     dict(batch=2, heads=3, seq_len=256, dim=64, block_M=32, block_N=32, block_K=64, block_D=32, dtype="bfloat16"),
     dict(B=2, H=3, S=256, D=64, bM=32, bN=32, bK=64, bD=32, dtype="bfloat16")),
    # ... and one PV chunk (no FIX -> M flag).
    ("flash_attention", "flash_attention_fwd", "flash_attention",
     dict(batch=1, heads=2, seq_len=256, dim=64, block_K=32, block_D=64),
     dict(B=1, H=2, S=256, D=64, bK=32, bD=64)),
    # flash_attention_pipelined: the defaults ...
    ("flash_attention_pipelined", "flash_attention_pipelined_fwd", "flash_attention_pipelined",
     dict(batch=1, heads=1, seq_len=512, dim=512), {}),
    # ... several heads and batches, bfloat16, small tiles ...
    ("flash_attention_pipelined", "flash_attention_pipelined_fwd", "flash_attention_pipelined",
     dict(batch=2, heads=3, seq_len=256, dim=64, block_M=32, block_N=32, block_K=64, block_D=32, dtype="bfloat16"),
     dict(B=2, H=3, S=256, D=64, bM=32, bN=32, bK=64, bD=32, dtype="bfloat16")),
    # ... and a single kv-tile (no loop: S_0, PV_0, SM_0, UP_0 only).
    ("flash_attention_pipelined", "flash_attention_pipelined_fwd", "flash_attention_pipelined",
     dict(batch=1, heads=2, seq_len=64, dim=64, block_K=64, block_D=64),
     dict(B=1, H=2, S=64, D=64, bK=64, bD=64)),
]


@pytest.mark.parametrize("module,generator,cpp,args,params", TWINS,
                         ids=[f"{t[0]}-{i}" for i, t in enumerate(TWINS)])
def test_python_example_builds_the_ir_of_its_cpp_twin(module, generator, cpp, args, params):
    assert python_ir(module, generator, args) == cpp_ir(cpp, params)


# ---- Runs on the virtual NPU ------------------------------------------------------------------------


@pytest.mark.parametrize("dtype,out_dtype", [("float16", None), ("bfloat16", "float32")])
def test_gemm_pipelined_matches_torch(dtype, out_dtype):
    import gemm_pipelined

    torch.manual_seed(0)
    tdt = getattr(torch, dtype)
    a, b = torch.randn(256, 512).to(tdt), torch.randn(512, 384).to(tdt)
    # 2 x 3 tiles on 4 persistent AICs (two take a second tile), 2 panels of 4 steps per tile.
    kernel = gemm_pipelined.matmul_pipelined(256, 384, 512, block_N=128, num_blocks=4, dtype=dtype,
                                             out_dtype=out_dtype)
    c = kernel.run(a, b, check_hazards=True)
    ref = a.float() @ b.float()
    assert c.dtype == getattr(torch, out_dtype or dtype)
    tol = 1e-3 if out_dtype == "float32" else 1e-2
    torch.testing.assert_close(c.float(), ref.to(c.dtype).float(), rtol=tol, atol=tol)


@pytest.mark.parametrize("out_dtype", ["float32", "float16"])
def test_minicv_matches_torch(out_dtype):
    import minicv

    torch.manual_seed(0)
    M, N, K, bM, bN = 256, 192, 64, 64, 64
    a, b = (torch.randn(M, K) * 0.2).half(), (torch.randn(K, N) * 0.2).half()
    # The launcher allocates the workspace W (workspace_idx).
    d = minicv.matmul_exp(M, N, K, block_M=bM, block_N=bN, out_dtype=out_dtype).run(a, b, check_hazards=True)
    assert d.dtype == getattr(torch, out_dtype)
    ref = torch.exp(a.float() @ b.float())
    tol = 1e-3 if out_dtype == "float32" else 2e-3
    torch.testing.assert_close(d.float(), ref, rtol=tol, atol=tol)


def _attention_ref(q, k, v):
    q, k, v = q.float(), k.float(), v.float()
    return (q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5).softmax(dim=-1) @ v


def _run_attention(module, generator, batch, heads, seq_len, dim, dtype="float16", **tiles):
    mod = importlib.import_module(module)
    torch.manual_seed(0)
    shape = (batch, heads, seq_len, dim)
    q, k, v = (torch.randn(shape).to(getattr(torch, dtype)) for _ in range(3))
    kernel = getattr(mod, generator)(batch, heads, seq_len, dim, dtype=dtype, **tiles)
    # The launcher allocates the workspaces WS_S, WS_P and WS_O (workspace_idx).
    return kernel.run(q, k, v, check_hazards=True), _attention_ref(q, k, v)


ATTENTION_CASES = [
    # Two PV chunks and two QK^T chunks per kv-tile, two heads.
    (dict(batch=1, heads=2, seq_len=256, dim=64, block_K=32, block_D=32), "float16"),
    # bfloat16, two batches, small tiles.
    (dict(batch=2, heads=1, seq_len=128, dim=64, block_M=32, block_N=32, block_K=64, block_D=64), "bfloat16"),
]


@pytest.mark.parametrize("shape,dtype", ATTENTION_CASES, ids=["fp16", "bf16"])
@pytest.mark.parametrize("module,generator", [
    ("flash_attention", "flash_attention_fwd"),
    ("flash_attention_pipelined", "flash_attention_pipelined_fwd"),
], ids=["serial", "pipelined"])
def test_flash_attention_matches_torch(module, generator, shape, dtype):
    o, ref = _run_attention(module, generator, dtype=dtype, **shape)
    tol = 1e-2 if dtype == "float16" else 2e-2
    torch.testing.assert_close(o.float(), ref, rtol=tol, atol=tol)


def test_flash_attention_pipelined_is_bit_identical_to_the_serial_kernel():
    # Every floating-point operation of the pipelined kernel is the serial kernel's, in order.
    shape = dict(batch=1, heads=2, seq_len=256, dim=64, block_K=64, block_D=64)
    o_serial, _ = _run_attention("flash_attention", "flash_attention_fwd", **shape)
    o_pipelined, _ = _run_attention("flash_attention_pipelined", "flash_attention_pipelined_fwd", **shape)
    assert torch.equal(o_serial, o_pipelined)
