"""`python -m tl_ascend.run [--force] script.py [args...]`: run a TileLang-Ascend script unchanged.

The script runs as `python script.py [args...]` would run it (as `__main__`, with its own
directory first on sys.path and sys.argv = [script.py, args...]), after the `tilelang` import
alias is installed for this process (alias.py): `import tilelang` and `import torch_npu` give
tl-ascend's modules, and the kernels run on the virtual NPU.

If a real `tilelang` or `torch_npu` is importable, the runner says so and exits with status 2,
unless `--force`: it never takes over a real installation silently. The script's own exit
status is the runner's (an uncaught exception prints its traceback and exits 1, as Python does).
"""

from __future__ import annotations

import os
import runpy
import sys

USAGE = "usage: python -m tl_ascend.run [--force] script.py [args...]"


def main(argv: list[str]) -> int:
    force = False
    while argv and argv[0].startswith("-"):
        opt = argv.pop(0)
        if opt == "--force":
            force = True
        elif opt in ("-h", "--help"):
            print(USAGE)
            print(__doc__.split("\n", 2)[2].strip())
            return 0
        else:
            print(f"tl_ascend.run: unknown option '{opt}'\n{USAGE}", file=sys.stderr)
            return 2
    if not argv:
        print(USAGE, file=sys.stderr)
        return 2
    script = argv[0]
    if not os.path.isfile(script):
        print(f"tl_ascend.run: no such script '{script}'", file=sys.stderr)
        return 2
    # Before alias.install(), which imports torch and with it libgomp (it reads the variable once,
    # when it is loaded): torch's OpenMP workers then sleep between parallel regions instead of
    # spinning. Spinning, they took the cores the virtual NPU runs on and most of a script's CPU
    # time: fused_sigmoid_gating_delta_rule_varlen.py's torch reference went from 108 to 10 CPU s
    # on a loaded 2-core machine (docs/tla_corpus.md, corpus3 round). The wait policy changes
    # neither how work is split nor any value; an OMP_WAIT_POLICY the caller set is kept.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    from . import _core, alias

    try:
        alias.install(force=force)
    except _core.Error as e:
        print(f"tl_ascend.run: {e}", file=sys.stderr)
        return 2
    # Scripts print get_kernel_source() for a reader, then run the kernel: a kernel the AscendC
    # emitter cannot express yet gives its error and IR as comments instead of stopping the
    # script (jit.py, JITKernel.get_kernel_source; docs/ascendc.md).
    os.environ.setdefault("TL_KERNEL_SOURCE_ON_ERROR", "comment")
    # TileLang-Ascend's adapter passes only data pointers (its shape check is commented out), so
    # an input larger than its declared shape is read as its first elements on the chip
    # (activation/swi_glu_grad.py); here too, with a remark (docs/python.md, "Argument shapes").
    os.environ.setdefault("TL_LARGER_INPUTS", "prefix")
    sys.argv = list(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
