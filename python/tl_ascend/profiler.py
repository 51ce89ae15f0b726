"""tilelang.profiler: `do_bench(fn)` in simulated time.

TileLang-Ascend's `do_bench(lambda: kernel(a, b))` times `fn` on the card with NPU events and
returns milliseconds. tl-ascend's kernels run on the virtual NPU, whose wall-clock time says
nothing about the chip, so `do_bench` returns the timing model's time instead: `fn` is called
once with every kernel launch inside it run in timed mode (docs/virtual_npu.md), and the
result is the sum of those launches' simulated times (each launch's `total_us`, as
`kernel.profile()` reports it). The model is deterministic, so one call gives every sample.

A `fn` that launches no kernel (`do_bench(lambda: a @ b)`, a torch reference) is host code and
is timed by the wall clock, with TileLang's budgets (`warmup` and `rep` in milliseconds). Host
work inside a `fn` that also launches kernels is not counted: the figure is the kernels' time.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from . import _core
from .jit import record_launches

_MODES = ("min", "max", "mean", "median")
# Host timing: at most this many calls, however cheap fn is (the budgets are targets, not loops).
_MAX_HOST_CALLS = 1000


def do_bench(fn: Callable[[], Any], warmup: float = 25, rep: float = 100, _n_warmup: int = 0, _n_repeat: int = 0,
             grad_to_none: Sequence[Any] | None = None, quantiles: Sequence[float] | None = None,
             fast_flush: bool = True, return_mode: str = "mean") -> float | list[float]:
    """Milliseconds per call of `fn`: simulated time of its kernel launches, or the wall clock
    for host code (module docstring). `quantiles` gives a list (one number for one quantile),
    as TileLang's do_bench does."""
    del fast_flush  # no L2 to flush: every timed launch starts from the model's cold state
    if not callable(fn):
        raise _core.Error(f"tilelang.profiler.do_bench: argument 'fn' must be callable (e.g. lambda: kernel(a, b)), "
                          f"got {type(fn).__name__}")
    if return_mode not in _MODES:
        raise _core.Error(f"tilelang.profiler.do_bench: argument 'return_mode' must be one of {', '.join(_MODES)}, "
                          f"got {return_mode!r}")
    for name, q in enumerate(quantiles or ()):
        if isinstance(q, bool) or not isinstance(q, (int, float)) or not 0 <= q <= 1:
            raise _core.Error(f"tilelang.profiler.do_bench: quantiles[{name}] must be a number in [0, 1], got {q!r}")

    def call() -> None:
        for x in grad_to_none or ():
            x.grad = None
        fn()

    with record_launches() as launches_us:
        start = time.perf_counter()
        call()
        first_ms = (time.perf_counter() - start) * 1e3
    if launches_us:
        samples = [sum(launches_us) / 1e3]
    else:
        samples = _host_samples(call, first_ms, warmup, rep, _n_warmup, _n_repeat)
    if quantiles is not None:
        out = [_quantile(sorted(samples), float(q)) for q in quantiles]
        return out[0] if len(out) == 1 else out
    return float({"min": min, "max": max, "mean": statistics.fmean, "median": statistics.median}[return_mode](samples))


def _host_samples(call: Callable[[], None], estimate_ms: float, warmup: float, rep: float, n_warmup: int,
                  n_repeat: int) -> list[float]:
    est = max(estimate_ms, 1e-3)
    n_warmup = n_warmup if n_warmup > 0 else min(_MAX_HOST_CALLS, int(warmup / est))
    n_repeat = n_repeat if n_repeat > 0 else max(1, min(_MAX_HOST_CALLS, int(rep / est)))
    for _ in range(n_warmup):
        call()
    samples = []
    for _ in range(n_repeat):
        start = time.perf_counter()
        call()
        samples.append((time.perf_counter() - start) * 1e3)
    return samples


def _quantile(xs: list[float], q: float) -> float:
    """Linear interpolation between the order statistics (torch.quantile's default)."""
    pos = q * (len(xs) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)
