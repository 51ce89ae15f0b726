"""Developer-mode elementwise add, Z = X + Y: the Python twin of examples/add_dev.cpp.

The element loop of an elementwise add written as dataflow. Each block takes block_M rows; the
compiler places x, y, z in UB, turns the T.Parallel loop into one vector add and inserts the
MTE2 -> V -> MTE3 flags (docs/developer_mode.md). Any M and N: the compiler clips the last
block's copies and pads rows that are not whole 32-byte blocks (legalize_copies, "Tails").
tiles > 1 gives each block that many row tiles in a T.Pipelined loop.
Run it: python python/examples/add_dev.py
"""

import tl_ascend as tilelang
import tl_ascend.language as T


@tilelang.jit(out_idx=[-1])
def elementwise_add(M, N, block_M=4, dtype="float16", tiles=1):
    """tiles > 1: each block takes `tiles` row tiles in a T.Pipelined loop, so the next tile loads
    while this one is added and stored (with one tile a block has nothing to overlap)."""

    @T.macro
    def tile(X, Y, Z, x, y, z, row):
        T.copy(X[row, 0], x)
        T.copy(Y[row, 0], y)
        for i, j in T.Parallel(block_M, N):
            z[i, j] = x[i, j] + y[i, j]
        T.copy(z, Z[row, 0])

    @T.prim_func
    def add_dev(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype), Z: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M * tiles), threads=2) as cid:
            x = T.alloc_shared((block_M, N), dtype)
            y = T.alloc_shared((block_M, N), dtype)
            z = T.alloc_shared((block_M, N), dtype)
            if tiles == 1:
                tile(X, Y, Z, x, y, z, cid * block_M)
            else:
                for t in T.Pipelined(tiles, num_stages=2):
                    tile(X, Y, Z, x, y, z, (cid * tiles + t) * block_M)

    return add_dev


def main(M=96, N=2048):
    import torch

    torch.manual_seed(0)
    x = torch.randn(M, N).half()
    y = torch.randn(M, N).half()
    z = elementwise_add(M, N)(x, y)
    torch.testing.assert_close(z, (x.float() + y.float()).half(), rtol=1e-3, atol=1e-3)
    print("Kernel Output Match!")


if __name__ == "__main__":
    main()
