"""Every tile primitive of the op registry and every scalar intrinsic is tested by value from
Python (issue 27): VALUE_TESTS maps each registry name ("tile.add", "copy", ...) and each
intrinsic ("T.exp", ..., "T.max", "T.min") to a check that runs a small kernel on the virtual
NPU, on tails where the op has a length, against a numpy reference (ops_values_vector.py,
ops_values_misc.py). `test_every_op_and_intrinsic_has_a_value_test` fails when an op is
registered (or an intrinsic added to `T`) without an entry here.

grep VALUE_TESTS for an op's name to find its check.
"""

import importlib
import os
from typing import Callable, Dict

import pytest

import tl_ascend.language as T
from tl_ascend import _core

import ops_values_misc as M
import ops_values_vector as V


def prim_value_tests() -> Dict[str, Callable[[], None]]:
    """The checks of the primitives of src/prims (docs/architecture.md, "The prims layer"): each
    brings its own in python/tests/prim_<name>.py, a module with a VALUE_TESTS dict of its own,
    so that adding a primitive touches no list here."""
    out: Dict[str, Callable[[], None]] = {}
    here = os.path.dirname(os.path.abspath(__file__))
    for f in sorted(os.listdir(here)):
        if f.startswith("prim_") and f.endswith(".py"):
            out.update(importlib.import_module(f[:-3]).VALUE_TESTS)
    return out


VALUE_TESTS: Dict[str, Callable[[], None]] = {
    # data movement
    "copy": M.check_copy,
    "dcci": M.check_dcci,
    "atomic_add": M.check_atomic_add,
    # cube
    "gemm_v0": M.check_gemm_v0,
    "gemm": M.check_gemm,
    "mma": M.check_mma,
    "init_const": M.check_init_const,
    # vector: elementwise
    **V.UNARY,
    **V.BINARY,
    **V.ROW_EXPAND,
    "tile.bitwise_and": V.check_bitwise,
    "tile.bitwise_or": V.check_bitwise,
    "tile.bitwise_xor": V.check_bitwise,
    "tile.bitwise_not": V.check_bitwise,
    "tile.shift_left": V.check_shifts,
    "tile.shift_right": V.check_shifts,
    "tile.axpy": V.check_axpy,
    "tile.leaky_relu": V.check_scalar_operand_ops,
    "tile.clamp": V.check_scalar_operand_ops,
    "tile.cast": V.check_cast,
    "tile.compare": V.check_compare_select,
    "tile.select": V.check_compare_select,
    # vector: generators, gathers, layout
    "tile.fill": V.check_fill,
    "tile.createvecindex": V.check_createvecindex,
    "tile.arith_progression": V.check_arith_progression,
    "tile.gather": V.check_gather,
    "tile.gather_mask": V.check_gather_mask_both_forms,
    "tile.broadcast": V.check_broadcast,
    "tile.transpose": V.check_transpose,
    # reductions and sorting
    "reduce_sum": M.reduce_check("sum"),
    "reduce_max": M.reduce_check("max"),
    "reduce_min": M.reduce_check("min"),
    "sort": M.check_sort,
    "topk": M.check_topk,
    "merge_sort": M.check_merge_sort,
    "init_sort_buf": M.check_init_sort_buf,
    # debug
    "printf": M.check_printf,
    "dump_tensor": M.check_dump_tensor,
    # scalar intrinsics and expression helpers, in element loops
    **M.INTRINSICS,
    # the primitives of src/prims, each with its own file
    **prim_value_tests(),
}


def registered_ops() -> list:
    return [op["name"] for op in _core.ops()]


def scalar_intrinsics() -> list:
    """The T functions that build a scalar intrinsic call (made by T's `_intrinsic`), plus
    T.max and T.min, which the element loops lower the same way."""
    names = [f"T.{n}" for n in dir(T) if getattr(getattr(T, n), "_tl_intrinsic", False)]
    return sorted(set(names) | {"T.max", "T.min"})


def test_every_op_and_intrinsic_has_a_value_test() -> None:
    missing = [n for n in registered_ops() + scalar_intrinsics() if n not in VALUE_TESTS]
    assert not missing, f"no value test for {missing}: add a check to VALUE_TESTS"
    # The registry and the intrinsic list are real (not empty by accident).
    assert "tile.add" in registered_ops() and len(registered_ops()) > 50
    assert {"T.exp", "T.log", "T.sqrt", "T.rsqrt", "T.abs", "T.sigmoid", "T.pow"} <= set(scalar_intrinsics())


def cpp_intrinsics() -> list:
    """The names of C++'s one intrinsic table (include/tl/intrinsics.def), through the binding."""
    return sorted(f"T.{d['name']}" for d in _core.intrinsics())


def test_every_cpp_intrinsic_has_a_wrapper_and_a_value_test() -> None:
    names = cpp_intrinsics()
    assert "T.exp" in names and "T.pow" in names, names
    assert set(names) <= set(scalar_intrinsics()), f"no T wrapper for {set(names) - set(scalar_intrinsics())}"
    assert set(names) <= set(VALUE_TESTS)


def test_t_intrinsics_are_the_rows_of_the_one_table() -> None:
    """T.exp, ..., T.pow are made from `_core.intrinsics()` (include/tl/intrinsics.def): exactly
    one wrapper per row, float-only where the row says so. Before, python kept its own copy
    (`_FLOAT_ONLY`, `_INTRINSIC_PARAMS` and seven assignments) beside three C++ lists."""
    rows = {d["name"]: d for d in _core.intrinsics()}
    wrappers = {n for n in dir(T) if getattr(getattr(T, n), "_tl_intrinsic", False)}
    assert wrappers == set(rows)
    assert {n for n, d in rows.items() if d["float_only"]} == {"exp", "log", "sqrt", "rsqrt", "sigmoid", "pow"}
    assert {n: d["arity"] for n, d in rows.items() if d["arity"] != 1} == {"pow": 2}
    assert rows["log"]["vector_op"] == "tile.ln" and rows["pow"]["vector_op"] is None
    assert rows["exp"]["exact"] == "bfloat16" and rows["abs"]["exact"] == "always"


def test_intrinsic_wrappers_match_the_cpp_intrinsics() -> None:
    """Each T intrinsic wrapper is an intrinsic C++ knows (an unknown name is an Error)."""
    for name in scalar_intrinsics():
        fn = getattr(T, name[2:])
        args = (1.5, 2.0) if name in ("T.pow", "T.max", "T.min") else (1.5,)
        assert fn(*args) is not None
    with pytest.raises(T.Error, match="unknown scalar intrinsic 'tan'"):
        _core.intrinsic("tan", [1.0])


def _grouped() -> Dict[str, Callable[[], None]]:
    """One check may cover several names (compare + select): each check runs once, under the
    names it covers."""
    groups: Dict[int, list] = {}
    for name, check in VALUE_TESTS.items():
        groups.setdefault(id(check), []).append(name)
    return {"+".join(names): VALUE_TESTS[names[0]] for names in groups.values()}


_GROUPS = _grouped()


@pytest.mark.parametrize("names", sorted(_GROUPS))
def test_value(names: str) -> None:
    _GROUPS[names]()
