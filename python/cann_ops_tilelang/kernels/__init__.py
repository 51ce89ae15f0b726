"""The library's kernel generators in TileLang-Ascend syntax (the Python twins of the C++
generators of cann_ops_tilelang/<domain>/*_kernel.cpp), and the launch parameters the library
chooses for them, so a user can print, change and compile the kernel an op runs."""

from __future__ import annotations

from tl_ascend import _core

from .rms_norm import rms_norm_bwd_kernel, rms_norm_dw_reduce_kernel, rms_norm_fwd_kernel
from .swiglu import swiglu_bwd_kernel, swiglu_dw_reduce_kernel, swiglu_fwd_kernel


def rms_norm_fwd_key(dtype: str, hidden: int, residual: bool = False, rstd: bool = False,
                     target: str = "A2") -> dict:
    """The key rms_norm launches its forward kernel with for this hidden size on `target`:
    {dtype, hidden, rows_per_tile, chunk, blocks, residual, rstd} (blocks from the target's core
    count, chunk the widest divisor of H that fits its UB)."""
    return dict(_core.ops_rms_norm_fwd_key(dtype, hidden, residual, rstd, target))


def rms_norm_bwd_key(dtype: str, hidden: int, target: str = "A2") -> dict:
    """The key rms_norm_backward launches its kernels with (the partial count is 2 * blocks)."""
    return dict(_core.ops_rms_norm_bwd_key(dtype, hidden, target))


def swiglu_key(dtype: str, hidden: int, backward: bool = False, rows: bool = False, clamp: bool = False,
               weight: bool = False, target: str = "A2") -> dict:
    """The key swiglu (backward=False) or swiglu_backward launches with for a width H (of y) on
    `target`: {dtype, hidden, rows_per_tile, chunk, blocks, rows, clamp, weight} (blocks from the
    target's core count, chunk the widest divisor of H whose tiles fit its UB)."""
    return dict(_core.ops_swiglu_key(dtype, hidden, backward, rows, clamp, weight, target))


__all__ = ["rms_norm_fwd_kernel", "rms_norm_bwd_kernel", "rms_norm_dw_reduce_kernel", "rms_norm_fwd_key",
           "rms_norm_bwd_key",
           "swiglu_fwd_kernel", "swiglu_bwd_kernel", "swiglu_dw_reduce_kernel", "swiglu_key"]

# ---- softmax / log-softmax ----------------------------------------------------------------
from .softmax import softmax_kernel  # noqa: E402


def softmax_key(dtype: str, cols: int, log: bool = False, backward: bool = False, target: str = "A2") -> dict:
    """The key softmax / log_softmax (backward=False) or their backwards launch with for rows of
    `cols` on `target`: {dtype, cols, rows_per_tile, chunk, blocks, log, backward}; chunk == cols is
    the one-pass schedule, else rows are read in chunks of `chunk` columns (from the target's UB)."""
    return dict(_core.ops_softmax_key(dtype, cols, log, backward, target))


__all__ += ["softmax_kernel", "softmax_key"]

# ---- MoE top-k gate and GEMM (moe/, gemm/) -------------------------------------------------------
from .gemm import gemm_kernel  # noqa: E402
from .topk_gate import topk_gate_kernel  # noqa: E402


def topk_gate_key(dtype: str, experts: int, k: int = 8, scoring: int = 1, bias: bool = True,
                  normalize: bool = True, target: str = "A2") -> dict:
    """The key topk_gate launches with: {dtype, experts, k, rows_per_tile, blocks, scoring, bias,
    normalize} (blocks from the target's core count; scoring 0 none, 1 sigmoid, 2 softmax)."""
    return dict(_core.ops_topk_gate_key(dtype, experts, k, scoring, bias, normalize, target))


def gemm_key(dtype: str, n: int, k: int, trans_a: bool = False, trans_b: bool = False,
             out_dtype: str | None = None, target: str = "A2") -> dict:
    """The key gemm launches with for N, K: block sizes from the target's L0C / L1 capacities,
    blocks its AIC count."""
    return dict(_core.ops_gemm_key(dtype, out_dtype or dtype, n, k, trans_a, trans_b, target))


__all__ += ["topk_gate_kernel", "topk_gate_key", "gemm_kernel", "gemm_key"]

# ---- RoPE (rope/) ---------------------------------------------------------------------------------
from .rope import rope_kernel  # noqa: E402


def rope_key(dtype: str, heads: int, head_dim: int, rot_dim: int, style: str = "half", rotate_last: bool = True,
             backward: bool = False, positions: bool = False, target: str = "A2") -> dict:
    """The key rope / rope_backward launch with: {dtype, heads, head_dim, rot_dim, rot_offset,
    interleaved, backward, positions, tokens_per_tile, heads_per_tile, blocks} (tile sizes from
    the target's UB, blocks from its core count)."""
    return dict(_core.ops_rope_key(dtype, heads, head_dim, rot_dim, style, rotate_last, backward, positions,
                                   target))


__all__ += ["rope_kernel", "rope_key"]

# ---- LayerNorm forward and backward (norm/) ------------------------------------------------------
from .layer_norm import layer_norm_bwd_kernel, layer_norm_kernel  # noqa: E402


def layer_norm_key(dtype: str, hidden: int, weight: bool = True, bias: bool = True, stats: bool = False,
                   target: str = "A2") -> dict:
    """The key layer_norm launches with: {dtype, hidden, rows_per_tile, blocks, weight, bias, stats}
    (the widest row tile that fits the target's UB, blocks from its core count)."""
    return dict(_core.ops_layer_norm_key(dtype, hidden, weight, bias, stats, target))


def layer_norm_bwd_key(dtype: str, hidden: int, target: str = "A2") -> dict:
    """The key layer_norm_backward launches with: {dtype, hidden, rows_per_tile, chunk, blocks}
    (the partial count is 2 * blocks)."""
    return dict(_core.ops_layer_norm_bwd_key(dtype, hidden, target))


def layer_norm_dwb_reduce_key(bwd_key: dict) -> dict:
    """The key of the dW | dB partials reduction layer_norm_backward runs: an RMSNorm dW
    reduction key over 2H columns, for rms_norm_dw_reduce_kernel(**key, partials=2 * blocks)."""
    return dict(_core.ops_layer_norm_dwb_reduce_key(bwd_key))


__all__ += ["layer_norm_kernel", "layer_norm_bwd_kernel", "layer_norm_key", "layer_norm_bwd_key",
            "layer_norm_dwb_reduce_key"]
# ---- FlashAttention forward (attention/) ----------------------------------------------------------
from .attention import flash_attention_kernel  # noqa: E402


def flash_attention_key(dtype: str, heads: int, dim: int, causal: bool = False, layout: str = "BSHD",
                        scale: float | None = None, target: str = "A2", seq: int = 0) -> dict:
    """The key flash_attention launches with for sequences of `seq` (0: not known): {dtype, heads,
    dim, causal, layout, scale, block_m, block_n, stages, skew, blocks} (blocks: the target's AIC
    count; scale default 1 / sqrt(dim); 128 x 128 tiles, 3 stages, skew 2, for every length)."""
    s = scale if scale is not None else 1.0 / dim ** 0.5
    return dict(_core.ops_flash_attention_key(dtype, heads, dim, causal, layout, s, target, seq))


__all__ += ["flash_attention_kernel", "flash_attention_key"]

# ---- MoE top-k gate backward (moe/) ---------------------------------------------------------------
from .topk_gate_bwd import topk_gate_bwd_kernel  # noqa: E402


def topk_gate_bwd_key(dtype: str, experts: int, k: int = 8, scoring: int = 1, normalize: bool = True,
                      target: str = "A2") -> dict:
    """The key topk_gate_backward launches with (the forward's fields; bias unused)."""
    return dict(_core.ops_topk_gate_bwd_key(dtype, experts, k, scoring, normalize, target))


__all__ += ["topk_gate_bwd_kernel", "topk_gate_bwd_key"]

# ---- FlashAttention backward (attention/) ---------------------------------------------------------
from .attention_bwd import (flash_attention_bwd_cast_kernel, flash_attention_bwd_dkdv_kernel,  # noqa: E402
                            flash_attention_bwd_dq_kernel)


def flash_attention_bwd_key(dtype: str, heads: int, dim: int, causal: bool = False, layout: str = "BSHD",
                            scale: float | None = None, target: str = "A2") -> dict:
    """The key flash_attention_backward launches both its kernels with (the forward's fields:
    dtype, heads, dim, causal, layout, scale, block_m, block_n, stages, skew, blocks)."""
    s = scale if scale is not None else 1.0 / dim ** 0.5
    return dict(_core.ops_flash_attention_bwd_key(dtype, heads, dim, causal, layout, s, target))


__all__ += ["flash_attention_bwd_dq_kernel", "flash_attention_bwd_dkdv_kernel", "flash_attention_bwd_cast_kernel",
            "flash_attention_bwd_key"]
