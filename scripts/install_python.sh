#!/usr/bin/env bash
# Installs the Python package tl_ascend from this checkout (pip, scikit-build-core; docs/python.md),
# reusing the CMake preset's build directory, so after `cmake --build --preset default` it only
# links and copies. On Debian's own python3, which refuses pip installs outside a venv (PEP 668),
# it passes --break-system-packages, as scripts/setup.sh does for the dependencies.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
flags=(--no-build-isolation --quiet)
if "$PY" -c "import sys, sysconfig, os; sys.exit(0 if os.path.exists(os.path.join(sysconfig.get_paths()['stdlib'], 'EXTERNALLY-MANAGED')) else 1)"; then
  flags+=(--break-system-packages)
fi
"$PY" -m pip install "${flags[@]}" .
"$PY" -c "import tl_ascend; print('installed tl_ascend', tl_ascend.__version__)"
