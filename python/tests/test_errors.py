"""No input crashes the interpreter: each class of failure is a Python exception that names
what went wrong and, for kernel errors, the Python file and line.

Classes: script errors (the parser), verifier errors, capacity errors, hazards, deadlocks,
bad tensors and arguments, and tl-ascend's internal errors.
"""

import re

import numpy as np
import pytest
import torch

import tl_ascend as tilelang
import tl_ascend.language as T
from tl_ascend import _core

import kernels
from located import expect_error



# ---- script errors ------------------------------------------------------------------------------

def test_an_undefined_name_is_reported_at_its_line():
    def build():
        @T.prim_func
        def k(X: T.Tensor((16,), "float32")):
            with T.Kernel(1, is_npu=True) as (cid, vid):
                T.copy(X, undefined_buffer)  # noqa: F821  MARK

    expect_error(build, "MARK", "name 'undefined_buffer' is not defined")


def test_a_while_loop_is_rejected_at_its_line():
    def build():
        @T.prim_func
        def k(X: T.Tensor((16,), "float32")):
            with T.Kernel(1, is_npu=True) as (cid, vid):
                while True:  # MARK
                    pass

    expect_error(build, "MARK", "while loops are not supported")


def test_a_kernel_without_a_launch_is_an_error():
    def build():
        @T.prim_func
        def k(X: T.Tensor((16,), "float32")):  # MARK
            pass

    expect_error(build, "MARK", "has no T::Kernel launch")


def test_a_symbolic_condition_in_python_control_flow_is_a_type_error():
    def build():
        @T.prim_func
        def k(X: T.Tensor((16,), "float32")):
            with T.Kernel(4, is_npu=True) as (cid, vid):
                flags = [1, 2]
                flags[cid]  # MARK

    expect_error(build, "MARK", "indexing list", exc=tilelang.Error)


def test_wrong_loop_arity_names_the_counts():
    def build():
        @T.prim_func
        def k(X: T.Tensor((16, 16), "float32")):
            with T.Kernel(1, threads=1) as cid:
                x = T.alloc_shared((16, 16), "float32")
                for i in T.Parallel(16, 16):  # MARK
                    x[i, 0] = 1.0

    expect_error(build, "MARK", "2 loop extents but 1 loop variables")


def test_an_unknown_dtype_and_pipe_are_named():
    def bad_dtype():
        @T.prim_func
        def k(X: T.Tensor((16,), "float17")):  # MARK
            with T.Kernel(1, is_npu=True) as (cid, vid):
                pass

    expect_error(bad_dtype, "MARK", "unknown dtype 'float17'")

    def bad_pipe():
        @T.prim_func
        def k(X: T.Tensor((16,), "float32")):
            with T.Kernel(1, is_npu=True) as (cid, vid):
                T.set_flag("MTE9", "V", 0)  # MARK

    with pytest.raises(tilelang.Error, match="unknown pipe 'MTE9'"):
        bad_pipe()


def test_a_builder_error_carries_the_python_line():
    def build():
        @T.prim_func
        def k(X: T.Tensor((16,), "float32")):
            with T.Kernel(1, is_npu=True) as (cid, vid):
                with T.Scope("V"):
                    x = T.alloc_ub((16,), "float32")
                    x = T.alloc_ub((16,), "float32")  # noqa: F841  MARK

    expect_error(build, "MARK", "the name 'x' is already used")


# ---- verifier and capacity errors ---------------------------------------------------------------

def test_a_verifier_error_names_the_python_line():
    def build():
        @T.prim_func
        def k(X: T.Tensor((16, 16), "float16")):
            with T.Kernel(1, is_npu=True) as (cid, vid):
                with T.Scope("V"):
                    a = T.alloc_ub((16, 16), "float16")
                    b = T.alloc_ub((16, 16), "float16")
                    c = T.alloc_ub((16, 16), "float32")
                    T.gemm_v0(a, b, c)  # MARK

        tilelang.compile(k)

    expect_error(build, "MARK", "gemm_v0")


def test_a_buffer_beyond_capacity_is_a_compile_error_at_its_line():
    def build():
        @T.prim_func
        def k(X: T.Tensor((16,), "float32")):
            with T.Kernel(1, is_npu=True) as (cid, vid):
                with T.Scope("V"):
                    big = T.alloc_ub((1024, 1024), "float32")  # MARK
                    T.copy(X, big[0, 0:16])

        tilelang.compile(k)

    msg = expect_error(build, "MARK", "big")
    assert re.search(r"UB|capacity|bytes", msg), msg


# ---- runtime: hazards and deadlocks ------------------------------------------------------------------

def test_a_missing_flag_is_a_hazard_naming_both_python_lines():
    k = tilelang.compile(kernels.ub_copy(sync=False), out_idx=[-1], check_hazards=True)
    with pytest.raises(tilelang.Error) as e:
        k(torch.randn(16, 64))
    msg = str(e.value)
    assert "RAW hazard on UB" in msg
    assert msg.count("kernels.py:") >= 2, msg


def test_a_wait_without_a_set_is_a_deadlock_at_its_python_line():
    k = tilelang.compile(kernels.ub_copy(wait_without_set=True), out_idx=[-1])
    with pytest.raises(tilelang.Error, match=r"kernels\.py:\d+: .*deadlock"):
        k(torch.randn(16, 64))


# ---- bad tensors and arguments ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def copy_kernel():
    return tilelang.compile(kernels.ub_copy(), out_idx=[-1])


@pytest.mark.parametrize("arg,fragment", [
    (lambda: torch.randn(16, 64).half(), "argument 'X' must have dtype float32, got float16"),
    (lambda: torch.randn(8, 64), "argument 'X' must have shape [16, 64], got [8, 64]"),
    (lambda: torch.randn(64, 16).t(), "argument 'X' must have strides [64, 1], got [1, 16]"),
    (lambda: np.zeros((16, 64), np.float64), "argument 'X' must have dtype float32, got float64"),
])
def test_a_wrong_tensor_is_named_with_what_was_expected_and_what_came(copy_kernel, arg, fragment):
    with pytest.raises(tilelang.Error) as e:
        copy_kernel(arg())
    assert fragment in str(e.value)


def test_a_non_tensor_and_a_wrong_count_are_type_errors(copy_kernel):
    with pytest.raises(TypeError, match="argument 'X' must be a torch tensor or a numpy array, got list"):
        copy_kernel([1, 2])
    # A second tensor shaped like the out_idx output is accepted and ignored, as TileLang-Ascend's
    # adapter does (test_tla_passed_outputs.py); one of another shape is an error.
    with pytest.raises(TypeError, match=r"takes 1 arguments \(X\), got 2"):
        copy_kernel(torch.randn(16, 64), torch.randn(16, 65))


def test_a_tensor_on_another_device_is_named(copy_kernel):
    with pytest.raises(tilelang.Error, match="is on device 'meta'"):
        copy_kernel(torch.empty(16, 64, device="meta"))


def test_a_read_only_array_is_refused(copy_kernel):
    a = np.zeros((16, 64), np.float32)
    a.flags.writeable = False
    with pytest.raises(tilelang.Error, match="read-only"):
        copy_kernel(a)


def test_bad_jit_options_are_named():
    with pytest.raises(tilelang.Error, match="out_idx: 5 is not a parameter index"):
        tilelang.compile(kernels.ub_copy(), out_idx=[5])
    with pytest.raises(tilelang.Error, match="unknown pass config 'tl.bogus'"):
        tilelang.compile(kernels.ub_copy(), pass_configs={"tl.bogus": True})
    with pytest.raises(tilelang.Error, match="unknown developer option 'pipelining'"):
        tilelang.compile(kernels.ub_copy(), pass_configs={"tl.dev.pipelining": False})


# ---- internal errors ------------------------------------------------------------------------------------

def test_an_internal_error_is_a_python_exception_not_a_crash():
    with pytest.raises(tilelang.InternalError, match="tl-ascend internal error at .*probe: raised on purpose"):
        _core._internal_error_probe()
    assert not issubclass(tilelang.InternalError, tilelang.Error)


def test_tilelang_ascend_pass_configs_are_accepted_and_bad_values_named():
    # TileLang-Ascend's keys are switches (test_tla_modes.py runs them); a value that is no bool
    # is an error naming the key.
    expert = kernels.ub_copy()
    tilelang.compile(expert, pass_configs={tilelang.PassConfigKey.TL_ASCEND_AUTO_SYNC: True,
                                           tilelang.PassConfigKey.TL_ASCEND_MEMORY_PLANNING: True,
                                           tilelang.PassConfigKey.TL_ASCEND_AUTO_CV_COMBINE: True,
                                           tilelang.PassConfigKey.TL_ASCEND_AUTO_CV_SYNC: True})
    with pytest.raises(tilelang.Error, match="pass config 'tl.ascend_auto_sync' takes True or False, got str 'yes'"):
        tilelang.compile(expert, pass_configs={tilelang.PassConfigKey.TL_ASCEND_AUTO_SYNC: "yes"})


def test_an_element_count_other_than_the_whole_tile_is_refused():
    def build():
        @T.prim_func
        def k(X: T.Tensor((16, 64), "float32")):
            with T.Kernel(1, is_npu=True) as (cid, vid):
                with T.Scope("V"):
                    x = T.alloc_ub((16, 64), "float32")
                    T.tile.exp(x, x, 100)  # MARK

    # A count of whole rows (512) covers them (test_tla_corp.py); 100 would end inside a row.
    expect_error(build, "MARK", "the first 100 elements of operand 'dst' ('x', shape [16, 64]")
