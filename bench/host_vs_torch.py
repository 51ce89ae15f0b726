#!/usr/bin/env python3
"""Host speed of the virtual NPU's fast mode next to PyTorch eager on the CPU (issue 31), each op
timed in one process against the torch op doing the same work, written as JSON.

    PYTHONPATH=build/default/python python3 bench/host_vs_torch.py [--reps N] [--fa-seq S]
        [--small] [--only NAME,...] [--out bench/results/host_vs_torch.json]

Every row runs the op on the virtual NPU (the Python front end: cann_ops_tilelang's functions or
python/examples' kernels, fast mode, no timing model) and the torch eager op on the same inputs,
alternately `reps` times (the first run of each untimed), and reports the medians and the ratio
torch_s / sim_s (> 1: the virtual NPU is faster). torch runs twice: with its default allocator
settings, then "tuned": glibc's malloc told (mallopt) to keep freed blocks instead of returning
them to the kernel (M_MMAP_THRESHOLD and M_TRIM_THRESHOLD at 1 GiB, M_ARENA_MAX 1), so a large
output is not mmap-ed and page-faulted afresh on every call. The simulator side is timed under
the same settings in each pass, so the two ratios compare like with like. Each row also gives the
medians of the process's CPU seconds per call (time.process_time: every thread of the process,
the simulator's workers and torch's pool alike) and their ratio: on a shared machine the wall
clock mostly measures the wait for a core, the CPU time far less so.

Rows (the issue's table, then the library's ops):
  rms_norm      ops.rms_norm 8192x4096 bf16 vs F.rms_norm on the bf16 tensors
  softmax       ops.softmax 8192x4096 bf16 vs torch.softmax(x, -1) on bf16
  gelu          python/examples/gelu_dev.py (sigmoid form) 8192x4096 fp32 vs
                F.gelu(x, approximate="tanh")
  gemm          ops.gemm 2048^3 fp16 vs fp32 matmul of fp32 copies (torch's fp16 matmul on the CPU
                is orders of magnitude slower, so fp32 is the fair fast path)
  flash_attn    python/examples/flash_attention_dev.py B=1 H=16 S=--fa-seq D=128 fp16 vs
                F.scaled_dot_product_attention on fp32 copies
  swiglu, layer_norm, log_softmax, topk_gate, rms_norm_bwd: the library's other ops vs their
                torch formulas on the same dtype.
--small divides the leading dimensions by 8 (a smoke run).
"""

import argparse
import ctypes
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python", "examples"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import cann_ops_tilelang as ops  # noqa: E402
import tl_ascend as tilelang  # noqa: E402,F401


def timed(fn: Callable[[], Any]) -> tuple[float, float]:
    """Wall seconds and the process's CPU seconds (all its threads) of one call."""
    t0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - t0, time.process_time() - c0


def side_by_side(sim: Callable[[], Any], ref: Callable[[], Any], reps: int) -> tuple[float, ...]:
    """Medians of `reps` alternating runs of both (the first run of each is a warm-up, untimed):
    sim wall, torch wall, sim CPU, torch CPU."""
    sim()
    ref()
    s, r = [], []
    for _ in range(reps):
        s.append(timed(sim))
        r.append(timed(ref))
    return (statistics.median(x[0] for x in s), statistics.median(x[0] for x in r),
            statistics.median(x[1] for x in s), statistics.median(x[1] for x in r))


def tune_allocator() -> bool:
    """glibc mallopt: no mmap / trim for blocks under 1 GiB, one arena. False when not glibc."""
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return False
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD, M_ARENA_MAX = -1, -3, -8
    ok = True
    for param, value in ((M_MMAP_THRESHOLD, 1 << 30), (M_TRIM_THRESHOLD, 1 << 30), (M_ARENA_MAX, 1)):
        ok &= bool(libc.mallopt(param, value))
    return ok


class Case:
    """One row: name, shape text, the work unit and amount, and the two callables."""

    def __init__(self, name: str, shape: str, unit: str, work: float, sim: Callable, ref: Callable,
                 check: Callable[[], None]):
        self.name, self.shape, self.unit, self.work = name, shape, unit, work
        self.sim, self.ref, self.check = sim, ref, check


def close(a: torch.Tensor, b: torch.Tensor, tol: float) -> None:
    torch.testing.assert_close(a.float(), b.float(), rtol=tol, atol=tol)


def cases(div: int, fa_seq: int) -> list[Case]:
    torch.manual_seed(0)
    out = []
    M, N = 8192 // div, 4096
    x = torch.randn(M, N).bfloat16()
    w = torch.randn(N).bfloat16()
    nbytes = 2.0 * M * N * 2
    out.append(Case("rms_norm", f"{M}x{N} bf16", "GB/s", nbytes, lambda: ops.rms_norm(x, w).y,
                    lambda: F.rms_norm(x, [N], w, 1e-6),
                    lambda: close(ops.rms_norm(x, w).y, F.rms_norm(x.float(), [N], w.float(), 1e-6), 2e-2)))
    out.append(Case("softmax", f"{M}x{N} bf16", "GB/s", nbytes, lambda: ops.softmax(x), lambda: torch.softmax(x, -1),
                    lambda: close(ops.softmax(x), torch.softmax(x.float(), -1), 1e-2)))
    from gelu_dev import gelu

    xf = torch.randn(M, N)
    gk = gelu(M, N, block_M=4, tiles=max(1, M // 4 // 48))
    out.append(Case("gelu", f"{M}x{N} fp32", "GB/s", 2.0 * M * N * 4, lambda: gk(xf),
                    lambda: F.gelu(xf, approximate="tanh"),
                    lambda: close(gk(xf), xf * torch.sigmoid(1.702 * xf), 1e-4)))
    G = 2048 // div
    a, b = torch.randn(G, 2048).half(), torch.randn(2048, G).half()
    af, bf = a.float(), b.float()
    out.append(Case("gemm", f"{G}x{G}x2048 fp16", "GFLOP/s", 2.0 * G * G * 2048, lambda: ops.gemm(a, b),
                    lambda: af @ bf, lambda: close(ops.gemm(a, b), af @ bf, 1e-2)))
    from flash_attention_dev import flash_attention

    B, H, S, D = 1, 16 // min(div, 16), fa_seq // div, 128
    q, k, v = (torch.randn(B, H, S, D).half() for _ in range(3))
    qf, kf, vf = q.float(), k.float(), v.float()
    fk = flash_attention(B, H, S, D)
    out.append(Case("flash_attn", f"B{B} H{H} S{S} D{D} fp16", "GFLOP/s", 4.0 * B * H * S * S * D,
                    lambda: fk(q, k, v), lambda: F.scaled_dot_product_attention(qf, kf, vf),
                    lambda: close(fk(q, k, v), F.scaled_dot_product_attention(qf, kf, vf), 1e-2)))
    x2 = torch.randn(M, 2 * N).bfloat16()

    def swiglu_ref(t: torch.Tensor) -> torch.Tensor:
        a_, b_ = t.chunk(2, -1)
        return F.silu(a_) * b_

    out.append(Case("swiglu", f"{M}x{2 * N} bf16", "GB/s", 3.0 * M * N * 2, lambda: ops.swiglu(x2),
                    lambda: swiglu_ref(x2), lambda: close(ops.swiglu(x2), swiglu_ref(x2.float()), 2e-2)))
    bias = torch.randn(N).bfloat16()
    out.append(Case("layer_norm", f"{M}x{N} bf16", "GB/s", nbytes, lambda: ops.layer_norm(x, w, bias).y,
                    lambda: F.layer_norm(x, [N], w, bias),
                    lambda: close(ops.layer_norm(x, w, bias).y, F.layer_norm(x.float(), [N], w.float(), bias.float()),
                                  5e-2)))
    out.append(Case("log_softmax", f"{M}x{N} bf16", "GB/s", nbytes, lambda: ops.log_softmax(x),
                    lambda: torch.log_softmax(x, -1),
                    lambda: close(ops.log_softmax(x), torch.log_softmax(x.float(), -1), 5e-2)))
    T_, E = 16384 // div, 256
    logits = torch.randn(T_, E)

    def gate_ref() -> torch.Tensor:
        s = torch.sigmoid(logits)
        wv, _ = s.topk(8, -1)
        return wv / (1e-20 + wv.sum(-1, keepdim=True))

    out.append(Case("topk_gate", f"{T_}x{E} fp32 k8", "GB/s", 4.0 * T_ * E, lambda: ops.topk_gate(logits),
                    gate_ref, lambda: close(ops.topk_gate(logits).weights, gate_ref(), 1e-5)))
    dy = torch.randn(M, N).bfloat16()

    def rms_bwd_ref() -> torch.Tensor:
        xr = x.detach().requires_grad_(True)
        F.rms_norm(xr, [N], w, 1e-6).backward(dy)
        return xr.grad

    out.append(Case("rms_norm_bwd", f"{M}x{N} bf16", "GB/s", 3.0 * M * N * 2, lambda: ops.rms_norm_backward(dy, x, w),
                    rms_bwd_ref, lambda: None))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--fa-seq", type=int, default=1024, help="FlashAttention's S (the issue's 4096 takes minutes)")
    ap.add_argument("--small", action="store_true", help="leading dimensions / 8 (a smoke run)")
    ap.add_argument("--only", help="comma-separated row names")
    ap.add_argument("--out", help="write the JSON here (default: stdout only)")
    args = ap.parse_args()
    only = set(args.only.split(",")) if args.only else None
    todo = [c for c in cases(8 if args.small else 1, args.fa_seq) if only is None or c.name in only]
    for c in todo:
        c.check()
    rows: dict[str, dict] = {c.name: {"name": c.name, "shape": c.shape, "unit": c.unit} for c in todo}
    tuned = False
    for setting in ("default", "tuned"):
        if setting == "tuned":
            tuned = tune_allocator()
        for c in todo:
            sim_s, torch_s, sim_cpu, torch_cpu = side_by_side(c.sim, c.ref, args.reps)
            r = rows[c.name]
            r[f"sim_s_{setting}"], r[f"torch_s_{setting}"] = sim_s, torch_s
            r[f"ratio_{setting}"] = torch_s / sim_s
            r[f"sim_cpu_s_{setting}"], r[f"torch_cpu_s_{setting}"] = sim_cpu, torch_cpu
            r[f"ratio_cpu_{setting}"] = torch_cpu / sim_cpu
            r[f"sim_rate_{setting}"], r[f"torch_rate_{setting}"] = c.work / sim_s / 1e9, c.work / torch_s / 1e9
            print(f"{setting:7s} {c.name:12s} {c.shape:22s} sim {sim_s:8.3f} s ({c.work / sim_s / 1e9:7.2f} {c.unit})"
                  f"  torch {torch_s:8.3f} s ({c.work / torch_s / 1e9:7.2f} {c.unit})  ratio {torch_s / sim_s:.3f}"
                  f"  CPU s {sim_cpu:.3f} / {torch_cpu:.3f} ratio {torch_cpu / sim_cpu:.3f}",
                  flush=True)
    result = {"bench": "host_vs_torch", "reps": args.reps, "small": args.small, "allocator_tuned": tuned,
              "torch": torch.__version__, "torch_threads": torch.get_num_threads(), "cpus": os.cpu_count(),
              "machine": platform.machine(), "loadavg": os.getloadavg(), "rows": list(rows.values())}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
