"""The stale-data checker from Python (docs/virtual_npu.md, "Stale-data checker"): the
`check_stale` keyword of compile/jit and of a call, on with `check_hazards`, and the finding
naming the Python line of the store and of the data's origin.

The suite runs with TL_CHECK_STALE=1 (ctest), so every other test's launches are checked too.
"""

import os

import pytest
import torch

import tl_ascend as tilelang
import tl_ascend.language as T

HERE = "test_stale_check.py"


def tail_sum(pad_cols: int = 100, width: int = 128, fixed: bool = False):
    """The classic expert-mode tail bug: a padded copy of a 100-element fp32 row into a
    128-wide UB row, then a ReduceSum over the whole row (`fixed`: over the 100 it holds)."""

    @T.prim_func
    def tail_sum(X: T.Tensor((8, pad_cols), "float32"), Y: T.Tensor((8,), "float32")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            with T.Scope("V"):
                x = T.alloc_ub((8, width), "float32")
                s = T.alloc_ub((8,), "float32")
                if vid == 0:
                    T.copy(X, x[0:8, 0:pad_cols], pad_value=0.0)
                    T.set_flag("MTE2", "V", 0)
                    T.wait_flag("MTE2", "V", 0)
                    if fixed:
                        T.reduce_sum(x[0:8, 0:pad_cols], s)
                    else:
                        T.reduce_sum(x, s)
                    T.set_flag("V", "MTE3", 0)
                    T.wait_flag("V", "MTE3", 0)
                    T.copy(s, Y)  # the store

    return tail_sum


def line_of(fn_source_marker: str) -> int:
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), HERE)) as f:
        for i, line in enumerate(f, 1):
            if fn_source_marker in line:
                return i
    raise AssertionError(fn_source_marker)


def test_check_stale_reports_the_tail_bug_at_the_python_line_of_the_store():
    k = tilelang.compile(tail_sum(), out_idx=[-1], check_stale=True)
    with pytest.raises(tilelang.Error) as e:
        k(torch.randn(8, 100))
    msg = str(e.value)
    assert msg.startswith("stale-data check of kernel tail_sum: 1 use(s) of invalid data"), msg
    assert "invalid data stored to GM at " in msg, msg
    assert f"{HERE}:{line_of('T.copy(s, Y)  # the store')}: T.copy stores 8 invalid" in msg, msg
    assert "stores 8 invalid of 8 elements into 'Y', the first Y[0]; never written in this launch" in msg, msg


def test_check_stale_follows_check_hazards_and_its_own_keyword_wins():
    x = torch.randn(8, 100)
    k = tilelang.compile(tail_sum(), out_idx=[-1], check_hazards=True)
    with pytest.raises(tilelang.Error, match="stale-data check"):
        k(x)
    k(x, check_stale=False)  # the hazard checker alone: the kernel is hazard-free
    quiet = tilelang.compile(tail_sum(), out_idx=[-1], check_stale=False)
    quiet(x)
    with pytest.raises(tilelang.Error, match="stale-data check"):
        quiet(x, check_stale=True)


def test_the_fixed_tail_is_quiet_and_right():
    x = torch.randn(8, 100)
    y = tilelang.compile(tail_sum(fixed=True), out_idx=[-1], check_stale=True)(x)
    torch.testing.assert_close(y, x.sum(dim=1), rtol=1e-5, atol=1e-5)
