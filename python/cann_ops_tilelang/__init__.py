"""cann_ops_tilelang: the operator library of tl-ascend in Python (docs/ops.md).

    import cann_ops_tilelang as ops
    y = ops.rms_norm(x, w).y                       # torch tensors or numpy arrays, on the CPU
    y = torch.ops.cann_ops_tilelang.rms_norm(x, w, 1e-6)   # the PyTorch operator (autograd, compile)

The functions run the C++ library (include/cann_ops_tilelang/) on the virtual NPU; `kernels`
holds the kernel generators in TileLang-Ascend syntax, twins of the C++ ones. When torch is
installed, importing the package registers the PyTorch operators (torch_ops.py).
"""

from __future__ import annotations

from . import kernels
from ._ops import Error, RmsNormResult, kernel_cache_stats, ops, rms_norm, rms_norm_backward
from ._ops import swiglu, swiglu_backward
from ._ops import log_softmax, log_softmax_backward, softmax, softmax_backward
from ._ops import LayerNormResult, layer_norm

try:
    import torch as _torch  # noqa: F401
except ImportError:  # the plain functions work on numpy without torch
    _torch = None
from ._ops import TopkGateResult, gemm, topk_gate  # noqa: E402  (moe/, gemm/)
from ._ops import rope, rope_backward  # noqa: E402  (rope/)
from ._ops import FlashAttentionResult, flash_attention  # noqa: E402  (attention/)
from ._ops import topk_gate_backward  # noqa: E402  (moe/)
from ._ops import FlashAttentionGrads, flash_attention_backward  # noqa: E402  (attention/)

if _torch is not None:
    from . import torch_ops  # noqa: F401  (registers torch.ops.cann_ops_tilelang.*)

__all__ = ["Error", "RmsNormResult", "kernel_cache_stats", "kernels", "ops", "rms_norm", "rms_norm_backward",
           "swiglu", "swiglu_backward"]
__all__ += ["softmax", "log_softmax", "softmax_backward", "log_softmax_backward"]
__all__ += ["LayerNormResult", "layer_norm"]
__all__ += ["TopkGateResult", "topk_gate", "gemm"]
__all__ += ["rope", "rope_backward"]
from ._ops import layer_norm_backward  # noqa: E402

__all__ += ["layer_norm_backward"]
__all__ += ["FlashAttentionResult", "flash_attention"]
__all__ += ["topk_gate_backward"]
__all__ += ["FlashAttentionGrads", "flash_attention_backward"]
