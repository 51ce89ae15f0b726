"""Copy bandwidth kernels: the Python twins of examples/copy_bench.cpp, calibration rows C11
(GM -> UB on the AIVs, copy_gm_ub) and C12 (GM -> L1 with ND -> NZ on the AICs, copy_gm_l1) of
the timing model (docs/calibration.md). Each core copies its band of rows, tile by tile, into
on-chip slots; nothing consumes them.

Copies on one MTE2 may overlap, so a copy may not overwrite a slot an earlier copy is still
writing: the kernel cycles through `slots` slots and drains MTE2 (pipe_barrier) before it
reuses them. One slot (the default) is a barrier between every two copies; small tiles need
many slots, or every copy would wait out the GM latency alone.
Run it: python python/examples/copy_bench.py
"""

import tl_ascend as tilelang
import tl_ascend.language as T


def _check_shape(kernel, M, N, block_M, block_N, slots):
    assert M % block_M == 0 and N % block_N == 0, \
        f"{kernel}: M={M} and N={N} must be multiples of tM={block_M} and tN={block_N}"
    assert N // block_N % slots == 0, \
        f"{kernel}: slots={slots} must divide the {N // block_N} column tiles of a row (N / tN)"


@T.macro
def copy_tiles(X, x, M, N, block_M, block_N, slots, workers, w, slot_dim):
    """The copy loop of worker w, shaped like asc-devkit's data_copy kernel: each worker takes a
    contiguous band of row tiles and walks each row tile's column tiles in order, so an address
    is an increment of the previous one (no division per copy). Column tile g * slots + s goes
    to slot s, stacked along `slot_dim` of x (UB: rows; L1: columns, whose 16-wide blocks are
    contiguous in NZ); MTE2 drains before each round of slots reuses them."""
    row_tiles = M // block_M
    rounds = N // block_N // slots
    band = T.ceildiv(row_tiles, workers)
    for m in T.serial(band):
        mi = w * band + m
        if mi < row_tiles:
            for g in T.serial(rounds):
                if m > 0 or g > 0:
                    T.pipe_barrier("MTE2")
                for s in T.serial(slots):
                    if slot_dim == 0:
                        T.copy(X[mi * block_M, (g * slots + s) * block_N],
                               x[s * block_M:s * block_M + block_M, 0:block_N])
                    else:
                        T.copy(X[mi * block_M, (g * slots + s) * block_N],
                               x[0:block_M, s * block_N:s * block_N + block_N])


@tilelang.jit(out_idx=[])
def copy_gm_ub_kernel(M=1536, N=12288, block_M=64, block_N=1024, blocks=24, slots=1, dtype="float16"):
    _check_shape("copy_gm_ub", M, N, block_M, block_N, slots)

    @T.prim_func
    def copy_gm_ub(X: T.Tensor((M, N), dtype)):
        with T.Kernel(blocks, is_npu=True) as (cid, vid):
            with T.Scope("V"):
                x = T.alloc_ub((slots * block_M, block_N), dtype)
                w = cid * 2 + vid
                copy_tiles(X, x, M, N, block_M, block_N, slots, 2 * blocks, w, 0)

    return copy_gm_ub


@tilelang.jit(out_idx=[])
def copy_gm_l1_kernel(M=1536, N=12288, block_M=64, block_N=256, blocks=24, slots=1, dtype="float16"):
    _check_shape("copy_gm_l1", M, N, block_M, block_N, slots)

    @T.prim_func
    def copy_gm_l1(X: T.Tensor((M, N), dtype)):
        with T.Kernel(blocks, is_npu=True) as (cid, _):
            with T.Scope("C"):
                x = T.alloc_L1((block_M, slots * block_N), dtype)
                copy_tiles(X, x, M, N, block_M, block_N, slots, blocks, cid, 1)

    return copy_gm_l1


def main():
    import torch

    x = torch.randn(256, 2048).half()
    for kernel in (copy_gm_ub_kernel(256, 2048, 64, 256, blocks=2, slots=2),
                   copy_gm_l1_kernel(256, 2048, 64, 256, blocks=2, slots=2)):
        prof = kernel.profile(x)
        gbps = x.numel() * x.element_size() / (prof["total_us"] * 1e3)
        print(f"{kernel.func.name}: {prof['total_us']:.2f} us, {gbps:.1f} GB/s")


if __name__ == "__main__":
    main()
