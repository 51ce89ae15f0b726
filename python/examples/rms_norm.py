"""Expert-mode RMSNorm on the vector cores: the Python twin of examples/rms_norm.cpp.

    Y[i, :] = W * X[i, :] * rsqrt(mean(X[i, :]^2) + eps)

with X, W, Y in bf16 (or fp16) and all arithmetic in fp32. Rows are dealt out in tiles of
block_M rows to the 2 * blocks AIVs with T.Persistent; W is loaded and widened to fp32 once
per AIV, before the row loop. The fp32 math runs on block_N-wide column chunks. Two schedules:
  - passes = 2 (default): X is read from GM twice, one [block_M, block_N] chunk at a time
      pass 1  acc += x^2 chunk by chunk, then ss = rowsum(acc), inv = rsqrt(ss / N + eps)
      pass 2  y = cast(x * inv * w) chunk by chunk, W's chunk broadcast over the rows
  - passes = 1: the whole [block_M, N] row tile of X (and of Y) stays in UB, read and written once
      pass 1  per chunk: widen, square, ss += rowsum (reduce_sum without clear)
      pass 2  per chunk: widen again from UB, y = x * inv, y[r] *= w row by row, narrow into yb
Synchronisation: each load starts with V -> MTE2 (the last cast has read xb_ub) and ends with
MTE2 -> V; the first output cast waits on MTE3 -> V (the previous store has read yb_ub), each
store starts with V -> MTE3; pipe_barrier("V") between dependent V instructions.
Run it: python python/examples/rms_norm.py
"""

import tl_ascend as tilelang
import tl_ascend.language as T

EV_IN, EV_OUT = 0, 1  # intra-core event ids


@tilelang.jit(out_idx=[2])
def rms_norm_kernel(M=4096, N=7168, block_M=8, block_N=1024, blocks=24, passes=2, dtype="bfloat16"):
    assert M % block_M == 0, f"rms_norm: M={M} must be a multiple of rM={block_M}"
    assert N % block_N == 0, f"rms_norm: N={N} must be a multiple of bN={block_N}"
    row_tiles = M // block_M
    tile_cols = N if passes == 1 else block_N
    chunks = N // block_N

    @T.macro
    def load_w(W, wf_ub):
        """Loads W once and widens it into wf_ub."""
        w_ub = T.alloc_ub((N,), dtype)  # W as loaded
        T.copy(W, w_ub)
        T.set_flag("MTE2", "V", EV_IN)  # W is in UB before the cast reads it
        T.wait_flag("MTE2", "V", EV_IN)
        T.tile.cast(wf_ub, w_ub)

    @T.macro
    def load_x(X, xb_ub, row0, col):
        """Loads X at (row0, col) into xb_ub (a chunk or the whole row tile, xb_ub's shape)."""
        T.set_flag("V", "MTE2", EV_IN)  # the last cast has read xb_ub
        T.wait_flag("V", "MTE2", EV_IN)
        T.copy(X[row0, col], xb_ub)
        T.set_flag("MTE2", "V", EV_IN)  # X is in UB before the cast
        T.wait_flag("MTE2", "V", EV_IN)

    @T.macro
    def finish_stats(ss_ub, eps):
        """ss (sums of squares) -> 1 / rms = rsqrt(ss / N + eps); ss was just written by V."""
        T.pipe_barrier("V")
        T.tile.mul(ss_ub, ss_ub, 1.0 / N)
        T.pipe_barrier("V")
        T.tile.add(ss_ub, ss_ub, eps)
        T.pipe_barrier("V")
        T.tile.rsqrt(ss_ub, ss_ub)

    @T.macro
    def wait_yb_free():
        """Waits for the previous store to have read yb_ub before V writes it again."""
        T.set_flag("MTE3", "V", EV_OUT)
        T.wait_flag("MTE3", "V", EV_OUT)

    @T.macro
    def store_y(yb_ub, Y, row0, col):
        """Stores yb_ub (just written by V) to Y at (row0, col)."""
        T.set_flag("V", "MTE3", EV_OUT)  # yb_ub is complete before it is stored
        T.wait_flag("V", "MTE3", EV_OUT)
        T.copy(yb_ub, Y[row0, col])

    @T.macro
    def scale_rows(xf_ub, wf_ub, c):
        """xf_ub[r, :] *= W's chunk c, row by row."""
        for i in T.serial(block_M):
            T.tile.mul(xf_ub[i:i + 1, 0:block_N], xf_ub[i:i + 1, 0:block_N], wf_ub[c * block_N:c * block_N + block_N])

    @T.prim_func
    def rms_norm(X: T.Tensor((M, N), dtype), W: T.Tensor((N,), dtype), Y: T.Tensor((M, N), dtype), eps: T.float32):
        with T.Kernel(blocks, is_npu=True) as (cid, vid):
            with T.Scope("V"):
                wf_ub = T.alloc_ub((N,), "float32")  # W in fp32, kept for all rows
                xb_ub = T.alloc_ub((block_M, tile_cols), dtype)  # input chunk or row tile
                xf_ub = T.alloc_ub((block_M, block_N), "float32")  # input chunk in fp32
                yb_ub = T.alloc_ub((block_M, tile_cols), dtype)  # output chunk or row tile
                ss_ub = T.alloc_ub((block_M,), "float32")  # per-row sum of squares, then 1/rms
                load_w(W, wf_ub)
                for tile in T.Persistent([row_tiles], 2 * blocks, cid * 2 + vid):
                    if passes == 1:
                        # The [block_M, N] row tile is loaded once into xb_ub and normalised
                        # into yb_ub, in block_N-wide fp32 chunks.
                        row0 = tile * block_M  # first row of this tile
                        load_x(X, xb_ub, row0, 0)
                        # Pass 1: ss = sum of squares, accumulated chunk by chunk.
                        T.tile.fill(ss_ub, 0.0)
                        for i in T.serial(chunks):
                            T.pipe_barrier("V")  # the previous chunk's reduction has read xf_ub
                            T.tile.cast(xf_ub, xb_ub[0:block_M, i * block_N:i * block_N + block_N])
                            T.pipe_barrier("V")
                            T.tile.mul(xf_ub, xf_ub, xf_ub)
                            T.pipe_barrier("V")
                            T.reduce_sum(xf_ub, ss_ub, dim=-1, clear=False)
                        finish_stats(ss_ub, eps)
                        # Pass 2: normalise, scale by W row by row, narrow into yb_ub; then one store.
                        wait_yb_free()
                        for i in T.serial(chunks):
                            T.pipe_barrier("V")  # xf_ub was last read by the previous instruction
                            T.tile.cast(xf_ub, xb_ub[0:block_M, i * block_N:i * block_N + block_N])
                            T.pipe_barrier("V")
                            T.tile.row_expand_mul(xf_ub, xf_ub, ss_ub)
                            T.pipe_barrier("V")
                            scale_rows(xf_ub, wf_ub, i)
                            T.pipe_barrier("V")
                            T.tile.cast(yb_ub[0:block_M, i * block_N:i * block_N + block_N], xf_ub, "CAST_RINT")
                        store_y(yb_ub, Y, row0, 0)
                    else:
                        # X is read twice, one [block_M, block_N] chunk at a time.
                        acc_ub = T.alloc_ub((block_M, block_N), "float32")  # sum of squares, per column slot
                        wb_ub = T.alloc_ub((block_M, block_N), "float32")  # W chunk broadcast over the rows
                        row0 = tile * block_M  # first row of this tile
                        # Pass 1: sum of squares.
                        T.tile.fill(acc_ub, 0.0)
                        for i in T.serial(chunks):
                            load_x(X, xb_ub, row0, i * block_N)
                            T.tile.cast(xf_ub, xb_ub)
                            T.pipe_barrier("V")
                            T.tile.mul(xf_ub, xf_ub, xf_ub)
                            T.pipe_barrier("V")
                            T.tile.add(acc_ub, acc_ub, xf_ub)
                        T.pipe_barrier("V")
                        T.reduce_sum(acc_ub, ss_ub, dim=-1)
                        finish_stats(ss_ub, eps)
                        # Pass 2: normalise, scale by W, narrow and store.
                        for i in T.serial(chunks):
                            load_x(X, xb_ub, row0, i * block_N)
                            T.tile.cast(xf_ub, xb_ub)
                            T.tile.broadcast(wb_ub, wf_ub[i * block_N:i * block_N + block_N])
                            T.pipe_barrier("V")
                            T.tile.row_expand_mul(xf_ub, xf_ub, ss_ub)
                            T.pipe_barrier("V")
                            T.tile.mul(xf_ub, xf_ub, wb_ub)
                            wait_yb_free()
                            T.pipe_barrier("V")
                            T.tile.cast(yb_ub, xf_ub, "CAST_RINT")
                            store_y(yb_ub, Y, row0, i * block_N)

    return rms_norm


def ref_program(x, w, eps):
    xf = x.float()
    return (xf * (xf.pow(2).mean(-1, keepdim=True) + eps).rsqrt() * w.float()).to(x.dtype)


def main(M=256, N=2048, passes=2):
    import torch

    torch.manual_seed(0)
    x = torch.randn(M, N).bfloat16()
    w = torch.randn(N).bfloat16()
    eps = 1e-6
    y = rms_norm_kernel(M, N, block_N=512, blocks=4, passes=passes)(x, w, eps)
    torch.testing.assert_close(y, ref_program(x, w, eps), rtol=1e-2, atol=1e-2)
    print("Kernel Output Match!")


if __name__ == "__main__":
    main()
