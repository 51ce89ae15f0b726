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
    keys.append(dict(dtype="float16", hidden=512, rows_per_tile=16, chunk=128, blocks=3, residual=True, rstd=True))
    keys.append(dict(dtype="float32", hidden=256, rows_per_tile=8, chunk=64, blocks=1, residual=True, rstd=False))
    return keys


def _bwd_keys() -> list[dict]:
    keys = [kernels.rms_norm_bwd_key(dt, h) for dt, h in itertools.product(DTYPES, [512, 5120, 7168])]
    keys.append(dict(dtype="bfloat16", hidden=512, rows_per_tile=8, chunk=128, blocks=3, residual=False,
                     rstd=False))
    return keys


def _id(k: dict) -> str:
    return f"{k['dtype']}-H{k['hidden']}-bN{k['chunk']}-b{k['blocks']}-res{int(k['residual'])}-rstd{int(k['rstd'])}"


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
    py = kernels.rms_norm_dw_reduce_kernel(**key, partials=partials).script(False)
    cpp = _core.ops_rms_norm_dw_reduce_kernel(key, partials).script(False)
    assert py == cpp


def test_library_keys_come_from_the_target() -> None:
    """A2's 48 AIVs are 24 blocks; the chunk is the widest divisor of H within 1024 that fits UB."""
    k = kernels.rms_norm_fwd_key("bfloat16", 7168)
    assert (k["blocks"], k["rows_per_tile"]) == (24, 8)
    assert 7168 % k["chunk"] == 0 and k["chunk"] <= 1024


def test_the_twin_compiles_and_runs_as_the_library_does() -> None:
    """The twin is a kernel users can run: compiled through tl_ascend and launched on inputs the
    library also normalises, it gives the library's bits."""
    import torch

    import tl_ascend as tilelang

    torch.manual_seed(0)
    key = kernels.rms_norm_fwd_key("bfloat16", 512)
    x, w = torch.randn(33, 512).bfloat16(), torch.randn(512).bfloat16()
    y = torch.empty_like(x)
    tilelang.compile(kernels.rms_norm_fwd_kernel(**key))(x, w, y, 1e-6)
    assert torch.equal(y, cann_ops_tilelang.rms_norm(x, w).y)


def test_a_key_with_a_missing_field_is_refused() -> None:
    with pytest.raises(cann_ops_tilelang.Error, match="needs the field 'rows_per_tile'"):
        _core.ops_rms_norm_fwd_kernel(dict(dtype="bfloat16", hidden=512))
