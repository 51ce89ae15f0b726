"""Value checks of T.tile.mul_add_dst (src/prims/mul_add_dst.cpp) from Python, in
TileLang-Ascend's spelling `T.tile.mul_add_dst(dst, src0, src1)` (dst = src0 * src1 + dst): the
wrapper is generated from the op registry. test_ops_values.py runs VALUE_TESTS.

Developer-mode kernels with the default two AIVs per block: the op is elementwise
(RowMap::Elementwise), so split_aiv splits its three tiles by rows together; row counts 1, 7,
33, 1000 and 4097 (not a multiple of the block) against the numpy reference below, fp16 and fp32.
The expert-mode checks (in place, errors) are in test_tla_surf_ops.py.
"""

from typing import Callable, Dict

import numpy as np

import tl_ascend as tilelang
import tl_ascend.language as T

_rng = np.random.default_rng(29)


@tilelang.jit(out_idx=[-1])
def mul_add_kernel(M: int, N: int, dtype: str, block_M: int = 16):
    @T.prim_func
    def k(X: T.Tensor((M, N), dtype), W: T.Tensor((M, N), dtype), Z: T.Tensor((M, N), dtype),
          Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=2) as cid:
            x = T.alloc_shared((block_M, N), dtype)
            w = T.alloc_shared((block_M, N), dtype)
            acc = T.alloc_shared((block_M, N), dtype)
            T.copy(X[cid * block_M, 0], x)
            T.copy(W[cid * block_M, 0], w)
            T.copy(Z[cid * block_M, 0], acc)
            T.tile.mul_add_dst(acc, x, w)
            T.copy(acc, Y[cid * block_M, 0])

    return k


def check_mul_add_dst() -> None:
    N = 32
    for dtype, tol in (("float32", 1e-6), ("float16", 1e-3)):
        for M in (1, 7, 33, 1000, 4097):
            x, w, z = (_rng.uniform(-3, 3, (M, N)).astype(dtype) for _ in range(3))
            got = mul_add_kernel(M, N, dtype)(x, w, z)
            ref = (x.astype(np.float64) * w.astype(np.float64) + z.astype(np.float64)).astype(dtype)
            np.testing.assert_allclose(got.astype(np.float64), ref.astype(np.float64), rtol=tol, atol=tol,
                                       err_msg=f"mul_add_dst {dtype} M={M}")


VALUE_TESTS: Dict[str, Callable[[], None]] = {"tile.mul_add_dst": check_mul_add_dst}
