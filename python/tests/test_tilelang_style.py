"""Kernel scripts written the way TileLang-Ascend's examples are run with only their imports
changed (tilelang -> tl_ascend, torch_npu -> tl_ascend.torch_npu): each runs as a script in a
fresh interpreter, and checks its own result against torch as the original does."""

import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = [
    ("example_gemm.py", ["--m", "256", "--n", "512", "--k", "256"]),
    ("example_flash_attention.py", ["--s", "256", "--d", "128"]),
    ("example_rms_norm.py", ["--s", "64", "--d", "512"]),
    ("example_elementwise_add.py", []),
]
IMPORTS = ("import tl_ascend", "from tl_ascend")


@pytest.mark.parametrize("script,args", SCRIPTS, ids=[s for s, _ in SCRIPTS])
def test_a_tilelang_ascend_style_script_runs_unchanged_but_for_its_imports(script, args):
    path = os.path.join(HERE, "tilelang_style", script)
    with open(path) as f:
        source = f.read()
    # The only tl_ascend-specific lines are imports.
    for line in source.splitlines():
        if "tl_ascend" in line and not line.startswith("#"):
            assert line.startswith(IMPORTS), line
    r = subprocess.run([sys.executable, path, *args], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Kernel Output Match!" in r.stdout or "Test Passed!" in r.stdout, r.stdout
