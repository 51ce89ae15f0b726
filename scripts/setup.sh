#!/usr/bin/env bash
# Installs what tl-ascend needs to build and test on Debian 12, by package name, only if missing.
set -euo pipefail
pkgs=(cmake ninja-build g++ ccache libgtest-dev libgmock-dev libbenchmark-dev libfmt-dev
      nlohmann-json3-dev libcli11-dev libopenblas-dev python3-dev clang-format-14)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [[ $(id -u) == 0 ]] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The Python package (python/, docs/python.md) and its test suite: nanobind and
# scikit-build-core build it; numpy, ml_dtypes and torch are the tensors it takes; pytest runs
# its suite. From PyPI, by name, only what is missing.
PY=${PYTHON:-python3}
if ! "$PY" -c "import sys" 2>/dev/null; then
  echo "setup: no $PY; installing python3"
  SUDO=""; [[ $(id -u) == 0 ]] || SUDO=sudo
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends python3 python3-dev python3-pip
fi
if ! "$PY" -m pip --version >/dev/null 2>&1; then
  echo "setup: installing python3-pip"
  SUDO=""; [[ $(id -u) == 0 ]] || SUDO=sudo
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends python3-pip
fi
py_missing=()
for spec in nanobind:nanobind scikit_build_core:scikit-build-core numpy:numpy ml_dtypes:ml_dtypes torch:torch pytest:pytest; do
  "$PY" -c "import ${spec%%:*}" 2>/dev/null || py_missing+=("${spec##*:}")
done
if ((${#py_missing[@]})); then
  echo "setup: pip installing ${py_missing[*]}"
  pip_flags=(--quiet)
  # Debian's own python3 refuses pip installs outside a venv (PEP 668) unless told.
  if "$PY" -c "import sys, sysconfig, os; sys.exit(0 if os.path.exists(os.path.join(sysconfig.get_paths()['stdlib'], 'EXTERNALLY-MANAGED')) else 1)"; then
    pip_flags+=(--break-system-packages)
  fi
  "$PY" -m pip install "${pip_flags[@]}" "${py_missing[@]}"
fi
