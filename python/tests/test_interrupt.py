"""Regression of issue 27 (adversarial review): Ctrl-C did not stop a launch.

The binding released the GIL and ran the whole launch before Python could see the signal, so
a 2^31-iteration loop ran for hours with KeyboardInterrupt pending (before the fix this test
hung). Now the launch runs on a worker thread while the calling thread polls Python's signal
handlers every 50 ms and cancels it (LaunchOptions::cancel): KeyboardInterrupt arrives within
about 0.1 s of the signal. The C++ side is tests/regress/npu_cancel_test.cpp.
"""

import _thread
import os
import signal
import threading
import time
from typing import Callable

import pytest
import torch

import tl_ascend as tilelang
import tl_ascend.language as T


@tilelang.jit(out_idx=[1])
def spin(outer: int, inner: int):
    @T.prim_func
    def k(X: T.Tensor((8,), "int32"), Y: T.Tensor((8,), "int32")):
        with T.Kernel(1) as cid:
            n = T.alloc_var("int32")
            n = 0
            for i in T.serial(outer):
                for j in T.serial(inner):
                    n = n + 1
            Y[0] = X[0] + n

    return k


def interrupted_after(send: Callable[[], None], delay: float) -> float:
    """Runs a 2^31-iteration kernel, sends the interrupt after `delay` s from another thread;
    returns the seconds from the interrupt to the KeyboardInterrupt."""
    kernel = spin(1 << 16, 1 << 15)
    x = torch.zeros(8, dtype=torch.int32)
    sent: list[float] = []

    def fire() -> None:
        sent.append(time.monotonic())
        send()

    timer = threading.Timer(delay, fire)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            kernel(x)
        return time.monotonic() - sent[0]
    finally:
        timer.cancel()


def test_interrupt_main_stops_a_huge_loop() -> None:
    assert interrupted_after(_thread.interrupt_main, 0.3) < 2.0


def test_sigint_stops_a_huge_loop() -> None:
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        pytest.skip("SIGINT does not raise KeyboardInterrupt here")
    assert interrupted_after(lambda: os.kill(os.getpid(), signal.SIGINT), 0.3) < 2.0


def test_a_launch_still_works_after_an_interrupt() -> None:
    y = spin(3, 5)(torch.ones(8, dtype=torch.int32))
    assert y[0].item() == 16
