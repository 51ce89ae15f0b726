"""The Python suite's per-test seeds (seed_plugin.py, issue 30's test regime): a test's data is a
function of the base seed (``--seed``, else OPS_TILELANG_SEED) and its own node id only. Each
case runs a small generated test file in a child pytest and compares the data every test drew
(torch's and ``random``'s global generators, and the ``seed`` fixture): run alone with ``-k``,
with the whole file, and in reverse order, a test draws the same; another seed draws other data;
``--seed`` and the variable mean the same; a bad seed is a usage error. The operator library's
tests (test_opslib_*.py) take their data from it: a few of them, run in a child pytest that
records what they draw, draw the same whole, alone and reversed and other data under another
``--seed``; and no test_opslib_*.py seeds a generator with anything but the ``seed`` fixture."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))

PROBE = '''
import json, os, random
import pytest
import torch

def _record(request, seed):
    with open(os.environ["SEED_PROBE_OUT"], "a") as f:
        f.write(json.dumps([request.node.nodeid, seed, random.random(), torch.rand(3).tolist(),
                            torch.rand(2, generator=torch.Generator().manual_seed(seed)).tolist()]) + "\\n")

def test_a(request, seed):
    _record(request, seed)

def test_b(request, seed):
    _record(request, seed)

@pytest.mark.parametrize("n", [1, 7, 33])
def test_c(request, seed, n):
    _record(request, seed)
'''


def _run(tmp_path, *args: str, env_seed: str | None = None) -> dict:
    out = tmp_path / "out.jsonl"
    if out.exists():
        out.unlink()
    env = dict(os.environ, SEED_PROBE_OUT=str(out), PYTHONPATH=HERE + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("OPS_TILELANG_SEED", None)
    if env_seed is not None:
        env["OPS_TILELANG_SEED"] = env_seed
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "seed_plugin", "-p", "no:cacheprovider", *args],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    if r.returncode != 0:
        return {"returncode": r.returncode, "output": r.stdout + r.stderr}
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    return {row[0]: row[1:] for row in rows}


@pytest.fixture
def probe(tmp_path):
    pytest.importorskip("torch")
    (tmp_path / "test_probe.py").write_text(PROBE)
    return tmp_path


def test_filtering_and_reordering_never_change_a_tests_data(probe) -> None:
    whole = _run(probe, "test_probe.py")
    assert len(whole) == 5, whole
    alone = _run(probe, "test_probe.py", "-k", "test_c and 33")
    assert list(alone) == ["test_probe.py::test_c[33]"], alone
    assert alone["test_probe.py::test_c[33]"] == whole["test_probe.py::test_c[33]"]
    ids = list(whole)[::-1]
    reverse = _run(probe, *ids)
    assert list(reverse) == ids  # it did run in the other order
    assert reverse == whole
    # Every test draws its own data.
    assert len({json.dumps(v[1]) for v in whole.values()}) == 5


def test_another_base_seed_gives_other_data_and_flag_equals_variable(probe) -> None:
    default = _run(probe, "test_probe.py")
    flag = _run(probe, "test_probe.py", "--seed", "12345")
    assert flag == _run(probe, "test_probe.py", env_seed="12345")
    assert flag == _run(probe, "test_probe.py", "--seed=12345", env_seed="7")  # the flag wins
    assert default == _run(probe, "test_probe.py", "--seed", "0")
    for k in default:
        assert default[k][0] != flag[k][0] and default[k][2] != flag[k][2], k


def test_the_seed_is_the_c_plus_plus_formula_over_the_node_id(probe) -> None:
    from seed_plugin import test_seed_for

    got = _run(probe, "test_probe.py", "--seed", "99")
    h = 1469598103934665603 ^ 99
    for b in b"test_probe.py::test_a":
        h = ((h ^ b) * 1099511628211) % 2**64
    assert got["test_probe.py::test_a"][0] == h == test_seed_for(99, "test_probe.py::test_a")


@pytest.mark.parametrize("bad", ["x7", "-1", "18446744073709551616"])
def test_a_bad_seed_is_a_usage_error(probe, bad: str) -> None:
    r = _run(probe, "test_probe.py", f"--seed={bad}")
    assert r.get("returncode") == 4 and f"{bad!r} is not a decimal unsigned 64-bit integer" in r["output"], r


# ---- The operator library's tests draw from the per-test seed ------------------------------------

# Records, per test, every tensor the torch draws return and every numpy generator's seed, without
# changing what the tests draw (torch.randn and friends, np.random.default_rng are looked up on the
# module at each call, so wrapping them here sees the test files' own calls).
RECORDER = '''
import json, os
import numpy as np
import pytest
import torch

_DRAWS = ("rand", "randn", "randint", "randperm", "randn_like", "rand_like")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    seen, saved = [], {name: getattr(torch, name) for name in _DRAWS}
    def wrap(name, f):
        def draw(*args, **kwargs):
            t = f(*args, **kwargs)
            seen.append([name, list(t.shape), t.double().flatten()[:64].tolist()])
            return t
        return draw
    for name, f in saved.items():
        setattr(torch, name, wrap(name, f))
    rng = np.random.default_rng
    np.random.default_rng = lambda s=None: (seen.append(["default_rng", s and int(s)]), rng(s))[1]
    try:
        yield
    finally:
        for name, f in saved.items():
            setattr(torch, name, f)
        np.random.default_rng = rng
        with open(os.environ["SEED_PROBE_OUT"], "a") as out:
            out.write(json.dumps([item.nodeid, seen]) + "\\n")
'''

# Small tests of the library that draw in each way: torch's global generator (softmax), a
# torch.Generator of the test's own (attention), a numpy generator (rope).
OPSLIB_TESTS = [
    "test_opslib_softmax.py::test_softmax_tails[dtype2-shape1]",
    "test_opslib_attention.py::test_tails_against_torch[False-7]",
    "test_opslib_rope.py::test_rope_numpy_and_empty",
]


def _run_opslib(tmp_path, *args: str) -> dict:
    out = tmp_path / "draws.jsonl"
    if out.exists():
        out.unlink()
    env = dict(os.environ, SEED_PROBE_OUT=str(out),
               PYTHONPATH=str(tmp_path) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("OPS_TILELANG_SEED", None)
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "draw_recorder", "-p", "no:cacheprovider", *args],
        cwd=HERE, env=env, capture_output=True, text=True, timeout=600,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    # Node ids are relative to the rootdir (python/tests/...): keyed here by file and test.
    rows = (json.loads(line) for line in out.read_text().splitlines())
    return {nodeid.rsplit("/", 1)[-1]: draws for nodeid, draws in rows}


def test_opslib_data_follows_the_seed_not_the_order(tmp_path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("cann_ops_tilelang")
    (tmp_path / "draw_recorder.py").write_text(RECORDER)
    whole = _run_opslib(tmp_path, *OPSLIB_TESTS)
    assert list(whole) == OPSLIB_TESTS and all(whole.values()), whole
    reverse = _run_opslib(tmp_path, *OPSLIB_TESTS[::-1])
    assert list(reverse) == OPSLIB_TESTS[::-1]
    assert reverse == whole
    alone = _run_opslib(tmp_path, OPSLIB_TESTS[1])
    assert alone == {OPSLIB_TESTS[1]: whole[OPSLIB_TESTS[1]]}
    other = _run_opslib(tmp_path, "--seed", "12345", *OPSLIB_TESTS)
    for nodeid in OPSLIB_TESTS:
        assert other[nodeid] != whole[nodeid], nodeid


def test_opslib_tests_seed_only_from_the_fixture() -> None:
    """No test_opslib_*.py seeds a generator with anything but the `seed` fixture, nor reseeds
    torch's global generator (the plugin seeds it): a constant there would make --seed a no-op."""
    import ast
    import glob

    bad = []
    for path in sorted(glob.glob(os.path.join(HERE, "test_opslib_*.py"))):
        for node in ast.walk(ast.parse(open(path).read())):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            name, owner = node.func.attr, ast.unparse(node.func.value)
            if name in ("manual_seed", "seed") and owner in ("torch", "random", "np.random", "torch.cuda"):
                bad.append(f"{os.path.basename(path)}:{node.lineno}: {ast.unparse(node)}")
            elif name in ("manual_seed", "default_rng", "RandomState", "Random") and not (
                    len(node.args) == 1 and ast.unparse(node.args[0]) == "seed"):
                bad.append(f"{os.path.basename(path)}:{node.lineno}: {ast.unparse(node)}")
    assert not bad, "\n".join(bad)
