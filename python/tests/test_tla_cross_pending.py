"""A cross-core flag a TileLang-Ascend expert kernel raises more often than the other core waits
for it (issue 29). TileLang-Ascend's flash_attn_bhsd_expert_h16_d128.py sets its credits once
before its loops ("init: pretend consumer already released") and never drains them, so every
block ends with flags set: on the chip they stay set for the next kernel on those cores. The
simulator stops the launch; its message now names, per pending flag, the lines that set it and
the lines that wait for it, and says what to add, instead of only the flag's number.
"""

import pytest
import torch

import tl_ascend as tilelang
import tl_ascend.language as T


def undrained(n: int):
    """The cube raises flag 3 once before its loop and once per iteration; the vector waits
    once per iteration: one set is left at the end."""

    @T.prim_func
    def main(X: T.Tensor((16, 16), "float32"), Y: T.Tensor((16, 16), "float32")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            x = T.alloc_ub((8, 16), "float32")
            with T.Scope("C"):
                T.set_cross_flag("MTE2", 3)  # MARK: initial set
                for i in T.serial(n):
                    T.set_cross_flag("MTE2", 3)  # MARK: loop set
            with T.Scope("V"):
                for i in T.serial(n):
                    T.wait_cross_flag(3)  # MARK: wait
                T.copy(X[vid * 8, 0], x)
                T.copy(x, Y[vid * 8, 0])

    return main


def _line(mark: str) -> int:
    with open(__file__) as f:
        return next(i for i, text in enumerate(f, 1) if f"# MARK: {mark}" in text)


@pytest.mark.parametrize("n", (1, 7))
def test_a_pending_cross_flag_names_the_lines_that_set_and_wait_for_it(n: int) -> None:
    kernel = tilelang.compile(undrained(n), out_idx=[1], pass_configs={tilelang.PassConfigKey.TL_ASCEND_AUTO_SYNC: True})
    expected = (rf"cross-core flag 3: 1 set\(s\) for AIV0 never consumed by a wait_cross_flag; set by the cube "
                rf"at lines {_line('initial set')}, {_line('loop set')}, waited for by the vector at line "
                rf"{_line('wait')}")
    with pytest.raises(tilelang.Error, match=expected) as e:
        kernel(torch.randn(16, 16))
    assert "every set_cross_flag needs one wait_cross_flag on the other core" in str(e.value)
