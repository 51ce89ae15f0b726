"""T.annotate_l2_cache: a GM tensor's L2 cache mode (AscendC's GlobalTensor::SetL2CacheHint;
docs/language.md, "T.annotate_l2_cache"; docs/calibration.md, "GM side").

TileLang-Ascend has no spelling for the hint (its code generator never emits SetL2CacheHint); the
name follows its annotate_* family. What is checked here: the Python example with the hint builds
the C++ example's IR (test_twins_vector.py) and computes what torch computes at tails; the hint
prints in the IR, reaches the AscendC source, changes only the timing model's HBM traffic (reads
that bypass L2 do not fill it); bad uses are clear errors.
"""

from __future__ import annotations

import pytest
import torch

import tl_ascend as tilelang
import tl_ascend.language as T

TAILS = (1, 7, 33, 1000, 4097)


def read_twice(mode: str, N: int = 1024):
    """Each AIV reads its half of X twice (a pipe_barrier between), copies it to Z."""
    @tilelang.jit(out_idx=[-1])
    def kernel():
        @T.prim_func
        def read_twice(X: T.Tensor((2, N), "float16"), Z: T.Tensor((2, N), "float16")):
            T.annotate_l2_cache({X: mode})
            with T.Kernel(1, is_npu=True) as (cid, vid):
                with T.Scope("V"):
                    a = T.alloc_ub((1, N), "float16")
                    T.copy(X[vid, 0], a)
                    T.pipe_barrier("MTE2")
                    T.copy(X[vid, 0], a)
                    T.set_flag("MTE2", "MTE3", 0)
                    T.wait_flag("MTE2", "MTE3", 0)
                    T.copy(a, Z[vid, 0])
        return read_twice
    return kernel()


def test_the_mode_prints_and_reaches_the_ascendc_source():
    k = read_twice("disable")
    text = k.func.script(False)
    assert 'X: T.Tensor((2, 1024), "float16", l2_cache="disable")' in text
    assert 'Z: T.Tensor((2, 1024), "float16")' in text
    src = k.get_kernel_source()
    assert src.count("SetL2CacheHint(AscendC::CacheMode::CACHE_MODE_DISABLE)") == 1
    assert "SetL2CacheHint" not in read_twice("normal").get_kernel_source()


def test_bypassing_reads_do_not_fill_l2_and_the_data_is_the_same():
    x = torch.randn(2, 1024).to(torch.float16)
    normal, bypass = read_twice("normal"), read_twice("disable")
    assert torch.equal(normal(x), x) and torch.equal(bypass(x), x)
    pn, pb = normal.profile(x), bypass.profile(x)
    # Normal: the second read hits what the first brought into L2; the write stays in L2.
    assert pn["gm_hbm_bytes"] == 2 * 2048
    # Bypass: both reads go to HBM.
    assert pb["gm_hbm_bytes"] == 4 * 2048  # (the times agree: a 4 KB kernel is latency-bound)


@pytest.mark.parametrize("N", TAILS)
def test_the_add_example_with_its_reads_past_l2_matches_torch(N):
    import elementwise_add

    torch.manual_seed(N)
    x, y = torch.randn(5, N).to(torch.float16), torch.randn(5, N).to(torch.float16)
    kernel = elementwise_add.elementwise_add_kernel(5, N, N, 2, "float16", l2_cache="disable")
    assert 'l2_cache="disable"' in kernel.func.script(False)
    z = kernel.run(x, y, check_hazards=True)
    assert torch.equal(z, (x.double() + y.double()).to(torch.float16))


def build_error(body) -> str:
    with pytest.raises(tilelang.Error) as e:
        @tilelang.jit
        def kernel():
            @T.prim_func
            def bad(X: T.Tensor((64,), "float32")):
                body(X)
                with T.Kernel(1, is_npu=True) as (cid, vid):
                    with T.Scope("V"):
                        a = T.alloc_ub((64,), "float32")
                        T.copy(X, a)
            return bad
        kernel()
    return str(e.value)


def test_bad_uses_are_errors():
    assert "T.annotate_l2_cache: argument 'mode_map' must be a dict" in build_error(
        lambda X: T.annotate_l2_cache([X]))
    assert "the mode of 'X' must be \"normal\" or \"disable\", got str 'off'" in build_error(
        lambda X: T.annotate_l2_cache({X: "off"}))
    assert "expected a GM tensor (a T.Tensor parameter or T.alloc_workspace) as a key, got int 1" in build_error(
        lambda X: T.annotate_l2_cache({1: "disable"}))
    msg = build_error(lambda X: (T.annotate_l2_cache({X: "disable"}), T.annotate_l2_cache({X: "normal"})))
    assert "'X' already has L2 cache mode \"disable\", this annotation gives \"normal\"" in msg


def test_an_on_chip_buffer_has_no_l2_cache_mode():
    with pytest.raises(tilelang.Error, match=r"'a' is a UB buffer; only GM tensors"):
        @tilelang.jit
        def kernel():
            @T.prim_func
            def bad(X: T.Tensor((64,), "float32")):
                with T.Kernel(1, is_npu=True) as (cid, vid):
                    with T.Scope("V"):
                        a = T.alloc_ub((64,), "float32")
                        T.annotate_l2_cache({a: "disable"})
                        T.copy(X, a)
            return bad
        kernel()
