#!/usr/bin/env python3
"""Re-runs every expressible calibration row of the timing model (docs/calibration.md) and prints
the table: the model's task duration (kernel + launch overhead), the published measurement
(docs/calibration.md, rows C1-C13) and the error, then the median |error| and the worst row.

No constant is fitted here: the script only runs `tlc run KERNEL --mode timed --timing-only` with
each row's shape and reads the result.

    scripts/calibrate.py [--tlc build/default/tlc] [--only C11] [--markdown]

The 8192^3 GEMMs and the [1, 64]-tile copy are the long runs (tens of seconds each); the whole
table takes several minutes on two cores.
"""
import argparse
import re
import statistics
import subprocess
import sys
import time

# (row, case, kernel, {param: value}, target, published Task Duration in us)
ROWS = [
    ("C1", "GEMM 1536^3 fp16->fp32, A3", "gemm_pipelined", dict(M=1536, N=1536, K=1536, out_dtype="float32"), "A3", 38.8),
    ("C1", "GEMM 3072^3 fp16->fp32, A3", "gemm_pipelined", dict(M=3072, N=3072, K=3072, out_dtype="float32"), "A3", 206.7),
    ("C1", "GEMM 6144^3 fp16->fp32, A3", "gemm_pipelined", dict(M=6144, N=6144, K=6144, out_dtype="float32"), "A3", 1506),
    ("C1", "GEMM 7680^3 fp16->fp32, A3", "gemm_pipelined", dict(M=7680, N=7680, K=7680, out_dtype="float32"), "A3", 3168),
    ("C2", "GEMM 8192^3 fp16 (Matmul API)", "gemm_pipelined", dict(M=8192, N=8192, K=8192), "A2", 4012.4),
    ("C3", "GEMM 8192^3 fp16, 950 32 AIC", "gemm_pipelined", dict(M=8192, N=8192, K=8192, blocks=32), "950", 2558.2),
    ("C4", "GEMM 8192^3 fp16 (basic API)", "gemm_pipelined", dict(M=8192, N=8192, K=8192), "A2", 4121.2),
    ("C5", "GEMM 4096^3 fp16", "gemm_pipelined", dict(M=4096, N=4096, K=4096), "A2", 497.9),
    ("C6", "GEMM 5416x1408x6144 fp16 (run at M=5504)", "gemm_pipelined", dict(M=5504, N=1408, K=6144, bN=128), "A2", 368.1),
    # asc-devkit's add example: cases 6 (A2) and 5 (950) read x and y past L2
    # (SetL2CacheHint(CACHE_MODE_DISABLE)); case 4 is the same code with its reads through L2.
    ("C9", "add 8192^2 fp16, 48 AIV, reads past L2 (case 6)", "elementwise_add", dict(M=8192, l2_cache="disable"), "A2", 184.5),
    ("C9'", "add, reads through L2 (case 4)", "elementwise_add", dict(M=8192), "A2", 264.02),
    ("C10", "add 8192^2 fp16, 950 64 AIV, reads past L2 (case 5)", "elementwise_add", dict(M=8192, blocks=32, l2_cache="disable"), "950", 182.0),
    ("C10'", "add, 950, reads through L2 (case 4)", "elementwise_add", dict(M=8192, blocks=32), "950", 247.665),
    ("C11", "GM->UB 12288^2 fp16, tile [64,1024]", "copy_gm_ub", dict(M=12288, tM=64, tN=1024), "A2", 215.82),
    ("C11", "GM->UB tile [64,64]", "copy_gm_ub", dict(M=12288, tM=64, tN=64, slots=16), "A2", 233.54),
    ("C11", "GM->UB tile [1,64]", "copy_gm_ub", dict(M=12288, tM=1, tN=64, slots=192), "A2", 564.84),
    ("C11", "GM->UB tile [64,1024], 950 64 AIV", "copy_gm_ub", dict(M=12288, tM=64, tN=1024, blocks=32), "950", 188.52),
    ("C11", "GM->UB tile [64,64], 950", "copy_gm_ub", dict(M=12288, tM=64, tN=64, slots=16, blocks=32), "950", 208.64),
    ("C11", "GM->UB tile [1,64], 950", "copy_gm_ub", dict(M=12288, tM=1, tN=64, slots=192, blocks=32), "950", 884.06),
    ("C12", "GM->L1 ND->NZ 12288^2 fp16, tile [64,256], 24 AIC", "copy_gm_l1", dict(M=12288, tM=64, tN=256, slots=8), "A2", 230.24),
    ("C12", "GM->L1 tile [64,64]", "copy_gm_l1", dict(M=12288, tM=64, tN=64, slots=32), "A2", 300.7),
    ("C12", "GM->L1 tile [64,256], 950 32 AIC", "copy_gm_l1", dict(M=12288, tM=64, tN=256, slots=8, blocks=32), "950", 190.52),
    ("C12", "GM->L1 tile [64,64], 950", "copy_gm_l1", dict(M=12288, tM=64, tN=64, slots=32, blocks=32), "950", 245.1),
    ("C13", "GELU 8192^2 fp32, 48 AIV", "gelu", dict(M=8192), "A2", 369.8),
    ("C13", "GELU 8192^2 fp32, 950 64 AIV", "gelu", dict(M=8192, blocks=32), "950", 344.4),
]

# Rows the model cannot run, and why (printed under the table).
NOT_RUN = [
    ("C5", "batched 8 x 4096^3: gemm_pipelined has no batch dimension"),
    ("C7", "FlashAttention S = 32K-128K, 12 heads: tens of millions of trace events per run"),
    ("C8", "SparseFlashAttention (paged, top-k 2048): no such kernel yet"),
    ("C12", "L2-reuse variant (4x N-sliced re-reads): no kernel for the re-read order"),
]


def run(tlc, kernel, params, target):
    cmd = [tlc, "run", kernel, "--mode", "timed", "--timing-only", "--target", target]
    for k, v in params.items():
        cmd += ["--set", f"{k}={v}"]
    t0 = time.time()
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{out.stdout}\n{out.stderr}")
    task = re.search(r"task duration ([0-9.]+) us", out.stdout)
    kern = re.search(r"cycles = ([0-9.]+) us", out.stdout)
    busy = re.search(r"^\s+all \|(.*)$", out.stdout, re.M)
    return float(task.group(1)), float(kern.group(1)), busy.group(1).strip() if busy else "", time.time() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tlc", default="build/default/tlc")
    ap.add_argument("--only", help="run only the rows whose id starts with this (C11, C1, ...)")
    args = ap.parse_args()
    cache = {}
    errors = []
    print("| # | case | model task us (kernel) | published us | error | busy, all core groups (AIC S M MTE1 MTE2 MTE3 FIX / AIV S V MTE2 MTE3) |")
    print("|---|---|---|---|---|---|")
    for row, case, kernel, params, target, published in ROWS:
        if args.only and not row.startswith(args.only):
            continue
        key = (kernel, tuple(sorted(params.items())), target)
        if key not in cache:
            cache[key] = run(args.tlc, kernel, params, target)
        task, kern, busy, secs = cache[key]
        err = (task - published) / published * 100
        errors.append((abs(err), row, case, err, target))
        print(f"| {row} | {case} | {task:.1f} ({kern:.1f}) | {published} | {err:+.1f} % | {busy} |", flush=True)
    def summary(label, rows):
        if not rows:
            return
        worst = max(rows)
        print(f"{label}: {len(rows)} rows; median |error| {statistics.median(e[0] for e in rows):.1f} %; "
              f"worst {worst[1]} {worst[2]}: {worst[3]:+.1f} %")

    print()
    summary("all", errors)
    summary("all but the case-4 rows C9'/C10' (the 23 rows of earlier tables)",
            [e for e in errors if not e[1].endswith("'")])
    summary("A2/A3", [e for e in errors if e[4] != "950"])
    summary("950 (A2's copy and vector constants)", [e for e in errors if e[4] == "950"])
    for row, why in NOT_RUN:
        print(f"not run: {row}: {why}")


if __name__ == "__main__":
    main()
