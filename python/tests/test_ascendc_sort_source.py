"""get_kernel_source() of a top-k selection kernel (T.tile.topk, T.tile.gather_mask, T.tile.cast):
the AscendC the emitter makes of the sort family (src/ascendc/emit_sort.cpp, docs/ascendc.md
"Sorts"): the positions by ArithProgression, Sort32, MrgSort rounds, GatherMask. The kernel's
indices on the virtual NPU are checked against numpy's stable descending order (ties to the
smaller index), with scores that tie often, and rows of 40 scores (not whole 32s). The kernel's
Tile IR also goes through the C++ driver `ascendc_e2e --ir` (emit, compile against the CPU model,
run, compare every GM byte with the VM's run); ctest's AscendcE2E.sort_ops* / op.topk_gate* run
the C++ kernels that way."""

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import tl_ascend as tilelang
import tl_ascend.language as T


@tilelang.jit(out_idx=[-1])
def topk_rows(B, N, K):
    @T.prim_func
    def topk_rows_k(X: T.Tensor((B, N), "float32"), I: T.Tensor((B, K), "int32")):
        with T.Kernel(B // 2, is_npu=True) as (cid, vid):
            with T.Scope("V"):
                x = T.alloc_ub((N,), "float32")
                pairs = T.alloc_ub((2 * K,), "float32")
                pos = T.alloc_ub((K,), "float32")
                idx = T.alloc_ub((K,), "int32")
                T.copy(X[cid * 2 + vid, 0], x)
                T.pipe_barrier("ALL")
                T.tile.topk(pairs, x, K, N)
                T.pipe_barrier("ALL")
                T.tile.gather_mask(pos, pairs, "P1010")
                T.pipe_barrier("ALL")
                T.tile.cast(idx, pos, "CAST_ROUND")
                T.pipe_barrier("ALL")
                T.copy(idx, I[cid * 2 + vid, 0])

    return topk_rows_k


def reference(x: np.ndarray, k: int) -> np.ndarray:
    return np.argsort(-x, axis=-1, kind="stable")[:, :k].astype(np.int32)


def test_topk_source_is_sort32_and_mrgsort():
    src = topk_rows(4, 128, 32).get_kernel_source()
    for want in ("AscendC::ArithProgression<float>(", "AscendC::Sort32(", "AscendC::MrgSort(",
                 "AscendC::GatherMask(pos, pairs, static_cast<uint8_t>(2), false, 0"):
        assert want in src, want
    assert "test_ascendc_sort_source.py:" in src


def test_topk_indices_with_ties_and_a_partial_block():
    rng = np.random.default_rng(5)
    for n, k in ((128, 32), (40, 32)):
        x = np.floor(rng.standard_normal((4, n)) * 2).astype(np.float32)  # a handful of values
        got = topk_rows(4, n, k)(x)
        np.testing.assert_array_equal(np.asarray(got), reference(x, k), err_msg=f"N={n} k={k}")
        assert "AscendC::Sort32(" in topk_rows(4, n, k).get_kernel_source()


def test_topk_kernel_on_the_cpu_model_is_bit_identical(tmp_path):
    """The kernel as Tile IR through ascendc_e2e --ir (built beside this package)."""
    exe = Path(tilelang._core.__file__).parents[2] / "tests" / "ascendc" / "ascendc_e2e"
    if not exe.exists():
        pytest.skip(f"{exe} is not built")
    for n, k in ((128, 32), (40, 32)):
        ir = tmp_path / f"topk_rows_{n}.tl"
        ir.write_text(topk_rows(4, n, k).get_tile_ir(False))
        r = subprocess.run([str(exe), "--ir", str(ir)], capture_output=True, text=True,
                           timeout=600, env=dict(os.environ))
        assert r.returncode == 0, r.stdout + r.stderr
        assert "gives the VM's bytes; hazard checker quiet" in r.stdout, r.stdout
