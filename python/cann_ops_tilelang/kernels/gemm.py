"""GEMM's kernel generator in TileLang-Ascend syntax: the Python twin of
cann_ops_tilelang/gemm/gemm_kernel.cpp, building the identical IR (the printed text is compared
in python/tests/test_opslib_twin.py).

A key (cann_ops_tilelang.kernels.gemm_key gives the library's for N, K on a target): dtype,
out_dtype, n, k, trans_a, trans_b, block_m, block_n, block_k, stages, blocks. M is
T.dynamic("M"). Developer mode: the compiler places A_s / B_s in L1 and C_f in L0C, lowers
T.gemm to L0A/L0B loads and Mmads, pipelines the K loop, clips the edge tiles' copies and
zero-fills a partial K panel. `blocks` persistent workers take the output tiles in turn.
"""

# No `from __future__ import annotations`: the parser reads the T.Tensor annotations from the
# evaluated __annotations__.
import tl_ascend.language as T
from tl_ascend.language.parser import PrimFunc


def gemm_kernel(dtype: str, out_dtype: str, n: int, k: int, trans_a: bool, trans_b: bool, block_m: int,
                block_n: int, block_k: int, stages: int, blocks: int) -> PrimFunc:
    """A [M, K] (or [K, M]), B [K, N] (or [N, K]), C [M, N] = op(A) op(B), fp32 accumulation."""
    N, K, bM, bN, bK = n, k, block_m, block_n, block_k
    M = T.dynamic("M")
    n_tiles = (N + bN - 1) // bN
    k_tiles = (K + bK - 1) // bK
    a_shape = (K, M) if trans_a else (M, K)
    b_shape = (N, K) if trans_b else (K, N)
    a_tile = (bK, bM) if trans_a else (bM, bK)
    b_tile = (bN, bK) if trans_b else (bK, bN)

    @T.prim_func
    def gemm(A: T.Tensor(a_shape, dtype), B: T.Tensor(b_shape, dtype), C: T.Tensor((M, N), out_dtype)):
        with T.Kernel(blocks, threads=1) as cid:
            A_s = T.alloc_shared(a_tile, dtype)
            B_s = T.alloc_shared(b_tile, dtype)
            C_f = T.alloc_fragment((bM, bN), "float32")
            for bx, by in T.Persistent([T.ceildiv(M, bM), n_tiles], blocks, cid):
                T.clear(C_f)
                for k in T.Pipelined(k_tiles, num_stages=stages):
                    if trans_a:
                        T.copy(A[k * bK, bx * bM], A_s)
                    else:
                        T.copy(A[bx * bM, k * bK], A_s)
                    if trans_b:
                        T.copy(B[by * bN, k * bK], B_s)
                    else:
                        T.copy(B[k * bK, by * bN], B_s)
                    T.gemm(A_s, B_s, C_f, transpose_A=trans_a, transpose_B=trans_b)
                T.copy(C_f, C[bx * bM, by * bN])

    return gemm
