#!/usr/bin/env bash
# Installs the Python package tl_ascend from this checkout (pip, scikit-build-core; docs/python.md),
# reusing the build directory of a CMake preset (TL_PRESET, default `default`; its binaryDir
# is read from CMakePresets.json, not written here), so after `cmake --build --preset default`
# it only links and copies. Plain `pip install .` works too but builds in a fresh directory.
# On Debian's own python3, which refuses pip installs outside a venv (PEP 668), it passes
# --break-system-packages, as scripts/setup.sh does for the dependencies.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
PRESET=${TL_PRESET:-default}
# The preset's binaryDir and CMAKE_BUILD_TYPE, following `inherits` (CMakePresets.json).
read -r build_dir build_type < <("$PY" - "$PRESET" <<'PYEOF'
import json, os, sys
presets = {p["name"]: p for p in json.load(open("CMakePresets.json"))["configurePresets"]}
name = sys.argv[1]
if name not in presets:
    sys.exit(f"install_python.sh: no configure preset {name!r} in CMakePresets.json (have: {', '.join(presets)})")
def field(p, get):
    while p is not None:
        v = get(p)
        if v is not None:
            return v
        inh = p.get("inherits")
        p = presets[inh if isinstance(inh, str) else inh[0]] if inh else None
    return None
p = presets[name]
binary = field(p, lambda q: q.get("binaryDir"))
btype = field(p, lambda q: q.get("cacheVariables", {}).get("CMAKE_BUILD_TYPE")) or "RelWithDebInfo"
if not binary:
    sys.exit(f"install_python.sh: preset {name!r} has no binaryDir")
binary = binary.replace("${sourceDir}", os.getcwd()).replace("${presetName}", name)
print(binary, btype)
PYEOF
)
flags=(--no-build-isolation --quiet -C "build-dir=$build_dir" -C "cmake.build-type=$build_type")
if "$PY" -c "import sys, sysconfig, os; sys.exit(0 if os.path.exists(os.path.join(sysconfig.get_paths()['stdlib'], 'EXTERNALLY-MANAGED')) else 1)"; then
  flags+=(--break-system-packages)
fi
"$PY" -m pip install "${flags[@]}" .
"$PY" -c "import tl_ascend; print('installed tl_ascend', tl_ascend.__version__)"
