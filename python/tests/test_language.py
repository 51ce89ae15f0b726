"""The script front end and the kernel object: what a TileLang-Ascend author writes in Python
builds the kernel they meant, runs on torch and numpy tensors, and reports what they ask for.
"""

import json

import ml_dtypes
import numpy as np
import pytest
import torch

import tl_ascend as tilelang
import tl_ascend.language as T

import kernels


@pytest.fixture(scope="module")
def scale_add():
    return tilelang.compile(kernels.scale_add(48, 64, 8), out_idx=[1])


def test_python_constructs_become_the_expected_ir():
    ir = kernels.scale_add(48, 64, 8).script(False)
    assert "tile = cid * 2 + vid" in ir  # an assignment of a kernel expression is a let
    assert "if tile * 8 < 48:" in ir and "else:" in ir  # a symbolic if keeps its else
    assert ir.count("T.tile.mul") == 1 and ir.count("T.tile.add") == 1  # the tuple loop unrolled
    assert "alpha: T.float32" in ir  # a scalar parameter
    assert "T.printf(" in ir


def test_statements_record_python_lines_and_macro_calls_record_both():
    ir = kernels.scale_add(48, 64, 8).script(True)
    copy_line = next(l for l in ir.splitlines() if "T.copy(X" in l)
    # The macro's statement is located at the kernel line that called it, then the macro's line.
    assert "kernels.py:" in copy_line and " via " in copy_line and copy_line.count("kernels.py:") == 2, copy_line


def test_a_kernel_runs_on_torch_and_numpy_with_a_scalar_argument(scale_add):
    x = torch.randn(48, 64)
    y = scale_add(x, 0.5)
    torch.testing.assert_close(y, x * 0.5 + 1.0)
    xn = np.random.default_rng(0).standard_normal((48, 64), dtype=np.float32)
    yn = scale_add(xn, 2.0)
    assert isinstance(yn, np.ndarray)
    np.testing.assert_allclose(yn, xn * 2.0 + 1.0, rtol=1e-6)


def test_inputs_are_read_in_place_and_outputs_written_in_place():
    k = tilelang.compile(kernels.ub_copy(), out_idx=[])
    x, y = torch.randn(16, 64), torch.zeros(16, 64)
    assert k(x, y) is None
    assert torch.equal(x, y)  # the kernel wrote the caller's tensor: no copy on the way in or out


def test_bfloat16_through_torch_and_ml_dtypes():
    k = tilelang.compile(kernels.ub_copy(dtype="bfloat16"), out_idx=[-1])
    xt = torch.randn(16, 64).bfloat16()
    assert torch.equal(k(xt), xt)
    xn = np.arange(16 * 64, dtype=np.float32).reshape(16, 64).astype(ml_dtypes.bfloat16)
    yn = k(xn)
    assert yn.dtype == ml_dtypes.bfloat16 and np.array_equal(yn.view(np.uint16), xn.view(np.uint16))


def test_dynamic_sizes_bind_from_the_inputs_and_size_the_outputs():
    M = T.dynamic("M")

    @T.prim_func
    def rows_copy(X: T.Tensor((M, 64), "float32"), Y: T.Tensor((M, 64), "float32")):
        with T.Kernel(T.ceildiv(M, 8), is_npu=True) as (cid, vid):
            with T.Scope("V"):
                x = T.alloc_ub((8, 64), "float32")
                if vid == 0:
                    for r in T.serial(8):
                        if cid * 8 + r < M:
                            T.copy(X[cid * 8 + r, 0], x[r:r + 1, :])
                            T.set_flag("MTE2", "MTE3", 0)
                            T.wait_flag("MTE2", "MTE3", 0)
                            T.copy(x[r:r + 1, :], Y[cid * 8 + r, 0])
                            T.set_flag("MTE3", "MTE2", 0)
                            T.wait_flag("MTE3", "MTE2", 0)

    k = tilelang.compile(rows_copy, out_idx=[-1])
    for m in (8, 21):
        x = torch.randn(m, 64)
        assert torch.equal(k(x), x)


def test_persistent_loops_and_python_lists_of_buffers():
    @T.prim_func
    def persistent_copy(X: T.Tensor((64, 64), "float32"), Y: T.Tensor((64, 64), "float32")):
        with T.Kernel(3, is_npu=True) as (cid, vid):
            with T.Scope("V"):
                bufs = [T.alloc_ub((16, 16), "float32", name=f"b{i}") for i in range(2)]
                for bx, by in T.Persistent([4, 4], 6, cid * 2 + vid):
                    T.copy(X[bx * 16, by * 16], bufs[0])
                    T.set_flag("MTE2", "V", 0)
                    T.wait_flag("MTE2", "V", 0)
                    T.tile.mul(bufs[1], bufs[0], 3.0)
                    T.set_flag("V", "MTE3", 0)
                    T.wait_flag("V", "MTE3", 0)
                    T.copy(bufs[1], Y[bx * 16, by * 16])
                    T.set_flag("MTE3", "MTE2", 0)
                    T.wait_flag("MTE3", "MTE2", 0)
                    T.set_flag("MTE3", "V", 0)
                    T.wait_flag("MTE3", "V", 0)

    k = tilelang.compile(persistent_copy, out_idx=[-1], check_hazards=True)
    x = torch.randn(64, 64)
    torch.testing.assert_close(k(x), x * 3.0)


def test_the_jit_compiles_once_per_argument_tuple():
    calls = []

    @tilelang.jit(out_idx=[-1])
    def gen(M):
        calls.append(M)
        return kernels.ub_copy(M=M)

    a, b, c = gen(16), gen(16), gen(32)
    assert a is b and a is not c and calls == [16, 32]
    tilelang.cache.clear_cache()
    assert gen(16) is not a and calls == [16, 32, 16]


def test_kernel_source_profile_trace_and_timeline(tmp_path, scale_add):
    src = scale_add.get_tile_ir()
    assert "def scale_add" in src and "T.set_flag" in src
    x = torch.randn(48, 64)
    prof = scale_add.profile(x, 1.5, trace=tmp_path / "t.json", timeline=tmp_path / "t.html")
    assert prof["total_cycles"] > 0 and prof["num_blocks"] == 3
    assert 0 < prof["busy"]["vector"]["V"] <= 1 and prof["busy"]["cube"]["M"] == 0
    assert "MTE2" in prof["table"]
    assert json.loads((tmp_path / "t.json").read_text())
    assert "<svg" in (tmp_path / "t.html").read_text()


def test_same_inputs_give_the_same_outputs_and_cycles_for_any_thread_count(scale_add):
    x = torch.randn(48, 64)
    runs = []
    for threads in (1, 2):
        y = scale_add.run(x, 0.25, mode="timed", threads=threads)
        runs.append((y, scale_add.last_profile["total_cycles"]))
    assert torch.equal(runs[0][0], runs[1][0]) and runs[0][1] == runs[1][1]


def test_developer_mode_from_python():
    @T.prim_func
    def axpb(X: T.Tensor((64, 128), "float32"), Y: T.Tensor((64, 128), "float32")):
        with T.Kernel(4, threads=2) as cid:
            x = T.alloc_shared((16, 128), "float32")
            y = T.alloc_shared((16, 128), "float32")
            T.copy(X[cid * 16, 0], x)
            for i, j in T.Parallel(16, 128):
                y[i, j] = x[i, j] * 2.0 + 1.0
            T.copy(y, Y[cid * 16, 0])

    k = tilelang.compile(axpb, out_idx=[-1], check_hazards=True)
    x = torch.randn(64, 128)
    torch.testing.assert_close(k(x), x * 2.0 + 1.0)
    assert "T.set_flag" in k.get_tile_ir()  # the compiler inserted the flags


def test_ir_text_parses_back_to_the_same_kernel(scale_add):
    text = scale_add.func.script(True)
    again = tilelang.parse_ir(text, "scale_add.ir")
    assert again.script(True) == text


def test_unnamed_buffers_get_fresh_names():
    @T.prim_func
    def unnamed(X: T.Tensor((64,), "float32"), Y: T.Tensor((64,), "float32")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            with T.Scope("V"):
                bufs = [T.alloc_ub((64,), "float32") for _ in range(2)]
                if vid == 0:
                    T.copy(X, bufs[0])
                    T.set_flag("MTE2", "MTE3", 0)
                    T.wait_flag("MTE2", "MTE3", 0)
                    T.copy(bufs[0], Y)

    ir = unnamed.script(False)
    assert "buf = T.alloc_ub" in ir and "buf_1 = T.alloc_ub" in ir


def test_every_registered_primitive_is_reachable_from_T():
    from tl_ascend import _core

    for op in _core.ops():
        obj = T
        for part in op["name"].split("."):
            obj = getattr(obj, part, None)
            assert obj is not None, f"T.{op['name']} is missing"
        assert callable(obj)


def test_a_second_process_compiles_from_the_disk_cache(tmp_path):
    import os
    import subprocess
    import sys

    script = (
        "import sys; sys.path.insert(0, %r)\n"
        "import tl_ascend as tilelang, kernels\n"
        "tilelang.compile(kernels.scale_add(48, 64, 8), out_idx=[1])\n"
        "s = tilelang._core.cache_stats(); print(s['disk_hits'], s['misses'])\n" % os.path.dirname(__file__))
    env = dict(os.environ, TL_CACHE_DIR=str(tmp_path))
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
            for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
    assert runs[0].stdout.split() == ["0", "1"]  # compiled and written
    assert runs[1].stdout.split() == ["1", "0"]  # read back: no pass pipeline ran


def test_launches_from_several_python_threads_give_the_serial_results(scale_add):
    import threading

    xs = [torch.randn(48, 64) for _ in range(6)]
    results = [None] * len(xs)

    def work(i):
        results[i] = scale_add(xs[i], float(i))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(xs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, x in enumerate(xs):
        torch.testing.assert_close(results[i], x * float(i) + 1.0)
