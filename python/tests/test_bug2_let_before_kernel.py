"""Regression of issue 27, bug 2: a `let` before `with T.Kernel` never ran.

`n_offset = N // 2` at the prim_func level (N dynamic) becomes a function-level let; every
core started at the kernel body, so n_offset read 0. Before the fix the issue's kernel on a
16 x 128 input got all 2048 output elements wrong (X[:, :64] + 1 written to the first half,
nothing to the second), and a let used as the block count failed the launch ("cannot
evaluate the block count blocks: blocks is not bound yet").
"""

import torch

import tl_ascend as tilelang
import tl_ascend.language as T


@tilelang.jit(out_idx=[1])
def half(M: int, N: int, block_M: int = 8):
    Nd = T.dynamic("N")

    @T.prim_func
    def k(X: T.Tensor((M, Nd), "float32"), Y: T.Tensor((M, Nd), "float32")):
        n_offset = Nd // 2
        with T.Kernel(T.ceildiv(M, block_M), threads=1) as cid:
            x = T.alloc_shared((block_M, 64), "float32")
            T.copy(X[cid * block_M, n_offset], x)
            for i, j in T.Parallel(block_M, 64):
                x[i, j] = x[i, j] + 1.0
            T.copy(x, Y[cid * block_M, n_offset])

    return k


@tilelang.jit(out_idx=[1])
def add_one(N: int, block_M: int = 8):
    Md = T.dynamic("M")

    @T.prim_func
    def k(X: T.Tensor((Md, N), "float32"), Y: T.Tensor((Md, N), "float32")):
        blocks = T.ceildiv(Md, block_M)
        with T.Kernel(blocks, threads=1) as cid:
            x = T.alloc_shared((block_M, N), "float32")
            T.copy(X[cid * block_M, 0], x)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = x[i, j] + 1.0
            T.copy(x, Y[cid * block_M, 0])

    return k


def test_bug2_a_let_before_the_kernel_runs_on_every_core():
    for n in (128, 100):
        x = torch.randn(16, n)
        y = half(16, n)(x, check_stale=True, check_hazards=True)
        want = torch.zeros(16, n)
        want[:, n // 2:n // 2 + 64] = x[:, n // 2:n // 2 + 64] + 1
        assert (y != want).sum().item() == 0, (n, (y != want).sum().item())


def test_bug2_a_let_before_the_kernel_can_be_the_block_count():
    x = torch.randn(20, 64)
    torch.testing.assert_close(add_one(64)(x, check_stale=True), x + 1, rtol=0, atol=0)
