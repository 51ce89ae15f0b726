"""Developer-mode matmul + add, C = A x B + D: the Python twin of examples/matmul_add_dev.cpp.

The cube accumulates A x B in fp32 and the vector unit adds D in the dtype. The kernel says only
what flows where: `c` is the gemm's accumulator and is read by an element loop, so the compiler
keeps it in L0C and gives it a UB twin `c_ub` (infer_scopes), moves it across cores through a GM
workspace it allocates itself, one slot per block (legalize_copies), splits the body into a Cube
and a Vector scope and orders the crossing with a cross-core flag (insert_channel_syncs). Any M,
N, K: edge tiles are clipped as in gemm_dev (docs/developer_mode.md, "Data that crosses cores").
Run it: python python/examples/matmul_add_dev.py
"""

import tl_ascend as tilelang
import tl_ascend.language as T


@tilelang.jit(out_idx=[-1])
def matmul_add(M, N, K, block_M=64, block_N=128, block_K=64, dtype="float16"):
    n_tiles = T.ceildiv(N, block_N)
    blocks = T.ceildiv(M, block_M) * n_tiles

    @T.prim_func
    def matmul_add_dev(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), D: T.Tensor((M, N), dtype),
                       C: T.Tensor((M, N), dtype)):
        with T.Kernel(blocks, threads=2) as cid:
            a = T.alloc_shared((block_M, block_K), dtype)
            b = T.alloc_shared((block_K, block_N), dtype)
            c = T.alloc_fragment((block_M, block_N), "float32")
            d = T.alloc_shared((block_M, block_N), dtype)
            T.clear(c)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[cid // n_tiles * block_M, k * block_K], a)
                T.copy(B[k * block_K, cid % n_tiles * block_N], b)
                T.gemm(a, b, c)
            T.copy(D[cid // n_tiles * block_M, cid % n_tiles * block_N], d)
            for i, j in T.Parallel(block_M, block_N):
                d[i, j] = T.cast(c[i, j], dtype) + d[i, j]
            T.copy(d, C[cid // n_tiles * block_M, cid % n_tiles * block_N])

    return matmul_add_dev


def main(M=256, N=256, K=256):
    import torch

    torch.manual_seed(0)
    a = torch.randn(M, K).half()
    b = torch.randn(K, N).half()
    d = torch.randn(M, N).half()
    c = matmul_add(M, N, K)(a, b, d)
    ref = ((a.float() @ b.float()).half().float() + d.float()).half()
    torch.testing.assert_close(c, ref, rtol=1e-2, atol=1e-2)
    print("Kernel Output Match!")


if __name__ == "__main__":
    main()
