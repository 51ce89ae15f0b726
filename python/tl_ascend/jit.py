"""tl_ascend.jit and the kernels it returns: compile once, call on torch tensors and numpy arrays.

`@tl_ascend.jit(out_idx=[-1])` decorates a kernel generator (a function of compile-time
parameters that returns a `@T.prim_func`), as `@tilelang.jit` does. Calling the generator
compiles once per distinct argument tuple (a memory cache here; the C++ JIT cache adds a disk
level keyed by the kernel's structure, tl/jit.h) and returns a JITKernel. Calling the kernel
with tensors runs it on the virtual NPU:

  * tensors go to the C++ core by DLPack without a copy (torch CPU tensors, numpy arrays;
    bfloat16 and float8 numpy arrays of ml_dtypes as their bytes with the dtype named);
  * the parameters listed in `out_idx` are allocated (zero-filled, same framework as the
    inputs) and returned;
  * shapes, dtypes and strides are checked by the launcher, whose errors name the argument.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import re
import threading
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Union

from . import _core
from .language import _state
from .language.parser import PrimFunc

# Parameter indices (`out_idx`, `workspace_idx`): one, several, or none; negative from the end.
Indices = Union[int, Sequence[int], None]
# A file to write (a trace or a timeline); empty or None: none.
OutPath = Union[str, "os.PathLike[str]", None]

_devices = {}
_launch_locks = {}
_devices_lock = threading.Lock()


def device(target: str = "A2") -> _core.Device:
    """The process's virtual NPU of `target` (one per target, made on first use)."""
    with _devices_lock:
        if target not in _devices:
            _devices[target] = _core.Device(target)
            _launch_locks[target] = threading.Lock()
        return _devices[target]


# tilelang.profiler.do_bench: while a thread records, its launches run timed and their
# simulated times (us) are appended to the list (profiler.py).
_recording = threading.local()


@contextlib.contextmanager
def record_launches() -> Iterator[list[float]]:
    """Within the block, this thread's kernel launches run in timed mode and each one's
    simulated total_us is appended to the list yielded."""
    outer = getattr(_recording, "launches", None)
    _recording.launches = []
    try:
        yield _recording.launches
    finally:
        _recording.launches = outer


def _launch_lock(target):
    """Launches on one device run one at a time: the launcher releases the GIL while the
    virtual NPU runs (its own host threads), and a Device's on-chip state belongs to one launch."""
    device(target)
    return _launch_locks[target]


class _PassConfigKeyType(type):
    def __getattr__(cls, name: str) -> str:
        """An unknown key: a tl_ascend.Error (also an AttributeError) naming the closest keys."""
        from . import _names

        raise _names.unknown("PassConfigKey", name, [n for n in vars(cls) if n.isupper()])


class PassConfigKey(metaclass=_PassConfigKeyType):
    """Pass configuration keys, with TileLang-Ascend's own strings.

    TL_ASCEND_AUTO_SYNC: expert kernels get their intra-core syncs from the compiler too
    (developer kernels always do); TL_ASCEND_AUTO_CV_COMBINE: an expert kernel written without
    T.Scope gets its scope (a vector-only body is a vector kernel; one with cube work is split
    into cube and vector code); TL_ASCEND_AUTO_CV_SYNC: such a split kernel gets cross-core
    syncs on each GM workspace one core writes and the other reads (developer kernels always
    get them). All three are switches of the compiler's registry (TL_DEV_AUTO_SYNC,
    TL_DEV_AUTO_CV_COMBINE, TL_DEV_AUTO_CV_SYNC). TL_ASCEND_MEMORY_PLANNING and
    TIR_MERGE_STATIC_SMEM: tl-ascend plans every buffer without an address in both modes, so
    they are accepted and change nothing.
    The TL_DEV_* keys switch developer-mode passes (docs/developer_mode.md, "Options")."""

    TL_ASCEND_AUTO_SYNC = "tl.ascend_auto_sync"
    TL_ASCEND_MEMORY_PLANNING = "tl.ascend_memory_planning"
    TL_ASCEND_AUTO_CV_COMBINE = "tl.ascend_auto_cv_combine"
    TL_ASCEND_AUTO_CV_SYNC = "tl.ascend_auto_cross_core_sync"
    # TileLang's merge of static shared-memory buffers: what tl-ascend's planner does anyway
    # (buffers whose lifetimes do not overlap share bytes), so accepted and without effect.
    TIR_MERGE_STATIC_SMEM = "tir.merge_static_smem"


# Keys accepted without effect (PassConfigKey's docstring says why), with the spellings of
# earlier tl-ascend releases.
_NO_EFFECT_KEYS = {PassConfigKey.TL_ASCEND_MEMORY_PLANNING, "tl.ascend.memory_planning",
                   PassConfigKey.TIR_MERGE_STATIC_SMEM}


# The TL_DEV_* keys, one per developer-mode switch of the compiler's registry
# (tl/pass_registry.h): TL_DEV_<NAME> = "tl.dev.<name>". A key a switch lists after its first
# is an alias (another project's spelling) that pass_configs accepts for it.
_DEV_KEY_ALIASES: dict[str, str] = {}
for _switch in _core.developer_switches():
    setattr(PassConfigKey, "TL_DEV_" + _switch["name"].upper(), _switch["keys"][0])
    for _alias in _switch["keys"][1:]:
        _DEV_KEY_ALIASES[_alias] = _switch["keys"][0]


# An error message that names a file:line of the kernel already (the builder's, the verifier's
# report, the launcher's for a statement, the stale-data and hazard checkers' reports).
_LOCATED = re.compile(r"\S+:\d+\b")


class ArgumentError(_core.Error, TypeError):
    """A kernel called with the wrong kind or count of arguments: a tl_ascend.Error (located at
    the call) that is also the TypeError Python raises for a wrong call, so `except TypeError`
    keeps working."""


def _located(fn):
    """The public entry points (compile, a kernel's construction and calls): any error is a
    tl_ascend.Error at the caller's file:line, and names the kernel's own definition. An error
    that already has a location (a kernel statement's) keeps it."""

    @functools.wraps(fn)
    def entry(*args, **kwargs):
        error = _core.Error
        try:
            return fn(*args, **kwargs)
        except _core.InternalError:
            raise
        except _core.Error as e:
            if _LOCATED.search(str(e)):
                raise
            msg = str(e)
        except TypeError as e:
            error, msg = ArgumentError, str(e)
        except (ValueError, AttributeError, KeyError, IndexError, OverflowError) as e:
            msg = f"{type(e).__name__}: {e}"
        func = getattr(args[0], "func", None) if args else None
        if isinstance(func, PrimFunc) and func.source_line:
            msg += f" [kernel '{func.name}' defined at {func.source_file}:{func.source_line}]"
        file, line, _ = _state.current()
        raise error(f"{file}:{line}: {msg}") from None

    return entry


def _dev_options(pass_configs, func):
    dev = {}
    if pass_configs is not None and not hasattr(pass_configs, "items"):
        raise _core.Error(f"pass_configs must be a dict of tl_ascend.PassConfigKey to a value, got "
                          f"{type(pass_configs).__name__} {pass_configs!r}")
    for k, v in (pass_configs or {}).items():
        given = str(k)
        k = _DEV_KEY_ALIASES.get(given, given)
        if not ((isinstance(v, (bool, int)) or type(v).__name__ == "bool_") and v in (0, 1)):
            raise _core.Error(f"pass config '{given}' takes True or False, got {type(v).__name__} {v!r}")
        if k in _NO_EFFECT_KEYS:
            continue
        if not k.startswith("tl.dev."):
            raise _core.Error(f"unknown pass config '{k}': expected a tl_ascend.PassConfigKey")
        dev[k[len("tl.dev."):]] = bool(v)
    # T.func_attr's switches, for this kernel (a pass config set explicitly wins).
    from .language import _FUNC_ATTR_SWITCHES

    for attr, switch in _FUNC_ATTR_SWITCHES.items():
        if attr in getattr(func, "attrs", {}):
            dev.setdefault(switch, func.attrs[attr])
    return dev


# ---- Tensors ---------------------------------------------------------------------------------------

_modules = {}


def _module(name):
    """`name` imported once (None when it is not installed): the call path stays cheap."""
    if name not in _modules:
        try:
            _modules[name] = __import__(name)
        except ImportError:
            _modules[name] = None
    return _modules[name]


def _torch():
    return _module("torch")


def _np():
    return _module("numpy")


def _ml_dtypes():
    return _module("ml_dtypes")


def _is_torch(x):
    t = _torch()
    return t is not None and isinstance(x, t.Tensor)


_special_dtypes = None


def _specials():
    """{framework dtype: (tl-ascend dtype, the same-width integer view)} for the dtypes DLPack
    cannot carry (float8 in torch; bfloat16 and float8 of ml_dtypes in numpy)."""
    global _special_dtypes
    if _special_dtypes is None:
        _special_dtypes = {}
        torch, np, ml = _torch(), _np(), _ml_dtypes()
        if torch is not None:
            for attr, name in (("float8_e4m3fn", "float8_e4m3"), ("float8_e5m2", "float8_e5m2")):
                if hasattr(torch, attr):
                    _special_dtypes[getattr(torch, attr)] = (name, torch.uint8)
        if ml is not None:
            _special_dtypes[np.dtype(ml.bfloat16)] = ("bfloat16", np.uint16)
            _special_dtypes[np.dtype(ml.float8_e4m3fn)] = ("float8_e4m3", np.uint8)
            _special_dtypes[np.dtype(ml.float8_e5m2)] = ("float8_e5m2", np.uint8)
    return _special_dtypes


def _tensor_arg(x, name, kernel):
    """(array, dtype override, description) for the C++ launcher, or a TypeError naming `name`."""
    what = f"kernel {kernel}: argument '{name}'"
    if _is_torch(x):
        if x.device.type != "cpu":
            raise _core.Error(f"{what} is on device '{x.device}': the virtual NPU reads host memory (CPU tensors; "
                              f"under tl_ascend.torch_npu, .npu() keeps tensors on the CPU)")
        if x.requires_grad:
            x = x.detach()
        special = _specials().get(x.dtype)
        if special is not None:
            return (x.view(special[1]), special[0], what)
        return (x, None, what)
    np = _np()
    if isinstance(x, np.ndarray):
        special = _specials().get(x.dtype)
        if special is not None:
            return (x.view(special[1]), special[0], what)
        if not x.flags.writeable:
            raise _core.Error(f"{what} is a read-only numpy array: the kernel may write it (pass a writable copy)")
        return (x, None, what)
    raise TypeError(f"{what} must be a torch tensor or a numpy array, got {type(x).__name__}")


_TORCH_DTYPES = {"float16": "float16", "bfloat16": "bfloat16", "float32": "float32", "float64": "float64",
                 "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64", "uint8": "uint8",
                 "bool": "bool", "float8_e4m3": "float8_e4m3fn", "float8_e5m2": "float8_e5m2",
                 "uint16": "uint16", "uint32": "uint32", "uint64": "uint64"}


def _empty(framework, shape, dtype):
    np = _np()
    if framework == "torch":
        torch = _torch()
        tdt = getattr(torch, _TORCH_DTYPES[dtype])
        if np is None:
            return torch.zeros(tuple(shape), dtype=tdt)
        # numpy's zeros are calloc's fresh zero pages, viewed as the torch dtype (64-byte aligned):
        # torch.zeros writes every byte with its thread pool, whose workers then spin-wait for
        # the next task for milliseconds, on the cores the launch is about to use (issue 31: 44 %
        # of a small GELU call's host time).
        n = 1
        for d in shape:
            n *= int(d)
        nbytes = n * torch.empty((), dtype=tdt).element_size()
        buf = torch.from_numpy(np.zeros(nbytes + 64, dtype=np.uint8))
        start = -buf.data_ptr() % 64
        return buf[start:start + nbytes].view(tdt).view(tuple(shape))
    ml = _ml_dtypes()
    special = {"bfloat16": "bfloat16", "float8_e4m3": "float8_e4m3fn", "float8_e5m2": "float8_e5m2"}
    if dtype in special:
        if ml is None:
            raise _core.Error(f"a numpy {dtype} output needs the ml_dtypes package (pip install ml_dtypes)")
        return np.zeros(tuple(shape), dtype=getattr(ml, special[dtype]))
    return np.zeros(tuple(shape), dtype=np.dtype("bool" if dtype == "bool" else dtype))


# ---- Kernels ------------------------------------------------------------------------------------------

class JITKernel:
    """A compiled kernel, callable on tensors: `c = kernel(a, b)`."""

    @_located
    def __init__(self, func: PrimFunc, out_idx: Indices = None, target: str = "A2",
                 pass_configs: Mapping[str, Any] | None = None, mode: str = "fast", check_hazards: bool | None = None,
                 threads: int = 0, workspace_idx: Indices = None, check_stale: bool | None = None,
                 keep_far_flags: bool | str = False) -> None:
        if not isinstance(func, PrimFunc):
            raise TypeError(f"tl_ascend.compile takes a @T.prim_func kernel, got {type(func).__name__}")
        self.func = func
        self.target = target
        self.params = func.func.params()
        self.out_idx = self._indices(out_idx, "out_idx")
        # TileLang-Ascend's workspace_idx: GM scratch tensors the launcher allocates per call
        # and does not return (tl-ascend's own T.alloc_workspace needs no parameter at all).
        self.workspace_idx = self._indices(workspace_idx, "workspace_idx")
        both = set(self.out_idx) & set(self.workspace_idx)
        if both:
            raise _core.Error(f"parameter {sorted(both)[0]} of kernel '{func.name}' is in both out_idx and "
                              f"workspace_idx")
        self.alloc_idx = sorted(self.out_idx + self.workspace_idx)
        if mode not in ("fast", "timed"):
            raise _core.Error(f"mode must be 'fast' or 'timed', got {mode!r}")
        # check_hazards=None follows TL_CHECK_HAZARDS ("1" on; unset or "0" off): how
        # scripts/run_tla_examples.py --check-hazards runs unmodified scripts under the checker.
        if check_hazards is None:
            env = os.environ.get("TL_CHECK_HAZARDS", "0")
            if env not in ("0", "1", ""):
                raise _core.Error(f"TL_CHECK_HAZARDS must be 0 or 1, got {env!r}")
            check_hazards = env == "1"
        self.mode, self.check_hazards, self.threads = mode, check_hazards, threads
        # The stale-data checker (docs/virtual_npu.md): None follows TL_CHECK_STALE, else check_hazards.
        self.check_stale: bool | None = check_stale
        # keep_far_flags (TileLang-Ascend's targets: "pto", or "ascendc" for its default code
        # generator; True means "pto"): flags with event ids past 7, which the pto code generator
        # drops and the ascendc one passes to AscendC unchanged, keep their ordering on valid ids
        # of their pipe pair, with a remark (src/pass/far_flag_ids.cpp); elsewhere such an id
        # stays the verifier's error.
        codegen = "pto" if keep_far_flags is True else keep_far_flags
        ir = _core.keep_far_flag_ids(func.func, target, codegen) if codegen else func.func
        self.compiled = _core.compile(ir, target, dev=_dev_options(pass_configs, func))
        self.last_profile = None
        self._device = device(target)
        self._plan()

    def _indices(self, idx, what):
        n = len(self.params)
        if idx is None:
            return []
        if isinstance(idx, int):
            idx = [idx]
        out = []
        for i in idx:
            if isinstance(i, bool) or not isinstance(i, int) or not -n <= i < n:
                raise _core.Error(f"{what}: {i!r} is not a parameter index of kernel '{self.func.name}' "
                                  f"({n} parameters)")
            j = i % n
            if j in out:
                raise _core.Error(f"{what}: {idx!r} names parameter {j} ('{self.params[j]['name']}') of kernel "
                                  f"'{self.func.name}' twice")
            if not self.params[j]["is_tensor"]:
                raise _core.Error(f"{what}: parameter {j} ('{self.params[j]['name']}') of kernel '{self.func.name}' "
                                  f"is a scalar; only tensors are allocated")
            out.append(j)
        return sorted(set(out))

    # ---- sources ----
    def get_kernel_source(self, host_stub: bool = True) -> str:
        """The AscendC source of the kernel (TileLang-Ascend's get_kernel_source): one C++ file,
        the `__global__ __aicore__` entry and its host launch stub, emitted from the lowered
        kernel the virtual NPU runs (docs/ascendc.md). A construct the AscendC emitter has no
        form for raises tl_ascend.Error naming it and its source line; get_tile_ir() still
        shows the kernel.

        Under `python -m tl_ascend.run` (unchanged TileLang-Ascend scripts, which print the
        source for a reader and go on to run the kernel) TL_KERNEL_SOURCE_ON_ERROR=comment is
        set: the error then comes back as the text, every line a C++ comment -- the error, then
        the Tile IR -- and once on stderr, so the script still runs its kernel and nothing that
        is not AscendC reads as AscendC."""
        try:
            return _core.emit_ascendc(self.compiled.lowered, self.compiled.target, host_stub)
        except _core.Error as e:
            mode = os.environ.get("TL_KERNEL_SOURCE_ON_ERROR", "")
            if mode not in ("", "raise", "comment"):
                raise _core.Error(f"TL_KERNEL_SOURCE_ON_ERROR must be 'raise' or 'comment', got {mode!r}") from e
            if mode != "comment":
                raise
            print(f"tl_ascend: get_kernel_source(): no AscendC for kernel '{self.func.name}': {e}", file=sys.stderr)
            ir = self.get_tile_ir()
            return ("// tl-ascend: no AscendC source for this kernel yet:\n// " + str(e) +
                    "\n// Its lowered Tile IR instead (docs/ascendc.md, \"Not emitted yet\"):\n" +
                    "".join("// " + line + "\n" for line in ir.splitlines()))

    def get_tile_ir(self, lowered: bool = True) -> str:
        """The Tile IR text the virtual NPU runs (lowered=False: the kernel as written)."""
        f = self.compiled.lowered if lowered else self.func.func
        return f.script(False)

    def script(self, locations: bool = True) -> str:
        return self.func.script(locations)

    # ---- calling ----
    def _plan(self):
        """What every call needs, worked out once: which parameters the caller passes, where the
        dynamic sizes come from, and how each allocated tensor is sized."""
        alloc = set(self.alloc_idx)
        self._inputs = [i for i in range(len(self.params)) if i not in alloc]
        self._dyn_sources = []  # (input position, dimension, dynamic name)
        for pos, i in enumerate(self._inputs):
            p = self.params[i]
            if p["is_tensor"]:
                for d, s in enumerate(p["shape"]):
                    if isinstance(s, _core.Var):
                        self._dyn_sources.append((pos, d, len(p["shape"]), s.name))
        self._alloc_shapes = []
        for i in self.alloc_idx:
            p = self.params[i]
            dims = []
            for s in p["shape"]:
                if isinstance(s, int):
                    dims.append(s)
                elif isinstance(s, _core.Var):
                    dims.append(s.name)
                elif isinstance(s, _core.Expr):
                    dims.append(s)  # an expression of dynamic sizes (`N // 2`), evaluated per call
                else:
                    dims.append(None)
            self._alloc_shapes.append((i, p, dims))
        self._first_tensor_input = next((pos for pos, i in enumerate(self._inputs) if self.params[i]["is_tensor"]),
                                        None)

    def _passed_allocated(self, args):
        """Why the extra arguments of a call that passes every parameter, the ones the kernel
        allocates (out_idx, workspace_idx) included, can be dropped; None if they cannot.

        TileLang-Ascend's adapter (cython_wrapper.pyx, `forward`) binds its inputs to the first
        arguments in order, allocates every out_idx / workspace_idx parameter itself and never
        looks at the rest: dequantize_gemm/example_dequant_gemm_w4a8.py passes C_output for its
        out_idx=[-1] C, which stays as it was while the call returns a new C. That binding is the
        caller's intent only when the allocated parameters are the last ones and each extra
        argument is a tensor of its parameter's dtype and shape; anything else stays an error."""
        n_in = len(self._inputs)
        if len(args) != len(self.params) or any(i < n_in for i in self.alloc_idx):
            return None
        for i in self.alloc_idx:
            p, a = self.params[i], args[i]
            shape = getattr(a, "shape", None)
            if not p["is_tensor"] or shape is None or len(shape) != len(p["shape"]):
                return None
            if any(isinstance(d, int) and d != int(s) for d, s in zip(p["shape"], shape)):
                return None
            dt = str(getattr(a, "dtype", "")).replace("torch.", "")
            if dt != _TORCH_DTYPES.get(p["dtype"], p["dtype"]):
                return None
        names = ", ".join(f"'{self.params[i]['name']}'" for i in self.alloc_idx)
        return (f"remark: kernel '{self.func.name}': the call passes {len(args)} arguments; the last "
                f"{len(args) - n_in} ({names}) are parameters the kernel allocates (out_idx / workspace_idx), "
                f"so they are ignored, as TileLang-Ascend's adapter ignores them: the tensors passed are not "
                f"written, the call returns new ones")

    def _arguments(self, args):
        if len(args) != len(self._inputs):
            remark = self._passed_allocated(args)
            if remark is None:
                names = [self.params[i]["name"] for i in self._inputs]
                raise TypeError(f"kernel '{self.func.name}' takes {len(self._inputs)} arguments "
                                f"({', '.join(names)}), got {len(args)}")
            print(remark, file=sys.stderr)
            args = args[:len(self._inputs)]
        if self._first_tensor_input is not None:
            framework = "torch" if _is_torch(args[self._first_tensor_input]) else "numpy"
        else:
            framework = "torch" if _torch() is not None else "numpy"
        dyn = {}
        # As the launcher binds them: from tensors of the declared rank first, then from the
        # others (a tensor of another shape is read as a row-major view, docs/python.md).
        for exact in (True, False):
            for pos, d, rank, name in self._dyn_sources:
                shape = getattr(args[pos], "shape", None)
                if shape is not None and (len(shape) == rank) == exact and d < len(shape):
                    dyn.setdefault(name, shape[d])
        full = [None] * len(self.params)
        for pos, i in enumerate(self._inputs):
            full[i] = args[pos]
        outputs = []
        for i, p, dims in self._alloc_shapes:
            shape = []
            for s, d in zip(dims, p["shape"]):
                if isinstance(s, int):
                    shape.append(s)
                elif isinstance(s, str) and s in dyn:
                    shape.append(dyn[s])
                elif isinstance(s, _core.Expr) and (v := s.evaluate({k: int(x) for k, x in dyn.items()})) is not None:
                    if v < 0:
                        raise _core.Error(f"kernel '{self.func.name}': cannot size output '{p['name']}': its dimension "
                                          f"{d} is {v} for the inputs' sizes {dyn}; expected a size >= 0")
                    shape.append(v)
                else:
                    raise _core.Error(f"kernel '{self.func.name}': cannot size output '{p['name']}': its dimension "
                                      f"{d} is not a constant, a dynamic size of an input or an "
                                      f"expression of those")
            out = _empty(framework, shape, p["dtype"])
            full[i] = out
            if i in self.out_idx:
                outputs.append(out)
        packed = []
        for p, a in zip(self.params, full):
            if p["is_tensor"]:
                packed.append(_tensor_arg(a, p["name"], self.func.name))
            elif isinstance(a, (bool, int, float)):
                packed.append(a)
            elif hasattr(a, "item"):
                packed.append(a.item())
            else:
                raise TypeError(f"kernel {self.func.name}: argument '{p['name']}' must be a {p['dtype']} scalar, "
                                f"got {type(a).__name__}")
        return packed, outputs

    @_located
    def run(self, *args: Any, mode: str | None = None, check_hazards: bool | None = None, trace: OutPath = None,
            timeline: OutPath = None, threads: int | None = None, check_stale: bool | None = None) -> Any:
        """Runs the kernel and returns its outputs (`kernel(*args)` is run with the defaults)."""
        packed, outputs = self._arguments(args)
        host_prints = getattr(self.func, "host_prints", None)
        if host_prints:
            from .language import _host_print
            arrays = [a[0] if isinstance(a, tuple) else a for a in packed]
            _host_print.run(host_prints, "before", self.params, arrays)
        mode = mode or self.mode
        recording = getattr(_recording, "launches", None)
        timed = mode == "timed" or trace is not None or timeline is not None or recording is not None
        with _launch_lock(self.target):
            prof = self._launch(packed, threads, check_hazards, timed, trace, timeline, check_stale)
        if prof is not None:
            self.last_profile = prof
            if recording is not None:
                recording.append(float(prof["total_us"]))
        if host_prints:
            _host_print.run(host_prints, "after", self.params, arrays)
        if not outputs:
            return None
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def _launch(self, packed, threads, check_hazards, timed, trace, timeline, check_stale=None):
        return _core.launch(self.compiled, self._device, packed,
                            threads=self.threads if threads is None else threads,
                            check_hazards=self.check_hazards if check_hazards is None else check_hazards,
                            timed=timed, trace_path=os.fspath(trace) if trace else "",
                            timeline_path=os.fspath(timeline) if timeline else "",
                            check_stale=self.check_stale if check_stale is None else check_stale)

    __call__ = run

    @_located
    def profile(self, *args: Any, trace: OutPath = None, timeline: OutPath = None) -> dict[str, Any]:
        """Runs the kernel in timed mode and returns its profile as data: total_cycles, total_us,
        task_us, per-pipe busy ratios per core kind (`busy`), per-core busy cycles (`cores`),
        and the printed table (`table`)."""
        self.run(*args, mode="timed", trace=trace, timeline=timeline)
        return self.last_profile

    # Set on the kernel tilelang.autotune picks (_autotune.py): its configuration, simulated
    # time (ms) and the reference's time (ms, None without ref_prog).
    config: dict[str, Any] | None = None
    latency: float | None = None
    ref_latency: float | None = None

    def get_tuner_result(self) -> dict[str, Any]:
        """TileLang-Ascend's kernel.get_tuner_result(): the autotuner's choice for this kernel."""
        if self.config is None:
            raise _core.Error(f"kernel '{self.func.name}' was not chosen by tilelang.autotune: it has no tuner result")
        return {"latency": self.latency, "config": self.config, "ref_latency": self.ref_latency}

    def __repr__(self) -> str:
        return f"<tl_ascend JITKernel '{self.func.name}' on {self.target}>"


@_located
def compile(func: PrimFunc, out_idx: Indices = None, target: str | None = None,  # noqa: A001
            pass_configs: Mapping[str, Any] | None = None, **options: Any) -> JITKernel:
    """Compiles a @T.prim_func kernel for the virtual NPU of `target` (None: A2)."""
    codegen = _tla_codegen(target)
    if codegen:
        options.setdefault("keep_far_flags", codegen)
    return JITKernel(func, out_idx=out_idx, target=_target_name(target), pass_configs=pass_configs, **options)


def _tla_codegen(target):
    """TileLang-Ascend's code generator a target string selects: "pto", "ascendc" (its default,
    also for "auto"), or None for tl-ascend's own targets. With the `tilelang` alias installed
    (an unmodified TileLang-Ascend script), no target is TileLang-Ascend's default, "auto"."""
    if target == "pto":
        return "pto"
    if target in ("ascendc", "auto"):
        return "ascendc"
    if target is None:
        from . import alias
        return "ascendc" if alias.installed() else None
    return None


def _target_name(target):
    # TileLang-Ascend's code generators ("ascendc", "pto") target the same chip: on the virtual
    # NPU both are the default A2.
    if target in (None, "auto", "npu", "ascend", "ascendc", "pto"):
        return "A2"
    return str(target)


def _cache_key(v: object) -> object:
    """A key under which equal keys mean the generator builds the same kernel: each value with
    its exact type, since Python's equality mixes types that build different kernels (2 == 2.0
    == True, and their hashes agree), and floats by their bits (float.hex: -0.0 is not 0.0, a
    NaN equals itself). Raises TypeError for an unhashable value."""
    t = type(v)
    if isinstance(v, float):
        return (t.__module__, t.__qualname__, float.hex(v))
    if isinstance(v, (tuple, list)):
        return (t.__module__, t.__qualname__, tuple(_cache_key(x) for x in v))
    if isinstance(v, dict):
        return (t.__module__, t.__qualname__,
                tuple(sorted(((_cache_key(k), _cache_key(x)) for k, x in v.items()), key=repr)))
    hash(v)
    return (t.__module__, t.__qualname__, v)


class _JITGenerator:
    def __init__(self, fn, options):
        self.fn = fn
        self.options = options
        self.cache = {}
        self.lock = threading.Lock()
        self.__name__ = getattr(fn, "__name__", "kernel")
        self.__doc__ = getattr(fn, "__doc__", None)

    @property
    def __jit_impl__(self):
        """TileLang-Ascend's handle on a @jit function's settings, which its scripts read
        (`kernel.__jit_impl__.target == "pto"`, gemv/example_gemv_v.py): `target` as the
        decorator got it, TileLang-Ascend's default "auto" when it got none."""
        target = self.options.get("target")
        return types.SimpleNamespace(target="auto" if target is None else target,
                                     out_idx=self.options.get("out_idx"),
                                     pass_configs=self.options.get("pass_configs"))

    def __call__(self, *args, **kwargs):
        try:
            key = (_cache_key(args), tuple(sorted((k, _cache_key(v)) for k, v in kwargs.items())))
            hash(key)
        except TypeError:
            key = None  # unhashable generator arguments: compile every time
        if not _cache_enabled:
            key = None
        if key is not None:
            with self.lock:
                hit = self.cache.get(key)
            if hit is not None:
                return hit
        func = self.fn(*args, **kwargs)
        if isinstance(func, JITKernel):
            kernel = func
        else:
            kernel = compile(func, **self.options)
        if key is not None:
            with self.lock:
                self.cache[key] = kernel
        return kernel

    def clear_cache(self):
        with self.lock:
            self.cache.clear()


_generators = []


def jit(fn: Callable[..., Any] | PrimFunc | None = None, *, out_idx: Indices = None, target: str | None = None,
        pass_configs: Mapping[str, Any] | None = None, **options: Any) -> Any:
    """`@tl_ascend.jit(out_idx=[-1])` on a kernel generator, or on a @T.prim_func directly."""

    def wrap(f):
        opts = dict(out_idx=out_idx, target=target, pass_configs=pass_configs, **options)
        if isinstance(f, PrimFunc):
            return compile(f, **opts)
        g = _JITGenerator(f, opts)
        _generators.append(g)
        return g

    return wrap if fn is None else wrap(fn)


def clear_cache() -> None:
    """Empties every generator's memory cache (the C++ disk cache stays)."""
    for g in _generators:
        g.clear_cache()


def disable_cache() -> None:
    """TileLang's tilelang.disable_cache(): generators compile on every call from now on."""
    global _cache_enabled
    _cache_enabled = False
    clear_cache()


_cache_enabled = True
