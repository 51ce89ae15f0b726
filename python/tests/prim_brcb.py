"""Value checks of T.tile.brcb (src/prims/brcb.cpp) from Python, in TileLang-Ascend's spelling
`T.tile.brcb(dst, src, repeat_times, dst_blk_stride, dst_repeat_stride)`: the wrapper is generated
from the op registry, nothing in the package names it. test_ops_values.py runs VALUE_TESTS.

Developer-mode kernels with the default two AIVs per block: brcb is position-dependent
(RowMap::Whole), so the row split must leave its tiles whole; tails of src (1, 7, 33, 1000
elements) and dst tiles whose row count is not a multiple of the 8 blocks a repeat writes,
against the numpy reference below. Before the prims layer, T.tile.brcb did not exist.
"""

from typing import Callable, Dict

import numpy as np
import pytest

import tl_ascend as tilelang
import tl_ascend.language as T

NP = {"float16": np.float16, "float32": np.float32, "int16": np.int16, "int32": np.int32,
      "uint16": np.uint16, "uint32": np.uint32}
_rng = np.random.default_rng(28)


def reference(src: np.ndarray, dst: np.ndarray, repeat: int, blk: int, rep: int) -> np.ndarray:
    """dst (rows, 32 bytes) after brcb: block r * rep + k * max(blk, 1) holds src[8 r + k]."""
    out = dst.copy()
    stride = blk if blk else 1
    for r in range(repeat):
        for k in range(8):
            out[r * rep + k * stride, :] = src[r * 8 + k]
    return out


@tilelang.jit(out_idx=[-1])
def brcb_kernel(dtype: str, n: int, rows: int, repeat: int, blk: int, rep: int):
    per_block = 32 // np.dtype(NP[dtype]).itemsize
    padded = -(-n // per_block) * per_block  # whole 32-byte UB rows; brcb reads x[0:n]

    @T.prim_func
    def k(X: T.Tensor((padded,), dtype), D: T.Tensor((rows, per_block), dtype),
          Y: T.Tensor((rows, per_block), dtype)):
        with T.Kernel(1, threads=2) as cid:  # two AIVs: split_aiv must keep brcb whole
            x = T.alloc_shared((padded,), dtype)
            y = T.alloc_shared((rows, per_block), dtype)
            T.copy(X[cid * padded], x)
            T.copy(D[cid * rows, 0], y)
            T.tile.brcb(y, x[0:n], repeat, blk, rep)
            T.copy(y, Y[cid * rows, 0])

    return k


def run(dtype: str, n: int, rows: int, repeat: int, blk: int = 1, rep: int = 8) -> None:
    per_block = 32 // np.dtype(NP[dtype]).itemsize
    padded = -(-n // per_block) * per_block
    src = _rng.integers(-300, 300, padded).astype(NP[dtype]) if "int" in dtype else \
        _rng.uniform(-4, 4, padded).astype(NP[dtype])
    dst = np.full((rows, per_block), 7, NP[dtype])
    got = brcb_kernel(dtype, n, rows, repeat, blk, rep)(src, dst)
    np.testing.assert_array_equal(got, reference(src, dst, repeat, blk, rep),
                                  err_msg=f"brcb {dtype} n={n} rows={rows} r={repeat} {blk}/{rep}")


def check_brcb() -> None:
    for dtype in ("float16", "float32", "int16", "int32"):
        for n, repeat in ((1, 0), (7, 0), (33, 4), (1000, 125)):
            rows = max(1, repeat * 8)
            for extra in (0, 3):  # rows 32 + 3 = 35, 1000 + 3: not a multiple of 8
                run(dtype, n, rows + extra, repeat)
    run("float16", 17, 49, 2, blk=2, rep=16)  # gaps between the blocks keep dst's contents
    run("float32", 25, 24, 3, blk=0, rep=8)  # block stride 0 counts as 1
    # Bad arguments: a tl_ascend.Error naming the argument, the rule and this file's line.
    with pytest.raises(tilelang.Error, match=r"prim_brcb\.py:\d+.*repeat_times must be in \[0, 255\], got 300"):
        brcb_kernel("float32", 8, 8, 300, 1, 8)
    with pytest.raises(tilelang.Error, match=r"2 repeats read 16 elements of src, which has 8 \[rule: brcb-src-size\]"):
        brcb_kernel("float32", 8, 16, 2, 1, 8)
    with pytest.raises(tilelang.Error, match=r"write up to element 128 of dst, which has 64 \[rule: brcb-dst-size\]"):
        brcb_kernel("float32", 16, 8, 2, 1, 8)


VALUE_TESTS: Dict[str, Callable[[], None]] = {"tile.brcb": check_brcb}
