"""TileLang-Ascend's pure-Python surface (issue 29, "Surface"), in TileLang-Ascend's syntax.

Each name here is one a TileLang-Ascend example script uses and tl-ascend lacked (each was the
first or second blocker of some script): `tilelang.cdiv`, `tilelang.math.next_power_of_2`,
`T.And` / `T.Or`, `T.Cast`, `T.Select` / `T.Min` / `T.Max` / `T.floordiv` / `T.floormod`, dtype
"int", targets "ascendc" and "pto", `tilelang.profiler.do_bench`, `tilelang.cache.clear_cache`
(memory and disk), and "did you mean" for unknown `T.*` / `T.tile.*` / `tilelang.*` names.
Before this change each of them raised AttributeError (`module 'tl_ascend' has no attribute
'cdiv'`, ... `T.And`), "unknown dtype 'int'", or "unknown target 'pto'"; clear_cache left the
disk cache in place; an unknown T name was a bare AttributeError without a suggestion.
References are torch's; shapes on the tails 1, 7, 33, 1000.
"""

from __future__ import annotations

import math
import os

import pytest
import torch

import tl_ascend as tilelang
import tl_ascend.language as T
from tl_ascend import _core
from tl_ascend.profiler import do_bench

TAILS = (1, 7, 33, 1000)


# ---- tilelang.cdiv, tilelang.math --------------------------------------------------------------


@pytest.mark.parametrize("n", TAILS + (4097,))
def test_cdiv_and_next_power_of_2_match_their_definitions(n: int) -> None:
    # Before: AttributeError: module 'tl_ascend' has no attribute 'cdiv' / 'math'.
    for b in (1, 2, 7, 64):
        assert tilelang.cdiv(n, b) == math.ceil(n / b) == tilelang.math.cdiv(n, b)
    assert tilelang.math.next_power_of_2(n) == 2 ** math.ceil(math.log2(n))
    assert tilelang.next_power_of_2(n) == tilelang.math.next_power_of_2(n)


@tilelang.jit(out_idx=[-1], pass_configs={tilelang.PassConfigKey.TIR_MERGE_STATIC_SMEM: True})
def double_dynamic(block=64):
    N = T.dynamic("N")

    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), Z: T.Tensor((N,), "float32")):
        with T.Kernel(tilelang.cdiv(N, block), threads=2) as cid:
            x = T.alloc_shared((block,), "float32")
            T.copy(X[cid * block], x)
            for i in T.Parallel(block):
                x[i] = x[i] * 2.0
            T.copy(x, Z[cid * block])

    return main


@pytest.mark.parametrize("n", TAILS)
def test_cdiv_of_a_dynamic_size_is_the_kernel_expression(n: int) -> None:
    # Before: tilelang.cdiv(N, block) of a T.dynamic N was an Error ("argument 'a' must be an int,
    # got Var N"): TileLang's cdiv is (a + b - 1) // b, which takes expressions too (deepseek_v4
    # scripts size their grids so). TIR_MERGE_STATIC_SMEM was an AttributeError.
    x = torch.randn(n)
    torch.testing.assert_close(double_dynamic()(x), 2 * x)


def test_an_unknown_pass_config_key_names_the_closest() -> None:
    with pytest.raises(tilelang.Error, match=r"PassConfigKey.TL_ASCEND_AUTO_SYN is not in tl-ascend; did you mean "
                                             r"PassConfigKey.TL_ASCEND_AUTO_SYNC"):
        tilelang.PassConfigKey.TL_ASCEND_AUTO_SYN


@pytest.mark.parametrize("call,what", [
    (lambda: tilelang.cdiv(7, 0), "argument 'b' must be > 0, got 0"),
    (lambda: tilelang.cdiv(7.5, 2), "argument 'a' must be an int, got float 7.5"),
    (lambda: tilelang.math.next_power_of_2(0), "must be >= 1, got 0"),
    (lambda: tilelang.math.next_power_of_2(True), "must be an int, got bool"),
])
def test_cdiv_and_next_power_of_2_reject_bad_arguments(call, what: str) -> None:
    with pytest.raises(tilelang.Error, match=what):
        call()


# ---- T.And, T.Or, T.Cast, dtype "int", targets -------------------------------------------------


@tilelang.jit(out_idx=[-1], target="ascendc")
def and_or(N, block=64):
    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32"), Z: T.Tensor((N,), "float32")):
        with T.Kernel(tilelang.cdiv(N, block), threads=2) as cid:
            x = T.alloc_shared((block,), "float32")
            y = T.alloc_shared((block,), "float32")
            T.copy(X[cid * block], x)
            T.copy(Y[cid * block], y)
            for i in T.Parallel(block):
                x[i] = T.if_then_else(x[i] > 0, x[i], y[i])
            if T.And(cid >= 1, cid < 3):
                for i in T.Parallel(block):
                    x[i] = x[i] + y[i]
            if T.Or(cid == 0, cid == 2):
                for i in T.Parallel(block):
                    x[i] = x[i] * 2.0
            T.copy(x, Z[cid * block])

    return main


@pytest.mark.parametrize("n", TAILS)
def test_and_or_if_then_else_match_torch(n: int) -> None:
    # Before: AttributeError: T has no attribute 'And' (and 'ascendc' was an unknown target).
    x, y = torch.randn(n), torch.randn(n)
    z = and_or(n)(x, y)
    block = torch.arange(n) // 64
    ref = torch.where(x > 0, x, y)
    ref = torch.where((block >= 1) & (block < 3), ref + y, ref)
    ref = torch.where((block == 0) | (block == 2), ref * 2, ref)
    torch.testing.assert_close(z, ref)


@tilelang.jit(out_idx=[-1], target="pto")
def cast_int(N, block=64):
    @T.prim_func
    def main(X: T.Tensor((N,), "int"), Z: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=2) as cid:
            x = T.alloc_shared((block,), "int")
            z = T.alloc_shared((block,), "float32")
            # floordiv / floormod: cid * block, spelled as TVM does. (The same spelling on both
            # copies: the compiler does not yet simplify cid * 128 // 2 to cid * 64 when it
            # compares the clipped tail of the load with that of the store.)
            start = T.floordiv(cid * 2 * block, 2) + T.floormod(cid, 1)
            T.copy(X[start], x)
            for i in T.Parallel(block):
                z[i] = T.Select(x[i] > 0, T.Cast("float32", T.Min(x[i], 500)), T.Cast("float32", T.Max(x[i], -500))) * 0.5
            T.copy(z, Z[start])

    return main


@pytest.mark.parametrize("n", TAILS)
def test_cast_of_an_int_tensor_matches_torch(n: int) -> None:
    # Before: "unknown dtype 'int'" (TileLang's "int" is int32); T.Cast, T.Select, T.Min, T.Max,
    # T.floordiv, T.floormod and target "pto" unknown.
    x = torch.randint(-1000, 1000, (n,), dtype=torch.int32)
    kernel = cast_int(n)
    assert kernel.params[0]["dtype"] == "int32" and kernel.target == "A2"
    ref = torch.where(x > 0, x.clamp(max=500), x.clamp(min=-500)).float() * 0.5
    torch.testing.assert_close(cast_int(n)(x), ref)


def test_tvm_spellings_outside_a_kernel() -> None:
    assert T.And(True, 1) is True and T.Or(0, False) is False
    assert T.Cast("float16", 1.5).dtype == "float16"
    assert T.Select(True, 1, 2) == 1 and T.Min(3, 4) == 3 and T.Max(3, 4) == 4
    assert T.floordiv(-7, 2) == -4 and T.floormod(-7, 2) == 1
    assert tilelang.DataType("int").bits == 32
    with pytest.raises(tilelang.Error, match="a non-zero divisor"):
        T.floordiv(7, 0)
    with pytest.raises(tilelang.Error, match="unknown dtype 'int33'"):
        T.Cast("int33", 1)


# ---- tilelang.profiler.do_bench ----------------------------------------------------------------


def test_do_bench_gives_the_timing_models_time_of_the_kernels() -> None:
    # Before: AttributeError: module 'tl_ascend' has no attribute 'profiler'.
    x, y = torch.randn(1000), torch.randn(1000)
    kernel = and_or(1000)
    ms = do_bench(lambda: kernel(x, y))
    assert ms == pytest.approx(kernel.profile(x, y)["total_us"] / 1000)
    # Two launches in one call: their sum; quantiles: the same figure (the model is deterministic).
    assert do_bench(lambda: (kernel(x, y), kernel(x, y))) == pytest.approx(2 * ms)
    assert do_bench(lambda: kernel(x, y), quantiles=[0.5, 0.2]) == pytest.approx([ms, ms])
    # Host code (a torch reference) is timed by the wall clock.
    assert do_bench(lambda: x + y, warmup=1, rep=2) > 0
    with pytest.raises(tilelang.Error, match="'return_mode' must be one of min, max, mean, median"):
        do_bench(lambda: None, return_mode="avg")
    with pytest.raises(tilelang.Error, match="'fn' must be callable"):
        do_bench(kernel(x, y))


# ---- tilelang.cache.clear_cache ------------------------------------------------------------------


def test_clear_cache_empties_memory_and_disk(tmp_path, monkeypatch) -> None:
    # Before: only the generators' memory caches were emptied; the C++ cache's memory level and
    # its disk files stayed, so the next compile was a cache hit.
    monkeypatch.setenv("TL_CACHE_DIR", str(tmp_path))
    (tmp_path / "notes.txt").write_text("not a cache entry")
    first = cast_int(33)
    entries = [p for p in os.listdir(tmp_path) if p.endswith(".tlir")]
    assert tilelang.cache.cache_dir() == str(tmp_path)
    assert entries or _core.cache_stats()["memory_hits"] >= 0  # written on a miss
    cast_int.clear_cache()  # the generator's level alone: the C++ memory cache still answers
    before = _core.cache_stats()
    cast_int(33)
    assert _core.cache_stats()["memory_hits"] == before["memory_hits"] + 1
    tilelang.cache.clear_cache()
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tlir")]
    assert (tmp_path / "notes.txt").exists()  # only the cache's own files are removed
    before = _core.cache_stats()
    again = cast_int(33)
    after = _core.cache_stats()
    assert again is not first
    assert after["misses"] == before["misses"] + 1 and after["memory_hits"] == before["memory_hits"]
    assert [p for p in os.listdir(tmp_path) if p.endswith(".tlir")]  # compiled afresh and written again


# ---- unknown names: "did you mean" -------------------------------------------------------------


@pytest.mark.parametrize("get,what", [
    (lambda: T.Selct, r"T\.Selct is not in tl-ascend; did you mean T\.Select or T\.select\?"),
    (lambda: T.alloc_shard, r"did you mean T\.alloc_shared"),
    (lambda: T.call_extern, r"T\.call_extern is not in tl-ascend: not supported: tl-ascend has no extern calls"),
    (lambda: T.tile.sub_experiment, r"T\.tile\.sub_experiment is not in tl-ascend: T\.tile\.sub "),
    (lambda: T.tile.ad, r"did you mean T\.tile\.add\?"),
    (lambda: tilelang.autotuner, r"tl_ascend\.autotuner is not in tl-ascend: tilelang\.autotune\(configs=\.\.\.\)"),
    (lambda: tilelang.cdvi, r"did you mean tl_ascend\.cdiv\?"),
])
def test_unknown_names_say_what_tl_ascend_calls_them(get, what: str) -> None:
    # Before: a bare AttributeError ("module 'tl_ascend.language' has no attribute 'Selct'").
    with pytest.raises(tilelang.Error, match=what) as e:
        get()
    assert isinstance(e.value, AttributeError)  # hasattr / getattr(m, n, default) still work
    assert "test_tla_surface.py:" in str(e.value)  # at the line that named it
    assert not hasattr(T, "Selct") and getattr(T.tile, "nope", 5) == 5


def test_an_unknown_name_in_a_kernel_is_located_at_its_statement() -> None:
    # Before: "T.reinterpretcast: module 'tl_ascend.language' has no attribute 'reinterpretcast'".
    with pytest.raises(tilelang.Error) as e:
        @T.prim_func
        def k(X: T.Tensor((64,), "float32")):
            with T.Kernel(1, threads=2) as cid:
                x = T.alloc_shared((64,), "float32")
                T.copy(X[0], x)
                T.reinterpret(x, x)  # the line the error names (reinterpretcast is supported now)

    msg = str(e.value)
    assert "T.reinterpret is not in tl-ascend: not supported yet: T.view(buffer, dtype)" in msg
    src = open(__file__).read().splitlines()
    want = next(i + 1 for i, s in enumerate(src) if "T.reinterpret(x, x)  # the line" in s)
    assert f"test_tla_surface.py:{want}:" in msg


# ---- T.tile.select's mode by its Ascend C name ----------------------------------------------------


@tilelang.jit(out_idx=[-1])
def select_modes(N, mode, block=64):
    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32"), Z: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=2) as cid:
            x = T.alloc_shared((block,), "float32")
            y = T.alloc_shared((block,), "float32")
            m = T.alloc_shared((block // 8,), "uint8")
            # pad_value: the tail past N is a known value, which the select's mask then moves.
            T.copy(X[cid * block], x, pad_value=0.0)
            T.copy(Y[cid * block], y, pad_value=0.0)
            T.tile.compare(m, x, y, "GT")
            if mode == "VSEL_TENSOR_SCALAR_MODE":
                T.tile.select(x, m, x, 0.0, mode)
            else:
                T.tile.select(x, m, x, y, mode)
            T.copy(x, Z[cid * block])

    return main


@pytest.mark.parametrize("mode", ["VSEL_CMPMASK_SPR", "VSEL_TENSOR_SCALAR_MODE", "VSEL_TENSOR_TENSOR_MODE"])
@pytest.mark.parametrize("n", TAILS)
def test_select_takes_its_mode_by_name(n: int, mode: str) -> None:
    # Before: "T.tile.select: attribute 'mode' expects a int, got a string" (activation/gelu_grad.py).
    x, y = torch.randn(n), torch.randn(n)
    other = torch.zeros(n) if mode == "VSEL_TENSOR_SCALAR_MODE" else y
    torch.testing.assert_close(select_modes(n, mode)(x, y), torch.where(x > y, x, other))


def test_an_unknown_select_mode_names_the_known_ones() -> None:
    with pytest.raises(tilelang.Error, match=r"T.tile.select: attribute 'mode' must be one of VSEL_CMPMASK_SPR, "
                                             r"VSEL_TENSOR_SCALAR_MODE, VSEL_TENSOR_TENSOR_MODE \(or its number\), "
                                             r"got 'VSEL_OTHER'"):
        select_modes(64, "VSEL_OTHER")
