"""The PyTorch operators of cann_ops_tilelang, registered when the package is imported:

    torch.ops.cann_ops_tilelang.rms_norm(x, weight, eps) -> y
    torch.ops.cann_ops_tilelang.rms_norm_residual(x, residual, weight, eps) -> (y, h)
    torch.ops.cann_ops_tilelang.rms_norm_backward(dy, x, weight, eps) -> (dx, dw)
    (and the ops below: softmax, layer_norm with layer_norm_backward, topk_gate, gemm)

Each is a torch.library.custom_op running the C++ library on the virtual NPU (CPU tensors), with
a register_fake shape function (so torch.compile and FakeTensor tracing see shapes and dtypes
without running the NPU) and, for the two forwards, register_autograd (their backward is
rms_norm_backward, rstd recomputed from x, so the forward saves only its inputs). Validation is
the library's: a wrong dtype, a non-contiguous view or a CUDA tensor gets its located message
(no `device_types` is given, so a tensor of any device reaches the implementation and its check,
rather than torch's "no kernel for CUDA"; meta and fake tensors take the fake function).
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from . import _ops

_NS = "cann_ops_tilelang"


# ---- rms_norm -------------------------------------------------------------------------------------

@torch.library.custom_op(f"{_NS}::rms_norm", mutates_args=())
def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """y = weight * x * rsqrt(mean(x^2, -1) + eps) over the last dimension."""
    return _ops.rms_norm(x, weight, eps=eps).y


@rms_norm.register_fake
def _rms_norm_fake(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    return torch.empty_like(x, memory_format=torch.contiguous_format)


@torch.library.custom_op(f"{_NS}::rms_norm_backward", mutates_args=())
def rms_norm_backward(dy: torch.Tensor, x: torch.Tensor, weight: torch.Tensor,
                      eps: float = 1e-6) -> tuple[torch.Tensor, torch.Tensor]:
    """(dx, dw) of rms_norm(x, weight, eps) for dy; dw is summed in a fixed order."""
    return _ops.rms_norm_backward(dy, x, weight, eps=eps)


@rms_norm_backward.register_fake
def _rms_norm_backward_fake(dy: torch.Tensor, x: torch.Tensor, weight: torch.Tensor,
                            eps: float = 1e-6) -> tuple[torch.Tensor, torch.Tensor]:
    return (torch.empty_like(x, memory_format=torch.contiguous_format),
            torch.empty_like(weight, memory_format=torch.contiguous_format))


def _setup_rms_norm(ctx: Any, inputs: tuple, output: Any) -> None:
    x, weight, eps = inputs
    ctx.save_for_backward(x, weight)
    ctx.eps = eps


def _rms_norm_grad(ctx: Any, dy: torch.Tensor) -> tuple:
    x, weight = ctx.saved_tensors
    # The library takes contiguous tensors; an autograd gradient may be a broadcast view (the
    # gradient of .sum() is an expanded scalar), which is not a user's bad input.
    dx, dw = rms_norm_backward(dy.contiguous(), x, weight, ctx.eps)
    return dx, dw, None


rms_norm.register_autograd(_rms_norm_grad, setup_context=_setup_rms_norm)


# ---- rms_norm_residual: the fused "add + norm" ----------------------------------------------------

@torch.library.custom_op(f"{_NS}::rms_norm_residual", mutates_args=())
def rms_norm_residual(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor,
                      eps: float = 1e-6) -> tuple[torch.Tensor, torch.Tensor]:
    """(y, h) with h = x + residual (rounded to x's dtype) and y = rms_norm(h) computed from h in
    fp32."""
    r = _ops.rms_norm(x, weight, residual=residual, eps=eps)
    return r.y, r.residual


@rms_norm_residual.register_fake
def _rms_norm_residual_fake(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor,
                            eps: float = 1e-6) -> tuple[torch.Tensor, torch.Tensor]:
    return (torch.empty_like(x, memory_format=torch.contiguous_format),
            torch.empty_like(x, memory_format=torch.contiguous_format))


def _setup_rms_norm_residual(ctx: Any, inputs: tuple, output: Any) -> None:
    _, _, weight, eps = inputs
    # The backward needs h (the normalised input), which is the second output.
    ctx.save_for_backward(output[1], weight)
    ctx.eps = eps


def _rms_norm_residual_grad(ctx: Any, dy: torch.Tensor, dh: torch.Tensor) -> tuple:
    h, weight = ctx.saved_tensors
    dx, dw = rms_norm_backward(dy.contiguous(), h, weight, ctx.eps)
    if dh is not None:  # h is an output too: its own gradient adds to the one through y
        dx = dx + dh
    return dx, dx, dw, None


rms_norm_residual.register_autograd(_rms_norm_residual_grad, setup_context=_setup_rms_norm_residual)


# ---- swiglu (activation domain) -------------------------------------------------------------------
#
#   torch.ops.cann_ops_tilelang.swiglu(x, weight=None, split="columns", clamp=None) -> y
#   torch.ops.cann_ops_tilelang.swiglu_backward(dy, x, weight=None, split="columns", clamp=None)
#       -> (dx, dweight)   (dweight: an empty fp32 tensor when there is no weight: a custom op
#                           cannot return None)

def _swiglu_y_shape(x: torch.Tensor, split: str) -> list[int]:
    shape = list(x.shape)
    if split == "rows":
        shape[0] //= 2
    else:
        shape[-1] //= 2
    return shape


@torch.library.custom_op(f"{_NS}::swiglu", mutates_args=())
def swiglu(x: torch.Tensor, weight: torch.Tensor | None = None, split: str = "columns",
           clamp: float | None = None) -> torch.Tensor:
    """y = silu(a) * b (* weight) with x split into a | b on columns (or a over b on rows)."""
    return _ops.swiglu(x, weight, split=split, clamp=clamp)


@swiglu.register_fake
def _swiglu_fake(x: torch.Tensor, weight: torch.Tensor | None = None, split: str = "columns",
                 clamp: float | None = None) -> torch.Tensor:
    return x.new_empty(_swiglu_y_shape(x, split))


@torch.library.custom_op(f"{_NS}::swiglu_backward", mutates_args=())
def swiglu_backward(dy: torch.Tensor, x: torch.Tensor, weight: torch.Tensor | None = None,
                    split: str = "columns", clamp: float | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(dx, dweight) of swiglu(x, weight, split, clamp) for dy; dweight is empty without a weight."""
    dx, dw = _ops.swiglu_backward(dy, x, weight, split=split, clamp=clamp)
    if dw is None:
        dw = torch.empty(0, dtype=torch.float32)
    return dx, dw


@swiglu_backward.register_fake
def _swiglu_backward_fake(dy: torch.Tensor, x: torch.Tensor, weight: torch.Tensor | None = None,
                          split: str = "columns",
                          clamp: float | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    dw = (torch.empty_like(weight, dtype=torch.float32, memory_format=torch.contiguous_format)
          if weight is not None else x.new_empty(0, dtype=torch.float32))
    return torch.empty_like(x, memory_format=torch.contiguous_format), dw


def _setup_swiglu(ctx: Any, inputs: tuple, output: Any) -> None:
    x, weight, split, clamp = inputs
    ctx.save_for_backward(x, weight)
    ctx.split, ctx.clamp = split, clamp


def _swiglu_grad(ctx: Any, dy: torch.Tensor) -> tuple:
    x, weight = ctx.saved_tensors
    # As for rms_norm: an autograd gradient may be a broadcast view, which is not a user's input.
    dx, dw = swiglu_backward(dy.contiguous(), x, weight, ctx.split, ctx.clamp)
    return dx, (dw if weight is not None else None), None, None


swiglu.register_autograd(_swiglu_grad, setup_context=_setup_swiglu)


# ---- softmax / log-softmax over the last dimension ------------------------------------------------
# softmax(x) -> y and log_softmax(x) -> y with autograd; their backwards take (dy, y): the
# forwards save their output, which is all the gradient needs.

@torch.library.custom_op(f"{_NS}::softmax", mutates_args=())
def softmax(x: torch.Tensor) -> torch.Tensor:
    """exp(x - max) / sum(exp(x - max)) over the last dimension (fp32 inside)."""
    return _ops.softmax(x)


@torch.library.custom_op(f"{_NS}::log_softmax", mutates_args=())
def log_softmax(x: torch.Tensor) -> torch.Tensor:
    """x - max - log(sum(exp(x - max))) over the last dimension (fp32 inside)."""
    return _ops.log_softmax(x)


@torch.library.custom_op(f"{_NS}::softmax_backward", mutates_args=())
def softmax_backward(dy: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """dx = y * (dy - sum(dy * y)) for y = softmax(x)."""
    return _ops.softmax_backward(dy, y)


@torch.library.custom_op(f"{_NS}::log_softmax_backward", mutates_args=())
def log_softmax_backward(dy: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """dx = dy - exp(y) * sum(dy) for y = log_softmax(x)."""
    return _ops.log_softmax_backward(dy, y)


def _like_fake(x: torch.Tensor, *rest: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x, memory_format=torch.contiguous_format)


softmax.register_fake(_like_fake)
log_softmax.register_fake(_like_fake)
softmax_backward.register_fake(_like_fake)
log_softmax_backward.register_fake(_like_fake)


def _setup_softmax(ctx: Any, inputs: tuple, output: Any) -> None:
    ctx.save_for_backward(output)


def _softmax_grad(ctx: Any, dy: torch.Tensor) -> torch.Tensor:
    (y,) = ctx.saved_tensors
    return softmax_backward(dy.contiguous(), y)


def _log_softmax_grad(ctx: Any, dy: torch.Tensor) -> torch.Tensor:
    (y,) = ctx.saved_tensors
    return log_softmax_backward(dy.contiguous(), y)


softmax.register_autograd(_softmax_grad, setup_context=_setup_softmax)
log_softmax.register_autograd(_log_softmax_grad, setup_context=_setup_softmax)


# ---- layer_norm (autograd through layer_norm_backward, below) ------------------------------------

@torch.library.custom_op(f"{_NS}::layer_norm", mutates_args=())
def layer_norm(x: torch.Tensor, weight: Optional[torch.Tensor] = None, bias: Optional[torch.Tensor] = None,
               eps: float = 1e-5) -> torch.Tensor:
    """(x - mean) * rsqrt(var + eps) (* weight) (+ bias) over the last dimension."""
    return _ops.layer_norm(x, weight, bias, eps=eps).y


@layer_norm.register_fake
def _layer_norm_fake(x: torch.Tensor, weight: Optional[torch.Tensor] = None, bias: Optional[torch.Tensor] = None,
                     eps: float = 1e-5) -> torch.Tensor:
    return torch.empty_like(x, memory_format=torch.contiguous_format)


@torch.library.custom_op(f"{_NS}::layer_norm_backward", mutates_args=())
def layer_norm_backward(dy: torch.Tensor, x: torch.Tensor, weight: torch.Tensor,
                        eps: float = 1e-5) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(dx, dweight, dbias) of layer_norm(x, weight, bias, eps) for dy; dweight and dbias are
    summed in a fixed order."""
    return _ops.layer_norm_backward(dy, x, weight, eps=eps)


@layer_norm_backward.register_fake
def _layer_norm_backward_fake(dy: torch.Tensor, x: torch.Tensor, weight: torch.Tensor,
                              eps: float = 1e-5) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return (torch.empty_like(x, memory_format=torch.contiguous_format),
            torch.empty_like(weight, memory_format=torch.contiguous_format),
            torch.empty_like(weight, memory_format=torch.contiguous_format))


def _setup_layer_norm(ctx: Any, inputs: tuple, output: Any) -> None:
    x, weight, bias, eps = inputs
    # Without a weight the backward runs with ones (the library's backward takes one).
    w = weight if weight is not None else torch.ones(x.shape[-1], dtype=x.dtype, device=x.device)
    ctx.save_for_backward(x, w)
    ctx.has_weight, ctx.has_bias, ctx.eps = weight is not None, bias is not None, eps


def _layer_norm_grad(ctx: Any, dy: torch.Tensor) -> tuple:
    x, w = ctx.saved_tensors
    # An autograd gradient may be a broadcast view (the gradient of .sum()): made contiguous.
    dx, dw, db = layer_norm_backward(dy.contiguous(), x, w, ctx.eps)
    return dx, dw if ctx.has_weight else None, db if ctx.has_bias else None, None


layer_norm.register_autograd(_layer_norm_grad, setup_context=_setup_layer_norm)


# ---- topk_gate (moe/): MoE routing; autograd for the weights w.r.t. the logits (topk_gate_backward,
# below): the choice is discrete, so the indices and the bias get no gradient ---------------------

@torch.library.custom_op(f"{_NS}::topk_gate", mutates_args=())
def topk_gate(logits: torch.Tensor, bias: Optional[torch.Tensor] = None, k: int = 8, scoring: str = "sigmoid",
              normalize: bool = True, route_scale: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    """(weights [T, k] float32, indices [T, k] int32): the top-k experts of scoring(logits) + bias,
    ties to the smaller index; weights the unbiased scores / (1e-20 + sum) * route_scale."""
    r = _ops.topk_gate(logits, bias, k=k, scoring=scoring, normalize=normalize, route_scale=route_scale)
    return r.weights, r.indices


@topk_gate.register_fake
def _topk_gate_fake(logits: torch.Tensor, bias: Optional[torch.Tensor] = None, k: int = 8,
                    scoring: str = "sigmoid", normalize: bool = True,
                    route_scale: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    t = logits.shape[0]
    return (logits.new_empty((t, k), dtype=torch.float32), logits.new_empty((t, k), dtype=torch.int32))


# ---- gemm (gemm/): C = op(A) op(B), with autograd through gemm itself -----------------------------

@torch.library.custom_op(f"{_NS}::gemm", mutates_args=())
def gemm(a: torch.Tensor, b: torch.Tensor, trans_a: bool = False, trans_b: bool = False,
         out_dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    """C = op(a) op(b): float16/bfloat16 in, fp32 accumulation, C in out_dtype (default a's)."""
    return _ops.gemm(a, b, trans_a=trans_a, trans_b=trans_b, out_dtype=None if out_dtype is None else
                     str(out_dtype).replace("torch.", ""))


@gemm.register_fake
def _gemm_fake(a: torch.Tensor, b: torch.Tensor, trans_a: bool = False, trans_b: bool = False,
               out_dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    m = a.shape[1] if trans_a else a.shape[0]
    n = b.shape[0] if trans_b else b.shape[1]
    return a.new_empty((m, n), dtype=out_dtype or a.dtype)


def _setup_gemm(ctx: Any, inputs: tuple, output: Any) -> None:
    a, b, trans_a, trans_b, _ = inputs
    ctx.save_for_backward(a, b)
    ctx.trans_a, ctx.trans_b = trans_a, trans_b


def _gemm_grad(ctx: Any, dc: torch.Tensor) -> tuple:
    # With C = op(A) op(B): d op(A) = dC op(B)^T and d op(B) = op(A)^T dC, each one gemm with
    # the transposes chosen so that no operand is copied; dC in A's dtype (the cube's input).
    a, b = ctx.saved_tensors
    ta, tb = ctx.trans_a, ctx.trans_b
    dc = dc.to(a.dtype).contiguous()
    da = db = None
    if ctx.needs_input_grad[0]:
        da = gemm(dc, b, False, not tb) if not ta else gemm(b, dc, tb, True)
    if ctx.needs_input_grad[1]:
        db = gemm(a, dc, not ta, False) if not tb else gemm(dc, a, True, ta)
    return da, db, None, None, None


gemm.register_autograd(_gemm_grad, setup_context=_setup_gemm)


# ---- rope (rope/) ---------------------------------------------------------------------------------
#
#   torch.ops.cann_ops_tilelang.rope(x, cos, sin, positions=None, style="half", rotate_last=True) -> y
#   torch.ops.cann_ops_tilelang.rope_backward(dy, cos, sin, positions=None, style="half",
#                                             rotate_last=True) -> dx
# rope has autograd for x (rope_backward, the adjoint rotation); the tables and positions get no
# gradient (they are constants of the model: cos/sin of the positions' angles).

@torch.library.custom_op(f"{_NS}::rope", mutates_args=())
def rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, positions: torch.Tensor | None = None,
         style: str = "half", rotate_last: bool = True) -> torch.Tensor:
    """y = r * cos + rotate(r) * sin on each head's rotated part r (x [tokens, heads, head_dim])."""
    return _ops.rope(x, cos, sin, positions, style=style, rotate_last=rotate_last)


@torch.library.custom_op(f"{_NS}::rope_backward", mutates_args=())
def rope_backward(dy: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, positions: torch.Tensor | None = None,
                  style: str = "half", rotate_last: bool = True) -> torch.Tensor:
    """dx of rope(x, cos, sin, positions, style, rotate_last) for dy."""
    return _ops.rope_backward(dy, cos, sin, positions, style=style, rotate_last=rotate_last)


@rope.register_fake
def _rope_fake(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, positions: torch.Tensor | None = None,
               style: str = "half", rotate_last: bool = True) -> torch.Tensor:
    return torch.empty_like(x, memory_format=torch.contiguous_format)


@rope_backward.register_fake
def _rope_backward_fake(dy: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                        positions: torch.Tensor | None = None, style: str = "half",
                        rotate_last: bool = True) -> torch.Tensor:
    return torch.empty_like(dy, memory_format=torch.contiguous_format)


def _setup_rope(ctx: Any, inputs: tuple, output: Any) -> None:
    x, cos, sin, positions, style, rotate_last = inputs
    ctx.save_for_backward(cos, sin, positions)
    ctx.style, ctx.rotate_last = style, rotate_last


def _rope_grad(ctx: Any, dy: torch.Tensor) -> tuple:
    cos, sin, positions = ctx.saved_tensors
    # As for rms_norm: an autograd gradient may be a broadcast view, which is not a user's input.
    dx = rope_backward(dy.contiguous(), cos, sin, positions, ctx.style, ctx.rotate_last)
    return dx, None, None, None, None, None


rope.register_autograd(_rope_grad, setup_context=_setup_rope)
# ---- flash_attention (attention/): (o, lse); its autograd (flash_attention_backward) is below ------

@torch.library.custom_op(f"{_NS}::flash_attention", mutates_args=())
def flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
                    layout: str = "BSHD", scale: Optional[float] = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(o, lse): o = softmax(scale q k^T [causal]) v per batch and head in `layout` ("BSHD" or
    "BHSD"), lse [B, H, S] float32. Differentiable: flash_attention_backward (below)."""
    r = _ops.flash_attention(q, k, v, causal=causal, layout=layout, scale=scale)
    return r.o, r.lse


@flash_attention.register_fake
def _flash_attention_fake(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
                          layout: str = "BSHD", scale: Optional[float] = None) -> tuple[torch.Tensor, torch.Tensor]:
    b, s, h = (q.shape[0], q.shape[1], q.shape[2]) if layout == "BSHD" else (q.shape[0], q.shape[2], q.shape[1])
    return (torch.empty_like(q, memory_format=torch.contiguous_format),
            q.new_empty((b, h, s), dtype=torch.float32))


# ---- topk_gate_backward (moe/): the logits' gradient of topk_gate's weights, and topk_gate's autograd

@torch.library.custom_op(f"{_NS}::topk_gate_backward", mutates_args=())
def topk_gate_backward(dweights: torch.Tensor, logits: torch.Tensor, indices: torch.Tensor, k: int = 8,
                       scoring: str = "sigmoid", normalize: bool = True, route_scale: float = 1.0) -> torch.Tensor:
    """d logits [T, E] (logits' dtype) for d weights [T, k] float32 and the forward's indices."""
    return _ops.topk_gate_backward(dweights, logits, indices, k=k, scoring=scoring, normalize=normalize,
                                   route_scale=route_scale)


@topk_gate_backward.register_fake
def _topk_gate_backward_fake(dweights: torch.Tensor, logits: torch.Tensor, indices: torch.Tensor, k: int = 8,
                             scoring: str = "sigmoid", normalize: bool = True,
                             route_scale: float = 1.0) -> torch.Tensor:
    return torch.empty_like(logits, memory_format=torch.contiguous_format)


def _setup_topk_gate(ctx: Any, inputs: tuple, output: Any) -> None:
    logits, _, k, scoring, normalize, route_scale = inputs
    ctx.save_for_backward(logits, output[1])
    ctx.k, ctx.scoring, ctx.normalize, ctx.route_scale = k, scoring, normalize, route_scale


def _topk_gate_grad(ctx: Any, dweights: torch.Tensor, _dindices: Any) -> tuple:
    # Only the weights carry a gradient, only to the logits: the bias steers the choice, which
    # is piecewise constant (its gradient is 0 almost everywhere; DeepSeek V3 updates it by a
    # load-balancing rule, not by the loss).
    logits, indices = ctx.saved_tensors
    dz = None
    if ctx.needs_input_grad[0]:
        dz = topk_gate_backward(dweights.to(torch.float32).contiguous(), logits, indices, ctx.k, ctx.scoring,
                                ctx.normalize, ctx.route_scale)
    return dz, None, None, None, None, None


topk_gate.register_autograd(_topk_gate_grad, setup_context=_setup_topk_gate)


# ---- flash_attention_backward (attention/): dq, dk, dv, and flash_attention's autograd ------------

@torch.library.custom_op(f"{_NS}::flash_attention_backward", mutates_args=())
def flash_attention_backward(dout: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                             o: torch.Tensor, lse: torch.Tensor, causal: bool = False, layout: str = "BSHD",
                             scale: Optional[float] = None,
                             dlse: Optional[torch.Tensor] = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(dq, dk, dv) of flash_attention(q, k, v, causal, layout, scale) for the gradient dout of o
    (and dlse of lse, when given), from the forward's o and lse."""
    return tuple(_ops.flash_attention_backward(dout, q, k, v, o, lse, causal=causal, layout=layout,
                                               scale=scale, dlse=dlse))


@flash_attention_backward.register_fake
def _flash_attention_backward_fake(dout: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                                   o: torch.Tensor, lse: torch.Tensor, causal: bool = False, layout: str = "BSHD",
                                   scale: Optional[float] = None, dlse: Optional[torch.Tensor] = None
                                   ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return tuple(torch.empty_like(t, memory_format=torch.contiguous_format) for t in (q, k, v))


def _setup_flash_attention(ctx: Any, inputs: tuple, output: Any) -> None:
    q, k, v, causal, layout, scale = inputs
    o, lse = output
    ctx.save_for_backward(q, k, v, o, lse)
    ctx.causal, ctx.layout, ctx.scale = causal, layout, scale


def _flash_attention_grad(ctx: Any, dout: Optional[torch.Tensor], dlse: Optional[torch.Tensor]) -> tuple:
    q, k, v, o, lse = ctx.saved_tensors
    # As for rms_norm: an autograd gradient may be a broadcast view, which is not a user's input.
    # An output the loss does not use has no gradient (None) or a zero one.
    dout = torch.zeros_like(o) if dout is None else dout.contiguous()
    dlse = None if dlse is None else dlse.contiguous()
    dq, dk, dv = flash_attention_backward(dout, q, k, v, o, lse, ctx.causal, ctx.layout, ctx.scale, dlse)
    return dq, dk, dv, None, None, None


flash_attention.register_autograd(_flash_attention_grad, setup_context=_setup_flash_attention)
