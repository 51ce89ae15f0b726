"""An opt-in torch_npu stand-in: scripts written for an Ascend card run on the virtual NPU.

`import tl_ascend.torch_npu` (in place of `import torch_npu`) makes `tensor.npu()`,
`module.npu()`, `torch.npu.synchronize()`, `torch.npu.is_available()`, `torch.npu.set_device()`,
`device="npu"` and `torch.device("npu")` work on a machine without a card: tensors stay on the CPU, where the
virtual NPU reads them. It changes torch only when imported, and only by adding what torch_npu
would add.
"""

from __future__ import annotations

import functools
import sys
import types

import torch

_installed = False


def _npu(self, *args, **kwargs):
    return self


class _NpuNamespace(types.ModuleType):
    """torch.npu: a module (torch imports it by name), holding the functions install() gives it."""

    def __init__(self, **functions) -> None:
        super().__init__("torch.npu")
        self.__dict__.update(functions)


def _is_npu(d) -> bool:
    """"npu", "npu:0" or torch.device("npu") (a str or a torch.device naming the card)."""
    return isinstance(d, (str, torch.device)) and str(d).startswith("npu")


def _map_device(kwargs):
    if _is_npu(kwargs.get("device")):
        kwargs["device"] = "cpu"


# ---- CPU versions of the torch_npu operators TileLang-Ascend's examples use as references ------------
# Each follows the operator's documented formula (CANN's aclnnMoeTokenPermute / aclnnMoeTokenUnpermute).


def npu_moe_token_permute(tokens: torch.Tensor, indices: torch.Tensor, num_out_tokens: int | None = None,
                          padded_mode: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """MoE permute: with topK = indices.shape[1] (1 for 1-D indices),
    first = argsort(flatten(indices)) (stable), sorted_indices = argsort(first), and
    permuted[sorted_indices[i]] = tokens[i // topK]. num_out_tokens > 0 keeps the first
    num_out_tokens rows of the permuted tokens. Returns (permuted, sorted_indices as int32)."""
    if padded_mode:
        raise _core_error("torch_npu.npu_moe_token_permute: padded_mode=True is not supported (CANN documents it "
                          "as not supported either)")
    if tokens.dim() != 2 or indices.dim() not in (1, 2) or indices.shape[0] != tokens.shape[0]:
        raise _core_error(f"torch_npu.npu_moe_token_permute: expected tokens (num_tokens, hidden) and indices "
                          f"(num_tokens[, topK]), got {tuple(tokens.shape)} and {tuple(indices.shape)}")
    topk = indices.shape[1] if indices.dim() == 2 else 1
    flat = indices.reshape(-1)
    n = flat.numel()
    if num_out_tokens is not None and num_out_tokens < 0:
        raise _core_error(f"torch_npu.npu_moe_token_permute: num_out_tokens must be >= 0, got {num_out_tokens}")
    rows = n if not num_out_tokens else min(int(num_out_tokens), n)
    sorted_indices = torch.argsort(torch.argsort(flat, stable=True), stable=True)
    keep = sorted_indices < rows
    src = torch.arange(n, device=tokens.device)[keep] // topk
    permuted = _MoePermute.apply(tokens, src, sorted_indices[keep], rows)
    return permuted, sorted_indices.to(torch.int32)


class _MoePermute(torch.autograd.Function):
    """permuted[dst[e]] = tokens[src[e]]. Its gradient sums each token's topK rows of the
    permuted gradient in float32 and rounds once to the tokens' dtype, as the kernels computing
    it do (moe_token_permute_grad.py accumulates in float32 and matches torch_npu on the card at
    rtol 1e-3 in fp16); plain autograd of the indexing would add them in fp16, rounding after
    each add (before: 25 of 256 fp16 gradients off by up to 6 %)."""

    @staticmethod
    def forward(ctx, tokens, src, dst, rows):  # noqa: D102
        out = tokens.new_zeros((rows, tokens.shape[1]))
        out[dst] = tokens[src]
        ctx.save_for_backward(src, dst)
        ctx.num_tokens = tokens.shape[0]
        return out

    @staticmethod
    def backward(ctx, grad):  # noqa: D102
        src, dst = ctx.saved_tensors
        acc = torch.zeros((ctx.num_tokens, grad.shape[1]), dtype=torch.float32, device=grad.device)
        acc.index_add_(0, src, grad[dst].float())
        return acc.to(grad.dtype), None, None, None


def npu_moe_token_unpermute(permuted_tokens: torch.Tensor, sorted_indices: torch.Tensor,
                            probs: torch.Tensor | None = None, padded_mode: bool = False,
                            restore_shape: object = None) -> torch.Tensor:
    """MoE unpermute: T[k] = permuted[S[k]] (zero where S[k] is past a clipped permute's rows),
    times probs[i][j] when probs is given, and out[i] = sum of T[i * topK .. (i + 1) * topK - 1]
    with topK = probs.shape[1] (1 without probs). Accumulates in float32, returns the tokens' dtype."""
    del restore_shape  # only the padded mode (not supported) uses it
    if padded_mode:
        raise _core_error("torch_npu.npu_moe_token_unpermute: padded_mode=True is not supported")
    topk = probs.shape[1] if probs is not None else 1
    s = sorted_indices.reshape(-1).long()
    if s.numel() % topk:
        raise _core_error(f"torch_npu.npu_moe_token_unpermute: sorted_indices has {s.numel()} entries, not a "
                          f"multiple of topK = {topk}")
    gathered = torch.zeros((s.numel(), permuted_tokens.shape[1]), dtype=torch.float32, device=permuted_tokens.device)
    valid = s < permuted_tokens.shape[0]
    gathered[valid] = permuted_tokens[s[valid]].float()
    if probs is not None:
        gathered = gathered * probs.reshape(-1, 1).float()
    return gathered.reshape(-1, topk, permuted_tokens.shape[1]).sum(dim=1).to(permuted_tokens.dtype)


def npu_gelu_backward(grad: torch.Tensor, self: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    """GeLU's gradient (CANN's aclnnGeluBackwardV2): approximate="none" gives
    grad * (Phi(x) + x * phi(x)) with the normal CDF Phi and density phi; "tanh" the gradient of
    0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))). Computed in float32 for float16 and
    bfloat16 inputs, returned in the inputs' dtype."""
    if approximate not in ("none", "tanh"):
        raise _core_error(f"torch_npu.npu_gelu_backward: approximate must be 'none' or 'tanh', got {approximate!r}")
    if grad.shape != self.shape or grad.dtype != self.dtype:
        raise _core_error(f"torch_npu.npu_gelu_backward: expected grad and self of one shape and dtype, got "
                          f"{tuple(grad.shape)} {grad.dtype} and {tuple(self.shape)} {self.dtype}")
    wide = grad.dtype in (torch.float16, torch.bfloat16)
    g, x = (grad.float(), self.float()) if wide else (grad, self)
    out = torch.ops.aten.gelu_backward(g, x, approximate=approximate)
    return out.to(grad.dtype)


def npu_swiglu(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """SwiGLU (CANN's aclnnSwiGlu): x split in two halves a, b along `dim`, silu(a) * b. Computed in
    float32 for float16 and bfloat16 inputs, returned in the input's dtype. Also
    torch.ops.npu.npu_swiglu once the shim is installed."""
    if x.dim() == 0 or x.shape[dim] % 2:
        raise _core_error(f"torch_npu.npu_swiglu: expected an even size along dim {dim}, got shape {tuple(x.shape)}")
    a, b = x.float().chunk(2, dim=dim)
    return (torch.nn.functional.silu(a) * b).to(x.dtype)


def npu_swiglu_backward(grad_output: torch.Tensor, x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """SwiGLU's gradient (CANN's aclnnSwiGluGrad): with a, b the halves of x along `dim` and
    s = sigmoid(a), da = g * b * (s + a * s * (1 - s)) and db = g * a * s, concatenated along
    `dim`; computed in float32, returned in x's dtype. Also torch.ops.npu.npu_swiglu_backward.

    `grad_output` should have x's shape with `dim` halved. A larger contiguous one is read as its
    first x.numel() / 2 elements, as the chip's SwiGluGrad kernel reads it (its GM view of yGrad
    is totalBlockLen / 2 elements of x's tiling, and aclnnSwiGluGrad does not check yGrad's
    shape: CANN ops-nn issue 7173), with a remark; TileLang-Ascend's activation/swi_glu_grad.py
    passes such a tensor to its kernel and to this reference alike (docs/tla_corpus.md)."""
    if x.dim() == 0 or x.shape[dim] % 2:
        raise _core_error(f"torch_npu.npu_swiglu_backward: expected an even size along dim {dim}, "
                          f"got shape {tuple(x.shape)}")
    half = list(x.shape)
    half[dim] //= 2
    need = x.numel() // 2
    g = grad_output
    if list(g.shape) != half:
        if g.numel() < need or not g.is_contiguous():
            raise _core_error(f"torch_npu.npu_swiglu_backward: grad_output must have shape {half} "
                              f"(x {list(x.shape)} halved along dim {dim}), got {list(g.shape)}")
        print(f"remark: torch_npu.npu_swiglu_backward: grad_output has shape {list(g.shape)}, not {half}: "
              f"its first {need} of {g.numel()} elements are read, as the chip's SwiGluGrad reads them",
              file=sys.stderr)
        g = g.reshape(-1)[:need].reshape(half)
    a, b = x.float().chunk(2, dim=dim)
    s = torch.sigmoid(a)
    g = g.float()
    return torch.cat([g * b * (s + a * s * (1 - s)), g * a * s], dim=dim).to(x.dtype)


def npu_dynamic_quant(x: torch.Tensor, *, smooth_scales: torch.Tensor | None = None,
                      group_index: torch.Tensor | None = None, dst_type: torch.dtype | None = None):
    """Per-token symmetric dynamic quantisation (CANN's aclnnDynamicQuant): with
    input = x * smooth_scales (when given), scale = row_max(abs(input)) / 127 and
    y = round(input / scale) as int8; returns (y, scale), scale float32 of x's shape without its
    last dimension. Computed in float32; round is to nearest, ties to even (torch.round). With
    group_index (the MoE form) smooth_scales has one row per group and row i of it scales the
    tokens group_index[i - 1] <= t < group_index[i] (cumulative ends). A row of zeros has scale 0
    and y 0 (the formula's 0 / 0, defined here rather than left NaN). Only int8 output
    (dst_type None or torch.int8): the packed int4 form is refused by name. Also
    torch.ops.npu.npu_dynamic_quant."""
    name = "torch_npu.npu_dynamic_quant"
    if dst_type not in (None, torch.int8):
        raise _core_error(f"{name}: dst_type {dst_type} is not supported here: expected None or torch.int8 "
                          f"(the packed int4 output has no CPU version yet)")
    if x.dim() < 2:
        raise _core_error(f"{name}: x must have more than one dimension, got shape {tuple(x.shape)}")
    if x.dtype not in (torch.float16, torch.bfloat16):
        raise _core_error(f"{name}: x must be float16 or bfloat16, got {x.dtype}")
    h = x.shape[-1]
    rows = x.reshape(-1, h).float()
    if smooth_scales is not None:
        if smooth_scales.dtype != x.dtype:
            raise _core_error(f"{name}: smooth_scales must have x's dtype {x.dtype}, got {smooth_scales.dtype}")
        s = smooth_scales.float()
        if group_index is None:
            if list(s.shape) != [h]:
                raise _core_error(f"{name}: smooth_scales must have shape [{h}] (x's last dimension), "
                                  f"got {list(s.shape)}")
            rows = rows * s
        else:
            ends = group_index.long()
            if s.dim() != 2 or s.shape[1] != h or ends.dim() != 1 or ends.numel() != s.shape[0]:
                raise _core_error(f"{name}: with group_index, smooth_scales must be [groups, {h}] and group_index "
                                  f"[groups], got {list(s.shape)} and {list(ends.shape)}")
            if ends.numel() and (bool((ends[1:] < ends[:-1]).any()) or int(ends[-1]) != rows.shape[0]):
                raise _core_error(f"{name}: group_index must be non-decreasing and end at the token count "
                                  f"{rows.shape[0]}, got {ends.tolist()}")
            group = torch.bucketize(torch.arange(rows.shape[0]), ends, right=True)
            rows = rows * s[group]
    elif group_index is not None:
        raise _core_error(f"{name}: group_index needs smooth_scales")
    scale = rows.abs().amax(dim=1) / 127.0
    safe = torch.where(scale == 0, torch.ones_like(scale), scale)
    y = torch.round(rows / safe[:, None]).clamp(-128, 127).to(torch.int8)
    return y.reshape(x.shape), scale.reshape(x.shape[:-1])


from ._fusion_attention import npu_fusion_attention  # noqa: E402,F401  (its own file: a long reference)
from ._sparse_flash_attention import npu_sparse_flash_attention  # noqa: E402,F401

_npu_library = None  # torch.ops.npu's operators (kept alive: dropping the Library unregisters them)


def _register_ops() -> None:
    """torch.ops.npu.<op> for the CPU versions scripts call through the dispatcher."""
    global _npu_library
    if _npu_library is not None or hasattr(torch.ops.npu, "npu_swiglu"):
        return
    lib = torch.library.Library("npu", "DEF")
    lib.define("npu_swiglu(Tensor x, int dim=-1) -> Tensor")
    lib.impl("npu_swiglu", npu_swiglu, "CompositeExplicitAutograd")
    lib.define("npu_swiglu_backward(Tensor grad_output, Tensor x, int dim=-1) -> Tensor")
    lib.impl("npu_swiglu_backward", npu_swiglu_backward, "CompositeExplicitAutograd")
    lib.define("npu_dynamic_quant(Tensor x, *, Tensor? smooth_scales=None, Tensor? group_index=None, "
               "ScalarType? dst_type=None) -> (Tensor, Tensor)")
    lib.impl("npu_dynamic_quant", npu_dynamic_quant, "CompositeExplicitAutograd")
    _npu_library = lib


def _core_error(msg: str) -> Exception:
    from . import _core

    return _core.Error(msg)


# torch_npu operators tl-ascend has no CPU version of yet: an unknown torch_npu.<name> says so
# (a tl_ascend.Error, also an AttributeError), instead of a bare AttributeError.
def __getattr__(name: str):
    from . import _names

    raise _names.unknown("torch_npu", name, [n for n in globals() if not n.startswith("_")],
                         {name: "tl_ascend.torch_npu has no CPU version of this torch_npu operator yet (the shim "
                                "maps devices only; docs/python.md, \"torch_npu scripts\")"} if name.startswith("npu_")
                         else {})


def _accept_int32_targets() -> None:
    """torch_npu's cross_entropy and nll_loss take int32 class indices (TileLang-Ascend's
    cross_entropy example passes them to nn.CrossEntropyLoss); torch's CPU kernels take int64
    only. Under the shim an int32 target is widened to int64 first: exact, so no value changes,
    and every other dtype (float targets of class probabilities, int16, ...) reaches torch as
    given, with torch's own error."""
    functional = torch.nn.functional
    for name in ("cross_entropy", "nll_loss"):
        orig = getattr(functional, name)

        def make(orig):
            @functools.wraps(orig)
            def f(input, target=None, *args, **kwargs):  # noqa: A002 (torch's parameter name)
                if isinstance(target, torch.Tensor) and target.dtype == torch.int32:
                    target = target.long()
                return orig(input, target, *args, **kwargs)

            return f

        setattr(functional, name, make(orig))


def install() -> None:
    global _installed
    if _installed:
        return
    _installed = True
    _register_ops()
    _accept_int32_targets()
    torch.Tensor.npu = _npu
    torch.nn.Module.npu = _npu
    npu = _NpuNamespace(
        synchronize=lambda *a, **k: None,
        is_available=lambda: True,
        device_count=lambda: 1,
        set_device=lambda *a, **k: None,
        current_device=lambda: 0,
        # The CPU generator itself: torch.manual_seed calls the backend's manual_seed_all, so going
        # through torch.manual_seed here would recurse.
        manual_seed=lambda seed: torch.default_generator.manual_seed(seed),
        manual_seed_all=lambda seed: torch.default_generator.manual_seed(seed),
        empty_cache=lambda: None,
        # The "npu" device's tensors are CPU tensors, so its RNG is the CPU's: torch's own code
        # (torch.random.fork_rng, torch.testing's freeze_rng_state under opcheck) saves and restores
        # the RNG of the renamed PrivateUse1 backend through these.
        get_rng_state=lambda device=None: torch.get_rng_state(),
        set_rng_state=lambda state, device=None: torch.set_rng_state(state),
        _is_in_bad_fork=lambda: False,  # torch.manual_seed asks before seeding the backend
    )
    torch.npu = npu
    # torch imports "torch.<backend>" by name for the renamed PrivateUse1 backend (torch.accelerator,
    # which torch.compile consults), so the namespace is also that module.
    sys.modules.setdefault("torch.npu", npu)
    # To torch's own machinery there is still no accelerator: "npu" tensors are CPU tensors, and
    # torch.compile would otherwise ask the renamed backend for its current stream (it has none).
    # Scripts keep torch.npu.is_available() == True.
    torch.accelerator.is_available = lambda: False
    torch.accelerator.current_accelerator = lambda check_available=False: None
    if not hasattr(torch.Tensor, "is_npu"):  # torch's override tables list is_<backend>
        torch.Tensor.is_npu = property(lambda self: False)
    # torch.device("npu") and "npu:0" become valid device names (PrivateUse1 renamed, as torch_npu
    # itself does); tensors never live there: every factory and .to() below maps them to the CPU.
    try:
        torch.utils.rename_privateuse1_backend("npu")
    except RuntimeError:  # already renamed, to "npu" by an earlier install or to another backend
        pass
    for name in ("empty", "zeros", "ones", "randn", "rand", "randint", "full", "arange", "tensor", "empty_like",
                 "zeros_like", "ones_like", "randn_like", "rand_like", "randint_like", "full_like", "randperm",
                 "linspace", "logspace", "eye", "empty_strided", "as_tensor", "normal"):
        orig = getattr(torch, name)

        def make(orig):
            def f(*args, **kwargs):
                _map_device(kwargs)
                return orig(*args, **kwargs)

            f.__name__ = orig.__name__ if hasattr(orig, "__name__") else name
            return f

        setattr(torch, name, make(orig))
    orig_default = torch.set_default_device

    def set_default_device(device):
        orig_default("cpu" if _is_npu(device) else device)

    torch.set_default_device = set_default_device
    orig_to = torch.Tensor.to

    def to(self, *args, **kwargs):
        args = tuple("cpu" if _is_npu(a) else a for a in args)
        _map_device(kwargs)
        return orig_to(self, *args, **kwargs)

    torch.Tensor.to = to


install()
