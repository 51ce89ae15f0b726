"""The vector-core Python examples against their C++ twins and torch references: elementwise_add,
copy_bench (copy_gm_ub, copy_gm_l1), gelu, rms_norm and rms_norm_dynamic.

* Twin: the Python kernel builds the very IR the C++ example registered under the same name
  builds (printed without source locations, compared as text), for the default parameters and
  for other ones (another dtype, tail shapes, the other schedule).
* Reference: the kernel runs on the virtual NPU (with the hazard checker on) on small random
  inputs and matches a float64 torch reference.
"""


import pytest
import torch

from twins import cpp_ir, python_ir

# (module, generator, C++ kernel name, python args, C++ parameters)
TWINS = [
    ("elementwise_add", "elementwise_add_kernel", "elementwise_add", {}, {}),
    # A column tail: 1001 fp16 elements are not whole 32-byte blocks (padded UB rows, DataCopyPad).
    ("elementwise_add", "elementwise_add_kernel", "elementwise_add", dict(M=4, N=1001, tile=1001, blocks=2),
     dict(M=4, N=1001, tile=1001, blocks=2)),
    ("elementwise_add", "elementwise_add_kernel", "elementwise_add",
     dict(M=8, N=2048, tile=512, blocks=3, dtype="int32"), dict(M=8, N=2048, tile=512, blocks=3, dtype="int32")),
    # X and Y read past L2 (T.annotate_l2_cache): calibration rows C9 and C10.
    ("elementwise_add", "elementwise_add_kernel", "elementwise_add",
     dict(M=8, N=2048, tile=512, blocks=3, l2_cache="disable"), dict(M=8, N=2048, tile=512, blocks=3, l2_cache="disable")),
    ("copy_bench", "copy_gm_ub_kernel", "copy_gm_ub", {}, {}),
    ("copy_bench", "copy_gm_ub_kernel", "copy_gm_ub",
     dict(M=256, N=2048, block_M=16, block_N=64, blocks=5, slots=4, dtype="float32"),
     dict(M=256, N=2048, tM=16, tN=64, blocks=5, slots=4, dtype="float32")),
    ("copy_bench", "copy_gm_l1_kernel", "copy_gm_l1", {}, {}),
    ("copy_bench", "copy_gm_l1_kernel", "copy_gm_l1",
     dict(block_M=16, block_N=64, blocks=5, slots=4, dtype="bfloat16"),
     dict(tM=16, tN=64, blocks=5, slots=4, dtype="bfloat16")),
    ("gelu", "gelu_kernel", "gelu", {}, {}),
    ("gelu", "gelu_kernel", "gelu", dict(N=1024, tile=256, blocks=3, dtype="float16"),
     dict(N=1024, tile=256, blocks=3, dtype="float16")),
    ("rms_norm", "rms_norm_kernel", "rms_norm", {}, {}),
    ("rms_norm", "rms_norm_kernel", "rms_norm", dict(N=4096, passes=1), dict(N=4096, passes=1)),
    ("rms_norm", "rms_norm_kernel", "rms_norm",
     dict(M=64, N=512, block_M=16, block_N=128, blocks=3, passes=1, dtype="float16"),
     dict(M=64, N=512, rM=16, bN=128, blocks=3, passes=1, dtype="float16")),
    ("rms_norm", "rms_norm_kernel", "rms_norm", dict(M=64, N=512, block_M=16, block_N=128, blocks=3, dtype="float16"),
     dict(M=64, N=512, rM=16, bN=128, blocks=3, dtype="float16")),
    ("rms_norm_dynamic", "rms_norm_dynamic_kernel", "rms_norm_dynamic", {}, {}),
    ("rms_norm_dynamic", "rms_norm_dynamic_kernel", "rms_norm_dynamic",
     dict(N=512, block_M=16, block_N=128, blocks=3, dtype="float16"),
     dict(N=512, rM=16, bN=128, blocks=3, dtype="float16")),
    # ring_sum: T.sync_all between two phases (a GM workspace read across blocks); a tail.
    ("ring_sum", "ring_sum_kernel", "ring_sum", {}, {}),
    ("ring_sum", "ring_sum_kernel", "ring_sum", dict(M=33, N=33, blocks=5, dtype="float32"),
     dict(M=33, N=33, blocks=5, dtype="float32")),
]


@pytest.mark.parametrize("module,generator,cpp,args,params", TWINS,
                         ids=[f"{t[2]}-{i}" for i, t in enumerate(TWINS)])
def test_python_example_builds_the_ir_of_its_cpp_twin(module, generator, cpp, args, params):
    assert python_ir(module, generator, args) == cpp_ir(cpp, params)


# ---- Runs on the virtual NPU -------------------------------------------------------------------------


@pytest.mark.parametrize("M,N,tile,blocks,dtype", [
    (96, 1024, 256, 4, torch.float16),   # more tiles than workers: both buffer sets, several rounds
    (5, 1001, 1001, 2, torch.float16),   # column tail: padded UB rows; some workers idle
    (8, 512, 128, 3, torch.int32),
])
def test_elementwise_add_matches_torch(M, N, tile, blocks, dtype):
    import elementwise_add

    torch.manual_seed(0)
    if dtype.is_floating_point:
        x, y = torch.randn(M, N).to(dtype), torch.randn(M, N).to(dtype)
    else:
        x, y = torch.randint(-1000, 1000, (M, N), dtype=dtype), torch.randint(-1000, 1000, (M, N), dtype=dtype)
    kernel = elementwise_add.elementwise_add_kernel(M, N, tile, blocks, str(dtype).split(".")[1])
    z = kernel.run(x, y, check_hazards=True)
    # fp16: one rounding of the exact sum, as torch's float32 sum rounded to fp16.
    assert torch.equal(z, (x.double() + y.double()).to(dtype))


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.float16, 4e-3)])
def test_gelu_matches_torch(dtype, tol):
    import gelu

    torch.manual_seed(0)
    M, N = 24, 1024
    x = (3 * torch.randn(M, N)).to(dtype)
    y = gelu.gelu_kernel(M, N, 256, 4, str(dtype).split(".")[1]).run(x, check_hazards=True)
    xd = x.double()
    torch.testing.assert_close(y.double(), xd * torch.sigmoid(1.702 * xd), rtol=tol, atol=tol)


@pytest.mark.parametrize("generator", ["copy_gm_ub_kernel", "copy_gm_l1_kernel"])
def test_copy_bench_runs(generator):
    import copy_bench

    torch.manual_seed(0)
    x = torch.randn(256, 2048).half()
    before = x.clone()
    kernel = getattr(copy_bench, generator)(256, 2048, 64, 256, blocks=2, slots=2)
    assert kernel.run(x, check_hazards=True) is None  # no output: the copies land in UB / L1
    prof = kernel.profile(x)
    assert prof["total_cycles"] > 0
    assert torch.equal(x, before)


def _rms_norm_ref(x, w, eps):
    xd = x.double()
    return xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + eps) * w.double()


@pytest.mark.parametrize("passes,dtype", [(2, torch.bfloat16), (1, torch.bfloat16), (2, torch.float16)])
def test_rms_norm_matches_torch(passes, dtype):
    import rms_norm

    torch.manual_seed(0)
    M, N, eps = 48, 1024, 1e-6
    x, w = torch.randn(M, N).to(dtype), torch.randn(N).to(dtype)
    kernel = rms_norm.rms_norm_kernel(M, N, block_M=8, block_N=256, blocks=2, passes=passes,
                                      dtype=str(dtype).split(".")[1])
    y = kernel.run(x, w, eps, check_hazards=True)
    # One rounding to bf16 / fp16 of fp32 math.
    torch.testing.assert_close(y.double(), _rms_norm_ref(x, w, eps), rtol=1e-2, atol=1e-2)


def test_rms_norm_dynamic_matches_torch_for_every_row_count():
    import rms_norm_dynamic

    torch.manual_seed(0)
    N, eps = 512, 1e-6
    kernel = rms_norm_dynamic.rms_norm_dynamic_kernel(N, block_M=8, block_N=128, blocks=2)  # one kernel
    w = torch.randn(N).bfloat16()
    # 0 rows (no block), a tail only, full tiles only (more than the 4 workers), full tiles + a tail.
    for M in (0, 5, 40, 53):
        x = torch.randn(M, N).bfloat16()
        y = torch.full_like(x, float("nan"))  # a row the kernel does not write stays NaN
        kernel.run(x, w, y, eps, check_hazards=True)
        torch.testing.assert_close(y.double(), _rms_norm_ref(x, w, eps), rtol=1e-2, atol=1e-2)
