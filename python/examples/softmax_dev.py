"""Developer-mode row softmax, Y[i, :] = exp(X[i, :] - max_j X[i, j]) / sum_j exp(...), fp32: the
Python twin of examples/softmax_dev.cpp.

One row tile per T.Pipelined iteration, `tiles` of them per block: the row statistics are
T.reduce_max / T.reduce_sum on developer tiles, the broadcasts are element loops, and the exp is
T.tile.exp (the chip's approximation, chosen explicitly). The division is one divide per row and
a multiply per element (the vector unit divides at a quarter of its multiply rate). The compiler places the tiles in UB,
vectorises and inserts the flags (docs/developer_mode.md). Any M and N: the last block's copies
are clipped, rows that are not whole 32-byte blocks padded, and the row max and sum reduce the
logical width only ("Tails").
Run it: python python/examples/softmax_dev.py
"""

import tl_ascend as tilelang
import tl_ascend.language as T


@tilelang.jit(out_idx=[-1])
def softmax(M, N, block_M=8, tiles=1, num_stages=2):
    row_tiles = T.ceildiv(M, block_M)

    @T.prim_func
    def softmax_dev(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(row_tiles, tiles), threads=2) as cid:
            x = T.alloc_shared((block_M, N), "float32")
            m = T.alloc_fragment((block_M,), "float32")
            s = T.alloc_fragment((block_M,), "float32")
            # This block's row tiles; the next tile loads while this one computes and the last stores.
            for t in T.Pipelined(T.min(tiles, row_tiles - cid * tiles), num_stages=num_stages):
                T.copy(X[(cid * tiles + t) * block_M, 0], x)
                T.reduce_max(x, m, dim=-1)
                for i, j in T.Parallel(block_M, N):
                    x[i, j] = x[i, j] - m[i]
                T.tile.exp(x, x)
                T.reduce_sum(x, s, dim=-1)
                for p in T.Parallel(block_M):
                    s[p] = T.float32(1.0) / s[p]  # one divide per row, not per element
                for i, j in T.Parallel(block_M, N):
                    x[i, j] = x[i, j] * s[i]
                T.copy(x, Y[(cid * tiles + t) * block_M, 0])

    return softmax_dev


def main(M=128, N=1024):
    import torch

    torch.manual_seed(0)
    x = torch.randn(M, N)
    y = softmax(M, N, tiles=2)(x)
    torch.testing.assert_close(y, torch.softmax(x, dim=-1), rtol=1e-4, atol=1e-5)
    print("Kernel Output Match!")


if __name__ == "__main__":
    main()
