"""Regressions of issue 27's review of the Python front end (the script parser and jit).

Each test says what it gave before the fix. The items:
  1. a loop over a Python list or tuple lost each iteration's assignments;
  2. two kernels or macros under one functools.wraps decorator were parsed from one source;
  3. `s = s + x[i]` in a kernel loop silently did not accumulate (TVMScript's let scoping);
  4. a closure variable without a value yet (or a kernel local read before its assignment)
     silently read a module global of the same name;
  5. @jit returned gen(2)'s kernel for gen(2.0) (and gen(0.0)'s for gen(-0.0));
  6. T.float16(0.1) was not rounded to float16, and T.Parallel then refused it as mixed precision.
"""

import functools

import numpy as np
import pytest

import tl_ascend as tilelang
import tl_ascend.language as T
from located import expect_error

SIZES = [1, 7, 33, 1000, 4097]


def run(kernel, out_idx, *args):
    return tilelang.compile(kernel, out_idx=out_idx)(*args)


# ---- 1. loops over Python sequences ---------------------------------------------------------------------

def test_a_loop_over_a_tuple_keeps_each_iterations_assignments():
    """Before: `offset` went back to 0 after each iteration, so both iterations wrote Y[0] and
    the store after the loop went to Y[-1] (an out-of-bounds error at launch)."""

    @T.prim_func
    def k(X: T.Tensor((8,), "float32"), Y: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=1) as cid:
            offset = 0
            for part in (0, 1):
                Y[offset] = X[offset] + 1.0
                offset = offset + 4
            Y[offset - 1] = 42.0

    y = run(k, [1], np.arange(8, dtype=np.float32))
    assert y.tolist() == [1, 0, 0, 0, 5, 0, 0, 42]


def test_a_loop_over_a_list_of_buffers_carries_a_kernel_let():
    """A symbolic running offset across an unrolled list of tensors. Before: every iteration
    read base = cid * 4 (the assignment of the previous one was dropped), so W's values
    overwrote V's at Y[0:2] and Y[2:4] stayed 0."""

    @T.prim_func
    def k(V: T.Tensor((2,), "float32"), W: T.Tensor((2,), "float32"), Y: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=1) as cid:
            base = cid * 4
            for src in [V, W]:
                for i in T.serial(2):
                    Y[base + i] = src[i] * 10.0
                base = base + 2

    y = run(k, [2], np.array([1, 2], np.float32), np.array([3, 4], np.float32))
    assert y.tolist() == [10, 20, 30, 40]


# ---- 2. functools.wraps decorators -----------------------------------------------------------------------

def deco(f):
    @functools.wraps(f)
    def w(*a, **kw):
        return f(*a, **kw)

    return w


def test_two_wrapped_kernels_and_macros_are_each_parsed_from_their_own_source():
    """Before: the sources were keyed by the wrapper's code object, shared by every function
    `deco` wraps, so k2 was parsed from k1's source (named 'k1', computing X + 1: 2.0 where 3.0
    was due) and add_two from add_one's."""

    @T.prim_func
    @deco
    def k1(X: T.Tensor((4,), "float32"), Y: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=1) as cid:
            Y[0] = X[0] + 1.0

    @T.prim_func
    @deco
    def k2(X: T.Tensor((4,), "float32"), Y: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=1) as cid:
            Y[0] = X[0] + 2.0

    assert (k1.name, k2.name) == ("k1", "k2")
    x = np.ones(4, np.float32)
    assert run(k1, [1], x)[0] == 2.0
    assert run(k2, [1], x)[0] == 3.0

    @T.macro
    @deco
    def add_one(Y, X):
        Y[0] = X[0] + 1.0

    @T.macro
    @deco
    def add_two(Y, X):
        Y[0] = X[0] + 2.0

    @T.prim_func
    def k3(X: T.Tensor((4,), "float32"), Y: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=1) as cid:
            add_one(Y, X)

    @T.prim_func
    def k4(X: T.Tensor((4,), "float32"), Y: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=1) as cid:
            add_two(Y, X)

    assert run(k3, [1], x)[0] == 2.0
    assert run(k4, [1], x)[0] == 3.0


# ---- 3. let scoping ---------------------------------------------------------------------------------------

def test_a_let_accumulated_in_a_loop_is_an_error_pointing_to_alloc_var():
    """Before: `s = s + X[i]` made a new let per iteration, each reading the outer s (0), and
    Y[0] = s stored the outer 0.0: 0 where sum(X) = 28 was meant, silently."""

    def build():
        @T.prim_func
        def k(X: T.Tensor((8,), "float32"), Y: T.Tensor((1,), "float32")):
            with T.Kernel(1, threads=1) as cid:
                s = X[0] * 0.0
                for i in T.serial(8):
                    s = s + X[i]  # MARK
                Y[0] = s

    expect_error(build, "MARK", "'s'", "T.alloc_var")


def test_a_let_rebound_in_a_branch_and_read_after_it_is_an_error():
    """Before: v = 1.0 inside the kernel `if` was a let of the branch; Y[cid] = v after it read
    the outer 0.0, so block 0 stored 0 where 1 was meant."""

    def build():
        @T.prim_func
        def k(Y: T.Tensor((2,), "float32")):
            with T.Kernel(2, threads=1) as cid:
                v = 0.0
                if cid == 0:
                    v = 1.0
                Y[cid] = v  # MARK

    expect_error(build, "MARK", "'v'", "line", "T.alloc_var")


def test_a_name_assigned_only_inside_a_loop_is_not_visible_after_it():
    """Before: `last` after the loop fell back to the module global `last` (a function here)
    and the store failed with an unrelated message."""

    def build():
        @T.prim_func
        def k(X: T.Tensor((4,), "float32"), Y: T.Tensor((1,), "float32")):
            with T.Kernel(1, threads=1) as cid:
                for i in T.serial(4):
                    last = X[i]
                Y[0] = last  # MARK

    expect_error(build, "MARK", "'last'", "no value here")


def last():  # the global a kernel local of that name must never reach
    return 0


def test_rebinding_per_iteration_without_reading_the_outer_value_is_kept():
    """TileLang-Ascend's scripts rebind outer names per iteration (`chunk_len = ...` in the
    chunked delta rule) and remap the block index (`cid = T.use_swizzle(i * n + cid, ...)`):
    both stay accepted and compute what TVMScript's scoping says."""

    @T.prim_func
    def k(X: T.Tensor((8,), "float32"), Y: T.Tensor((8,), "float32")):
        with T.Kernel(2, threads=1) as cid:
            width = 4
            Y[cid * 4] = X[cid * 4] + width
            for i in T.serial(2):
                width = i + 10
                Y[cid * 4 + 1 + i] = X[cid * 4 + 1 + i] + width
                cid = 1 - cid  # a launch variable remapped: reads the launch's cid every iteration
                Y[cid * 4 + 3] = -1.0

    x = np.zeros(8, np.float32)
    y = run(k, [1], x)
    assert y.tolist() == [4, 10, 11, -1, 4, 10, 11, -1]


@pytest.mark.parametrize("n", SIZES)
def test_alloc_var_accumulates_across_iterations(n):
    """The remedy the error points to: a T.alloc_var is written, not rebound."""

    @T.prim_func
    def k(X: T.Tensor((n,), "float32"), Y: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=1) as cid:
            s = T.alloc_var("float32", init=0.0)
            for i in T.serial(n):
                s = s + X[i]
            Y[0] = s

    x = (np.arange(n) % 7).astype(np.float32)  # small integers: the sum is exact in float32
    assert run(k, [1], x)[0] == float((np.arange(n) % 7).sum())


# ---- 4. name resolution --------------------------------------------------------------------------------------

c = 5.0  # a module global that an empty closure cell of the same name must not reach


def test_an_empty_closure_cell_is_an_error_not_the_module_global():
    """Before: `c` (assigned in the generator after the kernel) was read from the module
    global c = 5.0: Y[0] = 6.0, silently."""

    def build():
        @T.prim_func
        def k(X: T.Tensor((4,), "float32"), Y: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=1) as cid:
                Y[0] = X[0] + c  # MARK

        c = 1.0  # noqa: F841
        return k

    expect_error(build, "MARK", "'c'", "no value yet")


def test_a_kernel_local_read_before_its_assignment_is_an_error():
    """Before: `c` read before `c = 2.0` in the kernel fell back to the module global 5.0."""

    def build():
        @T.prim_func
        def k(X: T.Tensor((4,), "float32"), Y: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=1) as cid:
                Y[0] = X[0] + c  # MARK
                c = 2.0  # noqa: F841

    expect_error(build, "MARK", "'c'", "no value here")


def test_closure_global_and_builtin_names_resolve_as_python_does():
    def gen(scale):
        @T.prim_func
        def k(X: T.Tensor((4,), "float32"), Y: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=1) as cid:
                Y[0] = X[0] + scale + abs(-1)  # a closure cell, a builtin
                Y[1] = X[1] + c  # the module global

        return k

    y = run(gen(10.0), [1], np.ones(4, np.float32))
    assert y.tolist()[:2] == [12.0, 6.0]


# ---- 5. the jit cache key ---------------------------------------------------------------------------------------

@tilelang.jit(out_idx=[1])
def scaled(v):
    @T.prim_func
    def k(X: T.Tensor((4,), "float32"), Y: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=1) as cid:
            Y[0] = X[0] * v
            Y[1] = X[1] + v

    return k


def test_the_jit_cache_tells_argument_types_and_float_bits_apart():
    """Before: 2, 2.0 and True are equal with equal hashes, so gen(2.0) and gen(True) returned
    gen(2)'s kernel (its IR reads `* 2`); gen(-0.0) returned gen(0.0)'s, whose Y[0] = 1 * 0.0
    is +0.0 where -0.0 was due."""
    kernels = [scaled(2), scaled(2.0), scaled(True)]
    assert len({id(k) for k in kernels}) == 3
    assert "2.0" in kernels[1].get_tile_ir(False)
    assert scaled(2) is kernels[0]  # still cached
    x = np.ones(4, np.float32)
    assert not np.signbit(scaled(0.0)(x)[0])
    assert np.signbit(scaled(-0.0)(x)[0])
    assert scaled(float("nan")) is scaled(float("nan"))  # a NaN's bits equal themselves


# ---- 6. low-precision literals ------------------------------------------------------------------------------------

def test_low_precision_literals_hold_their_dtypes_value():
    """Before: T.float16(0.1) held 0.1 (0.0999755859375 is the float16 nearest it)."""
    assert T.float16(0.1).const_value() == float(np.float16(0.1))
    assert T.bfloat16(0.1).const_value() == 0.10009765625
    assert T.float8_e4m3(0.1).const_value() == 0.1015625
    assert T.float32(0.1).const_value() == float(np.float32(0.1))


@pytest.mark.parametrize("n", SIZES)
def test_a_float16_literal_scales_a_float16_tile(n):
    """Before: T.Parallel refused `x[i] * T.float16(0.1)`: "mixed precision: * of float16 and
    float16 in a float16 node would round twice"."""

    @T.prim_func
    def k(X: T.Tensor((n,), "float16"), Y: T.Tensor((n,), "float16")):
        with T.Kernel(1, threads=1) as cid:
            x = T.alloc_shared((n,), "float16")
            T.copy(X, x)
            for i in T.Parallel(n):
                x[i] = x[i] * T.float16(0.1)
            T.copy(x, Y)

    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float16)
    # The product of two float16 values is exact in float32; it is rounded to float16 once.
    want = (x.astype(np.float32) * np.float32(np.float16(0.1))).astype(np.float16)
    np.testing.assert_array_equal(run(k, [1], x), want)
