"""cann_ops_tilelang: the operator library of tl-ascend in Python (docs/ops.md).

    import cann_ops_tilelang as ops
    y = ops.rms_norm(x, w).y                       # torch tensors or numpy arrays, on the CPU

The functions run the C++ library (include/cann_ops_tilelang/) on the virtual NPU; `kernels`
holds the kernel generators in TileLang-Ascend syntax, twins of the C++ ones.
"""

from __future__ import annotations

from . import kernels
from ._ops import Error, RmsNormResult, kernel_cache_stats, ops, rms_norm, rms_norm_backward

__all__ = ["Error", "RmsNormResult", "kernel_cache_stats", "kernels", "ops", "rms_norm", "rms_norm_backward"]
