"""Expert-mode two-phase kernel with a barrier over every block (T.sync_all): the Python twin of
examples/ring_sum.cpp. Y[r] = X[r] / 2 + X[(r + 1) % M] / 2, each row plus its successor, halved.

Row r is worker r % (2 * blocks)'s (the AIVs of all blocks), so a row's successor belongs to
another core, usually of another block: no flag reaches it, only a barrier over the launch does.
  phase 1   each worker halves its rows, X[r] * 0.5, into the GM workspace W (T.alloc_workspace);
  sync_all  every AIV of every block has stored its rows of W (SyncAll<true> in AscendC: the
            barrier is in vector code only);
  phase 2   each worker reads W[r] and W[(r + 1) % M] back and stores their sum as Y[r].
Every block must be resident at once (blocks <= the target's AICs; the virtual NPU checks).
Within a worker each row's copy -> op -> copy chain is ordered by flags set and waited at once
(MTE2 -> V, V -> MTE3), and the next row's load waits for this row's store (MTE3 -> MTE2). A row
that is not whole 32-byte blocks (N = 33 fp16) moves with the padded copy (DataCopyPad).
Run it: python python/examples/ring_sum.py
"""

import tl_ascend as tilelang
import tl_ascend.language as T

_DTYPE_BYTES = {"float16": 2, "float32": 4}


@tilelang.jit(out_idx=[-1])
def ring_sum_kernel(M=96, N=256, blocks=8, dtype="float16"):
    workers = 2 * blocks
    rounds = T.ceildiv(M, workers)
    per_block = 32 // _DTYPE_BYTES[dtype]
    ub_cols = T.ceildiv(N, per_block) * per_block
    pad = None if ub_cols == N else 0.0  # column tails: padded UB rows, DataCopyPad

    def row(i, w):
        """Round i's row of worker w (an expression, inlined: no kernel variable)."""
        return i * workers + w

    @T.prim_func
    def ring_sum(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(blocks, is_npu=True) as (cid, vid):
            W = T.alloc_workspace((M, N), dtype, name="W")
            with T.Scope("V"):
                x = T.alloc_ub((1, ub_cols), dtype, name="x")[0:1, 0:N]
                y = T.alloc_ub((1, ub_cols), dtype, name="y")[0:1, 0:N]
                z = T.alloc_ub((1, ub_cols), dtype, name="z")[0:1, 0:N]
                w = cid * 2 + vid
                for i in T.serial(rounds):
                    if row(i, w) < M:
                        T.copy(X.at([row(i, w), 0]), x, pad_value=pad)
                        T.set_flag("MTE2", "V", 0)
                        T.wait_flag("MTE2", "V", 0)
                        T.tile.mul(z, x, 0.5)  # exact in every float dtype
                        T.set_flag("V", "MTE3", 0)
                        T.wait_flag("V", "MTE3", 0)
                        T.copy(z, W.at([row(i, w), 0]), pad_value=pad)
                        T.set_flag("MTE3", "MTE2", 0)
                        T.wait_flag("MTE3", "MTE2", 0)
                T.sync_all()
                for i in T.serial(rounds):
                    if row(i, w) < M:
                        T.copy(W.at([row(i, w), 0]), x, pad_value=pad)
                        T.copy(W.at([(row(i, w) + 1) % M, 0]), y, pad_value=pad)
                        T.set_flag("MTE2", "V", 0)
                        T.wait_flag("MTE2", "V", 0)
                        T.tile.add(z, x, y)
                        T.set_flag("V", "MTE3", 0)
                        T.wait_flag("V", "MTE3", 0)
                        T.copy(z, Y.at([row(i, w), 0]), pad_value=pad)
                        T.set_flag("MTE3", "MTE2", 0)
                        T.wait_flag("MTE3", "MTE2", 0)

    return ring_sum


def main(M=96, N=256, blocks=8):
    import torch

    torch.manual_seed(0)
    x = torch.randn(M, N).half()
    y = ring_sum_kernel(M, N, blocks)(x)
    want = (x.double() / 2 + torch.roll(x.double(), -1, dims=0) / 2).half()
    torch.testing.assert_close(y, want, rtol=1e-3, atol=1e-3)
    print("Kernel Output Match!")


if __name__ == "__main__":
    main()
