"""An opt-in torch_npu stand-in: scripts written for an Ascend card run on the virtual NPU.

`import tl_ascend.torch_npu` (in place of `import torch_npu`) makes `tensor.npu()`,
`module.npu()`, `torch.npu.synchronize()`, `torch.npu.is_available()`, `torch.npu.set_device()`
and `device="npu"` work on a machine without a card: tensors stay on the CPU, where the
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


def _map_device(kwargs):
    d = kwargs.get("device")
    if d is not None and str(d).startswith("npu"):
        kwargs["device"] = "cpu"


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
    for name in ("empty", "zeros", "ones", "randn", "rand", "randint", "full", "arange", "tensor", "empty_like",
                 "zeros_like", "ones_like", "randn_like"):
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
        orig_default("cpu" if device is not None and str(device).startswith("npu") else device)

    torch.set_default_device = set_default_device
    orig_to = torch.Tensor.to

    def to(self, *args, **kwargs):
        args = tuple("cpu" if (isinstance(a, str) and a.startswith("npu")) else a for a in args)
        _map_device(kwargs)
        return orig_to(self, *args, **kwargs)

    torch.Tensor.to = to


install()
