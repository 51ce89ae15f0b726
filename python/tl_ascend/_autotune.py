"""tilelang.autotune: pick a kernel generator's best configuration by simulated time.

TileLang-Ascend's `@tilelang.autotune(configs=..., ref_prog=..., supply_prog=...)` on a
`@tilelang.jit` generator compiles the generator once per configuration (a dict of the keyword
arguments it tunes), times each on the card and returns the fastest kernel, with the chosen
configuration on it (`kernel.config`, `kernel.latency`, `kernel.get_tuner_result()`). tl-ascend
does the same on the virtual NPU: every configuration is compiled and launched in timed mode,
and its time is the timing model's (docs/virtual_npu.md), so the choice is deterministic. A
configuration that fails to compile (a tile that does not fit, a shape the generator rejects)
or whose outputs differ from `ref_prog`'s is left out, with its reason kept in
`kernel.tuner_rejected`; when none is left the error lists every reason. Calling the tuned
generator again with the same arguments returns the same kernel (a memory cache, emptied by
`tilelang.cache.clear_cache()`); arguments that give every tuned parameter skip the tuning, as
in TileLang-Ascend. docs/python.md, "Autotuning".
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from . import _core
from .jit import _JITGenerator, _TORCH_DTYPES, _cache_key, _generators, _torch


class _Param:
    """What `supply_prog(params)` reads of a kernel parameter: its shape and dtype."""

    def __init__(self, p: Mapping[str, Any]) -> None:
        self.name = p["name"]
        self.dtype = p["dtype"]
        self.shape = tuple(p["shape"]) if p["is_tensor"] else ()

    def __repr__(self) -> str:
        return f"KernelParam({self.name}, {list(self.shape)}, {self.dtype})"


def _error(msg: str) -> _core.Error:
    return _core.Error(f"tilelang.autotune: {msg}")


def _auto_inputs(kernel: Any) -> list:
    """Random inputs for the kernel's parameters the caller passes (TensorSupplyType.Auto):
    normal floats, small integers; a fixed seed, so every configuration sees the same data."""
    torch = _torch()
    if torch is None:
        raise _error("supplying inputs needs torch (or give supply_prog)")
    gen = torch.Generator().manual_seed(0)
    out = []
    for i in kernel._inputs:
        p = kernel.params[i]
        if not p["is_tensor"] or not all(isinstance(s, int) for s in p["shape"]):
            raise _error(f"cannot supply parameter '{p['name']}' of kernel '{kernel.func.name}' (a scalar or a "
                         f"dynamic shape): give supply_prog")
        dt = getattr(torch, _TORCH_DTYPES[p["dtype"]])
        if dt.is_floating_point:
            out.append(torch.randn(tuple(p["shape"]), generator=gen).to(dt))
        else:
            out.append(torch.randint(-4, 5, tuple(p["shape"]), generator=gen).to(dt))
    return out


def _check(outs: Any, refs: Any, rtol: float, atol: float, max_mismatched_ratio: float) -> str:
    """Why the outputs differ from the reference's ("" when they match)."""
    torch = _torch()
    outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
    refs = list(refs) if isinstance(refs, (tuple, list)) else [refs]
    if len(outs) != len(refs):
        return f"{len(outs)} outputs, the reference gives {len(refs)}"
    for k, (o, r) in enumerate(zip(outs, refs)):
        o = torch.as_tensor(o).double()
        r = torch.as_tensor(r).to(o.device).double()
        if o.shape != r.shape:
            return f"output {k} has shape {list(o.shape)}, the reference {list(r.shape)}"
        bad = ~torch.isclose(o, r, rtol=rtol, atol=atol, equal_nan=True)
        ratio = bad.double().mean().item() if bad.numel() else 0.0
        if ratio > max_mismatched_ratio:
            return (f"output {k}: {int(bad.sum())} of {bad.numel()} elements differ from the reference beyond "
                    f"rtol={rtol}, atol={atol} (allowed ratio {max_mismatched_ratio})")
    return ""


class AutoTuneImpl:
    """The tuned generator `@tilelang.autotune(...)` returns (autotune below): call it as the generator."""

    def __init__(self, generator: Any, configs: Any, ref_prog: Callable | None, supply_prog: Callable | None,
                 rtol: float, atol: float, max_mismatched_ratio: float, skip_check: bool) -> None:
        self.generator = generator
        self.configs = configs
        self.ref_prog, self.supply_prog = ref_prog, supply_prog
        self.rtol, self.atol, self.max_mismatched_ratio = rtol, atol, max_mismatched_ratio
        self.skip_check = skip_check
        self.cache: dict = {}
        self.__name__ = getattr(generator, "__name__", "kernel")
        self.__doc__ = getattr(generator, "__doc__", None)
        _generators.append(self)  # tilelang.cache.clear_cache() empties self.cache too

    def clear_cache(self) -> None:
        self.cache.clear()

    @property
    def __jit_impl__(self) -> Any:
        return self.generator.__jit_impl__

    def _configs(self, args: tuple, kwargs: dict) -> list[dict]:
        configs = self.configs(args, tuple(sorted(kwargs.items()))) if callable(self.configs) else self.configs
        if isinstance(configs, Mapping):
            configs = [configs]
        if not isinstance(configs, Sequence) or not configs or not all(isinstance(c, Mapping) for c in configs):
            raise _error(f"configs must be a non-empty list of dicts (or a function returning one), got {configs!r}")
        return [dict(c) for c in configs]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            key = (_cache_key(args), _cache_key(kwargs))
            hash(key)
        except TypeError:
            key = None
        if key is not None and key in self.cache:
            return self.cache[key]
        kernel = self._tune(args, kwargs)
        if key is not None:
            self.cache[key] = kernel
        return kernel

    def _given(self, args: tuple, kwargs: dict) -> set:
        """The generator's parameter names the call gives (positionally or by keyword)."""
        try:
            names = list(inspect.signature(self.generator.fn).parameters)
        except (TypeError, ValueError):
            names = []
        return set(names[:len(args)]) | set(kwargs)

    def _tune(self, args: tuple, kwargs: dict) -> Any:
        configs = self._configs(args, kwargs)
        tunable = set().union(*(c.keys() for c in configs))
        if tunable <= self._given(args, kwargs):
            return self.generator(*args, **kwargs)  # every tuned parameter given: no tuning
        best, best_us, best_config, ref_us = None, None, None, None
        rejected = []
        for config in configs:
            clash = set(config) & set(kwargs)
            if clash:
                raise _error(f"configuration {config} sets {sorted(clash)}, which the call gives too")
            try:
                kernel = self.generator(*args, **kwargs, **config)
                inputs = self._inputs(kernel)
                outs = kernel.run(*inputs, mode="timed")
                prof = kernel.last_profile
            except (_core.Error, AssertionError, ValueError) as e:  # the generator's own asserts too
                text = " ".join(str(e).split())  # one line: the reason under its configuration
                rejected.append((config, f"{type(e).__name__}: {text[:300]}"))
                continue
            why = self._verify(inputs, outs)
            if why:
                rejected.append((config, why))
                continue
            us = float(prof["total_us"])
            if best_us is None or us < best_us:
                best, best_us, best_config = kernel, us, config
        if best is None:
            lines = "\n".join(f"  {c}: {why}" for c, why in rejected)
            raise _error(f"no configuration of '{self.__name__}' compiled, ran and matched the reference:\n{lines}")
        if self.ref_prog is not None:
            from . import profiler
            ref_us = profiler.do_bench(lambda: self.ref_prog(*self._inputs(best))) * 1e3
        best.config = dict(best_config)
        best.latency = best_us / 1e3  # milliseconds, as TileLang-Ascend reports it
        best.ref_latency = None if ref_us is None else ref_us / 1e3
        best.tuner_rejected = rejected
        return best

    def _inputs(self, kernel: Any) -> list:
        if self.supply_prog is None:
            return _auto_inputs(kernel)
        inputs = self.supply_prog([_Param(p) for p in kernel.params])
        return list(inputs) if isinstance(inputs, (tuple, list)) else [inputs]

    def _verify(self, inputs: list, outs: Any) -> str:
        if self.skip_check or self.ref_prog is None:
            return ""
        return _check(outs, self.ref_prog(*inputs), self.rtol, self.atol, self.max_mismatched_ratio)


def autotune(func: Any = None, *, configs: Any, warmup: int = 25, rep: int = 100, timeout: int = 100,
             supply_type: Any = None, ref_prog: Callable | None = None, supply_prog: Callable | None = None,
             rtol: float = 1e-2, atol: float = 1e-2, max_mismatched_ratio: float = 0.01, skip_check: bool = False,
             manual_check_prog: Callable | None = None, cache_input_tensors: bool = False) -> Any:
    """`@tilelang.autotune(configs=[{...}, ...], ref_prog=..., supply_prog=...)` above
    `@tilelang.jit(...)` (module docstring). warmup, rep and timeout are accepted for
    TileLang-Ascend's signature: the timing model needs one run per configuration."""
    del warmup, rep, timeout, supply_type, cache_input_tensors
    if manual_check_prog is not None:
        raise _error("manual_check_prog is not supported yet: give ref_prog (outputs compared with rtol/atol)")
    if func is not None:
        raise _error("use it with arguments, @tilelang.autotune(configs=...), above @tilelang.jit(...)")

    def decorator(generator: Any) -> AutoTuneImpl:
        if not isinstance(generator, _JITGenerator):
            raise _error(f"it decorates a @tilelang.jit kernel generator (write @tilelang.autotune(...) above "
                         f"@tilelang.jit(...)), got {type(generator).__name__}")
        return AutoTuneImpl(generator, configs, ref_prog, supply_prog, rtol, atol, max_mismatched_ratio,
                            skip_check)

    return decorator
