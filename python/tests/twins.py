"""What the twin tests share: a Python example's IR and its C++ twin's, as text without
source locations (the test_twins_*.py files compare them)."""

import importlib

import tl_ascend as tilelang


def python_ir(module, generator, args):
    """The IR of python/examples/<module>.py's jit generator `generator` called with `args`."""
    gen = getattr(importlib.import_module(module), generator)
    return gen(**args).func.script(False)


def cpp_ir(name, params):
    """The IR of the C++ example registered as `name`, built with `params` (tlc's --set)."""
    return tilelang.cpp_kernel(name, **params).script(False)
