"""tilelang.autotune (python/tl_ascend/_autotune.py) in TileLang-Ascend's syntax: every
configuration compiled and run on the virtual NPU in timed mode, the fastest by the timing model
kept, its outputs checked against a torch reference living only here; the choice cached and
deterministic; configurations that do not compile or do not match left out with their reason;
tuned parameters given by the caller skip the tuning. Tails: row counts 1, 7, 33, 1000, 4097.
"""

import pytest
import torch

import tl_ascend as tilelang
import tl_ascend.language as T

SYNC = {tilelang.PassConfigKey.TL_ASCEND_AUTO_SYNC: True,
        tilelang.PassConfigKey.TL_ASCEND_MEMORY_PLANNING: True}
CONFIGS = [{"block_M": 16}, {"block_M": 64}, {"block_M": 256}]


def scaled(M, N, block_M, wrong=False):
    """Y = 2 X (+1 when `wrong`), blocks of block_M rows, half per AIV."""
    half = block_M // 2

    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), is_npu=True) as (cid, vid):
            x = T.alloc_ub((half, N), "float32")
            with T.Scope("V"):
                T.copy(X[cid * block_M + vid * half, 0], x)
                T.tile.mul(x, x, 2.0)
                if wrong:
                    T.tile.add(x, x, 1.0)
                T.copy(x, Y[cid * block_M + vid * half, 0])

    return main


def make_tuned(configs=CONFIGS, ref=True, calls=None):
    @tilelang.autotune(configs=configs, ref_prog=(lambda x: 2 * x) if ref else None)
    @tilelang.jit(out_idx=[-1], pass_configs=SYNC)
    def kernel(M, N, block_M, wrong_for=None):
        if calls is not None:
            calls.append(block_M)
        return scaled(M, N, block_M, wrong=block_M == wrong_for)

    return kernel


def simulated_us(M, N, block_M):
    k = tilelang.compile(scaled(M, N, block_M), out_idx=[-1], pass_configs=SYNC)
    return k.profile(torch.randn(M, N))["total_us"]


@pytest.mark.parametrize("M", (1, 7, 33, 1000, 4097))
def test_autotune_keeps_the_configuration_the_timing_model_finds_fastest(M: int) -> None:
    N = 64
    kernel = make_tuned()(M, N)
    times = {c["block_M"]: simulated_us(M, N, c["block_M"]) for c in CONFIGS}
    best = min(times, key=lambda b: (times[b], [c["block_M"] for c in CONFIGS].index(b)))
    assert kernel.config == {"block_M": best}
    assert kernel.latency == pytest.approx(times[best] / 1e3)
    result = kernel.get_tuner_result()
    assert result["config"] == {"block_M": best} and result["latency"] == kernel.latency
    assert result["ref_latency"] is not None and result["ref_latency"] >= 0
    x = torch.randn(M, N)
    torch.testing.assert_close(kernel(x), 2 * x, rtol=0, atol=0)


def test_the_choice_is_cached_and_deterministic() -> None:
    calls = []
    tuned = make_tuned(calls=calls)
    a = tuned(33, 64)
    assert sorted(calls) == [16, 64, 256]
    assert tuned(33, 64) is a and len(calls) == 3  # the memory cache
    tilelang.cache.clear_cache()
    b = tuned(33, 64)
    assert b is not a and len(calls) == 6 and b.config == a.config and b.latency == a.latency


def test_given_tuned_parameters_skip_the_tuning() -> None:
    calls = []
    kernel = make_tuned(calls=calls)(33, 64, block_M=64)
    assert calls == [64] and kernel.config is None
    with pytest.raises(tilelang.Error, match=r"was not chosen by tilelang\.autotune"):
        kernel.get_tuner_result()


def test_configurations_that_fail_the_reference_or_do_not_fit_are_left_out() -> None:
    # block_M = 64 computes the wrong result; 1 << 16 rows of 64 floats per AIV do not fit UB.
    configs = [{"block_M": 64}, {"block_M": 1 << 16}, {"block_M": 16}]
    kernel = make_tuned(configs)(33, 64, wrong_for=64)
    assert kernel.config == {"block_M": 16}
    reasons = dict((c["block_M"], why) for c, why in kernel.tuner_rejected)
    assert "differ from the reference" in reasons[64]
    assert "but UB holds 196608 bytes" in reasons[1 << 16]


def test_no_configuration_left_is_an_error_listing_each() -> None:
    configs = [{"block_M": 64}]
    with pytest.raises(tilelang.Error, match=r"no configuration of 'kernel' compiled, ran and matched the reference:\n"
                                             r"  \{'block_M': 64\}: output 0: \d+ of \d+ elements differ"):
        make_tuned(configs)(33, 64, wrong_for=64)


@pytest.mark.parametrize("configs,what", [
    ([], r"configs must be a non-empty list of dicts"),
    ([1, 2], r"configs must be a non-empty list of dicts"),
])
def test_bad_configs_are_an_error(configs, what: str) -> None:
    with pytest.raises(tilelang.Error, match=what):
        make_tuned(configs)(33, 64)


def test_autotune_without_arguments_or_on_a_plain_function_is_an_error() -> None:
    with pytest.raises(tilelang.Error, match=r"use it with arguments"):
        tilelang.autotune(lambda: None, configs=CONFIGS)
    with pytest.raises(tilelang.Error, match=r"it decorates a @tilelang\.jit kernel generator"):
        tilelang.autotune(configs=CONFIGS)(lambda M: None)
