"""Expert-mode RMSNorm with a dynamic row count: the Python twin of examples/rms_norm_dynamic.cpp.

    Y[i, :] = W * X[i, :] * rsqrt(mean(X[i, :]^2) + eps)

for X, Y of shape [M, N] where M = T.dynamic("M") is bound from the tensors at launch, so one
compiled kernel serves every M (0 included). N, the tile sizes and the dtype are compile-time
parameters. bf16 (or fp16) in and out, fp32 arithmetic, as rms_norm.py.

Work split. The M rows are M // block_M full tiles plus a tail of M % block_M rows. UB buffers
(and so tile ops) need static shapes, so the tail is processed as a whole block_M-row tile of
which only the first M % block_M rows are valid:
  full tiles  dealt to the 2 * blocks AIVs with T.Persistent; one GM <-> UB copy per chunk;
  tail tile   taken by the AIV next in the round robin (full_tiles % workers); its valid rows
              are copied GM <-> UB one row at a time (a loop with a runtime trip count over
              1-row regions), the vector ops run on the whole tile and the rows past M are
              never stored (vector math is per row, so stale rows cannot affect valid ones).
The block count is min(blocks, ceildiv(M, block_M)): M = 0 launches no block at all.
Synchronisation is that of rms_norm.py; every set_flag is immediately followed by its wait_flag,
so the full-tile and tail paths compose.
Run it: python python/examples/rms_norm_dynamic.py
"""

import tl_ascend as tilelang
import tl_ascend.language as T

EV_IN, EV_OUT = 0, 1  # intra-core event ids


@tilelang.jit  # Y is passed in: kernel(X, W, Y, eps)
def rms_norm_dynamic_kernel(N=4096, block_M=8, block_N=1024, blocks=24, dtype="bfloat16"):
    assert N % block_N == 0, f"rms_norm_dynamic: N={N} must be a multiple of bN={block_N}"
    chunks = N // block_N
    M = T.dynamic("M")
    num_blocks = T.min(blocks, T.ceildiv(M, block_M))

    @T.macro
    def load_chunk(X, xb_ub, xf_ub, row0, c, nrows):
        """Chunk c of the tile at row0 into xb_ub, widened into xf_ub: one copy for a full tile
        (nrows None), one copy per valid row for the tail tile."""
        T.set_flag("V", "MTE2", EV_IN)  # the previous cast has read xb_ub
        T.wait_flag("V", "MTE2", EV_IN)
        if nrows is None:
            T.copy(X[row0, c * block_N], xb_ub)
        else:
            for i in T.serial(nrows):
                T.copy(X[row0 + i, c * block_N], xb_ub[i:i + 1, 0:block_N])
        T.set_flag("MTE2", "V", EV_IN)  # the chunk is in UB before the cast
        T.wait_flag("MTE2", "V", EV_IN)
        T.tile.cast(xf_ub, xb_ub)

    @T.macro
    def store_chunk(yb_ub, Y, row0, c, nrows):
        """yb_ub to chunk c of the tile at row0: its nrows valid rows only for the tail tile."""
        if nrows is None:
            T.copy(yb_ub, Y[row0, c * block_N])
        else:
            for i in T.serial(nrows):
                T.copy(yb_ub[i:i + 1, 0:block_N], Y[row0 + i, c * block_N])

    @T.macro
    def tile_rows(X, Y, eps, wf_ub, xb_ub, xf_ub, acc_ub, wb_ub, yb_ub, ss_ub, row0, nrows):
        """Normalises the block_M-row tile starting at row0 (nrows: None for a full tile, else the
        valid rows of the tail tile; its other rows are computed on stale data, never stored)."""
        # Pass 1: sum of squares.
        T.tile.fill(acc_ub, 0.0)
        for i in T.serial(chunks):
            load_chunk(X, xb_ub, xf_ub, row0, i, nrows)
            T.pipe_barrier("V")
            T.tile.mul(xf_ub, xf_ub, xf_ub)
            T.pipe_barrier("V")
            T.tile.add(acc_ub, acc_ub, xf_ub)
        T.pipe_barrier("V")
        T.reduce_sum(acc_ub, ss_ub, dim=-1)
        T.pipe_barrier("V")
        T.tile.mul(ss_ub, ss_ub, 1.0 / N)
        T.pipe_barrier("V")
        T.tile.add(ss_ub, ss_ub, eps)
        T.pipe_barrier("V")
        T.tile.rsqrt(ss_ub, ss_ub)
        # Pass 2: normalise, scale by W, narrow and store.
        for i in T.serial(chunks):
            load_chunk(X, xb_ub, xf_ub, row0, i, nrows)
            T.tile.broadcast(wb_ub, wf_ub[i * block_N:i * block_N + block_N])
            T.pipe_barrier("V")
            T.tile.row_expand_mul(xf_ub, xf_ub, ss_ub)
            T.pipe_barrier("V")
            T.tile.mul(xf_ub, xf_ub, wb_ub)
            T.set_flag("MTE3", "V", EV_OUT)  # the previous store has read yb_ub
            T.wait_flag("MTE3", "V", EV_OUT)
            T.pipe_barrier("V")
            T.tile.cast(yb_ub, xf_ub, "CAST_RINT")
            T.set_flag("V", "MTE3", EV_OUT)  # the chunk is in UB before it is stored
            T.wait_flag("V", "MTE3", EV_OUT)
            store_chunk(yb_ub, Y, row0, i, nrows)

    @T.prim_func
    def rms_norm_dynamic(X: T.Tensor((M, N), dtype), W: T.Tensor((N,), dtype), Y: T.Tensor((M, N), dtype),
                         eps: T.float32):
        with T.Kernel(num_blocks, is_npu=True) as (cid, vid):
            with T.Scope("V"):
                w_ub = T.alloc_ub((N,), dtype)  # W as loaded
                wf_ub = T.alloc_ub((N,), "float32")  # W in fp32, kept for all rows
                xb_ub = T.alloc_ub((block_M, block_N), dtype)  # input chunk
                xf_ub = T.alloc_ub((block_M, block_N), "float32")  # input chunk in fp32
                acc_ub = T.alloc_ub((block_M, block_N), "float32")  # sum of squares, per column slot
                wb_ub = T.alloc_ub((block_M, block_N), "float32")  # W chunk broadcast over the rows
                yb_ub = T.alloc_ub((block_M, block_N), dtype)  # output chunk
                ss_ub = T.alloc_ub((block_M,), "float32")  # per-row sum of squares, then 1/rms

                T.copy(W, w_ub)
                T.set_flag("MTE2", "V", EV_IN)  # W is in UB before the cast reads it
                T.wait_flag("MTE2", "V", EV_IN)
                T.tile.cast(wf_ub, w_ub)

                workers = num_blocks * 2
                worker = cid * 2 + vid
                full_tiles = M // block_M
                for tile in T.Persistent([full_tiles], workers, worker):
                    row0 = tile * block_M
                    tile_rows(X, Y, eps, wf_ub, xb_ub, xf_ub, acc_ub, wb_ub, yb_ub, ss_ub, row0, None)
                # The tail tile continues the round robin: worker full_tiles % workers takes it.
                tail = M % block_M
                if tail > 0 and worker == full_tiles % workers:
                    tile_rows(X, Y, eps, wf_ub, xb_ub, xf_ub, acc_ub, wb_ub, yb_ub, ss_ub, full_tiles * block_M, tail)

    return rms_norm_dynamic


def ref_program(x, w, eps):
    xf = x.float()
    return (xf * (xf.pow(2).mean(-1, keepdim=True) + eps).rsqrt() * w.float()).to(x.dtype)


def main(N=1024):
    import torch

    torch.manual_seed(0)
    kernel = rms_norm_dynamic_kernel(N, block_N=256, blocks=4)  # one kernel for every M
    w = torch.randn(N).bfloat16()
    eps = 1e-6
    for M in (0, 5, 64, 77):
        x = torch.randn(M, N).bfloat16()
        y = torch.empty_like(x)
        kernel(x, w, y, eps)
        torch.testing.assert_close(y, ref_program(x, w, eps), rtol=1e-2, atol=1e-2)
    print("Kernel Output Match!")


if __name__ == "__main__":
    main()
