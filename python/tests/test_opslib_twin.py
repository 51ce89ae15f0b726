"""The Python twins of the operator library's kernel generators (python/cann_ops_tilelang/kernels/)
against the C++ generators (cann_ops_tilelang/norm/*_kernel.cpp): for the same key both build the
same IR, compared as printed text without source locations.

The keys are the ones the library itself launches with (rms_norm_fwd_key / rms_norm_bwd_key on
A2, so block counts and chunk widths come from the target), over the three dtypes, the fused
branches residual / rstd on and off, the backward and the dW reduction, plus hand-made keys with
a chunk narrower than H (several chunks per row) and other tile sizes.
Before: there was no twin and no binding of the generators, so every case failed; with the twin
and the generators as they were, every comparison failed too: the C++ side printed its sizes as
`T.Tensor((M, T.int64(512)), ...)` (the key's int64_t fields) where the twin prints `(M, 512)`,
and its loops as `i_1`, `i_2` where the twin's are `c`, `j` (the generators now use ir_size()
and named loops).

Data: each test's seed (seed_plugin.py: from --seed and the test's node id) seeds torch's
global generator before it runs; a test's own generators take it from the `seed` fixture.
"""

from __future__ import annotations

import itertools

import pytest

import cann_ops_tilelang
from cann_ops_tilelang import kernels
from tl_ascend import _core

DTYPES = ["bfloat16", "float16", "float32"]


def _fwd_keys() -> list[dict]:
    keys = [kernels.rms_norm_fwd_key(dt, h, res, rstd)
            for dt, h, (res, rstd) in itertools.product(DTYPES, [512, 7168],
                                                        itertools.product([False, True], repeat=2))]
    # Hand-made: several chunks per row, other tile sizes and block counts.
    keys.append(dict(dtype="float16", hidden=512, rows_per_tile=16, chunk=128, blocks=3, residual=True, rstd=True,
                     resident=False))
    keys.append(dict(dtype="float32", hidden=256, rows_per_tile=8, chunk=64, blocks=1, residual=True, rstd=False,
                     resident=False))
    # The resident schedule with several chunks per row, each dtype and branch.
    for dt, res, rstd in itertools.product(DTYPES, [False, True], [False, True]):
        keys.append(dict(dtype=dt, hidden=512, rows_per_tile=2, chunk=128, blocks=3, residual=res, rstd=rstd,
                         resident=True))
    return keys


def _bwd_keys() -> list[dict]:
    keys = [kernels.rms_norm_bwd_key(dt, h) for dt, h in itertools.product(DTYPES, [512, 5120, 7168])]
    keys.append(dict(dtype="bfloat16", hidden=512, rows_per_tile=8, chunk=128, blocks=3, residual=False,
                     rstd=False, resident=False))
    for dt in DTYPES:  # the resident schedule with several chunks per row
        keys.append(dict(dtype=dt, hidden=512, rows_per_tile=2, chunk=128, blocks=3, residual=False, rstd=False,
                         resident=True))
    for dt in DTYPES:  # the whole-row schedule with 2-row tiles and one level in its trees
        keys.append(dict(dtype=dt, hidden=2048, rows_per_tile=2, chunk=0, blocks=3, residual=False, rstd=False,
                         resident=True))
    return keys


def _id(k: dict) -> str:
    return (f"{k['dtype']}-H{k['hidden']}-rM{k['rows_per_tile']}-bN{k['chunk']}-b{k['blocks']}-res{int(k['residual'])}"
            f"-rstd{int(k['rstd'])}-resident{int(k['resident'])}")


@pytest.mark.parametrize("key", _fwd_keys(), ids=_id)
def test_rms_norm_fwd_twin_builds_the_cpp_ir(key: dict) -> None:
    py = kernels.rms_norm_fwd_kernel(**key).script(False)
    cpp = _core.ops_rms_norm_fwd_kernel(key).script(False)
    assert py == cpp


@pytest.mark.parametrize("key", _bwd_keys(), ids=_id)
def test_rms_norm_bwd_twin_builds_the_cpp_ir(key: dict) -> None:
    py = kernels.rms_norm_bwd_kernel(**key).script(False)
    cpp = _core.ops_rms_norm_bwd_kernel(key).script(False)
    assert py == cpp


@pytest.mark.parametrize("key", _bwd_keys(), ids=_id)
def test_rms_norm_dw_reduce_twin_builds_the_cpp_ir(key: dict) -> None:
    partials = 2 * key["blocks"]
    if key["chunk"] == 0:  # the whole-row schedule's key: the reduction takes chunks of its own
        key = dict(key, resident=False, chunk=min(1024, key["hidden"]))
    py = kernels.rms_norm_dw_reduce_kernel(**key, partials=partials).script(False)
    cpp = _core.ops_rms_norm_dw_reduce_kernel(key, partials).script(False)
    assert py == cpp


def test_library_keys_come_from_the_target() -> None:
    """A2's 48 AIVs are 24 blocks; the chunk is the widest divisor of H within 1024 that fits UB.
    Two bf16 tiles of 4 x 7168 fit A2's UB beside W: the forward keeps its row tile resident
    (4 rows); with a residual only 2 rows do; the backward's x and dy tiles fit as single rows."""
    k = kernels.rms_norm_fwd_key("bfloat16", 7168)
    assert (k["blocks"], k["rows_per_tile"], k["resident"]) == (24, 4, True)
    assert 7168 % k["chunk"] == 0 and k["chunk"] <= 1024
    k = kernels.rms_norm_fwd_key("bfloat16", 7168, True, True)
    assert (k["rows_per_tile"], k["resident"]) == (2, True)
    k = kernels.rms_norm_bwd_key("bfloat16", 7168)
    assert (k["blocks"], k["rows_per_tile"], k["chunk"], k["resident"]) == (24, 1, 0, True)
    k = kernels.rms_norm_bwd_key("float32", 7168)  # too wide for whole fp32 rows: chunked, resident
    assert (k["rows_per_tile"], k["resident"]) == (1, True) and k["chunk"] > 0


def test_the_twin_compiles_and_runs_as_the_library_does() -> None:
    """The twin is a kernel users can run: compiled through tl_ascend and launched on inputs the
    library also normalises, it gives the library's bits."""
    import torch

    import tl_ascend as tilelang

    key = kernels.rms_norm_fwd_key("bfloat16", 512)
    x, w = torch.randn(33, 512).bfloat16(), torch.randn(512).bfloat16()
    y = torch.empty_like(x)
    tilelang.compile(kernels.rms_norm_fwd_kernel(**key))(x, w, y, 1e-6)
    assert torch.equal(y, cann_ops_tilelang.rms_norm(x, w).y)


def test_a_key_with_a_missing_field_is_refused() -> None:
    with pytest.raises(cann_ops_tilelang.Error, match="needs the field 'rows_per_tile'"):
        _core.ops_rms_norm_fwd_kernel(dict(dtype="bfloat16", hidden=512))


# ---- MoE top-k gate and GEMM (cann_ops_tilelang/moe/, gemm/) ------------------------------------
# Before: neither op existed (no generator, no twin, no binding), so every case below failed.

def _gate_keys() -> list[dict]:
    keys = [kernels.topk_gate_key(dt, 256, 8, sc, b, n)
            for dt, sc, b, n in itertools.product(DTYPES, [0, 1, 2], [False, True], [False, True])]
    keys.append(dict(dtype="float32", experts=64, k=16, rows_per_tile=16, blocks=3, scoring=2, bias=True,
                     normalize=True))
    return keys


def _gate_id(k: dict) -> str:
    return (f"{k['dtype']}-E{k['experts']}-k{k['k']}-rM{k['rows_per_tile']}-s{k['scoring']}-bias{int(k['bias'])}"
            f"-norm{int(k['normalize'])}")


@pytest.mark.parametrize("key", _gate_keys(), ids=_gate_id)
def test_topk_gate_twin_builds_the_cpp_ir(key: dict) -> None:
    py = kernels.topk_gate_kernel(**key).script(False)
    cpp = _core.ops_topk_gate_kernel(key).script(False)
    assert py == cpp


def _gemm_keys() -> list[dict]:
    keys = [kernels.gemm_key(dt, n, k, ta, tb, od)
            for dt, (n, k), ta, tb, od in itertools.product(["float16", "bfloat16"], [(1230, 1079), (7, 33)],
                                                            [False, True], [False, True], [None, "float32"])]
    keys.append(dict(dtype="float16", out_dtype="float16", n=512, k=512, trans_a=False, trans_b=True, block_m=64,
                     block_n=128, block_k=64, stages=3, blocks=5))
    return keys


def _gemm_id(k: dict) -> str:
    return (f"{k['dtype']}-{k['out_dtype']}-N{k['n']}-K{k['k']}-ta{int(k['trans_a'])}-tb{int(k['trans_b'])}"
            f"-b{k['block_m']}x{k['block_n']}x{k['block_k']}")


@pytest.mark.parametrize("key", _gemm_keys(), ids=_gemm_id)
def test_gemm_twin_builds_the_cpp_ir(key: dict) -> None:
    py = kernels.gemm_kernel(**key).script(False)
    cpp = _core.ops_gemm_kernel(key).script(False)
    assert py == cpp


def test_gate_and_gemm_keys_come_from_the_target() -> None:
    """A2: 24 blocks of two AIVs for the gate; 24 AICs and a 128 x 256 fp32 L0C tile for GEMM."""
    assert kernels.topk_gate_key("bfloat16", 256)["blocks"] == 24
    g = kernels.gemm_key("float16", 4096, 4096)
    assert (g["blocks"], g["block_m"], g["block_n"], g["block_k"]) == (24, 128, 256, 256)
    assert kernels.gemm_key("float16", 7, 33)["block_n"] == 16  # a narrow N: a narrow tile


def test_the_gate_and_gemm_twins_run_as_the_library_does() -> None:
    import torch

    import tl_ascend as tilelang

    z, b = torch.randn(33, 256), torch.randn(256) * 0.1
    key = kernels.topk_gate_key("float32", 256, 8, 1, True, True)
    w, idx = torch.empty(33, 8), torch.empty(33, 8, dtype=torch.int32)
    tilelang.compile(kernels.topk_gate_kernel(**key))(z, b, w, idx, 2.5)
    ref = cann_ops_tilelang.topk_gate(z, b, route_scale=2.5)
    assert torch.equal(idx, ref.indices) and torch.equal(w, ref.weights)
    a, bb = torch.randn(130, 72).half(), torch.randn(72, 40).half()
    c = torch.empty(130, 40).half()
    tilelang.compile(kernels.gemm_kernel(**kernels.gemm_key("float16", 40, 72)))(a, bb, c)
    assert torch.equal(c, cann_ops_tilelang.gemm(a, bb))


def test_a_gate_or_gemm_key_with_a_missing_field_is_refused() -> None:
    with pytest.raises(cann_ops_tilelang.Error, match="a top-k gate key needs the field 'k'"):
        _core.ops_topk_gate_kernel(dict(dtype="float32", experts=256))
    with pytest.raises(cann_ops_tilelang.Error, match="a GEMM key needs the field 'trans_a'"):
        _core.ops_gemm_kernel(dict(dtype="float16", out_dtype="float16", n=4, k=4))
