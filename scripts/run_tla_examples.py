#!/usr/bin/env python3
"""Runs TileLang-Ascend example scripts unchanged on tl-ascend and tabulates what happened.

    scripts/run_tla_examples.py DIR [--timeout S] [--cpu-timeout S] [--jobs N] [--only a,b/c,d/e.py]
                                [--json] [--blockers] [--check-hazards]

Every `*.py` under DIR runs as `python -m tl_ascend.run SCRIPT` (the documented way to run an
unmodified script, docs/python.md), one process each, in the script's own directory, with a
timeout. Each gets one status:

  pass      exit status 0 and the script's own success line ("Kernel Output Match!", "Test
            passed!", "All check passed", ...), and no failure line;
  wrong     the script's own check failed: it raised an AssertionError (torch.testing.
            assert_close, numpy.testing, a bare `assert` on the result), or printed its failure
            line ("Kernel Output Not Match!", "... failed!") and exited without another
            exception (the exception that ends a script decides its status);
  rejected  tl-ascend refused the script with a tl_ascend.Error (an unsupported construct, an
            unknown name, a kernel the verifier rejects): the reason names it;
  crash     any other exception (a raw Python error, tl_ascend.InternalError), or death by a
            signal;
  timeout   still running after the timeout (the process group is killed), or more CPU time
            used than --cpu-timeout allows (the kernel stops it with SIGXCPU);
  no-check  exit status 0 without a success or failure line: the script checks nothing we can
            read (a benchmark, a helper module).

A script whose kernels store identical bytes from two cores to one GM range (under
--check-hazards: a remark of the hazard checker, not an error) gets "(N duplicate-store
remark(s))" after its reason.

Each row also gives the CPU seconds the script used (user + system, its threads and the children
it waited for, from wait4): on a machine shared with other work the wall seconds grow with the
load, the CPU seconds do not. --cpu-timeout limits those instead of wall time (RLIMIT_CPU), so a
table measured on a busy machine says which scripts are slow rather than which ran while it was
busy; the wall --timeout then only catches a script that blocks.

The table has one row per script with the first line of the reason, then the counts per
directory. --json prints the same as JSON. --blockers groups the reasons (file names and
numbers stripped) and counts the scripts each stops, most first: the order to fix them in.
While it runs, each finished script prints one progress line on stderr ("[3/26] pass 41.2s
dir/script.py  reason"). The examples are never part of this repository: fetch them elsewhere (e.g. /tmp) and point DIR
there.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import signal
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass

STATUSES = ("pass", "wrong", "rejected", "crash", "timeout", "no-check")

# The examples' success lines (read from tilelang-ascend's examples/: "Kernel Output Match!",
# "Test passed!", "Test Passed!", "All check passed", "[PASS] ...", "✅ ... passed!",
# "Results match! Verification successful.", "GEMV example passed!").
SUCCESS = re.compile(r"output match|\btests? pass(ed)?\b|\bpassed\b|\[PASS\]|\bPASS:|all checks? passed|"
                     r"verification successful|results match|✅", re.IGNORECASE)
# Their failure lines ("[ERROR] Kernel Output Not Match!", "Test failed! The precision is not
# correct!", "[FAILED] ...", "❌ ...", "[PRECISION_FAIL] ...", "Failed test case ...").
FAILURE = re.compile(r"not match|\bfailed\b|precision is not correct|differ significantly|❌|precision_fail|"
                     r"mismatch \(", re.IGNORECASE)
# Lines that look like a verdict but are not the kernel's ("init successful!", an ACL/rank set-up line,
# a C++ comment of a printed kernel source: under tl_ascend.run get_kernel_source() returns a
# construct the emitter has no form for as "// ..." lines, e.g. "GM rows that do not match the L1
# region", which sparse_flash_attention/example_sparse_flash_attn_mask_pa.py prints before its
# "Test Passed!").
NOT_A_VERDICT = re.compile(r"init(ialization)? (successful|failed)|^rank \d+: (setting|finalized)|^//", re.IGNORECASE)
# The last line of a Python traceback: "Module.ExceptionName: message" (or just the name).
EXCEPTION = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning)|[A-Za-z_][\w.]*\.Error)"
                       r"(?::\s*(.*))?$")


@dataclass
class Result:
    script: str
    directory: str
    status: str
    seconds: float
    returncode: int | None
    reason: str
    cpu_seconds: float = 0.0


def _exception(stderr: str) -> tuple[str, str] | None:
    """(exception type, first line of its message) of the traceback that ended the script."""
    lines = stderr.rstrip().splitlines()
    if not any(line.startswith("Traceback (most recent call last)") for line in lines):
        return None
    for i in range(len(lines) - 1, -1, -1):
        m = EXCEPTION.match(lines[i])
        if m:
            message = (m.group(2) or "").strip()
            # "kernel 'main' fails verification on target A2 (3 errors):" says what only on the next line.
            if message.endswith(":") and i + 1 < len(lines):
                message += " " + lines[i + 1].strip()
            return m.group(1), message
    return None


def _verdict_lines(stdout: str) -> list[str]:
    return [line.strip() for line in stdout.splitlines() if line.strip() and not NOT_A_VERDICT.search(line.strip())]


def classify(returncode: int | None, stdout: str, stderr: str, timed_out: bool) -> tuple[str, str]:
    """(status, reason) of one run (module docstring)."""
    if timed_out:
        return "timeout", ""
    lines = _verdict_lines(stdout)
    failed = [line for line in lines if FAILURE.search(line)]
    if returncode == 0:
        if failed:
            return "wrong", failed[0]
        passed = [line for line in lines if SUCCESS.search(line)]
        if passed:
            return "pass", passed[-1]
        # A script that reports through `logging` (deepseek_v4/act_quant.py) writes its verdict to
        # stderr.
        logged = [line for line in _verdict_lines(stderr) if SUCCESS.search(line)]
        if logged:
            return "pass", logged[-1]
        return "no-check", (lines[-1] if lines else "(no output)")
    if returncode is not None and returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return "crash", f"killed by {name}"
    exc = _exception(stderr)
    if exc is None:
        last = stderr.strip().splitlines()[-1] if stderr.strip() else f"exit status {returncode}"
        if failed:
            return "wrong", failed[0]
        if last.startswith("tl_ascend.run:"):  # the runner refused (a real tilelang installed, a bad path)
            return "rejected", last
        return "crash", last
    # The exception that ended the script decides, not a failure line it printed on the way out
    # (`except Exception: print("Failed test case ..."); raise` around a compile that tl-ascend
    # rejected is a rejection, not a wrong result).
    kind, message = exc
    reason = f"{kind.split('.')[-1]}: {message}" if message else kind.split(".")[-1]
    if kind.split(".")[-1] == "AssertionError":
        return "wrong", reason
    if kind.startswith("tl_ascend.") and not kind.endswith("InternalError"):
        return "rejected", reason
    return "crash", reason


def _limit_cpu(pid: int, seconds: float | None) -> None:
    """RLIMIT_CPU on a started script (soft: SIGXCPU at `seconds`, hard: SIGKILL 5 s later), set
    from outside with prlimit: a preexec_fn may deadlock in a process running threads (--jobs)."""
    if seconds is not None:
        soft = max(1, int(seconds + 0.999))
        resource.prlimit(pid, resource.RLIMIT_CPU, (soft, soft + 5))


def _wait(proc: subprocess.Popen, timeout: float) -> tuple[str, str, bool, float]:
    """(stdout, stderr, timed out, CPU seconds) of a started script: its pipes drained by threads
    and the process reaped with os.wait4, whose rusage is the script's CPU time (Popen.wait
    discards it)."""
    out: dict[str, str] = {}

    def drain(name: str, stream) -> None:
        out[name] = stream.read()

    readers = [threading.Thread(target=drain, args=(n, st), daemon=True)
               for n, st in (("stdout", proc.stdout), ("stderr", proc.stderr))]
    for t in readers:
        t.start()
    timed_out = threading.Event()

    def kill() -> None:
        timed_out.set()
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    timer = threading.Timer(timeout, kill)
    timer.start()
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    finally:
        timer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if timed_out.is_set():  # the script's children may hold the pipes open: the group is gone now
        kill()
    for t in readers:
        t.join()
    return out.get("stdout", ""), out.get("stderr", ""), timed_out.is_set(), usage.ru_utime + usage.ru_stime


def run_one(path: str, root: str, timeout: float, python: str, check_hazards: bool = False,
            cpu_timeout: float | None = None) -> Result:
    rel = os.path.relpath(path, root)
    directory = rel.split(os.sep)[0] if os.sep in rel else "."
    start = time.monotonic()
    # A session of its own: on a timeout the whole group (the script and anything it started) is killed.
    proc = subprocess.Popen([python, "-m", "tl_ascend.run", os.path.abspath(path)], cwd=os.path.dirname(path) or ".",
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
                            start_new_session=True,
                            env={**os.environ, "TL_CHECK_HAZARDS": "1" if check_hazards else "0"})
    _limit_cpu(proc.pid, cpu_timeout)
    stdout, stderr, timed_out, cpu = _wait(proc, timeout)
    # Only RLIMIT_CPU sends SIGXCPU; its hard limit kills (a script ignoring SIGXCPU) 5 CPU s later.
    over_cpu = cpu_timeout is not None and not timed_out and (
        proc.returncode == -signal.SIGXCPU or (proc.returncode == -signal.SIGKILL and cpu >= cpu_timeout))
    status, reason = classify(proc.returncode, stdout, stderr, timed_out or over_cpu)
    if timed_out:
        reason = f"still running after {timeout:g} s"
    elif over_cpu:
        reason = f"used {cpu_timeout:g} CPU seconds without finishing"
    # Two cores storing identical bytes to one GM range is no race (the chip keeps the same bytes
    # whichever lands last): the hazard checker prints a remark per such pair of stores instead
    # of failing (docs/virtual_npu.md, "Duplicate stores"). Counted here so a pass says so.
    dups = stderr.count("remark: hazard checker: duplicate store")
    if dups:
        reason = f"{reason} ({dups} duplicate-store remark(s))"
    return Result(rel, directory, status, round(time.monotonic() - start, 1), proc.returncode, reason, round(cpu, 1))


def find_scripts(root: str, only: set[str] | None) -> list[str]:
    out = []
    for d, subdirs, files in os.walk(root):
        subdirs.sort()
        for f in sorted(files):
            if not f.endswith(".py") or f == "__init__.py":
                continue
            path = os.path.join(d, f)
            rel = os.path.relpath(path, root)
            # An --only entry names a top-level directory, a deeper one ("flash_attention/fa_opt")
            # or one script ("gemm/example_gemm.py"): reruns of a few scripts need no copy.
            if only is None or any(rel == o or rel.startswith(o.rstrip(os.sep) + os.sep) for o in only):
                out.append(path)
    return out


def blocker_key(reason: str) -> str:
    """A reason with its file:line locations, quoted code and figures stripped, so the same
    blocker in different scripts groups together."""
    r = re.sub(r"\S+\.py:\d+(:\d+)?(\s*\(via [^)]*\))?:?\s*", "", reason)
    r = re.sub(r"`[^`]*`", "`...`", r)
    r = re.sub(r"(kernel|buffer|region of|tensor) '[^']*'", r"\1 '...'", r)
    r = re.sub(r"\b\d+\b", "N", r)
    return r.strip()[:140]


def per_directory(results: list[Result]) -> dict[str, dict[str, int]]:
    table: dict[str, dict[str, int]] = defaultdict(lambda: {s: 0 for s in STATUSES})
    for r in results:
        table[r.directory][r.status] += 1
    return dict(sorted(table.items()))


def print_table(results: list[Result], blockers: bool) -> None:
    w = max([len(r.script) for r in results] + [6])
    print(f"{'script':<{w}}  {'status':<8}  {'s':>6}  {'cpu s':>6}  reason")
    for r in results:
        reason = r.reason if len(r.reason) <= 150 else r.reason[:147] + "..."
        print(f"{r.script:<{w}}  {r.status:<8}  {r.seconds:>6.1f}  {r.cpu_seconds:>6.1f}  {reason}")
    print()
    dirs = per_directory(results)
    dw = max([len(d) for d in dirs] + [9])
    print(f"{'directory':<{dw}}  " + "  ".join(f"{s:>8}" for s in STATUSES) + "     all")
    total = Counter()
    for d, counts in dirs.items():
        total.update(counts)
        print(f"{d:<{dw}}  " + "  ".join(f"{counts[s]:>8}" for s in STATUSES) + f"  {sum(counts.values()):>6}")
    print(f"{'total':<{dw}}  " + "  ".join(f"{total[s]:>8}" for s in STATUSES) + f"  {sum(total.values()):>6}")
    if blockers:
        print("\nfirst blockers (scripts stopped, reason):")
        for key, n in Counter(blocker_key(r.reason) for r in results
                              if r.status in ("rejected", "crash")).most_common():
            print(f"{n:>4}  {key}")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", help="a directory of TileLang-Ascend scripts (e.g. tilelang-ascend's examples/)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per script (default 300)")
    ap.add_argument("--cpu-timeout", type=float, default=None,
                    help="CPU seconds per script (user + system, all its threads; RLIMIT_CPU): a limit that does "
                         "not depend on how busy the machine is (default: none)")
    ap.add_argument("--jobs", type=int, default=1, help="scripts run at once (default 1)")
    ap.add_argument("--only", default=None,
                    help="comma-separated directories (top-level or deeper) or scripts of DIR to run, relative to DIR")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--blockers", action="store_true", help="group the rejections and crashes by reason")
    ap.add_argument("--python", default=sys.executable, help="the interpreter to run the scripts with")
    ap.add_argument("--check-hazards", action="store_true",
                    help="run every kernel under the hazard checker (and the stale-data checker): a race the "
                         "script's flags leave is then an error naming both instructions (slower)")
    args = ap.parse_args(argv)
    if not os.path.isdir(args.dir):
        ap.error(f"'{args.dir}' is not a directory")
    if args.timeout <= 0 or args.jobs < 1 or (args.cpu_timeout is not None and args.cpu_timeout <= 0):
        ap.error("--timeout and --cpu-timeout must be > 0 and --jobs >= 1")
    only = set(args.only.split(",")) if args.only else None
    scripts = find_scripts(args.dir, only)
    done = [0]

    def one(p: str) -> Result:
        r = run_one(p, args.dir, args.timeout, args.python, args.check_hazards, args.cpu_timeout)
        # One line per finished script on stderr, so a long run (the checker on attention
        # scripts takes minutes each) shows where it is and keeps what it found if stopped.
        done[0] += 1
        first = r.reason.splitlines()[0] if r.reason else ""
        print(f"[{done[0]}/{len(scripts)}] {r.status:8} {r.seconds:7.1f}s {r.cpu_seconds:7.1f}cpu  {r.script}  {first}",
              file=sys.stderr, flush=True)
        return r

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(one, scripts))
    if args.json:
        print(json.dumps({"results": [asdict(r) for r in results], "per_directory": per_directory(results),
                          "blockers": Counter(blocker_key(r.reason) for r in results
                                              if r.status in ("rejected", "crash")).most_common()}, indent=1))
    else:
        print_table(results, args.blockers)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
