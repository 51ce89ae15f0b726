"""Python wrappers generated from tl-ascend's op registry (include/tl/op.h).

Each registered tile primitive gets a function whose positional parameters are the op's
operands in registry order (destination first for the vector ops), followed by its attributes;
keywords name either. A string given positionally where a tile operand is expected is the next
attribute (`T.tile.gather_mask(dst, src, "P0101")`), as in TileLang-Ascend.
"""

import numbers

from .. import _core
from . import _state

_OPS = {op["name"]: op for op in _core.ops()}

# Integer attributes TileLang-Ascend scripts give by their Ascend C enum names: T.tile.select's
# selMode (SELMODE: the mask comes from the compare either way, and tl-ascend's select reads the
# mask operand in every mode, so the three are one computation here).
_ATTR_ENUMS = {("tile.select", "mode"): {"VSEL_CMPMASK_SPR": 0, "VSEL_TENSOR_SCALAR_MODE": 1,
                                         "VSEL_TENSOR_TENSOR_MODE": 2}}


def emit(op_name, *args, **kwargs):
    """Emits registered op `op_name` ("tile.add", "copy", ...) with TileLang's conventions."""
    op = _OPS.get(op_name)
    if op is None:
        _core.user_error(_state.current(), f"unknown tile primitive '{op_name}'")
    operands, attrs = op["operands"], op["attrs"]
    if op_name.startswith("tile."):
        args, kwargs = _drop_whole_count(op_name, operands, args, kwargs)
    values, attr_values = [], {}
    attr_names = [a["name"] for a in attrs]
    next_attr = 0
    slot = 0
    for a in args:
        if isinstance(a, str) and next_attr < len(attr_names):
            attr_values[attr_names[next_attr]] = a
            next_attr += 1
            continue
        if slot < len(operands) or (operands and operands[-1]["variadic"]):
            values.append(a)
            slot += 1
        elif next_attr < len(attr_names):
            attr_values[attr_names[next_attr]] = a
            next_attr += 1
        else:
            _core.user_error(_state.current(),
                             f"T.{op_name} takes at most {len(operands)} operands and {len(attrs)} attributes, "
                             f"got {len(args)} positional arguments")
    names = [o["name"] for o in operands]
    for k, v in kwargs.items():
        if k in attr_names:
            attr_values[k] = v
        elif k in names:
            i = names.index(k)
            while len(values) <= i:
                values.append(None)
            values[i] = v
        else:
            _core.user_error(_state.current(), f"T.{op_name}: no operand or attribute '{k}' (operands: "
                                               f"{', '.join(names)}; attributes: {', '.join(attr_names) or 'none'})")
    while values and values[-1] is None:
        values.pop()
    for i, v in enumerate(values):
        if v is None:
            _core.user_error(_state.current(), f"T.{op_name}: operand '{names[i]}' is missing")
        # `m[h]` names a start point where the op wants a tile, and reads the element (a UB
        # scalar, AscendC's scalar operand) where it takes a scalar: TileLang-Ascend's
        # `T.tile.sub(s[h, :], s[h, :], m[h])`.
        kind = operands[min(i, len(operands) - 1)]["kind"]
        if kind != "tile" and hasattr(v, "_tl_expr") and hasattr(v, "_tl_region"):
            values[i] = v._tl_expr()
        elif kind == "scalar":
            values[i] = _one_element(op_name, names[min(i, len(names) - 1)], v)
    check_operands(op_name, values)
    for (op, attr), enum in _ATTR_ENUMS.items():
        v = attr_values.get(attr) if op == op_name else None
        if isinstance(v, str):
            if v not in enum:
                _core.user_error(_state.current(), f"T.{op_name}: attribute '{attr}' must be one of "
                                                   f"{', '.join(enum)} (or its number), got '{v}'")
            attr_values[attr] = enum[v]
    _core.emit(op_name, values, attr_values, _state.current())


def _one_element(op_name, name, v):
    """A one-element on-chip buffer or region where a scalar operand is expected reads that
    element (TileLang-Ascend's `T.tile.fill(col, total)` with `total = T.alloc_ub([1], ...)`: the
    scalar unit reads it from UB, as `m[h]` does); a larger one is an error naming the operand."""
    if isinstance(v, _core.Buffer):
        dims, starts, buf = v.shape, [0] * v.ndim, v
    elif isinstance(v, _core.BufferRegion):
        dims, starts, buf = v.extents, v.starts, v.buffer
    else:
        return v
    if buf.scope == "var":
        return v  # a T.alloc_var scalar: the builder reads it
    n = _whole_elements(v)
    if buf.scope == "global" or n != 1:
        what = f"{n} elements" if n is not None else "a symbolic number of elements"
        _core.user_error(_state.current(),
                         f"T.{op_name}: operand '{name}' is a scalar: a buffer stands for one only when it is a "
                         f"one-element on-chip tile, got '{buf.name}' ({buf.scope}, {what}, shape "
                         f"{[d.const_value() if hasattr(d, 'const_value') else d for d in dims]})")
    return buf.load(list(starts))


_EXPECTED = {"tile": "a buffer or buffer region", "scalar": "an int, float, bool or kernel expression",
             "tile_or_scalar": "a buffer, a buffer region or a scalar expression"}


def _describe(v):
    r = repr(v)
    return f"{type(v).__name__} {r if len(r) <= 60 else r[:57] + '...'}"


def check_operands(op_name, values):
    """Each operand is something the builder takes (a buffer, region or expression): anything
    else (a str, a list, None) is an Error naming the operand, before the C++ builder sees it.
    Whether a tile or a scalar fits the slot the builder checks itself, with the same wording."""
    operands = _OPS[op_name]["operands"]
    for i, v in enumerate(values):
        o = operands[min(i, len(operands) - 1)]
        ok = (isinstance(v, (_core.Buffer, _core.BufferRegion, _core.Expr, numbers.Real))
              or hasattr(v, "_tl_region") or hasattr(v, "_tl_expr"))
        if not ok:
            name = o["name"] if not o["variadic"] else f"{o['name']}[{i - len(operands) + 1}]"
            _core.user_error(_state.current(), f"T.{op_name}: operand '{name}' must be {_EXPECTED[o['kind']]}, "
                                               f"got {_describe(v)}")


def _whole_elements(dst):
    """The element count of a destination tile or region, or None when it is not a constant."""
    if isinstance(dst, _core.Buffer):
        dims = dst.shape
    elif isinstance(dst, _core.BufferRegion):
        dims = dst.extents
    else:
        return None
    n = 1
    for d in dims:
        v = d.const_value()
        if not isinstance(v, int):
            return None
        n *= v
    return n


def _drop_whole_count(op_name, operands, args, kwargs):
    """TileLang-Ascend's vector ops take an optional trailing element count (`T.tile.cast(dst,
    src, "CAST_RINT", rows * cols)`). tl-ascend's ops always cover their whole destination, so a
    count equal to the destination's element count is dropped; any other count is an error
    rather than a silently different computation."""
    count = kwargs.pop("count", None)
    positional = [a for a in args if not isinstance(a, str)]
    last = args[-1] if args else None
    if count is None and len(positional) > len(operands) and isinstance(last, int) and not isinstance(last, bool):
        count, args = last, args[:-1]
    if count is None:
        return args, kwargs
    dst = args[0] if args else kwargs.get(operands[0]["name"] if operands else "dst")
    whole = _whole_elements(dst)
    if whole is None or count != whole:
        _core.user_error(_state.current(),
                         f"T.{op_name}: an element count of {count} is not the destination's whole "
                         f"{whole if whole is not None else 'symbolic'} elements; tl-ascend's vector ops cover the "
                         f"whole destination tile (slice the tile instead)")
    return args, kwargs


def wrapper(op_name):
    op = _OPS[op_name]

    def f(*args, **kwargs):
        emit(op_name, *args, **kwargs)

    f.__name__ = op_name.split(".")[-1]
    f.__qualname__ = f.__name__
    operands = ", ".join(o["name"] for o in op["operands"])
    f.__doc__ = f"T.{op_name}({operands}): {op['summary']}"
    return f


def names_with_prefix(prefix):
    return [n for n in _OPS if n.startswith(prefix)]
