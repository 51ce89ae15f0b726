"""The library's public functions in Python: tensors in, tensors out, on the virtual NPU.

Each function hands its tensors to the C++ library (tl_ascend._core, python/src/bind_ops.cpp)
without a copy, and the C++ side validates them (dtype, shape, contiguity, alignment, eps) with
the library's own messages, located at the user's file:line (the first frame outside this
package, torch and tl_ascend). Only what cannot reach C++ is checked here: the kind of object
(a torch tensor or a numpy array) and its device (the virtual NPU reads host memory, so a CUDA or
meta tensor is refused with a message in the library's form). Outputs come back in the inputs'
framework: torch tensors for torch inputs, numpy arrays for numpy ones (bfloat16 through
ml_dtypes), owning the GM the library allocated for them.
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any, NamedTuple, Optional

import importlib

import tl_ascend
from tl_ascend import _core

# The module tl_ascend.jit (its device, launch lock and framework helpers); the attribute
# tl_ascend.jit is the decorator of the same name.
_jit = importlib.import_module("tl_ascend.jit")

Error = _core.Error

_HERE = os.path.dirname(os.path.abspath(__file__))
_TL = os.path.dirname(os.path.abspath(tl_ascend.__file__))
_LOCATED = re.compile(r"^\S+:\d+: ")


def _torch_dir() -> Optional[str]:
    torch = _jit._torch()
    return None if torch is None else os.path.dirname(os.path.abspath(torch.__file__))


def _caller() -> tuple[str, int]:
    """(file, line) of the user's call: the first frame outside this package, torch (its
    custom-op dispatch and autograd frames) and tl_ascend."""
    skip = [d + os.sep for d in (_HERE, _TL, _torch_dir()) if d]
    frame = sys._getframe(1)
    generated = None  # the first "<...>" frame (torch.compile's graphs; `python -c`, a REPL)
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith("<"):
            generated = generated or (name, frame.f_lineno)
        elif not any(os.path.abspath(name).startswith(d) for d in skip):
            return (name, frame.f_lineno)
        frame = frame.f_back
    return generated or ("<unknown>", 0)


def _fail(loc: tuple[str, int], op: str, arg: str, what: str) -> Error:
    return Error(f"{loc[0]}:{loc[1]}: {op}: argument '{arg}' {what}")


def _is_torch(x: Any) -> bool:
    return _jit._is_torch(x)


def _arg(x: Any, op: str, arg: str, loc: tuple[str, int]) -> tuple:
    """The launcher's tensor tuple (array, dtype override or None, name) for `x`."""
    name = f"{op}: argument '{arg}'"
    if _is_torch(x):
        if x.device.type != "cpu":
            raise _fail(loc, op, arg, f"must be on the CPU: expected a CPU tensor (the virtual NPU reads host "
                                      f"memory), got a tensor on device '{x.device}'")
        if x.requires_grad:
            x = x.detach()  # DLPack refuses tensors that require grad; the data is the same
        if x.is_conj() or x.is_neg():
            x = x.resolve_conj().resolve_neg()
        return (x, None, name)
    np = _jit._np()
    if np is not None and isinstance(x, np.ndarray):
        special = _jit._specials().get(x.dtype)
        if special is not None:
            return (x.view(special[1]), special[0], name)
        return (x, None, name)
    raise _fail(loc, op, arg, f"must be a tensor: expected a torch tensor or a numpy array, got "
                              f"{type(x).__name__}")


def _out(a: Any, torch_in: bool) -> Any:
    """A library output (a DLPack array, or None) in the inputs' framework."""
    if a is None:
        return None
    if torch_in:
        return _jit._torch().from_dlpack(a)
    np = _jit._np()
    out = a  # a numpy array already (bind_ops.cpp)
    if out.dtype == np.uint16:  # bfloat16 bits (bind_ops.cpp): the ml_dtypes view
        ml = _jit._ml_dtypes()
        if ml is None:
            raise Error("a numpy bfloat16 output needs the ml_dtypes package (pip install ml_dtypes)")
        out = out.view(ml.bfloat16)
    return out


def _call(fn: Any, loc: tuple[str, int], *args: Any) -> Any:
    """Runs a binding on the target's device, one launch at a time (tl_ascend's launch lock); an
    error the library raised without a location (the DLPack import's) gets the caller's."""
    target = "A2"
    try:
        with _jit._launch_lock(target):
            return fn(_jit.device(target), *args, loc)
    except _core.InternalError:
        raise
    except _core.Error as e:
        if _LOCATED.search(str(e)):
            raise
        raise Error(f"{loc[0]}:{loc[1]}: {e}") from None
    except TypeError as e:  # nanobind refusing an array it cannot view (e.g. a non-CPU DLPack)
        raise Error(f"{loc[0]}:{loc[1]}: {e}") from None


class RmsNormResult(NamedTuple):
    y: Any                   # like x
    residual: Any = None     # h = x + residual in x's dtype, when a residual was given
    rstd: Any = None         # fp32, x's leading shape, when return_rstd


def _eps(eps: Any, op: str, loc: tuple[str, int]) -> float:
    if isinstance(eps, bool) or not isinstance(eps, (int, float)):
        raise _fail(loc, op, "eps", f"must be a number: expected a float, got {type(eps).__name__}")
    return float(eps)


def rms_norm(x: Any, weight: Any, residual: Any = None, eps: float = 1e-6,
             return_rstd: bool = False) -> RmsNormResult:
    """y = weight * h * rsqrt(mean(h^2, -1) + eps) with h = x (+ residual), on the virtual NPU.

    x: [..., H] bfloat16/float16/float32, contiguous, H * itemsize a multiple of 32 bytes; weight:
    [H] of x's dtype; residual: None or like x. Returns RmsNormResult(y, residual=h, rstd)."""
    loc = _caller()
    op = "rms_norm"
    args = [_arg(x, op, "x", loc), _arg(weight, op, "weight", loc)]
    res = None if residual is None else _arg(residual, op, "residual", loc)
    torch_in = _is_torch(x)
    y, h, rstd = _call(_core.ops_rms_norm, loc, args[0], args[1], res, _eps(eps, op, loc), bool(return_rstd),
                       not torch_in)
    return RmsNormResult(_out(y, torch_in), _out(h, torch_in), _out(rstd, torch_in))


def rms_norm_backward(dy: Any, x: Any, weight: Any, eps: float = 1e-6) -> tuple[Any, Any]:
    """(dx, dw), the gradients of rms_norm(x, weight).y for dy; rstd is recomputed from x and dw
    is summed in a fixed order (the same bits on every run)."""
    loc = _caller()
    op = "rms_norm_backward"
    a = [_arg(dy, op, "dy", loc), _arg(x, op, "x", loc), _arg(weight, op, "weight", loc)]
    torch_in = _is_torch(x)
    dx, dw = _call(_core.ops_rms_norm_backward, loc, *a, _eps(eps, op, loc), not torch_in)
    return _out(dx, torch_in), _out(dw, torch_in)


def ops() -> list[dict]:
    """The library's ops: [{name, summary, domain}], as `tlc ops` lists them."""
    return list(_core.ops_list())


def kernel_cache_stats() -> dict:
    """{hits, misses} of the library's compiled-kernel cache (one compile per key)."""
    return dict(_core.ops_kernel_cache_stats())


# ---- SwiGLU (activation domain) -------------------------------------------------------------------

def _split(split: Any, op: str, loc: tuple[str, int]) -> bool:
    """True for a split on rows."""
    if split not in ("columns", "rows"):
        raise _fail(loc, op, "split", f"is not a split: expected 'columns' or 'rows', got {split!r}")
    return split == "rows"


def _clamp(clamp: Any, op: str, loc: tuple[str, int]) -> Optional[float]:
    if clamp is None:
        return None
    if isinstance(clamp, bool) or not isinstance(clamp, (int, float)):
        raise _fail(loc, op, "clamp", f"must be a number or None: expected a float, got {type(clamp).__name__}")
    return float(clamp)


def swiglu(x: Any, weight: Any = None, split: str = "columns", clamp: Optional[float] = None) -> Any:
    """y = silu(a) * b (* weight), on the virtual NPU, computed in fp32.

    x: bfloat16/float16/float32, contiguous; split "columns": x [..., 2H] = a | b, y [..., H];
    "rows": x [2T, H], a = x[:T], b = x[T:], y [T, H]. H * itemsize a multiple of 32 bytes.
    weight: None or float32 of y's leading shape (one per token). clamp: None or L: a <= L and
    b in [-L, L] before the product (DeepSeek V4: 10)."""
    loc = _caller()
    op = "swiglu"
    xa = _arg(x, op, "x", loc)
    wa = None if weight is None else _arg(weight, op, "weight", loc)
    torch_in = _is_torch(x)
    y = _call(_core.ops_swiglu, loc, xa, wa, _split(split, op, loc), _clamp(clamp, op, loc), not torch_in)
    return _out(y, torch_in)


def swiglu_backward(dy: Any, x: Any, weight: Any = None, split: str = "columns",
                    clamp: Optional[float] = None) -> tuple[Any, Any]:
    """(dx, dweight), the gradients of swiglu(x, weight, split, clamp) for dy: dx like x (da | db,
    zero where clamped), dweight float32 like weight (None without a weight)."""
    loc = _caller()
    op = "swiglu_backward"
    a = [_arg(dy, op, "dy", loc), _arg(x, op, "x", loc)]
    wa = None if weight is None else _arg(weight, op, "weight", loc)
    torch_in = _is_torch(x)
    dx, dw = _call(_core.ops_swiglu_backward, loc, *a, wa, _split(split, op, loc), _clamp(clamp, op, loc),
                   not torch_in)
    return _out(dx, torch_in), _out(dw, torch_in)


# ---- softmax / log-softmax (include/cann_ops_tilelang/softmax.h) ----------------------------

def _softmax(x: Any, log: bool, op: str, loc: tuple[str, int], dim: Any) -> Any:
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise _fail(loc, op, "dim", f"must be an int: expected -1 (the last dimension), got {type(dim).__name__}")
    ndim = len(x.shape) if hasattr(x, "shape") else 0
    if dim not in (-1, ndim - 1):
        raise _fail(loc, op, "dim", f"is not supported: expected the last dimension (-1 or {ndim - 1}), got {dim}")
    a = _arg(x, op, "x", loc)
    torch_in = _is_torch(x)
    return _out(_call(_core.ops_softmax, loc, a, log, not torch_in), torch_in)


def softmax(x: Any, dim: int = -1) -> Any:
    """exp(x - max) / sum(exp(x - max)) over the last dimension, on the virtual NPU, fp32 inside.

    x: [..., N] bfloat16/float16/float32, contiguous, any N >= 1 (rows longer than UB are read in
    chunks). Returns a tensor like x."""
    return _softmax(x, False, "softmax", _caller(), dim)


def log_softmax(x: Any, dim: int = -1) -> Any:
    """x - max - log(sum(exp(x - max))) over the last dimension; arguments as softmax."""
    return _softmax(x, True, "log_softmax", _caller(), dim)


def _softmax_backward(dy: Any, y: Any, log: bool, op: str, loc: tuple[str, int]) -> Any:
    a = [_arg(dy, op, "dy", loc), _arg(y, op, "y", loc)]
    torch_in = _is_torch(y)
    return _out(_call(_core.ops_softmax_backward, loc, *a, log, not torch_in), torch_in)


def softmax_backward(dy: Any, y: Any) -> Any:
    """dx = y * (dy - sum(dy * y)), the gradient of y = softmax(x) for dy."""
    return _softmax_backward(dy, y, False, "softmax_backward", _caller())


def log_softmax_backward(dy: Any, y: Any) -> Any:
    """dx = dy - exp(y) * sum(dy), the gradient of y = log_softmax(x) for dy."""
    return _softmax_backward(dy, y, True, "log_softmax_backward", _caller())


# ---- layer_norm (include/cann_ops_tilelang/norm.h) ------------------------------------------

class LayerNormResult(NamedTuple):
    y: Any               # like x
    mean: Any = None     # fp32, x's leading shape, when return_stats
    rstd: Any = None     # fp32, 1 / sqrt(var + eps), likewise


def layer_norm(x: Any, weight: Any = None, bias: Any = None, eps: float = 1e-5,
               return_stats: bool = False) -> LayerNormResult:
    """y = (x - mean) * rsqrt(var + eps) (* weight) (+ bias) over the last dimension, fp32 inside.

    x: [..., H] bfloat16/float16/float32, contiguous; weight, bias: None or [H] of x's dtype."""
    loc = _caller()
    op = "layer_norm"
    a = _arg(x, op, "x", loc)
    w = None if weight is None else _arg(weight, op, "weight", loc)
    b = None if bias is None else _arg(bias, op, "bias", loc)
    torch_in = _is_torch(x)
    y, mean, rstd = _call(_core.ops_layer_norm, loc, a, w, b, _eps(eps, op, loc), bool(return_stats), not torch_in)
    return LayerNormResult(_out(y, torch_in), _out(mean, torch_in), _out(rstd, torch_in))


def layer_norm_backward(dy: Any, x: Any, weight: Any, eps: float = 1e-5) -> tuple[Any, Any, Any]:
    """(dx, dweight, dbias), the gradients of layer_norm(x, weight, bias).y for dy; mean and rstd
    are recomputed from x, dweight and dbias summed in a fixed order (the same bits on every run).

    dy, x: [..., H] bfloat16/float16/float32, contiguous, H * itemsize whole 32-byte blocks;
    weight: [H] of x's dtype (ones for a LayerNorm without one)."""
    loc = _caller()
    op = "layer_norm_backward"
    a = [_arg(dy, op, "dy", loc), _arg(x, op, "x", loc), _arg(weight, op, "weight", loc)]
    torch_in = _is_torch(x)
    dx, dw, db = _call(_core.ops_layer_norm_backward, loc, *a, _eps(eps, op, loc), not torch_in)
    return _out(dx, torch_in), _out(dw, torch_in), _out(db, torch_in)


# ---- MoE top-k gate and GEMM (include/cann_ops_tilelang/moe.h, gemm.h) ---------------------------

_SCORINGS = {"none": 0, "sigmoid": 1, "softmax": 2}


class TopkGateResult(NamedTuple):
    weights: Any  # [T, k] float32
    indices: Any  # [T, k] int32, descending biased score, ties to the smaller expert


def topk_gate(logits: Any, bias: Any = None, k: int = 8, scoring: str = "sigmoid", normalize: bool = True,
              route_scale: float = 1.0) -> TopkGateResult:
    """MoE routing: scores = scoring(logits) ("sigmoid", "softmax" or "none"); the k experts with
    the largest scores + bias (bias for the choice only), exact, ties to the smaller index;
    weights = their unbiased scores / (1e-20 + their sum) (normalize) * route_scale.

    logits: [T, E] bfloat16/float16/float32, E a multiple of 32; bias: None or [E] float32;
    k: a multiple of 8 in [8, E]."""
    loc = _caller()
    op = "topk_gate"
    z = _arg(logits, op, "logits", loc)
    b = None if bias is None else _arg(bias, op, "bias", loc)
    if scoring not in _SCORINGS:
        raise _fail(loc, op, "scoring", f"is unknown: expected one of {', '.join(map(repr, _SCORINGS))}, got "
                                        f"{scoring!r}")
    if isinstance(k, bool) or not isinstance(k, int):
        raise _fail(loc, op, "k", f"must be an int: expected a Python int, got {type(k).__name__}")
    if isinstance(route_scale, bool) or not isinstance(route_scale, (int, float)):
        raise _fail(loc, op, "route_scale", f"must be a number: expected a float, got {type(route_scale).__name__}")
    torch_in = _is_torch(logits)
    w, idx = _call(_core.ops_topk_gate, loc, z, b, k, _SCORINGS[scoring], bool(normalize), float(route_scale),
                   not torch_in)
    return TopkGateResult(_out(w, torch_in), _out(idx, torch_in))


def gemm(a: Any, b: Any, trans_a: bool = False, trans_b: bool = False, out_dtype: Optional[str] = None) -> Any:
    """C = op(a) op(b) on the cube: float16/bfloat16 in, fp32 accumulation, C in out_dtype
    ("float16", "bfloat16", "float32"; default a's dtype). a: [M, K] ([K, M] when trans_a),
    b: [K, N] ([N, K] when trans_b); any M, N, K."""
    loc = _caller()
    op = "gemm"
    args = [_arg(a, op, "a", loc), _arg(b, op, "b", loc)]
    if out_dtype is not None and not isinstance(out_dtype, str):
        out_dtype = str(out_dtype).replace("torch.", "")
    torch_in = _is_torch(a)
    c = _call(_core.ops_gemm, loc, args[0], args[1], bool(trans_a), bool(trans_b), out_dtype, not torch_in)
    return _out(c, torch_in)


# ---- RoPE (include/cann_ops_tilelang/rope.h) ------------------------------------------------------

def _rope(op: str, xarg: str, x: Any, cos: Any, sin: Any, positions: Any, style: Any, rotate_last: Any,
          backward: bool, loc: tuple[str, int]) -> Any:
    if style not in ("half", "interleaved"):
        raise _fail(loc, op, "style", f"is not a RoPE style: expected 'half' or 'interleaved', got {style!r}")
    if not isinstance(rotate_last, bool):
        raise _fail(loc, op, "rotate_last", f"must be a bool: expected True or False, got {type(rotate_last).__name__}")
    args = [_arg(x, op, xarg, loc), _arg(cos, op, "cos", loc), _arg(sin, op, "sin", loc)]
    pa = None if positions is None else _arg(positions, op, "positions", loc)
    torch_in = _is_torch(x)
    y = _call(_core.ops_rope, loc, *args, pa, style, rotate_last, backward, not torch_in)
    return _out(y, torch_in)


def rope(x: Any, cos: Any, sin: Any, positions: Any = None, style: str = "half", rotate_last: bool = True) -> Any:
    """Rotary position embedding on the virtual NPU, fp32 inside: y = r * c + rotate(r) * s on each
    head's rotated part r, the rest of the head passed through.

    x: [tokens, heads, head_dim] bfloat16/float16/float32; cos, sin: float32 [rows, rot_dim], one
    entry per rotated element (a pair's two entries equal for standard RoPE); positions: None
    (token t uses row t) or int32 [tokens]. style "half" rotates (r[i], r[i + rot_dim/2]) (GPT-NeoX),
    "interleaved" (r[2i], r[2i+1]); rotate_last: the last rot_dim elements of a head rotate (else the
    first)."""
    return _rope("rope", "x", x, cos, sin, positions, style, rotate_last, False, _caller())


def rope_backward(dy: Any, cos: Any, sin: Any, positions: Any = None, style: str = "half",
                  rotate_last: bool = True) -> Any:
    """dx of rope(x, cos, sin, positions, style, rotate_last) for dy: the adjoint rotation."""
    return _rope("rope_backward", "dy", dy, cos, sin, positions, style, rotate_last, True, _caller())
# ---- FlashAttention forward (include/cann_ops_tilelang/attention.h) -------------------------------

class FlashAttentionResult(NamedTuple):
    o: Any    # like q
    lse: Any  # [B, H, S] float32: log(sum_j exp(scale q k_j)) per query


def flash_attention(q: Any, k: Any, v: Any, causal: bool = False, layout: str = "BSHD",
                    scale: Optional[float] = None) -> FlashAttentionResult:
    """o = softmax(scale q k^T [causal: keys j <= i]) v per batch and head, and its row
    log-sum-exp, on the virtual NPU (scores in fp32; P rounded to q's dtype before P V).

    q, k, v: float16/bfloat16, one shape, [B, S, H, D] (layout "BSHD") or [B, H, S, D] ("BHSD"),
    D 64 or 128; scale: default 1 / sqrt(D)."""
    loc = _caller()
    op = "flash_attention"
    args = [_arg(q, op, "q", loc), _arg(k, op, "k", loc), _arg(v, op, "v", loc)]
    if layout not in ("BSHD", "BHSD"):
        raise _fail(loc, op, "layout", f"is unknown: expected 'BSHD' or 'BHSD', got {layout!r}")
    if scale is not None and (isinstance(scale, bool) or not isinstance(scale, (int, float))):
        raise _fail(loc, op, "scale", f"must be a number: expected a float or None, got {type(scale).__name__}")
    torch_in = _is_torch(q)
    o, lse = _call(_core.ops_flash_attention, loc, *args, bool(causal), layout,
                   None if scale is None else float(scale), not torch_in)
    return FlashAttentionResult(_out(o, torch_in), _out(lse, torch_in))


def topk_gate_backward(dweights: Any, logits: Any, indices: Any, k: int = 8, scoring: str = "sigmoid",
                       normalize: bool = True, route_scale: float = 1.0) -> Any:
    """The logits' gradient [T, E] (the logits' dtype) of topk_gate's weights for dweights
    [T, k] float32, with the forward's indices [T, k] int32 (values in [0, E)) and its k,
    scoring, normalize and route_scale (docs/ops.md "MoE top-k gate", backward)."""
    loc = _caller()
    op = "topk_gate_backward"
    dw = _arg(dweights, op, "dweights", loc)
    z = _arg(logits, op, "logits", loc)
    idx = _arg(indices, op, "indices", loc)
    if scoring not in _SCORINGS:
        raise _fail(loc, op, "scoring", f"is unknown: expected one of {', '.join(map(repr, _SCORINGS))}, got "
                                        f"{scoring!r}")
    if isinstance(k, bool) or not isinstance(k, int):
        raise _fail(loc, op, "k", f"must be an int: expected a Python int, got {type(k).__name__}")
    if isinstance(route_scale, bool) or not isinstance(route_scale, (int, float)):
        raise _fail(loc, op, "route_scale", f"must be a number: expected a float, got {type(route_scale).__name__}")
    torch_in = _is_torch(logits)
    dz = _call(_core.ops_topk_gate_backward, loc, dw, z, idx, k, _SCORINGS[scoring], bool(normalize),
               float(route_scale), not torch_in)
    return _out(dz, torch_in)


# ---- FlashAttention backward (include/cann_ops_tilelang/attention.h) ------------------------------

class FlashAttentionGrads(NamedTuple):
    dq: Any  # like q
    dk: Any  # like k
    dv: Any  # like v


def flash_attention_backward(dout: Any, q: Any, k: Any, v: Any, o: Any, lse: Any, causal: bool = False,
                             layout: str = "BSHD", scale: Optional[float] = None,
                             dlse: Any = None) -> FlashAttentionGrads:
    """dq, dk, dv of flash_attention(q, k, v, causal, layout, scale).o for the upstream gradient
    dout, from the forward's o and lse (docs/ops.md "FlashAttention backward"): two kernels on the
    virtual NPU (dq and Delta = rowsum(dout * o), then dk and dv).

    dout, q, k, v, o: float16/bfloat16, one shape in the layout; lse: [B, H, S] float32; dlse
    (optional, like lse): lse's gradient when the caller used lse."""
    loc = _caller()
    op = "flash_attention_backward"
    args = [_arg(dout, op, "dout", loc), _arg(q, op, "q", loc), _arg(k, op, "k", loc), _arg(v, op, "v", loc),
            _arg(o, op, "o", loc), _arg(lse, op, "lse", loc), None if dlse is None else _arg(dlse, op, "dlse", loc)]
    if layout not in ("BSHD", "BHSD"):
        raise _fail(loc, op, "layout", f"is unknown: expected 'BSHD' or 'BHSD', got {layout!r}")
    if scale is not None and (isinstance(scale, bool) or not isinstance(scale, (int, float))):
        raise _fail(loc, op, "scale", f"must be a number: expected a float or None, got {type(scale).__name__}")
    torch_in = _is_torch(q)
    dq, dk, dv = _call(_core.ops_flash_attention_backward, loc, *args, bool(causal), layout,
                       None if scale is None else float(scale), not torch_in)
    return FlashAttentionGrads(_out(dq, torch_in), _out(dk, torch_in), _out(dv, torch_in))
