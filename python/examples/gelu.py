"""Expert-mode GELU on the vector cores, double buffered: the Python twin of examples/gelu.cpp
(calibration row C13 of the timing model, docs/calibration.md). Sigmoid form of GELU:
  y = x * sigmoid(1.702 x) = x / (1 + exp(-1.702 x))
(four vector instructions per tile: mul, exp, add, div).

Tiles of `tile` elements go round-robin to the 2 * blocks AIVs. Each AIV ping-pongs two buffer
sets (x_b, y_b): while V computes tile t in set b, MTE2 loads tile t + 1 into the other set and
MTE3 stores tile t - 1. Flags per set b (the elementwise_add scheme):
  V -> MTE2 (b)  x_b has been read by the div, the next load may overwrite it
  MTE2 -> V (b)  the load has landed
  MTE3 -> V (b)  y_b has been stored, the next tile's mul may overwrite it
  V -> MTE3 (b)  the div has written y_b
The four V instructions form one dependency chain on y_b: a pipe_barrier("V") between each.
Run it: python python/examples/gelu.py
"""

import tl_ascend as tilelang
import tl_ascend.language as T


@tilelang.jit(out_idx=[-1])
def gelu_kernel(M=96, N=8192, tile=8192, blocks=24, dtype="float32"):
    assert N % tile == 0, f"gelu: N={N} must be a multiple of tile={tile}"
    per_row = N // tile
    tiles = M * per_row
    workers = 2 * blocks
    rounds = T.ceildiv(T.ceildiv(tiles, workers), 2)  # two tiles (one per buffer set) per round

    def tile_of(r, b, w):
        """The tile set b of worker w takes in round r (an expression, inlined: no kernel variable)."""
        return (r * 2 + b) * workers + w

    def gm_tile(A, t):
        """Where tile t starts in A."""
        return A.at([t // per_row, t % per_row * tile])

    @T.prim_func
    def gelu(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(blocks, is_npu=True) as (cid, vid):
            with T.Scope("V"):
                x = [T.alloc_ub((1, tile), dtype, name=f"x{b}") for b in (0, 1)]
                y = [T.alloc_ub((1, tile), dtype, name=f"y{b}") for b in (0, 1)]
                w = cid * 2 + vid
                for b in (0, 1):
                    T.set_flag("V", "MTE2", b)
                    T.set_flag("MTE3", "V", b)
                for r in T.serial(rounds):
                    for b in (0, 1):
                        if tile_of(r, b, w) < tiles:
                            T.wait_flag("V", "MTE2", b)
                            T.copy(gm_tile(X, tile_of(r, b, w)), x[b])
                            T.set_flag("MTE2", "V", b)
                            T.wait_flag("MTE2", "V", b)
                            T.wait_flag("MTE3", "V", b)
                            T.tile.mul(y[b], x[b], -1.702)
                            T.pipe_barrier("V")
                            T.tile.exp(y[b], y[b])
                            T.pipe_barrier("V")
                            T.tile.add(y[b], y[b], 1.0)
                            T.pipe_barrier("V")
                            T.tile.div(y[b], x[b], y[b])
                            T.set_flag("V", "MTE2", b)
                            T.set_flag("V", "MTE3", b)
                            T.wait_flag("V", "MTE3", b)
                            T.copy(y[b], gm_tile(Y, tile_of(r, b, w)))
                            T.set_flag("MTE3", "V", b)
                for b in (0, 1):
                    T.wait_flag("V", "MTE2", b)
                    T.wait_flag("MTE3", "V", b)

    return gelu


def main(M=64, N=1024, tile=512, blocks=4):
    import torch

    torch.manual_seed(0)
    x = torch.randn(M, N)
    y = gelu_kernel(M, N, tile, blocks)(x)
    torch.testing.assert_close(y, x * torch.sigmoid(1.702 * x), rtol=1e-5, atol=1e-5)
    print("Kernel Output Match!")


if __name__ == "__main__":
    main()
