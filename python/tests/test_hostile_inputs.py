"""Hostile inputs: each kernel, option or call here is wrong, and each must fail with a
tl_ascend.Error whose message names this file, the line at fault and the construct or argument,
never a raw Python exception, a crash or a hang.

Before issue 27's front-end fixes, on these 74 cases: 15 leaked a raw Python exception
(TypeError x8: T.Kernel("four"), T.serial("four"), async def, a macro called outside a kernel,
a list or None for a tensor, the wrong argument count, a string for a scalar; AttributeError x2:
T.prim_func of a class, pass_configs as a list; RecursionError x2: a macro calling itself, a
helper recursing; ValueError: T.float16("abc"); ZeroDivisionError and KeyError from helpers);
8 were a tl_ascend.Error without the line (T.exp's arity, a scalar parameter's dtype 'int33',
out_idx out of range or a string, an unknown pass config, mode='slow', a wrong shape or dtype
at call time); 6 were accepted silently (a kernel with *args, T.Kernel(2.5), out_idx naming a
parameter twice, a pass config 'yes', X[0.5], X[cid > 0]). The parser now wraps every
statement's failure in one place (_Parser.located) and jit.py locates its own errors at the
caller's line, naming the kernel's definition (_located).

Each case marks the line the error must name with `# MARK`.
"""

import numpy as np
import pytest

import tl_ascend as tilelang
import tl_ascend.language as T
from located import expect_error

CASES = []


def case(*fragments):
    """Registers a hostile case: it must raise a tl_ascend.Error naming this file:<the MARK line>
    and every fragment."""

    def register(fn):
        CASES.append(pytest.param(fn, fragments, id=fn.__name__))
        return fn

    return register


def vec(n=16, dtype="float32"):
    return T.Tensor((n,), dtype)


def helper_divides(a, b):
    return a // b


def helper_recurses(n):
    return helper_recurses(n + 1)


def helper_looks_up(key):
    return {"a": 1}[key]


@T.macro
def forever(x):
    forever(x)


# ---- T calls: arity and argument types ---------------------------------------------------------

@case("T.copy", "missing")
def copy_without_a_destination():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            T.copy(X)  # MARK


@case("T.fill", "missing")
def fill_without_a_value():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel(1, threads=1) as cid:
            x = T.alloc_shared((16,), "float32")
            T.fill(x)  # MARK


@case("T.copy", "positional")
def copy_with_too_many_arguments():
    @T.prim_func
    def k(X: vec(), Y: vec()):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            T.copy(X, Y, False, False, None, True, 7)  # MARK


@case("T.tile.add")
def tile_add_with_one_operand():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            with T.Scope("V"):
                x = T.alloc_ub((16,), "float32")
                T.tile.add(x)  # MARK


@case("T.tile.add", "no operand or attribute 'bogus'")
def tile_add_with_an_unknown_keyword():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            with T.Scope("V"):
                x = T.alloc_ub((16,), "float32")
                T.tile.add(x, x, x, bogus=1)  # MARK


@case("T.exp", "takes 1 argument")
def exp_of_two_values():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel(1, threads=1) as cid:
            X[0] = T.exp(X[0], X[1])  # MARK


@case("T.alloc_ub")
def alloc_with_a_string_shape():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            with T.Scope("V"):
                x = T.alloc_ub("sixteen", "float32")  # MARK  # noqa: F841


@case("floot32", "unknown dtype")
def alloc_with_a_bad_dtype():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            with T.Scope("V"):
                x = T.alloc_ub((16,), "floot32")  # MARK  # noqa: F841


@case("T.alloc_ub", "'x' is 0", "positive size")
def alloc_of_zero_elements():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            with T.Scope("V"):
                x = T.alloc_ub((0,), "float32")  # MARK  # noqa: F841

    tilelang.compile(k)


@case("T.alloc_ub", "'x' is -4", "positive size")
def alloc_of_a_negative_shape():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            with T.Scope("V"):
                x = T.alloc_ub((-4, 16), "float32")  # MARK  # noqa: F841

    tilelang.compile(k)


@case("T.float16", "could not convert")
def a_dtype_called_on_a_string():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel(1, threads=1) as cid:
            X[0] = T.float16("abc")  # MARK


@case("T.alloc_var")
def alloc_var_with_a_string_init():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel(1, threads=1) as cid:
            v = T.alloc_var("int32", init="seven")  # MARK  # noqa: F841


# ---- parameters -----------------------------------------------------------------------------------

@case("T.Tensor", "'X' is -1")
def a_tensor_parameter_of_negative_shape():
    @T.prim_func
    def k(X: T.Tensor((-1,), "float32")):  # MARK
        with T.Kernel(1, threads=1) as cid:
            X[0] = 1.0

    tilelang.compile(k)


@case("'X'", "T.Tensor(shape, dtype)", "[16, 'float32']")
def a_parameter_annotated_with_a_list():
    @T.prim_func
    def k(X: [16, "float32"]):  # MARK
        with T.Kernel(1, threads=1) as cid:
            pass


@case("int33", "unknown dtype")
def a_scalar_parameter_of_a_bad_dtype():
    @T.prim_func
    def k(X: vec(), n: "int33"):  # MARK  # noqa: F821
        with T.Kernel(1, threads=1) as cid:
            X[0] = 1.0


@case("'X'", "needs an annotation")
def a_parameter_without_an_annotation():
    @T.prim_func
    def k(X):  # MARK
        with T.Kernel(1, threads=1) as cid:
            X[0] = 1.0


@case("'X'", "expected T.Tensor")
def a_parameter_annotated_with_a_number():
    @T.prim_func
    def k(X: 5):  # MARK
        with T.Kernel(1, threads=1) as cid:
            pass


@case("*args")
def a_kernel_with_star_args():
    @T.prim_func
    def k(*X):  # MARK
        with T.Kernel(1, threads=1) as cid:
            pass


@case("prim_func", "def")
def a_prim_func_of_a_class():
    class NotAKernel:
        pass

    T.prim_func(NotAKernel)  # MARK


@case("T.prim_func", "async def")
def an_async_kernel():
    @T.prim_func
    async def k(X: vec()):  # MARK
        pass


# ---- names -----------------------------------------------------------------------------------------

@case("'nowhere'", "not defined")
def an_undefined_name():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel(1, threads=1) as cid:
            X[0] = nowhere  # MARK  # noqa: F821


@case("T.nonexistent", "T.nonexistent is not in tl-ascend")
def an_undefined_t_function():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel(1, threads=1) as cid:
            T.nonexistent(X)  # MARK


@case("'foo'", "no attribute")
def an_attribute_of_a_shape():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel(1, threads=1) as cid:
            X[0] = X.shape.foo  # MARK


@case("'later'", "no value yet")
def a_closure_variable_assigned_after_the_kernel():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel(1, threads=1) as cid:
            X[0] = later  # MARK

    later = 1.0  # noqa: F841


@case("'n'", "no value here")
def a_local_read_before_its_assignment():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel(1, threads=1) as cid:
            X[0] = n  # MARK
            n = 2  # noqa: F841


@case("'count'", "cannot be called")
def calling_a_number():
    @T.prim_func
    def k(X: vec()):
        count = 5
        with T.Kernel(1, threads=1) as cid:
            X[0] = count(3)  # MARK


# ---- statements a kernel cannot hold ------------------------------------------------------------------

@case("try/except")
def a_try_statement():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel(1, threads=1) as cid:
            try:  # MARK
                X[0] = 1.0
            except Exception:
                pass


@case("`with` in a kernel takes T.Kernel or T.Scope")
def a_with_of_something_else():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel(1, threads=1) as cid:
            with open(__file__):  # MARK
                pass


@case("'Lambda'")
def a_lambda():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel(1, threads=1) as cid:
            f = lambda v: v + 1  # MARK  # noqa: E731,F841


@case("'Yield'")
def a_yield():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel(1, threads=1) as cid:
            yield X  # MARK


@case("match")
def a_match_statement():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel(1, threads=1) as cid:
            match cid:  # MARK
                case 0:
                    pass


@case("class")
def a_class_in_a_kernel():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel(1, threads=1) as cid:
            class C:  # MARK
                pass


@case("global")
def a_global_statement():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel(1, threads=1) as cid:
            global CASES  # MARK


@case("del")
def a_del_statement():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel(1, threads=1) as cid:
            v = 1
            del v  # MARK


@case("def")
def a_nested_def():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel(1, threads=1) as cid:
            def inner():  # MARK
                pass


@case("while loops are not supported")
def a_while_loop():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel(1, threads=1) as cid:
            while False:  # MARK
                pass


@case("break")
def a_break():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel(1, threads=1) as cid:
            for i in T.serial(4):
                break  # MARK


@case("returns nothing")
def a_return_value():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel(1, threads=1) as cid:
            return X  # MARK


@case("chained assignment")
def a_chained_assignment():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel(1, threads=1) as cid:
            a = b = 1  # MARK  # noqa: F841


@case("cannot unpack 3 values into 2 names")
def an_unpacking_of_the_wrong_length():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel(1, threads=1) as cid:
            a, b = (1, 2, 3)  # MARK


@case("assert", "wrong size")
def a_failed_assert():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel(1, threads=1) as cid:
            assert 16 == 32, "wrong size"  # MARK


# ---- values ---------------------------------------------------------------------------------------------

@case("1 // 0", "by zero")
def a_constant_division_by_zero():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel(1, threads=1) as cid:
            X[0] = 1 // 0  # MARK


@case("helper_divides", "ZeroDivisionError")
def a_helper_dividing_by_zero():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel(1, threads=1) as cid:
            X[0] = helper_divides(4, 0)  # MARK


@case("helper_looks_up", "KeyError")
def a_helper_with_a_missing_key():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel(1, threads=1) as cid:
            X[0] = helper_looks_up("b")  # MARK


@case("indexing list", "out of range")
def a_list_index_out_of_range():
    sizes = [1, 2]

    @T.prim_func
    def k(X: vec()):
        with T.Kernel(1, threads=1) as cid:
            X[0] = sizes[5]  # MARK


@case("'X'", "2 indices for 1 dimensions")
def too_many_indices():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel(1, threads=1) as cid:
            X[0, 0] = 1.0  # MARK


@case("`0.5`", "must be an integer", "float")
def a_float_index():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel(1, threads=1) as cid:
            X[0.5] = 1.0  # MARK


@case("`cid > 0`", "must be an integer", "bool")
def a_condition_as_an_index():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel(1, threads=1) as cid:
            X[0] = X[cid > 0]  # MARK


@case("slice of 'X'")
def a_store_to_a_slice():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel(1, threads=1) as cid:
            X[0:4] = 1.0  # MARK


@case("T.copy", "operand 'dst'", "[64]", "[32]")
def a_copy_between_mismatched_shapes():
    @T.prim_func
    def k(X: T.Tensor((64,), "float32")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            with T.Scope("V"):
                x = T.alloc_ub((32,), "float32")
                T.copy(X[0:64], x)  # MARK

    tilelang.compile(k)


@case("no Python truth value")
def a_kernel_value_in_a_python_condition():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel(4, threads=1) as cid:
            X[0] = 1.0 if bool(cid > 1) else 2.0  # MARK


# ---- launches, scopes, loops, macros ------------------------------------------------------------------

@case("T.Kernel", "four")
def a_kernel_of_a_string_block_count():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel("four", is_npu=True) as (cid, vid):  # MARK
            pass


@case("T.Kernel", "2.5")
def a_kernel_of_a_float_block_count():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel(2.5, is_npu=True) as (cid, vid):  # MARK
            pass


@case("T.Kernel binds")
def a_kernel_binding_three_names():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel(1, is_npu=True) as (a, b, c):  # MARK
            pass


@case("exactly one T::Kernel launch")
def nested_kernels():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel(1, threads=1) as cid:
            with T.Kernel(1, threads=1) as cid2:  # MARK
                pass


@case("T.Scope", "\"X\"")
def a_scope_of_an_unknown_core():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            with T.Scope("X"):  # MARK
                pass


@case("T.serial")
def a_serial_loop_of_a_string():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel(1, threads=1) as cid:
            for i in T.serial("four"):  # MARK
                pass


@case("a kernel loop iterates over", "5")
def a_loop_over_an_int():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel(1, threads=1) as cid:
            for i in 5:  # MARK
                pass


@case("forever", "32 calls deep")
def a_macro_calling_itself():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel(1, threads=1) as cid:
            forever(X)  # MARK


@case("recursion limit")
def a_helper_recursing_forever():
    @T.prim_func
    def k(X: vec()):
        with T.Kernel(1, threads=1) as cid:
            X[0] = helper_recurses(0)  # MARK


@case("only be called inside a @T.prim_func")
def a_macro_called_outside_a_kernel():
    forever(1)  # MARK


# ---- compile options ---------------------------------------------------------------------------------------

def two_tensors():
    @T.prim_func
    def k(X: vec(), Y: vec()):
        with T.Kernel(1, threads=1) as cid:
            Y[0] = X[0]

    return k


@case("out_idx", "twice")
def out_idx_naming_a_parameter_twice():
    k = two_tensors()
    tilelang.compile(k, out_idx=[1, -1])  # MARK


@case("out_idx", "5", "2 parameters")
def out_idx_out_of_range():
    k = two_tensors()
    tilelang.compile(k, out_idx=[5])  # MARK


@case("out_idx", "'Y'")
def out_idx_of_a_string():
    k = two_tensors()
    tilelang.compile(k, out_idx=["Y"])  # MARK


@case("unknown developer option 'no_such_pass'")
def an_unknown_pass_config():
    k = two_tensors()
    tilelang.compile(k, out_idx=[1], pass_configs={"tl.dev.no_such_pass": True})  # MARK


@case("pass config", "tl.dev.vectorize", "'yes'")
def a_pass_config_value_that_is_not_a_bool():
    k = two_tensors()
    tilelang.compile(k, out_idx=[1], pass_configs={tilelang.PassConfigKey.TL_DEV_VECTORIZE: "yes"})  # MARK


@case("pass_configs", "list")
def pass_configs_that_are_not_a_dict():
    k = two_tensors()
    tilelang.compile(k, out_idx=[1], pass_configs=["tl.dev.vectorize"])  # MARK


@case("mode", "'slow'")
def an_unknown_mode():
    k = two_tensors()
    tilelang.compile(k, out_idx=[1], mode="slow")  # MARK


# ---- calls ------------------------------------------------------------------------------------------------

@case("argument 'X'", "list")
def a_list_for_a_tensor():
    kernel = tilelang.compile(two_tensors(), out_idx=[1])
    kernel([1.0] * 16)  # MARK


@case("argument 'X'", "NoneType")
def none_for_a_tensor():
    kernel = tilelang.compile(two_tensors(), out_idx=[1])
    kernel(None)  # MARK


@case("kernel 'k' takes 1 arguments (X), got 2")
def too_many_arguments():
    kernel = tilelang.compile(two_tensors(), out_idx=[1])
    kernel(np.zeros(16, np.float32), np.zeros(17, np.float32))  # MARK: not Y's shape


@case("'X'", "shape")
def a_tensor_of_the_wrong_shape():
    kernel = tilelang.compile(two_tensors(), out_idx=[1])
    kernel(np.zeros(17, np.float32))  # MARK


@case("'X'", "float32", "float64")
def a_tensor_of_the_wrong_dtype():
    kernel = tilelang.compile(two_tensors(), out_idx=[1])
    kernel(np.zeros(16, np.float64))  # MARK


@case("argument 'n'", "str")
def a_string_for_a_scalar():
    @T.prim_func
    def k(X: vec(), n: T.int32):
        with T.Kernel(1, threads=1) as cid:
            X[0] = T.cast(n, "float32")

    kernel = tilelang.compile(k)
    kernel(np.zeros(16, np.float32), "three")  # MARK


@pytest.mark.parametrize("build,fragments", CASES)
def test_a_hostile_input_is_a_located_error(build, fragments):
    expect_error(build, "# MARK", *fragments)


def test_the_table_is_large():
    assert len(CASES) >= 50
