"""pytest setup for the Python suite: the examples are importable as modules, and a run
uses a JIT disk cache of its own unless the caller chose one."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples"))
sys.path.insert(0, HERE)

# The --seed option and per-test seeds (seed_plugin.py).
from seed_plugin import (  # noqa: E402,F401
    _seed_global_generators,
    pytest_addoption,
    pytest_configure,
    pytest_report_header,
    seed,
)
