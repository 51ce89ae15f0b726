#!/usr/bin/env python3
"""Runs one IR-file test (tests/pass/*.tl; docs/compiler.md, "IR-file tests").

A .tl file is IR text (what `tlc print --no-loc` prints) with directives in `#` comments:

    # RUN: tlc opt %s --passes=infer_scopes | FileCheck %s
    # RUN: tlc opt %s --passes=mask_tails | FileCheck %s --check-prefix=MASK
    # RUN: not tlc opt %s --passes=split_cube_vector
    # CHECK: T.alloc_ub((16, 16), "float32")
    # CHECK-NEXT: ...        (the line right after the previous match)
    # CHECK-NOT: T.alloc_shared   (not between the previous match and the next one)
    # expected-error: TEXT   (a `not` RUN line: its stderr contains TEXT)
    # expected-error@+1: TEXT  (... and names this file at the line N lines below)
    # expected-error: `T.exp(x)` at %s:[[@LINE-2]] reads   (the file, a line counted from here)
    # expected-remark: TEXT  (each RUN line that succeeds: its stderr, where remarks go, has TEXT;
    #                         with any such line, every `remark:` line of that stderr is expected)

`%s` is the file, `tlc` the tlc binary given on the command line. A pattern matches as a
substring of a line; runs of whitespace match any run of whitespace; `{{re}}` is a regular
expression. FileCheck's two flags make a match exact: `--match-full-lines` (the pattern is the
whole line, its leading and trailing whitespace aside) and `--strict-whitespace` (whitespace,
the indentation after `CHECK: ` included, matches itself only). With both, a chain of
CHECK-NEXT lines is the printed IR line for line, nesting included; `CHECK-NOT: {{.+}}` after
the last one says nothing follows. This is a small own checker rather than LLVM's lit + FileCheck from PyPI: the
subset the pass tests need is about 150 lines, needs nothing installed beyond Python, and its
messages name the .tl line of the directive that failed.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from dataclasses import dataclass

DIRECTIVE = re.compile(r"^\s*#\s*([A-Za-z][A-Za-z0-9_-]*)(@[+-]?\d+)?:\s?(.*)$")


@dataclass
class Check:
    kind: str  # "", "NEXT" or "NOT"
    pattern: str
    line: int  # 1-based line of the directive in the .tl file


@dataclass
class Flags:
    full_lines: bool = False  # --match-full-lines
    strict: bool = False  # --strict-whitespace


def compile_pattern(pattern: str, flags: Flags = Flags()) -> re.Pattern[str]:
    """FileCheck's pattern rules, the subset used here: literal text, {{regex}}, and any run of
    whitespace matching any run of whitespace (the text itself under --strict-whitespace; the
    whole line under --match-full-lines)."""
    out = []
    text = pattern.rstrip() if flags.strict else pattern.strip()
    for i, part in enumerate(re.split(r"\{\{(.*?)\}\}", text)):
        if i % 2:
            out.append(f"(?:{part})")
        elif flags.strict:
            out.append(re.escape(part))
        else:
            out.append(r"\s+".join(re.escape(w) for w in re.split(r"\s+", part)))
    body = "".join(out)
    if flags.full_lines:
        # Leading and trailing whitespace of the line is not part of the match unless strict.
        body = f"^{body}$" if flags.strict else rf"^\s*{body}\s*$"
    return re.compile(body)


def check_output(output: str, checks: list[Check], path: str, prefix: str,
                 flags: Flags = Flags()) -> list[str]:
    """Failures of `checks` against `output` (an empty list: every check holds)."""
    lines = output.split("\n")
    failures: list[str] = []
    at = 0  # the first line the next positive check may match
    pending_not: list[Check] = []
    last = -1  # the line of the previous positive match
    if not checks:
        return [f"{path}: no {prefix}: lines for a RUN line that pipes into FileCheck"]

    def no_forbidden(lo: int, hi: int) -> None:
        for c in pending_not:
            rx = compile_pattern(c.pattern, flags)
            for n in range(lo, hi):
                if rx.search(lines[n]):
                    failures.append(f"{path}:{c.line}: {prefix}-NOT: '{c.pattern}' found at output line {n + 1}: "
                                    f"{lines[n].strip()}")
                    break
        pending_not.clear()

    for c in checks:
        if c.kind == "NOT":
            pending_not.append(c)
            continue
        rx = compile_pattern(c.pattern, flags)
        if c.kind == "NEXT":
            n = last + 1
            if last < 0 or n >= len(lines) or not rx.search(lines[n]):
                got = lines[n].strip() if 0 <= n < len(lines) else "<end of output>"
                failures.append(f"{path}:{c.line}: {prefix}-NEXT: '{c.pattern}' is not the line after the "
                                f"previous match; that line is: {got}")
                return failures
        else:
            n = next((k for k in range(at, len(lines)) if rx.search(lines[k])), -1)
            if n < 0:
                failures.append(f"{path}:{c.line}: {prefix}: '{c.pattern}' not found in the output after "
                                f"line {at}")
                return failures
        no_forbidden(at, n)
        last, at = n, n + 1
    no_forbidden(at, len(lines))
    return failures


def substitute(text: str, path: str, line: int) -> str:
    """An expected-error text with lit's `%s` (the file) and FileCheck's `[[@LINE]]`,
    `[[@LINE+N]]`, `[[@LINE-N]]` (a line of it, counted from the directive's line), so a message
    that names a location inside its text can be checked in one piece."""
    text = text.replace("%s", path)
    return re.sub(r"\[\[@LINE([+-]\d+)?\]\]", lambda m: str(line + int(m.group(1) or 0)), text)


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: ir_check.py TLC FILE.tl", file=sys.stderr)
        return 2
    tlc, path = argv[1], argv[2]
    with open(path, encoding="utf-8") as f:
        text = f.read()
    runs: list[tuple[int, str]] = []
    checks: dict[str, list[Check]] = {}
    errors: list[tuple[int, int | None, str]] = []
    remarks: list[tuple[int, str]] = []
    for n, line in enumerate(text.split("\n"), start=1):
        m = DIRECTIVE.match(line)
        if not m:
            continue
        name, offset, body = m.group(1), m.group(2), m.group(3)
        if name == "RUN":
            runs.append((n, body))
        elif name == "expected-error":
            errors.append((n, n + int(offset[1:]) if offset else None, body.strip()))
        elif name == "expected-remark":
            remarks.append((n, body.strip()))
        else:
            prefix, _, kind = name.partition("-")
            if kind not in ("", "NEXT", "NOT") or not prefix.isupper():
                continue
            checks.setdefault(prefix, []).append(Check(kind, body, n))
    if not runs:
        print(f"{path}: no RUN: line", file=sys.stderr)
        return 1
    failures: list[str] = []
    for line, run in runs:
        command, _, filecheck = run.partition("|")
        words = shlex.split(command.replace("%s", shlex.quote(path)))
        expect_failure = bool(words) and words[0] == "not"
        if expect_failure:
            words = words[1:]
        if not words or words[0] != "tlc":
            failures.append(f"{path}:{line}: RUN: expected 'tlc ...' or 'not tlc ...', got '{run}'")
            continue
        p = subprocess.run([tlc] + words[1:], capture_output=True, text=True, timeout=600)
        if expect_failure:
            if p.returncode == 0:
                failures.append(f"{path}:{line}: RUN: '{command.strip()}' succeeded, expected it to fail")
            if not errors:
                failures.append(f"{path}:{line}: RUN: 'not' without an expected-error: line")
            for eline, at, text in errors:
                msg = substitute(text, path, eline)
                if msg not in p.stderr:
                    failures.append(f"{path}:{eline}: expected-error: '{msg}' not in stderr:\n{p.stderr}")
                if at is not None and f"{path}:{at}" not in p.stderr:
                    failures.append(f"{path}:{eline}: expected-error: the error does not name {path}:{at}:\n"
                                    f"{p.stderr}")
            continue
        if p.returncode != 0:
            failures.append(f"{path}:{line}: RUN: '{command.strip()}' failed ({p.returncode}):\n{p.stderr}")
            continue
        wanted = [(rline, substitute(text, path, rline)) for rline, text in remarks]
        for rline, msg in wanted:
            if msg not in p.stderr:
                failures.append(f"{path}:{rline}: expected-remark: '{msg}' not in stderr (of "
                                f"'{command.strip()}'):\n{p.stderr}")
        # As clang's -verify: with expected remarks, a remark none of them names is a failure.
        for got in (x for x in p.stderr.split("\n") if wanted and ": remark: " in x):
            if not any(msg in got for _, msg in wanted):
                failures.append(f"{path}: remark not in stderr's expected-remark lines (an unexpected "
                                f"remark of '{command.strip()}'): {got}")
        if filecheck.strip():
            fc = shlex.split(filecheck)
            prefix = "CHECK"
            flags = Flags()
            for w in fc[1:]:
                if w.startswith("--check-prefix="):
                    prefix = w.split("=", 1)[1]
                elif w == "--match-full-lines":
                    flags.full_lines = True
                elif w == "--strict-whitespace":
                    flags.strict = True
                elif w not in ("%s", path):
                    failures.append(f"{path}:{line}: RUN: unknown FileCheck option '{w}'")
            failed = check_output(p.stdout, checks.get(prefix, []), path, prefix, flags)
            if failed:
                failed.append(f"output of '{command.strip()}':\n{p.stdout}")
            failures += failed
    for f in failures:
        print(f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
