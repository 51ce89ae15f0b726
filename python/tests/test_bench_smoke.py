"""bench/python_overhead.py still runs (two repetitions; its timings are not checked here:
performance is measured by the benchmark, never by a test)."""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_the_overhead_benchmark_runs_and_writes_google_benchmark_json(tmp_path):
    out = tmp_path / "overhead.json"
    r = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "python_overhead.py"), "--reps", "2",
                        "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    names = [b["name"] for b in json.loads(out.read_text())["benchmarks"]]
    assert "parse/flash_attention" in names and "call/ub_copy_16x64" in names
