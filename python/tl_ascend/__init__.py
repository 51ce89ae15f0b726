"""tl_ascend: TileLang-Ascend kernels in Python, compiled by tl-ascend and run on its virtual NPU.

    import tl_ascend as tilelang
    import tl_ascend.language as T

    @tilelang.jit(out_idx=[-1])
    def add(M, N, dtype="float16"):
        @T.prim_func
        def main(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype), Z: T.Tensor((M, N), dtype)):
            ...
        return main

    z = add(1024, 1024)(x, y)        # torch CPU tensors or numpy arrays

The core (IR, compiler, virtual NPU) is the C++ library; this package is a nanobind binding
(`tl_ascend._core`) plus the script front end (`tl_ascend.language`). docs/python.md has the
whole story.
"""

from __future__ import annotations

from . import _core
from . import _names  # before any `from . import x`: module __getattr__ below relies on it
from ._core import Error, InternalError  # noqa: F401
from . import language  # noqa: F401
from .jit import JITKernel, PassConfigKey, compile, device, jit  # noqa: F401
from .jit import disable_cache  # noqa: F401
from .language.parser import PrimFunc  # noqa: F401
# TileLang's host-side helpers: tilelang.cache.clear_cache(), tilelang.math.next_power_of_2,
# tilelang.cdiv (TileLang's `from .math import *`), tilelang.profiler.do_bench.
from . import cache, math, profiler  # noqa: F401,E402
from .math import cdiv, next_power_of_2  # noqa: F401
from ._autotune import autotune  # noqa: F401,E402

# The project's one version number is project(VERSION) in CMakeLists.txt; the extension carries it.
__version__: str = _core.version


class DataType:
    """TileLang's DataType("float16").bits / .bytes."""

    def __init__(self, name: object) -> None:
        name = str(name)
        self.name = {"float": "float32", "int": "int32"}.get(name, name)
        self.bits = _core.dtype_bits(self.name)  # an unknown name is an Error listing the known ones
        self.bytes = self.bits // 8

    def __repr__(self) -> str:
        return f"DataType({self.name!r})"


def parse_ir(text: str, filename: str = "<ir>") -> PrimFunc:
    """A kernel from IR text (tl-ascend's printer format), e.g. a C++ kernel's `tlc print`."""
    return PrimFunc(_core.parse(text, filename), filename)


def cpp_kernel(name: str, **params: object) -> PrimFunc:
    """The C++ kernel registered as `name` (examples/), built with `params` (tlc's --set)."""
    return PrimFunc(_core.build_registered(name, {k: str(v) for k, v in params.items()}), f"<C++ {name}>")


def __getattr__(name: str) -> object:
    """An unknown `tilelang.<name>` (under the alias, docs/python.md): a tl_ascend.Error, also an
    AttributeError, with the tl-ascend spelling or the closest names (_names.py)."""
    import sys

    # Named as the script spelled it: `tilelang.` under the alias, else `tl_ascend.`.
    module = "tilelang" if sys.modules.get("tilelang") is sys.modules[__name__] else __name__
    raise _names.unknown(module, name, list(globals()), _names.TILELANG_HINTS)
