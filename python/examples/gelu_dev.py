"""Developer-mode GELU (sigmoid form), y = x / (1 + exp(-1.702 x)): the Python twin of
examples/gelu_dev.cpp.

One row tile per T.Pipelined iteration, `tiles` of them per block: the next tile loads while
this one computes. The exact steps are element loops; the exp is T.tile.exp on a developer
tile, the chip's approximation chosen explicitly (the vectoriser never substitutes it for the
scalar loop's exact exp). The compiler places the tiles in UB, vectorises and inserts the flags
(docs/developer_mode.md). Any M and N: the last block's copies are clipped and rows that are not
whole 32-byte blocks padded (legalize_copies, "Tails").
Run it: python python/examples/gelu_dev.py
"""

import struct

import tl_ascend as tilelang
import tl_ascend.language as T


def round_to(dtype, value):
    """`value` rounded to the nearest `dtype` value (tl's arith::round_float)."""
    fmt = {"float32": "f", "float16": "e"}[dtype]
    return struct.unpack(fmt, struct.pack(fmt, value))[0]


@tilelang.jit(out_idx=[-1])
def gelu(M, N, block_M=4, tiles=1, dtype="float32"):
    row_tiles = T.ceildiv(M, block_M)
    # -1.702 as a value of the dtype: the vector mul takes its scalar in the dtype, and the
    # element loop must say so to be vectorised bit-identically.
    k = T.DType(dtype)(round_to(dtype, -1.702))
    one = T.DType(dtype)(1.0)

    @T.prim_func
    def gelu_dev(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(row_tiles, tiles), threads=2) as cid:
            x = T.alloc_shared((block_M, N), dtype)
            y = T.alloc_shared((block_M, N), dtype)
            for t in T.Pipelined(T.min(tiles, row_tiles - cid * tiles), num_stages=2):
                T.copy(X[(cid * tiles + t) * block_M, 0], x)
                # y holds exp(-1.702 x) + 1 until the last step overwrites it with the result (a
                # scratch tile of its own would need a vector barrier before each reuse).
                for i, j in T.Parallel(block_M, N):
                    y[i, j] = x[i, j] * k
                T.tile.exp(y, y)
                for i, j in T.Parallel(block_M, N):
                    y[i, j] = y[i, j] + one  # in place: no temporary
                for i, j in T.Parallel(block_M, N):
                    y[i, j] = x[i, j] / y[i, j]
                T.copy(y, Y[(cid * tiles + t) * block_M, 0])

    return gelu_dev


def main(M=96, N=2048):
    import torch

    torch.manual_seed(0)
    x = torch.randn(M, N)
    y = gelu(M, N, tiles=2)(x)
    torch.testing.assert_close(y, x * torch.sigmoid(1.702 * x), rtol=1e-4, atol=1e-4)
    print("Kernel Output Match!")


if __name__ == "__main__":
    main()
