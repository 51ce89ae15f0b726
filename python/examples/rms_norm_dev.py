"""Developer-mode RMSNorm, Y[i, :] = W * X[i, :] * rsqrt(mean(X[i, :]^2) + eps): the Python twin
of examples/rms_norm_dev.cpp.

Dataflow on one row tile per T.Pipelined iteration, `tiles` of them per block. Element loops
widen, square and scale; T.reduce_sum and T.tile.rsqrt are expert tile ops used on developer
tiles (the chip's rsqrt is an approximation: an explicit choice, not something the vectoriser
may substitute for the exact scalar rsqrt). The compiler places every tile in UB, vectorises the
loops and inserts the flags (docs/developer_mode.md). Any M and N: the last block's copies are
clipped, rows that are not whole 32-byte blocks padded, and the row sums reduce the logical
width only ("Tails").
Run it: python python/examples/rms_norm_dev.py
"""

import tl_ascend as tilelang
import tl_ascend.language as T


@tilelang.jit(out_idx=[2])
def rms_norm(M, N, block_M=8, tiles=1, dtype="bfloat16"):
    row_tiles = T.ceildiv(M, block_M)

    @T.prim_func
    def rms_norm_dev(X: T.Tensor((M, N), dtype), W: T.Tensor((N,), dtype), Y: T.Tensor((M, N), dtype),
                     eps: T.float32):
        with T.Kernel(T.ceildiv(row_tiles, tiles), threads=2) as cid:
            x = T.alloc_shared((block_M, N), dtype)
            w = T.alloc_shared((N,), dtype)
            xf = T.alloc_fragment((block_M, N), "float32")
            sq = T.alloc_fragment((block_M, N), "float32")
            ss = T.alloc_fragment((block_M,), "float32")
            y = T.alloc_shared((block_M, N), dtype)
            T.copy(W, w)
            # This block's row tiles: the next loads while this one computes and the last stores.
            for t in T.Pipelined(T.min(tiles, row_tiles - cid * tiles), num_stages=2):
                T.copy(X[(cid * tiles + t) * block_M, 0], x)
                for i, j in T.Parallel(block_M, N):
                    xf[i, j] = T.cast(x[i, j], "float32")
                for i, j in T.Parallel(block_M, N):
                    sq[i, j] = xf[i, j] * xf[i, j]
                T.reduce_sum(sq, ss, dim=-1)
                for p in T.Parallel(block_M):
                    ss[p] = ss[p] * (1.0 / N) + eps
                T.tile.rsqrt(ss, ss)
                for i, j in T.Parallel(block_M, N):
                    y[i, j] = T.cast(xf[i, j] * ss[i] * T.cast(w[j], "float32"), dtype)
                T.copy(y, Y[(cid * tiles + t) * block_M, 0])

    return rms_norm_dev


def main(M=256, N=1024, eps=1e-6):
    import torch

    torch.manual_seed(0)
    x = torch.randn(M, N).bfloat16()
    w = torch.randn(N).bfloat16()
    y = rms_norm(M, N)(x, w, eps)
    xf = x.float()
    ref = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w.float()).bfloat16()
    torch.testing.assert_close(y, ref, rtol=2e-2, atol=2e-2)
    print("Kernel Output Match!")


if __name__ == "__main__":
    main()
