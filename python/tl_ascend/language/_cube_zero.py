"""`for i, j in T.Parallel(M, N): c_l0c[i, j] = 0` inside `with T.Scope("C")` of an expert kernel.

TileLang-Ascend's grouped_gemm/example_grouped_gemm_bwd.py clears its L0C accumulator this way
before a loop whose `T.gemm_v0(..., init=(k == 0))` may run zero times (a group with no K
blocks then stores zeros). Element loops in an expert kernel run only in the vector scope
(the AIV's vector unit), and on A2 nothing writes L0C but the cube itself (docs/language.md,
"Not on A2: ... anything -> L0C"). The one cube-side way to write a constant there is a matrix
product: tl-ascend lowers the loop to zero [M, 16] (L0A) and [16, N] (L0B) fp16 tiles
(T.init_const, AscendC InitConstValue) and one `T.mma(a, b, c, init=True)`, so c = 0 exactly
(0 x 0 summed is +0), with `T.barrier_all()` before and after so the kernel's own flags need not
know about it. Only this form is lowered: the whole tile, fp32 L0C (an fp16 x fp16 product),
the value 0 known when the kernel is built. Any other element loop outside the vector scope
stays the verifier's `developer-loop-in-expert-mode` error.
"""

from __future__ import annotations

import ast
from typing import Any

from .. import _core


def lower(parser: Any, s: ast.For, loop: Any, names: list) -> bool:
    """Emits the lowering when `s` is the zero fill above (returns True); False otherwise."""
    if parser.core_scope != "C" or loop.kind != "parallel" or len(s.body) != 1:
        return False
    st = s.body[0]
    if not (isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Subscript)):
        return False
    target = st.targets[0]
    idx = target.slice.elts if isinstance(target.slice, ast.Tuple) else [target.slice]
    if [i.id if isinstance(i, ast.Name) else None for i in idx] != names or None in names:
        return False
    buf = parser.eval(target.value)
    if not isinstance(buf, _core.Buffer) or buf.scope != "L0C" or buf.dtype != "float32":
        return False
    shape = [d.const_value() if isinstance(d, _core.Expr) else d for d in buf.shape]
    extents = [e.const_value() if isinstance(e, _core.Expr) else e for e in loop.extents]
    if len(shape) != 2 or shape != extents or loop.start != 0 or not all(isinstance(d, int) for d in shape):
        return False
    value = parser.eval(st.value)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != 0:
        return False
    from . import alloc_L0A, alloc_L0B, barrier_all, init_const, mma

    M, N = shape
    zero = _core.imm("float16", 0.0)
    a = alloc_L0A((M, 16), "float16", name=_core.fresh_name(buf.name + "_zero_a"))
    b = alloc_L0B((16, N), "float16", name=_core.fresh_name(buf.name + "_zero_b"))
    init_const(a, zero)
    init_const(b, zero)
    barrier_all()
    mma(a, b, buf, True)
    barrier_all()
    return True
