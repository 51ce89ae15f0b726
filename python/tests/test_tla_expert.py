"""Automation inside TileLang-Ascend's expert scopes, and expert copies at tensor edges (issue 29).

Each construct in TileLang-Ascend's syntax (our own kernels), against a torch reference living
only here, on tails (rows 1, 7, 33, 1000, 4097; columns not a multiple of the block), with the
hazard checker (and with it the stale-data checker) on:

* `T.Parallel` over UB tiles inside `T.Scope("V")` of an expert kernel is vectorised as in a
  developer kernel, with auto_sync's syncs or the author's own (before: "T.Parallel is a
  developer-mode loop, lowered only in developer kernels").
* `T.Pipelined` inside an expert scope runs as a serial loop (before: the same error).
* An expert GM copy of a partial tile is clipped at the tensor's bounds (before: the launch
  stopped with "T.copy: out-of-bounds access to 'A' ... dimension 1 covers [256, 320), outside
  [0, 300)"); pad_value fills the rest of the tile, and a reduction over an undefined part is an
  error naming the copy.
* Outputs and workspaces sized by expressions of dynamic sizes (before: "cannot size output 'B':
  its dimension N // 2 is not a constant or a dynamic size of an input").
* torch_npu.npu_gelu_backward (before: "has no CPU version of this torch_npu operator yet").
"""

import math
import os
import subprocess
import sys

import pytest
import torch

import tl_ascend as tilelang
import tl_ascend.language as T

TAILS = (1, 7, 33, 1000, 4097)
SYNC = {tilelang.PassConfigKey.TL_ASCEND_AUTO_SYNC: True,
        tilelang.PassConfigKey.TL_ASCEND_MEMORY_PLANNING: True}
AUTO = {tilelang.PassConfigKey.TL_ASCEND_AUTO_CV_COMBINE: True, **SYNC}


def _exact(on: bool) -> dict:
    # Another branch flips allow_inexact_math's default: each test says which it means.
    return {"tl.dev.allow_inexact_math": on}


# ---- 1. T.Parallel inside T.Scope("V") ---------------------------------------------------------

def row_scale(M: int, N: int, block_M: int, auto_sync: bool):
    """act_quant's shape: a row statistic by T.reduce_max, a per-row scale by a 1-D T.Parallel, the
    tile divided by it in a 2-D T.Parallel; each AIV takes half the block's rows."""
    half = block_M // 2

    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32"), S: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), is_npu=True) as (cid, vid):
            x = T.alloc_ub((half, N), "float32")
            ab = T.alloc_ub((half, N), "float32")
            mx = T.alloc_ub((half,), "float32")
            sc = T.alloc_ub((half,), "float32")
            with T.Scope("V"):
                T.copy(X[cid * block_M + vid * half, 0], x)
                if not auto_sync:
                    T.set_flag("mte2", "v", 0)
                    T.wait_flag("mte2", "v", 0)
                T.tile.abs(ab, x)
                if not auto_sync:
                    T.pipe_barrier("v")
                T.reduce_max(ab, mx, dim=-1)
                if not auto_sync:
                    T.pipe_barrier("v")
                for i in T.Parallel(half):
                    sc[i] = mx[i] / 127.0
                if not auto_sync:
                    T.pipe_barrier("v")
                for i, j in T.Parallel(half, N):
                    x[i, j] = x[i, j] / sc[i]
                if not auto_sync:
                    T.set_flag("v", "mte3", 0)
                    T.wait_flag("v", "mte3", 0)
                T.copy(x, Y[cid * block_M + vid * half, 0])
                T.copy(sc, S[cid * block_M + vid * half])

    return main


def _row_scale_ref(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    s = x.abs().amax(dim=1) / 127.0
    return x / s[:, None], s


@pytest.mark.parametrize("M", (16, 64) + TAILS)
@pytest.mark.parametrize("auto_sync", [True, False])
def test_parallel_in_an_expert_vector_scope_is_vectorised(M: int, auto_sync: bool) -> None:
    """Before: "T.Parallel is a developer-mode loop, lowered only in developer kernels" at the
    loop's line. The vectorised loops are V-pipe ops, so the author's syncs stay valid without
    auto_sync: the hazard checker is quiet either way."""
    torch.manual_seed(M)
    x = torch.randn(M, 64)
    cfg = {**(SYNC if auto_sync else {tilelang.PassConfigKey.TL_ASCEND_MEMORY_PLANNING: True}), **_exact(False)}
    kernel = tilelang.compile(row_scale(M, 64, 16, auto_sync), out_idx=[1, 2], pass_configs=cfg, check_hazards=True)
    y, s = kernel(x)
    ry, rs = _row_scale_ref(x)
    torch.testing.assert_close(s, rs, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(y, ry, rtol=1e-6, atol=1e-6)
    assert "T.Parallel" not in kernel.get_tile_ir()


@pytest.mark.parametrize("inexact", [True, False])
def test_parallel_exactness_follows_allow_inexact_math(inexact: bool) -> None:
    """The developer kernels' exactness rule: exp in an element loop needs allow_inexact_math
    (the chip's exp), otherwise it is an error naming the reason (never a silent difference)."""
    @T.prim_func
    def main(X: T.Tensor((16, 64), "float32"), Y: T.Tensor((16, 64), "float32")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            x = T.alloc_ub((8, 64), "float32")
            with T.Scope("V"):
                T.copy(X[vid * 8, 0], x)
                for i, j in T.Parallel(8, 64):
                    x[i, j] = T.exp(x[i, j])
                T.copy(x, Y[vid * 8, 0])

    cfg = {**SYNC, **_exact(inexact), "tl.dev.scalar_fallback": False}
    if not inexact:
        with pytest.raises(tilelang.Error, match=r"test_tla_expert.py:\d+: .*cannot vectorise"):
            tilelang.compile(main, out_idx=[1], pass_configs=cfg)
        return
    kernel = tilelang.compile(main, out_idx=[1], pass_configs=cfg, check_hazards=True)
    x = torch.randn(16, 64)
    torch.testing.assert_close(kernel(x), x.exp(), rtol=1e-5, atol=1e-6)


def test_parallel_outside_the_vector_scope_is_an_error_naming_the_scope() -> None:
    with pytest.raises(tilelang.Error, match=r"test_tla_expert.py:\d+: .*T.Parallel in an expert kernel is lowered "
                                             r"only inside T::Scope\(Core::Vector\)"):
        @T.prim_func
        def main(X: T.Tensor((16,), "float32")):
            with T.Kernel(1, is_npu=True) as (cid, vid):
                x = T.alloc_ub((16,), "float32")
                for i in T.Parallel(16):
                    x[i] = 0.0
                with T.Scope("V"):
                    T.copy(x, X)

        tilelang.compile(main, pass_configs=SYNC)


# ---- 2. T.Pipelined inside an expert scope -----------------------------------------------------

def chunked_row_sum(M: int, N: int, chunk: int):
    """A row sum over column chunks in a T.Pipelined loop (moe_token_permute's and
    gemm_v0_pipeline's form: copies and compute per iteration, the accumulator carried)."""

    half = M // 2

    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), S: T.Tensor((M,), "float32")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            x = T.alloc_ub((half, chunk), "float32")
            part = T.alloc_ub((half,), "float32")
            acc = T.alloc_ub((half,), "float32")
            with T.Scope("V"):
                T.tile.fill(acc, 0.0)
                for k in T.Pipelined(N // chunk, num_stages=2):
                    T.copy(X[vid * half, k * chunk], x)
                    T.reduce_sum(x, part, dim=-1)
                    T.tile.add(acc, acc, part)
                T.copy(acc, S[vid * half])

    return main


@pytest.mark.parametrize("chunks", (1, 7, 33))
def test_pipelined_in_an_expert_scope_runs_its_serial_semantics(chunks: int) -> None:
    """Before: "T.Pipelined is a developer-mode loop, lowered only in developer kernels"."""
    torch.manual_seed(chunks)
    x = torch.randn(16, 64 * chunks)
    kernel = tilelang.compile(chunked_row_sum(16, 64 * chunks, 64), out_idx=[1], pass_configs=SYNC,
                              check_hazards=True)
    torch.testing.assert_close(kernel(x), x.sum(dim=1), rtol=1e-5, atol=1e-4)
    assert "T.Pipelined" not in kernel.get_tile_ir()


# ---- 3. Expert copies clipped at the tensor's bounds -------------------------------------------

@tilelang.jit(out_idx=[1], pass_configs=AUTO, check_hazards=True)
def sigmoid(M, N, block_M, block_N, dtype="float32"):
    """activation/sigmoid.py's kernel: hybrid form, each AIV half a block's rows."""
    m_num = T.ceildiv(M, block_M)
    n_num = T.ceildiv(N, block_N)
    half = block_M // 2

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(m_num * n_num, is_npu=True) as (cid, vid):
            bx = cid // n_num
            by = cid % n_num
            a = T.alloc_shared((half, block_N), dtype)
            b = T.alloc_shared((half, block_N), dtype)
            T.copy(A[bx * block_M + vid * half, by * block_N], a)
            T.tile.mul(a, a, -1.0)
            T.tile.exp(a, a)
            T.tile.add(a, a, 1.0)
            T.tile.reciprocal(b, a)
            T.copy(b, B[bx * block_M + vid * half, by * block_N])

    return main


@pytest.mark.parametrize("M,N,bm,bn", [(300, 300, 64, 64), (1, 7, 64, 64), (7, 33, 16, 32), (33, 1000, 64, 128),
                                       (1000, 33, 64, 64), (4097, 40, 128, 64), (1100, 700, 128, 128)])
def test_an_expert_copy_of_a_partial_tile_is_clipped(M: int, N: int, bm: int, bn: int) -> None:
    """Before: "T.copy: out-of-bounds access to 'A' ... dimension 1 covers [256, 320), outside
    [0, 300)" (300x300). The undefined part of the tile is never stored: B past the tensor is
    never written and the stale-data checker (on with check_hazards) is quiet."""
    torch.manual_seed(M * 7 + N)
    x = torch.randn(M, N)
    torch.testing.assert_close(sigmoid(M, N, bm, bn)(x), torch.sigmoid(x), rtol=1e-4, atol=1e-4)  # the chip's exp


DISK_CHECK = """
import torch
import tl_ascend as tilelang
import tl_ascend.language as T

@T.prim_func
def main(A: T.Tensor((20, 64), "float32"), B: T.Tensor((20, 64), "float32")):
    with T.Kernel(2, is_npu=True) as (cid, vid):
        a = T.alloc_shared((8, 64), "float32")
        T.copy(A[cid * 16 + vid * 8, 0], a)
        T.tile.add(a, a, 1.0)
        T.copy(a, B[cid * 16 + vid * 8, 0])

kernel = tilelang.compile(main, out_idx=[1], pass_configs={"tl.ascend_auto_cv_combine": True,
                                                           "tl.ascend_auto_sync": True}, check_hazards=True)
x = torch.randn(20, 64)
torch.testing.assert_close(kernel(x), x + 1)
print("OK")
"""


def test_a_hybrid_kernel_read_back_from_the_disk_cache_runs(tmp_path) -> None:
    """Before: the second process (a disk-cache hit) failed with "T.alloc_shared ... is a
    developer-mode shared buffer" and "expert mode needs every tile op inside T::Scope": the hit
    verified the kernel as written, without combine_cv's scope."""
    cache = tmp_path / "cache"
    script = tmp_path / "hybrid.py"
    script.write_text(DISK_CHECK)
    env = dict(os.environ, TL_CACHE_DIR=str(cache))
    for _ in range(2):
        r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env)
        assert r.returncode == 0 and r.stdout.strip() == "OK", r.stdout + r.stderr
    assert list(cache.rglob("*.tlir"))


def row_max(M: int, N: int, block_M: int, block_N: int, pad, author_syncs: bool = False):
    """Row maxima of a tile whose columns may pass the tensor's end (with the author's own flags
    when `author_syncs`, for a kernel compiled without auto_sync)."""
    half = block_M // 2

    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), S: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), is_npu=True) as (cid, vid):
            x = T.alloc_ub((half, block_N), "float32")
            m = T.alloc_ub((half,), "float32")
            with T.Scope("V"):
                if pad is None:
                    T.copy(X[cid * block_M + vid * half, 0], x)
                else:
                    T.copy(X[cid * block_M + vid * half, 0], x, pad_value=pad)
                if author_syncs:
                    T.set_flag("mte2", "v", 0)
                    T.wait_flag("mte2", "v", 0)
                T.reduce_max(x, m, dim=-1)
                if author_syncs:
                    T.set_flag("v", "mte3", 0)
                    T.wait_flag("v", "mte3", 0)
                T.copy(m, S[cid * block_M + vid * half])

    return main


@pytest.mark.parametrize("M,N", [(1, 7), (7, 33), (33, 100), (1000, 1), (4097, 50)])
def test_pad_value_fills_the_clipped_part_a_reduction_reads(M: int, N: int) -> None:
    """Every value negative: a pad of 0 or garbage would be the maximum; -inf is the identity."""
    torch.manual_seed(M + N)
    x = -torch.rand(M, N) - 1.0
    kernel = tilelang.compile(row_max(M, N, 16, 64 if N <= 64 else 128, -math.inf), out_idx=[1], pass_configs=SYNC,
                              check_hazards=True)
    torch.testing.assert_close(kernel(x), x.amax(dim=1))


@pytest.mark.parametrize("M,N", [(7, 33), (1000, 100)])
def test_the_pad_fill_is_ordered_in_a_scope_with_the_authors_syncs(M: int, N: int) -> None:
    """Without auto_sync the fill the compiler puts before a partial read (V pipe) and the read
    (MTE2) need an order the author could not write: a barrier of the compiler's own. Before it,
    the hazard checker reported the two writes of 'x' (WAW, V and MTE2)."""
    torch.manual_seed(M + N)
    x = -torch.rand(M, N) - 1.0
    kernel = tilelang.compile(row_max(M, N, 16, 128, -math.inf, author_syncs=True), out_idx=[1],
                              pass_configs={tilelang.PassConfigKey.TL_ASCEND_MEMORY_PLANNING: True},
                              check_hazards=True)
    torch.testing.assert_close(kernel(x), x.amax(dim=1))


def test_a_max_over_the_default_zero_pad_is_an_error_naming_the_copy() -> None:
    """TileLang-Ascend's copy_gm_to_ub fills the partial tile with 0 (no pad_value), which a row
    of negative values would take as its maximum; tl-ascend refuses at compile time (before the
    pad analysis: the same error, saying the part held undefined elements)."""
    with pytest.raises(tilelang.Error, match=r"T.reduce_max: its operand 'x' holds 0 past the end "
                                             r"of a tensor \(the `T.copy\(X\[.*\], x\)` at .*test_tla_expert.py:\d+ is clipped"):
        tilelang.compile(row_max(33, 100, 16, 128, None), out_idx=[1], pass_configs=SYNC)


def test_a_row_tail_under_a_row_reduction_needs_no_pad() -> None:
    """Rows past the tensor reduce to garbage rows that the clipped write never stores."""
    torch.manual_seed(3)
    x = torch.randn(33, 64)
    kernel = tilelang.compile(row_max(33, 64, 16, 64, None), out_idx=[1], pass_configs=SYNC, check_hazards=True)
    torch.testing.assert_close(kernel(x), x.amax(dim=1))


# ---- 4. Outputs and workspaces sized by expressions of dynamic sizes ---------------------------

@tilelang.jit(out_idx=[1], pass_configs=AUTO, check_hazards=True)
def swiglu(block_M: int = 16, block_N: int = 32):
    """swi_glu_v2.py's shape: out[M, N // 2] = silu(x[:, :N/2]) * x[:, N/2:], M and N dynamic."""
    M = T.symbolic("M")
    N = T.symbolic("N")
    half = block_M // 2

    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N // 2), "float32")):
        with T.Kernel(T.ceildiv(M, block_M) * T.ceildiv(N // 2, block_N), is_npu=True) as (cid, vid):
            n_num = T.ceildiv(N // 2, block_N)
            bx = cid // n_num
            by = cid % n_num
            a = T.alloc_shared((half, block_N), "float32")
            g = T.alloc_shared((half, block_N), "float32")
            t = T.alloc_shared((half, block_N), "float32")
            T.copy(X[bx * block_M + vid * half, by * block_N], a)
            T.copy(X[bx * block_M + vid * half, N // 2 + by * block_N], g)
            T.tile.mul(t, a, -1.0)
            T.tile.exp(t, t)
            T.tile.add(t, t, 1.0)
            T.tile.div(t, a, t)
            T.tile.mul(t, t, g)
            T.copy(t, Y[bx * block_M + vid * half, by * block_N])

    return main


@pytest.mark.parametrize("M,N", [(16, 64), (1, 64), (7, 2), (33, 66), (1000, 64), (4097, 32)])
def test_an_output_sized_by_an_expression_of_dynamic_sizes(M: int, N: int) -> None:
    """Before: "cannot size output 'Y': its dimension N // 2 is not a constant or a dynamic size
    of an input"."""
    torch.manual_seed(M + N)
    x = torch.randn(M, N)
    a, g = x[:, :N // 2], x[:, N // 2:]
    torch.testing.assert_close(swiglu()(x), a * torch.sigmoid(a) * g, rtol=1e-4, atol=1e-4)  # the chip's exp


@tilelang.jit(out_idx=[2], workspace_idx=[1], pass_configs=SYNC, check_hazards=True)
def through_workspace():
    """A GM workspace sized `batch * seq * 4`, as the issue's scripts declare them: each block
    stages its row of X through its slot of the workspace."""
    batch = T.symbolic("batch")
    seq = T.symbolic("seq")

    @T.prim_func
    def main(X: T.Tensor((batch, seq), "float32"), W: T.Tensor((batch * seq * 4,), "float32"),
             Y: T.Tensor((batch, seq), "float32")):
        with T.Kernel(batch, is_npu=True) as (cid, vid):
            x = T.alloc_ub((8,), "float32")
            with T.Scope("V"):
                if vid == 0:
                    T.copy(X[cid, 0:8], x)
                    T.copy(x, W[cid * seq * 4:cid * seq * 4 + 8])
                    T.copy(W[cid * seq * 4:cid * seq * 4 + 8], x)
                    T.tile.add(x, x, 1.0)
                    T.copy(x, Y[cid, 0:8])

    return main


@pytest.mark.parametrize("batch", (1, 7, 33))
def test_a_workspace_sized_by_an_expression_of_dynamic_sizes(batch: int) -> None:
    """Before: "cannot size output 'W': its dimension batch * seq * 4 is not a constant or a
    dynamic size of an input"."""
    x = torch.randn(batch, 8)
    torch.testing.assert_close(through_workspace()(x), x + 1)


# ---- 5. torch_npu references ------------------------------------------------------------------
# Importing tl_ascend.torch_npu installs the shim into torch for the whole process: the checks run
# in a child process, as test_tla_run.py's do.

GELU_CHECK = """
import math
import torch
import tl_ascend
import tl_ascend.torch_npu as torch_npu

for approximate in ("none", "tanh"):
    for n in (1, 7, 33, 1000, 4097):
        torch.manual_seed(n)
        dy, x = torch.randn(n), torch.randn(n, dtype=torch.float64)
        if approximate == "none":
            cdf = 0.5 * (1 + torch.erf(x / math.sqrt(2)))
            pdf = torch.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
            ref = dy.double() * (cdf + x * pdf)
        else:
            k = math.sqrt(2 / math.pi)
            th = torch.tanh(k * (x + 0.044715 * x ** 3))
            ref = dy.double() * (0.5 * (1 + th) + 0.5 * x * (1 - th * th) * k * (1 + 3 * 0.044715 * x * x))
        out = torch_npu.npu_gelu_backward(dy, x.float(), approximate=approximate)
        torch.testing.assert_close(out, ref.float(), rtol=1e-5, atol=1e-6)
        half = torch_npu.npu_gelu_backward(dy.half(), x.half(), approximate=approximate)
        assert half.dtype == torch.float16
for rows, cols in ((1, 2), (7, 66), (1000, 8)):
    x = torch.randn(rows, cols)
    a, b = x[:, :cols // 2], x[:, cols // 2:]
    want = a * torch.sigmoid(a) * b
    torch.testing.assert_close(torch_npu.npu_swiglu(x), want)
    torch.testing.assert_close(torch.ops.npu.npu_swiglu(x), want)  # activation/swi_glu_v2.py's spelling
try:
    torch_npu.npu_gelu_backward(torch.zeros(2), torch.zeros(2), approximate="erf")
    raise SystemExit("no error for approximate='erf'")
except tl_ascend.Error as e:
    assert "approximate must be 'none' or 'tanh', got 'erf'" in str(e), e
print("OK")
"""


def test_npu_gelu_backward_and_npu_swiglu_follow_their_formulas() -> None:
    """Before: "torch_npu.npu_gelu_backward ... has no CPU version of this torch_npu operator
    yet", and torch.ops.npu.npu_swiglu an AttributeError ('_OpNamespace' 'npu' object has no
    attribute 'npu_swiglu'). Against the formulas (GeLU's erf or tanh form in float64), sizes
    1 ... 4097."""
    r = subprocess.run([sys.executable, "-c", GELU_CHECK], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip().endswith("OK"), r.stdout + r.stderr


def test_the_runner_reads_a_verdict_logged_to_stderr() -> None:
    """deepseek_v4/act_quant.py reports "Kernel Output Match!" through logging (stderr): before,
    the runner called its successful run "no-check"."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "scripts" / "run_tla_examples.py"
    spec = importlib.util.spec_from_file_location("run_tla_examples", path)
    runner = importlib.util.module_from_spec(spec)
    sys.modules["run_tla_examples"] = runner  # its dataclasses look their module up there
    spec.loader.exec_module(runner)
    assert runner.classify(0, "", "INFO:root:init successful!\nINFO:root:Kernel Output Match!\n", False)[0] == "pass"
    assert runner.classify(0, "", "", False)[0] == "no-check"
