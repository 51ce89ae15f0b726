"""Expert-mode GEMM, C = A x B on the cube: the Python twin of examples/gemm.cpp.

Each block owns one block_M x block_N tile of C; the K loop streams block_K-wide panels of A and
B into L1, gemm_v0 accumulates into L0C, and the fixpipe writes the tile to GM.
Run it: python python/examples/gemm.py
"""

import tl_ascend as tilelang
import tl_ascend.language as T


@tilelang.jit(out_idx=[-1])
def matmul(M, N, K, block_M=128, block_N=256, block_K=64, dtype="float16", accum_dtype="float"):
    n_num = T.ceildiv(N, block_N)
    m_num = T.ceildiv(M, block_M)

    @T.prim_func
    def gemm(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(m_num * n_num, is_npu=True) as (cid, _):
            with T.Scope("C"):
                A_L1 = T.alloc_L1((block_M, block_K), dtype)
                B_L1 = T.alloc_L1((block_K, block_N), dtype)
                C_L0C = T.alloc_L0C((block_M, block_N), accum_dtype)
                for k in T.serial(T.ceildiv(K, block_K)):
                    T.copy(A[cid // n_num * block_M, k * block_K], A_L1)
                    T.copy(B[k * block_K, cid % n_num * block_N], B_L1)
                    T.set_flag("MTE2", "MTE1", 0)
                    T.wait_flag("MTE2", "MTE1", 0)
                    T.gemm_v0(A_L1, B_L1, C_L0C, init=(k == 0))
                    # The next iteration's copies overwrite A_L1/B_L1: wait until the cube has read them.
                    T.set_flag("M", "MTE2", 0)
                    T.wait_flag("M", "MTE2", 0)
                T.set_flag("M", "FIX", 0)
                T.wait_flag("M", "FIX", 0)
                T.copy(C_L0C, C[cid // n_num * block_M, cid % n_num * block_N])

    return gemm


def main(M=512, N=512, K=512):
    import torch

    torch.manual_seed(0)
    a = torch.randn(M, K).half()
    b = torch.randn(K, N).half()
    c = matmul(M, N, K)(a, b)
    ref = (a.float() @ b.float()).half()
    torch.testing.assert_close(c, ref, rtol=1e-2, atol=1e-2)
    print("Kernel Output Match!")


if __name__ == "__main__":
    main()
