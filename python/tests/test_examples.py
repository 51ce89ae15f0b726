"""Every Python example against its C++ twin and a reference.

* Twin: the Python kernel builds the very IR the C++ example registered under the same name
  builds (printed without source locations, compared as text), for the same parameters.
* Reference: the kernel runs on the virtual NPU on random inputs and matches a torch/numpy
  reference.
"""


import pytest
import torch

import tl_ascend as tilelang
from twins import cpp_ir, python_ir

# (module, generator, C++ kernel name, python args, C++ parameters)
TWINS = [
    ("gemm", "matmul", "gemm", dict(M=512, N=512, K=384), dict(M=512, N=512, K=384)),
    ("gemm", "matmul", "gemm", dict(M=256, N=512, K=256, block_M=64, block_N=128, block_K=32, dtype="bfloat16"),
     dict(M=256, N=512, K=256, bM=64, bN=128, bK=32, dtype="bfloat16")),
]


@pytest.mark.parametrize("module,generator,cpp,args,params", TWINS,
                         ids=[f"{t[0]}-{i}" for i, t in enumerate(TWINS)])
def test_python_example_builds_the_ir_of_its_cpp_twin(module, generator, cpp, args, params):
    assert python_ir(module, generator, args) == cpp_ir(cpp, params)


def test_gemm_matches_torch():
    import gemm

    torch.manual_seed(0)
    a, b = torch.randn(256, 320).half(), torch.randn(320, 512).half()
    c = gemm.matmul(256, 512, 320)(a, b)
    torch.testing.assert_close(c, (a.float() @ b.float()).half(), rtol=1e-2, atol=1e-2)


def test_every_cpp_example_has_a_python_twin_under_test():
    import test_twins_cube
    import test_twins_dev
    import test_twins_vector

    covered = {t[2] for t in TWINS + test_twins_cube.TWINS + test_twins_vector.TWINS}
    covered |= {t[0] for t in test_twins_dev.TWINS}
    missing = sorted(set(tilelang._core.registered_kernels()) - covered)
    assert not missing, f"C++ examples without a Python twin test: {missing}"
