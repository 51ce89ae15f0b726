"""An opt-in torch_npu stand-in: scripts written for an Ascend card run on the virtual NPU.

`import tl_ascend.torch_npu` (in place of `import torch_npu`) makes `tensor.npu()`,
`module.npu()`, `torch.npu.synchronize()`, `torch.npu.is_available()`, `torch.npu.set_device()`,
`device="npu"` and `torch.device("npu")` work on a machine without a card: tensors stay on the CPU, where the
virtual NPU reads them. It changes torch only when imported, and only by adding what torch_npu
would add.
"""

import types

import torch

_installed = False


def _npu(self, *args, **kwargs):
    return self


class _NpuNamespace(types.SimpleNamespace):
    pass


def _is_npu(d) -> bool:
    """"npu", "npu:0" or torch.device("npu") (a str or a torch.device naming the card)."""
    return isinstance(d, (str, torch.device)) and str(d).startswith("npu")


def _map_device(kwargs):
    if _is_npu(kwargs.get("device")):
        kwargs["device"] = "cpu"


# torch_npu operators tl-ascend has no CPU version of yet: an unknown torch_npu.<name> says so
# (a tl_ascend.Error, also an AttributeError), instead of a bare AttributeError.
def __getattr__(name: str):
    from . import _names

    raise _names.unknown("torch_npu", name, [n for n in globals() if not n.startswith("_")],
                         {name: "tl_ascend.torch_npu has no CPU version of this torch_npu operator yet (the shim "
                                "maps devices only; docs/python.md, \"torch_npu scripts\")"} if name.startswith("npu_")
                         else {})


def install() -> None:
    global _installed
    if _installed:
        return
    _installed = True
    torch.Tensor.npu = _npu
    torch.nn.Module.npu = _npu
    npu = _NpuNamespace(
        synchronize=lambda *a, **k: None,
        is_available=lambda: True,
        device_count=lambda: 1,
        set_device=lambda *a, **k: None,
        current_device=lambda: 0,
        manual_seed=lambda seed: torch.manual_seed(seed),
        manual_seed_all=lambda seed: torch.manual_seed(seed),
        empty_cache=lambda: None,
    )
    torch.npu = npu
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
