"""Expert-mode "minicv" (seed 003), D = exp(A x B): the Python twin of examples/minicv.cpp.

The smallest kernel that uses both kinds of core of a block. The AIC computes one
block_M x block_N tile of A x B (whole K in L1, one gemm_v0) and the fixpipe writes it to a GM
workspace W[cid]; the two AIVs wait for it on a cross-core flag, each loads its half of the rows
(vid selects the half), applies exp on the V pipe and stores its rows of D. On A2 the AIC and
the AIVs can only exchange data through GM.

Every synchronisation orders one producer/consumer pair that nothing else orders:
  cube:   MTE2 -> MTE1  the L1 tiles are loaded before gemm_v0 reads them
          M -> FIX      the accumulation into L0C is done before the fixpipe reads it
          cross flag 0  (FIX, mode 2) the workspace tile is in GM before the AIVs read it
  vector: MTE2 -> V     the UB tile is loaded before exp reads it
          V (barrier)   exp has written x before cast reads it (fp16 output only)
          V -> MTE3     the result is in UB before it is stored
Run it: python python/examples/minicv.py
"""

import tl_ascend as tilelang
import tl_ascend.language as T


@tilelang.jit(out_idx=[2], workspace_idx=[3])
def matmul_exp(M, N, K, block_M=128, block_N=128, dtype="float16", out_dtype="float32", accum_dtype="float"):
    if M % block_M != 0 or N % block_N != 0:
        raise ValueError(f"minicv: M={M} and N={N} must be multiples of block_M={block_M} and block_N={block_N}")
    m_num = M // block_M
    n_num = N // block_N
    num_blocks = m_num * n_num
    half = block_M // 2  # rows per AIV
    narrow = out_dtype != "float32"  # fp16 output: exp in fp32, then a vector cast
    EV = 0  # intra-core event id (each set is waited on right away)
    TILE_READY = 0  # cross-core flag: W[cid] holds the GEMM tile

    @T.prim_func
    def minicv(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), D: T.Tensor((M, N), out_dtype),
               W: T.Tensor((num_blocks, block_M, block_N), accum_dtype)):
        with T.Kernel(num_blocks, is_npu=True) as (cid, vid):
            bx = cid // n_num * block_M  # first row of the block's tile
            by = cid % n_num * block_N  # first column

            with T.Scope("C"):
                A_L1 = T.alloc_L1((block_M, K), dtype)
                B_L1 = T.alloc_L1((K, block_N), dtype)
                C_L0C = T.alloc_L0C((block_M, block_N), accum_dtype)
                T.copy(A[bx, 0], A_L1)  # GM -> L1, ND -> NZ
                T.copy(B[0, by], B_L1)
                T.set_flag("MTE2", "MTE1", EV)
                T.wait_flag("MTE2", "MTE1", EV)
                T.gemm_v0(A_L1, B_L1, C_L0C, init=True)
                T.set_flag("M", "FIX", EV)
                T.wait_flag("M", "FIX", EV)
                T.copy(C_L0C, W[cid, 0, 0])  # fixpipe L0C -> GM, NZ -> ND
                T.set_cross_flag("FIX", TILE_READY, mode=2)  # tell both AIVs

            with T.Scope("V"):
                x_ub = T.alloc_ub((half, block_N), accum_dtype)
                y_ub = x_ub
                if narrow:
                    y_ub = T.alloc_ub((half, block_N), out_dtype)
                T.wait_cross_flag(TILE_READY)
                T.copy(W[cid, vid * half, 0], x_ub)  # this AIV's half of the rows
                T.set_flag("MTE2", "V", EV)
                T.wait_flag("MTE2", "V", EV)
                T.tile.exp(x_ub, x_ub)
                if narrow:
                    T.pipe_barrier("V")  # the cast reads what exp wrote
                    T.tile.cast(y_ub, x_ub, "CAST_RINT")
                T.set_flag("V", "MTE3", EV)
                T.wait_flag("V", "MTE3", EV)
                T.copy(y_ub, D[bx + vid * half, by])

    return minicv


def main(M=256, N=256, K=64, block_M=128, block_N=128):
    import torch

    torch.manual_seed(0)
    # Small inputs keep exp(A x B) in range.
    a = (torch.randn(M, K) * 0.1).half()
    b = (torch.randn(K, N) * 0.1).half()
    d = matmul_exp(M, N, K, block_M, block_N)(a, b)  # the launcher allocates the workspace W
    ref = torch.exp(a.float() @ b.float())
    torch.testing.assert_close(d, ref, rtol=1e-3, atol=1e-3)
    print("Kernel Output Match!")


if __name__ == "__main__":
    main()
