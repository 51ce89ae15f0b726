#!/usr/bin/env python3
"""The large default shapes of TileLang-Ascend's scripts (issue 29), timed on the virtual NPU's fast
mode next to torch fp32 on the CPU running the same operation, in one process, as JSON.

    PYTHONPATH=build/default/python python3 bench/large_scripts.py [--tla DIR] [--reps N]
        [--out bench/results/large_scripts.json] [--small]

Rows (each: the kernel call in fast mode, and the torch fp32 operation, timed alternately `reps`
times so machine noise hits both alike; the medians, the throughput of each and the ratio
torch_s / sim_s, > 1 when the simulator is faster):

  gemm/ours                GEMM 8192x1024x8192 fp16 (python/examples/gemm.py, gemm_v0)
                           vs `a @ b` on fp32 copies of the inputs; GFLOP/s = 2MNK / s.
  rms_norm/ours            RMSNorm 16384x7168 bf16 with weight (python/examples/rms_norm.py)
                           vs the fp32 formula of its reference; GB/s counts X read + Y written
                           (+ W), in each side's own dtype.
With --tla DIR (TileLang-Ascend's examples/ directory, fetched elsewhere, never committed), the
scripts the issue names, their kernels at their own default shapes:
  gemm/intrinsic_persistent  examples/gemm/example_gemm_intrinsic_persistent.py (T.mma, 20 cores)
  gemm/v0_pipeline           examples/pipeline/gemm_v0_pipeline.py (gemm_v0, T.Pipelined), called as
                           the script calls it, `func(a, b)`; not checked: its `out_idx=[-2]` makes
                           B the output, so the script compares an output B with a @ b
  rms_norm/fwd, rms_norm/bwd examples/normalization/rms_norm.py at 16384x7168 bf16, 64x128 blocks;
                           torch: fp32 `torch.rms_norm` forward, and its autograd backward alone
                           (the forward graph built outside the timing).
Each TLA row also gives `script_ref_s`, the script's own reference check once where it is cheap
enough to run (the RMSNorm ones); the GEMM scripts' reference is `a @ b` in fp16 on the CPU, which
torch runs orders of magnitude slower than fp32 (178 s for 2048x1024x2048 on a loaded 2-core
machine), so it is not run here (--gemm-script-ref runs it at 1/64 of the work, M/8 and K/8).
--small divides M (and K) by 8, a smoke run.
"""

import argparse
import json
import os
import platform
import runpy
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python", "examples"))

import torch  # noqa: E402

import tl_ascend as tilelang  # noqa: E402,F401


def timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def side_by_side(sim: Callable[[], Any], ref: Callable[[], Any], reps: int) -> tuple[float, float, list, list]:
    """Medians of `reps` alternating runs of both (the first run of each is a warm-up, untimed)."""
    sim()
    ref()
    s, r = [], []
    for _ in range(reps):
        s.append(timed(sim))
        r.append(timed(ref))
    return statistics.median(s), statistics.median(r), s, r


def row(name: str, shape: str, sim_s: float, torch_s: float, unit: str, sim_work: float, torch_work: float,
        samples: tuple[list, list], **extra: Any) -> dict:
    out = {"name": name, "shape": shape, "sim_s": sim_s, "torch_fp32_s": torch_s, "ratio": torch_s / sim_s,
           "unit": unit, "sim_rate": sim_work / sim_s / 1e9, "torch_rate": torch_work / torch_s / 1e9,
           "sim_samples": samples[0], "torch_samples": samples[1]}
    out.update(extra)
    print(f"{name:28s} {shape:22s} sim {sim_s:8.3f} s ({out['sim_rate']:8.2f} {unit})  torch fp32 "
          f"{torch_s:8.3f} s ({out['torch_rate']:8.2f} {unit})  ratio {out['ratio']:.3f}", flush=True)
    return out


def gemm_row(name: str, kernel: Callable, M: int, N: int, K: int, reps: int, script_ref: bool,
             check: bool = True) -> dict:
    torch.manual_seed(0)
    a, b = torch.randn(M, K).half(), torch.randn(K, N).half()
    af, bf = a.float(), b.float()
    c = kernel(a, b)
    if check:
        torch.testing.assert_close(c.float(), af @ bf, rtol=1e-2, atol=1e-2)
    sim_s, torch_s, s, r = side_by_side(lambda: kernel(a, b), lambda: af @ bf, reps)
    extra = {}
    if script_ref:
        m, k = max(M // 8, 16), max(K // 8, 16)
        extra["script_ref_s_at_1_64"] = timed(lambda: a[:m, :k] @ b[:k, :])
    flop = 2.0 * M * N * K
    return row(name, f"{M}x{N}x{K} fp16", sim_s, torch_s, "GFLOP/s", flop, flop, (s, r), **extra)


def rms_ours(M: int, N: int, reps: int) -> dict:
    from rms_norm import ref_program, rms_norm_kernel

    torch.manual_seed(0)
    x, w, eps = torch.randn(M, N).bfloat16(), torch.randn(N).bfloat16(), 1e-6
    kernel = rms_norm_kernel(M, N, block_N=1024 if N % 1024 == 0 else 128)
    torch.testing.assert_close(kernel(x, w, eps), ref_program(x, w, eps), rtol=1e-2, atol=1e-2)
    xf, wf = x.float(), w.float()
    sim_s, torch_s, s, r = side_by_side(lambda: kernel(x, w, eps),
                                        lambda: torch.nn.functional.rms_norm(xf, [N], wf, eps), reps)
    return row("rms_norm/ours", f"{M}x{N} bf16", sim_s, torch_s, "GB/s", 2.0 * M * N * 2 + 2 * N,
               2.0 * M * N * 4 + 4 * N, (s, r))


def load_defs(path: str, stop: str | None) -> dict:
    """The script's definitions: its source up to `stop` (its test code starts there), or the module
    run under another name than __main__ (its test code is under `if __name__ == "__main__"`)."""
    if stop is None:
        return runpy.run_path(path, run_name="large_scripts")
    src = open(path).read()
    g: dict = {"__name__": "large_scripts", "__file__": path}
    exec(compile(src[:src.index(stop)], path, "exec"), g)
    return g


def tla_rows(tla: str, div: int, reps: int, gemm_script_ref: bool) -> list[dict]:
    from tl_ascend import alias

    alias.install(force=True)
    out = []
    M, N, K = 8192 // div, 1024, 8192 // div  # the scripts' flags assume N >= block_N = 256
    g = load_defs(os.path.join(tla, "gemm", "example_gemm_intrinsic_persistent.py"), None)
    out.append(gemm_row("gemm/intrinsic_persistent", g["matmul"](M, N, K, 128, 256, 64, 256, 2, 2), M, N, K, reps,
                        gemm_script_ref))
    argv = sys.argv
    sys.argv = [argv[0]]
    try:
        g = load_defs(os.path.join(tla, "pipeline", "gemm_v0_pipeline.py"), "func = matmul(")
    finally:
        sys.argv = argv
    out.append(gemm_row("gemm/v0_pipeline", g["matmul"](M, N, K, 128, 256, 64), M, N, K, reps, False,
                        check=False))

    g = load_defs(os.path.join(tla, "normalization", "rms_norm.py"), "torch.manual_seed(0)\n\ntest_configs")
    M, N = 16384 // div, 7168  # the tiling assumes the script's N
    torch.manual_seed(0)
    a = torch.randn(M, N, dtype=torch.bfloat16)
    fwd = g["_rms_norm"](M, N, 64, 128, dtype="bfloat16")
    af = a.float()
    ref_once = timed(lambda: torch.rms_norm(a.float(), normalized_shape=[N]).to(a.dtype))
    torch.testing.assert_close(fwd(a), torch.rms_norm(af, normalized_shape=[N]).to(a.dtype), rtol=1e-2, atol=1e-2)
    sim_s, torch_s, s, r = side_by_side(lambda: fwd(a), lambda: torch.rms_norm(af, normalized_shape=[N]), reps)
    out.append(row("rms_norm/fwd", f"{M}x{N} bf16", sim_s, torch_s, "GB/s", 2.0 * M * N * 2, 2.0 * M * N * 4, (s, r),
                   script_ref_s=ref_once))

    bwd = g["_rms_norm_grad"](M, N, 64, 128, dtype="bfloat16")
    x = torch.randn(M, N, dtype=torch.bfloat16)
    dy = torch.randn(M, N, dtype=torch.bfloat16)

    def script_ref() -> torch.Tensor:
        xr = x.clone().requires_grad_(True)
        torch.rms_norm(xr.float(), normalized_shape=[N]).to(x.dtype).backward(dy)
        return xr.grad

    ref_once = timed(script_ref)
    torch.testing.assert_close(bwd(dy, x), script_ref(), rtol=1e-2, atol=1e-2)
    xf, dyf = x.float(), dy.float()

    def torch_bwd() -> None:
        xr = xf.clone().requires_grad_(True)
        y = torch.rms_norm(xr, normalized_shape=[N])
        t0 = time.perf_counter()
        y.backward(dyf)
        torch_bwd.elapsed = time.perf_counter() - t0  # type: ignore[attr-defined]

    bwd(dy, x)
    torch_bwd()
    s, r = [], []
    for _ in range(reps):
        s.append(timed(lambda: bwd(dy, x)))
        torch_bwd()
        r.append(torch_bwd.elapsed)  # type: ignore[attr-defined]
    out.append(row("rms_norm/bwd", f"{M}x{N} bf16", statistics.median(s), statistics.median(r), "GB/s",
                   3.0 * M * N * 2, 3.0 * M * N * 4, (s, r), script_ref_s=ref_once))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tla", help="TileLang-Ascend's examples/ directory (fetched elsewhere)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", help="write the JSON here (default: stdout only)")
    ap.add_argument("--small", action="store_true", help="every dimension / 8 (a smoke run)")
    ap.add_argument("--gemm-script-ref", action="store_true",
                    help="time the GEMM scripts' own fp16 CPU reference at 1/64 of the work")
    args = ap.parse_args()
    div = 8 if args.small else 1
    from gemm import matmul

    rows = []
    M, N, K = 8192 // div, 1024 // div, 8192 // div
    rows.append(gemm_row("gemm/ours", matmul(M, N, K), M, N, K, args.reps, False))
    rows.append(rms_ours(16384 // div, 7168, args.reps))
    if args.tla:
        rows += tla_rows(args.tla, div, args.reps, args.gemm_script_ref)
    doc = {"context": {"host": platform.node(), "cpus": os.cpu_count(), "torch": torch.__version__,
                       "torch_threads": torch.get_num_threads(), "load_avg": os.getloadavg(),
                       "date": time.strftime("%Y-%m-%d %H:%M:%S")},
           "benchmarks": rows}
    text = json.dumps(doc, indent=1)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    else:
        print(text)


if __name__ == "__main__":
    main()
