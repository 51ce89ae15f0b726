"""Expert-mode elementwise add Z = X + Y on the vector cores, double buffered: the Python twin of
examples/elementwise_add.cpp (calibration row C9 of the timing model, docs/calibration.md).

The rows are cut into tiles of `tile` elements; tile t goes to worker t % (2 * blocks) (the AIVs
of all blocks). Each worker ping-pongs two buffer sets (x, y, z): while V adds tile t in set b,
MTE2 loads tile t + 1 into set 1 - b and MTE3 stores tile t - 1. Flags per set b:
  V -> MTE2 (b)  x_b / y_b have been read by the add, the next load may overwrite them
  MTE2 -> V (b)  the load has landed
  MTE3 -> V (b)  z_b has been stored, the next add may overwrite it
  V -> MTE3 (b)  the add has written z_b
A tile that is not whole 32-byte blocks (N = 1001 fp16) lives in a UB row padded to the next
block and moves with the padded copy (DataCopyPad) both ways.
Run it: python python/examples/elementwise_add.py
"""

import tl_ascend as tilelang
import tl_ascend.language as T

_DTYPE_BYTES = {"float16": 2, "bfloat16": 2, "int16": 2, "float32": 4, "int32": 4}


@tilelang.jit(out_idx=[-1])
def elementwise_add_kernel(M=96, N=8192, tile=8192, blocks=24, dtype="float16", l2_cache="normal"):
    assert N % tile == 0, f"elementwise_add: N={N} must be a multiple of tile={tile}"
    per_row = N // tile
    tiles = M * per_row
    workers = 2 * blocks
    rounds = T.ceildiv(T.ceildiv(tiles, workers), 2)  # two tiles (one per buffer set) per round
    per_block = 32 // _DTYPE_BYTES[dtype]
    ub_cols = T.ceildiv(tile, per_block) * per_block
    pad = None if ub_cols == tile else 0.0  # column tails: padded UB rows, DataCopyPad

    def tile_of(r, b, w):
        """The tile set b of worker w takes in round r (an expression, inlined: no kernel variable)."""
        return (r * 2 + b) * workers + w

    def gm_tile(A, t):
        """Where tile t starts in A."""
        return A.at([t // per_row, t % per_row * tile])

    @T.prim_func
    def elementwise_add(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype), Z: T.Tensor((M, N), dtype)):
        if l2_cache != "normal":  # X and Y are read once: past L2, as asc-devkit's add example
            T.annotate_l2_cache({X: l2_cache, Y: l2_cache})
        with T.Kernel(blocks, is_npu=True) as (cid, vid):
            with T.Scope("V"):
                x = [T.alloc_ub((1, ub_cols), dtype, name=f"x{b}")[0:1, 0:tile] for b in (0, 1)]
                y = [T.alloc_ub((1, ub_cols), dtype, name=f"y{b}")[0:1, 0:tile] for b in (0, 1)]
                z = [T.alloc_ub((1, ub_cols), dtype, name=f"z{b}")[0:1, 0:tile] for b in (0, 1)]
                w = cid * 2 + vid
                for b in (0, 1):
                    T.set_flag("V", "MTE2", b)
                    T.set_flag("MTE3", "V", b)
                for r in T.serial(rounds):
                    for b in (0, 1):
                        if tile_of(r, b, w) < tiles:
                            T.wait_flag("V", "MTE2", b)
                            T.copy(gm_tile(X, tile_of(r, b, w)), x[b], pad_value=pad)
                            T.copy(gm_tile(Y, tile_of(r, b, w)), y[b], pad_value=pad)
                            T.set_flag("MTE2", "V", b)
                            T.wait_flag("MTE2", "V", b)
                            T.wait_flag("MTE3", "V", b)
                            T.tile.add(z[b], x[b], y[b])
                            T.set_flag("V", "MTE2", b)
                            T.set_flag("V", "MTE3", b)
                            T.wait_flag("V", "MTE3", b)
                            T.copy(z[b], gm_tile(Z, tile_of(r, b, w)), pad_value=pad)
                            T.set_flag("MTE3", "V", b)
                for b in (0, 1):
                    T.wait_flag("V", "MTE2", b)
                    T.wait_flag("MTE3", "V", b)

    return elementwise_add


def main(M=96, N=1024, tile=256, blocks=4):
    import torch

    torch.manual_seed(0)
    x = torch.randn(M, N).half()
    y = torch.randn(M, N).half()
    z = elementwise_add_kernel(M, N, tile, blocks)(x, y)
    torch.testing.assert_close(z, (x.float() + y.float()).half(), rtol=1e-3, atol=1e-3)
    print("Kernel Output Match!")


if __name__ == "__main__":
    main()
