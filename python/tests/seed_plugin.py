"""Per-test seeds for the Python suite (docs/ops.md "Tests", issue 30's test regime): the base
seed comes from pytest's ``--seed`` option, else OPS_TILELANG_SEED, else 0, and each test's seed
is FNV-1a of that base and the test's node id (the C++ tests' formula, tests/ops/ops_seed.h, over
the node id instead of the gtest name). Selecting tests with ``-k``, running one alone or in
another order therefore never changes a test's data. Before each test, torch's and ``random``'s
global generators are seeded with it; the ``seed`` fixture gives it to tests that make their own
``torch.Generator``. Loaded by conftest.py (and by ``-p seed_plugin`` in test_seed_regime.py)."""

from __future__ import annotations

import os
import random
import sys

import pytest

_FNV_OFFSET = 1469598103934665603
_FNV_PRIME = 1099511628211
_MASK = (1 << 64) - 1


def _parse_seed(text: str, what: str) -> int:
    try:
        value = int(text, 10)
    except ValueError:
        value = -1
    if not 0 <= value <= _MASK or not text.strip().isdigit():
        raise pytest.UsageError(f"{what}: {text!r} is not a decimal unsigned 64-bit integer")
    return value


def test_seed_for(base: int, nodeid: str) -> int:
    """FNV-1a over the node id's UTF-8 bytes from (offset XOR base)."""
    h = _FNV_OFFSET ^ base
    for b in nodeid.encode():
        h = ((h ^ b) * _FNV_PRIME) & _MASK
    return h


test_seed_for.__test__ = False  # a helper, not a test


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--seed",
        action="store",
        default=None,
        help="base seed of the per-test seeds (default: OPS_TILELANG_SEED, else 0)",
    )


def base_seed(config: pytest.Config) -> int:
    opt = config.getoption("--seed")
    if opt is not None:
        return _parse_seed(opt, "--seed")
    env = os.environ.get("OPS_TILELANG_SEED", "")
    return _parse_seed(env, "OPS_TILELANG_SEED") if env else 0


def pytest_configure(config: pytest.Config) -> None:
    base_seed(config)  # a bad seed stops the run before any test (pytest's usage error, status 4)


def pytest_report_header(config: pytest.Config) -> str:
    return f"per-test seeds from base seed {base_seed(config)} and each test's node id"


@pytest.fixture
def seed(request: pytest.FixtureRequest) -> int:
    """This test's seed (a 64-bit integer; torch.Generator().manual_seed takes it)."""
    return test_seed_for(base_seed(request.config), request.node.nodeid)


@pytest.fixture(autouse=True)
def _seed_global_generators(seed: int) -> None:
    random.seed(seed)
    # torch only when the test's module imported it: importing it here would cost every
    # torch-free test a second or more.
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(seed)
