"""Value checks of T.tile.sort32 (src/prims/sort32.cpp, AscendC Sort32) from Python, in
TileLang-Ascend's spelling with the repeat count explicit: `T.tile.sort32(dst, src, index,
repeat_times)`. The wrapper is generated from the op registry. test_ops_values.py runs
VALUE_TESTS.

Each repeat sorts 32 float scores with their uint32 indices into 8-byte (score, index) entries,
descending, equal scores in input order: random scores, forced ties and 1, 2, 7 repeats, against
the numpy reference below (a stable sort of the negated scores).
"""

from typing import Callable, Dict

import numpy as np
import pytest

import tl_ascend as tilelang
import tl_ascend.language as T

_rng = np.random.default_rng(32)


def reference(scores: np.ndarray, index: np.ndarray, repeat: int) -> np.ndarray:
    """dst as uint32 words: per repeat, (score bits, index) in descending score, stable."""
    out = np.zeros(repeat * 64, np.uint32)
    bits = scores.view(np.uint32)
    for r in range(repeat):
        seg = slice(32 * r, 32 * r + 32)
        order = np.argsort(-scores[seg], kind="stable")
        out[64 * r:64 * r + 64:2] = bits[seg][order]
        out[64 * r + 1:64 * r + 64:2] = index[seg][order]
    return out


@tilelang.jit(out_idx=[-1])
def sort32_kernel(repeat: int):
    n = 32 * repeat

    @T.prim_func
    def k(X: T.Tensor((n,), "float32"), I: T.Tensor((n,), "uint32"),
          Y: T.Tensor((2 * n,), "float32")):
        with T.Kernel(1, threads=2) as cid:  # two AIVs: split_aiv must keep sort32 whole
            x = T.alloc_shared((n,), "float32")
            i = T.alloc_shared((n,), "uint32")
            y = T.alloc_shared((2 * n,), "float32")
            T.copy(X[cid * n], x)
            T.copy(I[cid * n], i)
            T.tile.sort32(y, x, i, repeat)
            T.copy(y, Y[cid * 2 * n])

    return k


def run(repeat: int, ties: bool) -> None:
    scores = _rng.standard_normal(32 * repeat).astype(np.float32)
    if ties:
        scores = np.floor(scores)
    index = _rng.integers(0, 2**32, 32 * repeat, dtype=np.uint64).astype(np.uint32)
    got = sort32_kernel(repeat)(scores, index)
    np.testing.assert_array_equal(np.asarray(got).view(np.uint32), reference(scores, index, repeat),
                                  err_msg=f"sort32 repeat={repeat} ties={ties}")


def check_sort32() -> None:
    for repeat in (1, 2, 7):
        for ties in (False, True):
            run(repeat, ties)
    with pytest.raises(tilelang.Error, match=r"prim_sort32\.py:\d+.*repeat_times must be in \[0, 255\], got 300"):
        sort32_kernel(300)


VALUE_TESTS: Dict[str, Callable[[], None]] = {"tile.sort32": check_sort32}
