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
    src, "CAST_RINT", rows * cols)`), which its lowering passes to the AscendC call: the op
    covers the first `count` elements from each operand's start (AscendC's count form,
    tilelang/language/ascend_tile.py: `cast` passes the access pointers and the count). A count
    equal to the destination's element count is dropped; for an elementwise op, a tile operand
    with more elements than the count becomes the region of its first `count` elements
    (`T.tile.cast(cos_sin_ub, gathered_ub, "CAST_NONE", 64)` with `gathered_ub` of 256:
    split_qkv_rmsnorm_mrope.py). Any other count is an error rather than a silently different
    computation."""
    count = kwargs.pop("count", None)
    positional = [a for a in args if not isinstance(a, str)]
    last = args[-1] if args else None
    if count is None and len(positional) > len(operands) and isinstance(last, int) and not isinstance(last, bool):
        count, args = last, args[:-1]
    if count is None:
        return args, kwargs
    if hasattr(count, "const_value") and isinstance(count.const_value(), int):
        count = count.const_value()
    dst = args[0] if args else kwargs.get(operands[0]["name"] if operands else "dst")
    whole = _whole_elements(dst)
    if _OPS[op_name].get("elementwise") and isinstance(count, int) and not isinstance(count, bool):
        return _count_prefixes(op_name, operands, list(args), kwargs, count), kwargs
    if whole is None or count != whole:
        _core.user_error(_state.current(),
                         f"T.{op_name}: an element count of {count} is not the destination's whole "
                         f"{whole if whole is not None else 'symbolic'} elements; tl-ascend's vector ops cover the "
                         f"whole destination tile (slice the tile instead)")
    return args, kwargs


def _count_prefixes(op_name, operands, args, kwargs, count):
    """The tile operands of an elementwise op with a count: each cut to its first `count`
    elements (a region), or an error naming the operand that has fewer or whose first `count`
    elements are not a region (they would run across rows of a larger tile)."""
    if count < 1:
        _core.user_error(_state.current(), f"T.{op_name}: argument 'count' must be a positive element count, "
                                           f"got {count}")
    slot = 0
    for i, a in enumerate(args):
        if isinstance(a, str) or slot >= len(operands):
            continue
        name = operands[slot]["name"]
        slot += 1
        args[i] = _prefix(op_name, name, a, count)
    for k, v in list(kwargs.items()):
        if k in [o["name"] for o in operands]:
            kwargs[k] = _prefix(op_name, k, v, count)
    return args


def _prefix(op_name, name, v, count):
    """The region of the first `count` elements of buffer or region `v` in memory order from its
    start, `v` itself when it has exactly `count`, or a located error."""
    if hasattr(v, "_tl_region"):
        v = v._tl_region()
    if isinstance(v, _core.Buffer):
        buf, starts, extents = v, [0] * v.ndim, list(v.shape)
    elif isinstance(v, _core.BufferRegion):
        buf, starts, extents = v.buffer, list(v.starts), list(v.extents)
    else:
        return v  # a scalar operand
    have = _whole_elements(v)
    if have == count:
        return v
    shape = [d.const_value() if hasattr(d, "const_value") else d for d in buf.shape]
    ext = [e.const_value() if hasattr(e, "const_value") else e for e in extents]
    st = [s.const_value() if hasattr(s, "const_value") else s for s in starts]
    if have is not None and have < count:
        _core.user_error(_state.current(),
                         f"T.{op_name}: operand '{name}' ('{buf.name}', {have} elements) has fewer than the "
                         f"element count {count}")
    # Along the dimensions from the last: the count is whole rows of the dimensions after d
    # (which must start at 0 and be whole), within the region along d.
    inner = 1
    for d in range(len(shape) - 1, -1, -1):
        if not all(isinstance(x, int) for x in (shape[d], ext[d])):
            break
        if count % inner == 0 and count // inner <= ext[d]:
            out_ext = [1] * d + [count // inner] + shape[d + 1:]
            return buf.region(list(starts[:d + 1]) + [0] * (len(shape) - d - 1), out_ext)
        if not (isinstance(st[d], int) and st[d] == 0 and ext[d] == shape[d]):
            break
        inner *= shape[d]
    _core.user_error(_state.current(),
                     f"T.{op_name}: the first {count} elements of operand '{name}' ('{buf.name}', shape {shape}, "
                     f"region extents {ext}) are not a region of the tile; give the operand as a region of "
                     f"{count} elements")


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
