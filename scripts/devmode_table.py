#!/usr/bin/env python3
"""The developer-mode table of docs/developer_mode.md (issue 13, must-show 5): for each `*_dev`
kernel, its code lines, the synchronisations its busiest block executes and its simulated cycles,
against its expert twin at the same shape; then its cycles with each "Developer mode II"
automation switched off (pipeline_loops, split_aiv, minimise_syncs), so the table shows what each
one buys. Nothing here is fitted: every figure comes from `tlc run --mode timed --timing-only`,
`tlc report` and the example sources.

    scripts/devmode_table.py [--tlc build/default/tlc]

About a minute on two cores.
"""
import argparse
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent

# (developer kernel, its params, expert twin, its params, what the shape is)
ROWS = [
    ("gemm_dev", dict(M=1024, N=1024, K=1024), "gemm_pipelined", dict(M=1024, N=1024, K=1024), "GEMM 1024^3"),
    ("gemm_dev", dict(M=2048, N=2048, K=2048), "gemm_pipelined", dict(M=2048, N=2048, K=2048), "GEMM 2048^3"),
    ("flash_attention_dev", dict(S=512, D=128), "flash_attention_pipelined", dict(S=512, D=128, bD=128),
     "FlashAttention S=512 D=128"),
    ("flash_attention_dev", dict(S=512, D=512), "flash_attention_pipelined", dict(S=512, D=512),
     "FlashAttention S=512 D=512"),
    ("flash_attention_dev", dict(S=1024, D=128), "flash_attention_pipelined", dict(S=1024, D=128, bD=128),
     "FlashAttention S=1024 D=128"),
    ("rms_norm_dev", dict(M=1024, N=1024, rM=16, tiles=3), "rms_norm", dict(M=1024, N=1024, bN=1024, passes=1),
     "RMSNorm 1024 x 1024 (expert: 1 pass)"),
    ("rms_norm_dev", dict(M=1024, N=1024, rM=16, tiles=3), "rms_norm", dict(M=1024, N=1024, bN=1024, passes=2),
     "RMSNorm 1024 x 1024 (expert: 2 passes)"),
    ("add_dev", dict(M=96, N=8192, bM=2, tiles=2), "elementwise_add", dict(M=96, N=8192), "add 96 x 8192 fp16"),
    ("gelu_dev", dict(M=96, N=8192, bM=2, tiles=2), "gelu", dict(M=96, N=8192), "GELU 96 x 8192 fp32"),
    ("softmax_dev", dict(M=4096, N=4096, bM=8, tiles=22), None, None, "softmax 4096 x 4096 fp32"),
    ("matmul_add_dev", dict(), None, None, "matmul + add 256^3"),
]
OFF = ["pipeline_loops", "split_aiv", "minimise_syncs"]
HBM_BYTES_PER_CYCLE = 1.8e12 / 1.85e9  # A2: HBM ~1.8 TB/s at 1.85 GHz (src/target/targets.cpp)


def tlc(args, tool, may_fail=False):
    out = subprocess.run([tool] + args, capture_output=True, text=True)
    if out.returncode != 0:
        if may_fail and out.returncode == 1:
            return None
        raise SystemExit(f"tlc {' '.join(args)} failed:\n{out.stdout}{out.stderr}")
    return out.stdout


def sets(params):
    return [x for k, v in params.items() for x in ("--set", f"{k}={v}")]


def cycles(tool, kernel, params, off=None):
    args = ["run", kernel, "--mode", "timed", "--timing-only"] + sets(params)
    if off:
        args += ["--off", off]
    text = tlc(args, tool, may_fail=off is not None)
    if text is None:  # switched off, the kernel does not compile (e.g. its tiles no longer fit)
        return None, 0
    m = re.search(r"\(timed\): (\d+) cycles.*GM traffic [\d.]+ MB \(([\d.]+) MB to HBM\)", text)
    if not m:
        raise SystemExit(f"no cycle count in:\n{text}")
    return int(m.group(1)), float(m.group(2)) * 1e6


def syncs(tool, kernel, params):
    text = tlc(["report", kernel] + sets(params), tool)
    m = re.search(r"the most one block executed: (\d+)", text)
    return int(m.group(1)) if m else 0


def code_lines(kernel):
    """Code lines of examples/<file>.cpp from `namespace tl::examples {` to TL_REGISTER_KERNEL, as
    tests/examples/developer_size_test.cpp counts them."""
    lines, inside = 0, False
    for line in (ROOT / "examples" / f"{kernel}.cpp").read_text().splitlines():
        if not inside:
            inside = line.startswith("namespace tl::examples {")
            continue
        if line.startswith("TL_REGISTER_KERNEL"):
            break
        stripped = line.strip()
        lines += bool(stripped) and not stripped.startswith("//")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tlc", default=str(ROOT / "build/default/tlc"))
    a = ap.parse_args()
    print("| shape | developer | lines | syncs | cycles | expert twin | lines | syncs | cycles | dev speed |"
          " no pipelining | no AIV split | no sync pruning |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for dev, dp, expert, ep, shape in ROWS:
        c, hbm = cycles(a.tlc, dev, dp)
        offs = []
        for o in OFF:
            co, _ = cycles(a.tlc, dev, dp, o)
            offs.append("does not fit" if co is None else f"{co:,} ({co / c:.2f}x)" if co != c else "same")
        if expert:
            e, _ = cycles(a.tlc, expert, ep)
            twin = (f"`{expert}` | {code_lines(expert)} | {syncs(a.tlc, expert, ep)} | {e:,} | {e / c:.2f}x")
        else:
            roof = hbm / HBM_BYTES_PER_CYCLE / c
            twin = f"(none) | | | | {roof:.0%} of HBM roofline" if hbm > 1e7 else "(none) | | | |"
        print(f"| {shape} | `{dev}` | {code_lines(dev)} | {syncs(a.tlc, dev, dp)} | {c:,} | {twin} | "
              + " | ".join(offs) + " |")
        sys.stdout.flush()
    print("\ndev speed: expert cycles / developer cycles (>= 1: the developer kernel is faster). The"
          " three last columns: the developer kernel's cycles with that automation off (and how much"
          " slower). syncs: the synchronisations the busiest block executes (tlc report).")


if __name__ == "__main__":
    main()
