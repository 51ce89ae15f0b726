"""Values of the script parser (parser.py): what a kernel expression evaluates to while parsing.

A name in a kernel is bound either to a Python value (an int, a list, a dtype string...) or to
a kernel value: an expression of the C++ builder (`_core.Expr`), a buffer, or an element
`A[i, j]` (`_Element`), which reads as a load in arithmetic and as a start point when a tile
op takes it. This module holds that element type, the helpers that tell the kinds apart, and
the tables from Python's AST operators to the functions that build them.
"""

import ast
import operator

from .. import _core


class _Element:
    """`A[i, j]`: an element load in expressions, a start-point region as a tile-op operand."""

    def __init__(self, buffer, indices):
        self.buffer, self.indices = buffer, indices

    def _tl_expr(self):
        return self.buffer.load(self.indices)

    def _tl_region(self):
        return self.buffer.at(self.indices)

    @property
    def dtype(self):
        return self.buffer.dtype

    def __repr__(self):
        return repr(self._tl_expr())


def _binary(op):
    def f(self, other):
        return op(self._tl_expr(), _operand(other))

    def r(self, other):
        return op(_operand(other), self._tl_expr())

    return f, r


for _name, _op in [("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                   ("truediv", operator.truediv), ("floordiv", operator.floordiv), ("mod", operator.mod),
                   ("and", operator.and_), ("or", operator.or_), ("xor", operator.xor),
                   ("lshift", operator.lshift), ("rshift", operator.rshift)]:
    _f, _r = _binary(_op)
    setattr(_Element, f"__{_name}__", _f)
    setattr(_Element, f"__r{_name}__", _r)
for _name, _op in [("lt", operator.lt), ("le", operator.le), ("gt", operator.gt), ("ge", operator.ge),
                   ("eq", operator.eq), ("ne", operator.ne)]:
    setattr(_Element, f"__{_name}__", _binary(_op)[0])
_Element.__neg__ = lambda self: -self._tl_expr()
_Element.__hash__ = None


def _operand(v):
    """A value in an arithmetic position: elements and scalar (var) buffers read as values."""
    if isinstance(v, _Element):
        return v._tl_expr()
    if isinstance(v, _core.Buffer) and v.scope == "var":
        return v.load([0])
    return v


def _symbolic(v):
    return isinstance(v, (_core.Expr, _Element)) or (isinstance(v, _core.Buffer) and v.scope == "var")


_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
           ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor,
           ast.LShift: operator.lshift, ast.RShift: operator.rshift}
_CMPOPS = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
           ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Is: operator.is_, ast.IsNot: operator.is_not,
           ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}
_CMP_METHODS = {ast.Lt: "__lt__", ast.LtE: "__le__", ast.Gt: "__gt__", ast.GtE: "__ge__", ast.Eq: "__eq__",
                ast.NotEq: "__ne__"}


class IntImm(int):
    """A Python int that T.min / T.max / T.ceildiv / T.floordiv / T.floormod of two Python ints
    return: TVM folds those calls to an IntImm, and TileLang-Ascend scripts read its `.value`
    (`T.min(T.ceildiv(seq_len, block_N), NUM_STAGES).value`), which a plain int lacks (it was an
    AttributeError). Arithmetic on it gives plain ints, as on any int."""

    @property
    def value(self) -> int:
        return int(self)


class FloatImm(float):
    """The float counterpart of IntImm (TVM's FloatImm, `.value` included)."""

    @property
    def value(self) -> float:
        return float(self)


def imm(v):
    """v as an IntImm / FloatImm when it is a Python int / float (bools stay bools)."""
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        return IntImm(v)
    if isinstance(v, float):
        return FloatImm(v)
    return v
