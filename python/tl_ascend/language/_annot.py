"""TileLang-Ascend's placement and scheduling hints: T.annotate_address, T.annotate_layout (with
make_zn_layout / make_nz_layout of `tilelang.intrinsics`) and T.use_swizzle; and
T.annotate_l2_cache.

What each means in TileLang-Ascend, and what tl-ascend does with it (docs/python.md, "TileLang-
Ascend compatibility"):

  * `T.annotate_address({buf: addr, ...})` pins on-chip buffers at byte offsets, as `address=` on
    T.alloc_* does. The pins apply to the whole kernel; plan_memory checks the capacity, and that
    two pinned buffers sharing bytes are never live together and that the program orders the one
    before the other (else an error naming both: on the chip it is a race or a clobber). The
    planner never moves a pinned buffer, so a hint is never silently replaced.
  * `T.annotate_layout({buf: make_zn_layout(buf)})`: TileLang-Ascend's AscendC code generator
    writes every L1 tile as zN fractals (its `copy_gm_to_l1` uses `LayoutL1 = layout::zN` whatever
    the annotation) and a transposed L1 -> L0 copy reads the same bytes as the nZ tile of the
    transpose. tl-ascend's L1 is the same zN layout (asc-devkit calls it NZ), so both annotations
    on an L1 tile describe what T.copy already does, and are accepted; a layout on any other
    memory, or a layout made for another buffer, cannot be honoured and is an error.
  * `T.annotate_l2_cache({X: "disable", ...})` sets GM tensors' L2 cache mode, AscendC's
    `GlobalTensor::SetL2CacheHint(CacheMode::CACHE_MODE_DISABLE)` ("normal" is the default).
    TileLang-Ascend has no spelling for it (its code generator never emits the hint); the name
    follows its `annotate_*` family. The data is the same; the timing model and the AscendC
    source read it (docs/language.md, "T.annotate_l2_cache").
  * `T.use_swizzle(pid, M, N, K, block_M, block_N, off, dir)`: the remapped block index of
    Catlass's GemmIdentityBlockSwizzle<off, dir> (TileLang-Ascend's `thread_block_swizzle`),
    computed here as an expression of pid.
"""

from __future__ import annotations

import numbers
from typing import Any

from .. import _core
from . import _state

_ON_CHIP = ("L1", "L0A", "L0B", "L0C", "UB")


def _fail(msg: str) -> None:
    _core.user_error(_state.current(), msg)


def _shown(v: Any) -> str:
    r = repr(v)
    return f"{type(v).__name__} {r if len(r) <= 60 else r[:57] + '...'}"


def _buffer(fn: str, v: Any) -> _core.Buffer:
    if not isinstance(v, _core.Buffer):
        _fail(f"T.{fn}: expected a buffer made by T.alloc_* as a key, got {_shown(v)}")
    return v


def annotate_address(address_map: dict) -> None:
    """Pins each on-chip buffer of `address_map` at its byte address (module docstring)."""
    if not isinstance(address_map, dict):
        _fail(f"T.annotate_address: argument 'address_map' must be a dict {{buffer: address}}, got "
              f"{_shown(address_map)}")
    pins = []
    for buf, address in address_map.items():
        buf = _buffer("annotate_address", buf)
        if isinstance(address, bool) or not isinstance(address, numbers.Integral):
            _fail(f"T.annotate_address: the address of '{buf.name}' must be a Python int (a byte offset), "
                  f"got {_shown(address)}")
        pins.append((buf, int(address)))
    _core.annotate_address(pins, _state.current())


_L2_MODES = ("normal", "disable")


def annotate_l2_cache(mode_map: dict) -> None:
    """Sets the L2 cache mode of each GM tensor of `mode_map` (module docstring)."""
    if not isinstance(mode_map, dict):
        _fail(f"T.annotate_l2_cache: argument 'mode_map' must be a dict {{tensor: \"normal\" or "
              f"\"disable\"}}, got {_shown(mode_map)}")
    modes = []
    for buf, mode in mode_map.items():
        if not isinstance(buf, _core.Buffer):
            _fail(f"T.annotate_l2_cache: expected a GM tensor (a T.Tensor parameter or "
                  f"T.alloc_workspace) as a key, got {_shown(buf)}")
        if not isinstance(mode, str) or mode not in _L2_MODES:
            _fail(f"T.annotate_l2_cache: the mode of '{buf.name}' must be \"normal\" or \"disable\", "
                  f"got {_shown(mode)}")
        modes.append((buf, mode))
    _core.annotate_l2_cache(modes, _state.current())


class Layout:
    """A layout made by make_zn_layout / make_nz_layout for one buffer: its fractal order
    ("zN" or "nZ", Catlass's names) and the buffer it was made for."""

    def __init__(self, kind: str, buffer: _core.Buffer) -> None:
        self.kind = kind
        self.buffer = buffer

    def __repr__(self) -> str:
        return f"<layout {self.kind} of '{self.buffer.name}'>"


def _layout(fn: str, buf: Any, kind: str) -> Layout:
    if not isinstance(buf, _core.Buffer):
        _fail(f"{fn}: argument 'buf' must be a buffer made by T.alloc_L1, got {_shown(buf)}")
    if buf.ndim < 2:
        _fail(f"{fn}: '{buf.name}' has {buf.ndim} dimension(s); a fractal layout needs at least 2")
    return Layout(kind, buf)


def make_zn_layout(buf: Any) -> Layout:
    """The zN fractal layout of a 2-D (or more) tile: 16 rows x 32 bytes per fractal, fractals in
    column-major order. It is the layout T.copy gives every L1 tile."""
    return _layout("make_zn_layout", buf, "zN")


def make_nz_layout(buf: Any) -> Layout:
    """The nZ fractal layout (the zN layout of the transposed tile): how a transposed L1 -> L0
    copy reads an L1 tile (module docstring)."""
    return _layout("make_nz_layout", buf, "nZ")


def annotate_layout(layout_map: dict) -> None:
    """Accepts the layouts T.copy already gives (zN or nZ on an L1 tile); any other is an Error."""
    if not isinstance(layout_map, dict):
        _fail(f"T.annotate_layout: argument 'layout_map' must be a dict {{buffer: layout}}, got {_shown(layout_map)}")
    for buf, layout in layout_map.items():
        buf = _buffer("annotate_layout", buf)
        if not isinstance(layout, Layout):
            _fail(f"T.annotate_layout: the layout of '{buf.name}' must be make_zn_layout({buf.name}) or "
                  f"make_nz_layout({buf.name}) (tilelang.intrinsics), got {_shown(layout)}")
        if layout.buffer is not buf and layout.buffer.name != buf.name:
            _fail(f"T.annotate_layout: the layout given for '{buf.name}' was made for '{layout.buffer.name}'")
        if buf.scope != "L1":
            _fail(f"T.annotate_layout: '{buf.name}' is a {buf.scope} buffer; tl-ascend honours a layout "
                  f"annotation only on an L1 tile (whose zN layout T.copy writes). {buf.scope} has the "
                  f"fixed layout of its memory (docs/language.md, section 5)")


def _int_arg(arg: str, v: Any, least: int) -> int:
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or int(v) < least:
        _fail(f"T.use_swizzle: argument '{arg}' must be a Python int >= {least} (a template parameter in "
              f"TileLang-Ascend), got {_shown(v)}")
    return int(v)


def use_swizzle(cid: Any, m: Any, n: Any, k: Any, block_m: Any, block_n: Any, off: Any = 1, dir: Any = 0,  # noqa: A002
                in_loop: bool = False) -> Any:
    """The block index that task `cid` works on under Catlass's GemmIdentityBlockSwizzle<off, dir>
    for an M x N output in block_m x block_n tiles: the tiles are walked in bands of `off` tile
    rows (dir 0) or columns (dir 1), every other band reversed, and the (row, column) tile is
    returned as row * (N / block_n) + column. `cid` wraps modulo the number of tiles, as on the
    chip. `k` and `in_loop` do not change the index (as in TileLang-Ascend)."""
    from . import floordiv, floormod, if_then_else

    m, n = _int_arg("m", m, 1), _int_arg("n", n, 1)
    _int_arg("k", k, 0)
    block_m, block_n = _int_arg("block_m", block_m, 1), _int_arg("block_n", block_n, 1)
    off, dir = _int_arg("off", off, 1), _int_arg("dir", dir, 0)  # noqa: A001
    if dir > 1:
        _fail(f"T.use_swizzle: argument 'dir' must be 0 (bands of tile rows) or 1 (bands of tile columns), got {dir}")
    if m % block_m or n % block_n:
        _fail(f"T.use_swizzle: m ({m}) and n ({n}) must be multiples of block_m ({block_m}) and block_n "
              f"({block_n}), as TileLang-Ascend asserts")
    if isinstance(cid, bool) or not isinstance(cid, (numbers.Integral, _core.Expr)):
        _fail(f"T.use_swizzle: argument 'cid' must be an int or an integer kernel expression, got {_shown(cid)}")
    rows, cols = m // block_m, n // block_n
    inner = floormod(cid, rows * cols)
    # One band is `off` tile rows (dir 0) or columns (dir 1); the last band may be narrower.
    along, across = (rows, cols) if dir == 0 else (cols, rows)
    bands = -(-along // off)
    band = floordiv(inner, off * across)
    in_band = floormod(inner, off * across)
    width = if_then_else(band == bands - 1, along - off * band, off) if bands > 1 else along
    first = band * off + floormod(in_band, width)  # index along the band direction
    second = floordiv(in_band, width)
    second = if_then_else(floormod(band, 2) == 1, across - second - 1, second)
    row, col = (first, second) if dir == 0 else (second, first)
    return row * cols + col
