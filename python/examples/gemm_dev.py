"""Developer-mode GEMM, C[M, N] = A[M, K] x B[K, N]: the Python twin of examples/gemm_dev.cpp.

The dataflow of examples/gemm.py without the hardware work. The author says which tiles exist
and what flows where; the compiler places them (A_s, B_s -> L1; C_f -> L0C), lowers the gemm to
L1 -> L0A/L0B loads and Mmads, puts it all on the cube and inserts the flags
(docs/developer_mode.md). The K loop is T.Pipelined: A_s, B_s and their L0 copies get one slot
per stage, so the next panels load while the cube multiplies this one. Any M, N, K: the edge
tiles' copies are clipped and a partial K panel is zero-filled in L1 before its copy ("Tails").
Run it: python python/examples/gemm_dev.py
"""

import tl_ascend as tilelang
import tl_ascend.language as T


@tilelang.jit(out_idx=[-1])
def matmul(M, N, K, block_M=128, block_N=256, block_K=256, dtype="float16", num_stages=2, blocks=24):
    m_tiles = T.ceildiv(M, block_M)
    n_tiles = T.ceildiv(N, block_N)

    @T.prim_func
    def gemm_dev(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(blocks) as cid:
            A_s = T.alloc_shared((block_M, block_K), dtype)
            B_s = T.alloc_shared((block_K, block_N), dtype)
            C_f = T.alloc_fragment((block_M, block_N), "float32")
            # Persistent workers (A2's 24 AICs) take the output tiles in turn.
            for bx, by in T.Persistent([m_tiles, n_tiles], blocks, cid):
                T.clear(C_f)
                for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                    T.copy(A[bx * block_M, k * block_K], A_s)
                    T.copy(B[k * block_K, by * block_N], B_s)
                    T.gemm(A_s, B_s, C_f)
                T.copy(C_f, C[bx * block_M, by * block_N])

    return gemm_dev


def main(M=1024, N=1024, K=1024):
    import torch

    torch.manual_seed(0)
    a = torch.randn(M, K).half()
    b = torch.randn(K, N).half()
    c = matmul(M, N, K)(a, b)
    torch.testing.assert_close(c, (a.float() @ b.float()).half(), rtol=1e-2, atol=1e-2)
    print("Kernel Output Match!")


if __name__ == "__main__":
    main()
