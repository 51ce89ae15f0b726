"""Small kernels the Python suite's tests share (each test file states what it checks)."""

import tl_ascend.language as T


def ub_copy(M=16, N=64, dtype="float32", sync=True, wait_without_set=False):
    """AIV 0 copies X to Y through UB; `sync=False` leaves the MTE2 -> MTE3 flag out (a RAW
    hazard on UB), `wait_without_set` waits for a flag nobody sets (a deadlock)."""

    @T.prim_func
    def ub_copy(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            with T.Scope("V"):
                x = T.alloc_ub((M, N), dtype)
                if vid == 0:
                    T.copy(X, x)
                    if sync:
                        T.set_flag("MTE2", "MTE3", 0)
                        T.wait_flag("MTE2", "MTE3", 0)
                    if wait_without_set:
                        T.wait_flag("V", "MTE3", 1)
                    T.copy(x, Y)

    return ub_copy


def scale_add(M, N, block_M, dtype="float32"):
    """Y = X * alpha + 1, rows dealt to the AIVs of ceildiv(M, block_M) / 2 blocks; a scalar
    parameter, a let, a symbolic if/else, a Python-unrolled loop and a macro."""

    @T.macro
    def load(dst, src):
        T.copy(src, dst)
        T.set_flag("MTE2", "V", 0)
        T.wait_flag("MTE2", "V", 0)

    @T.prim_func
    def scale_add(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype), alpha: T.float32):
        with T.Kernel(T.ceildiv(M, 2 * block_M), is_npu=True) as (cid, vid):
            with T.Scope("V"):
                x = T.alloc_ub((block_M, N), dtype)
                tile = cid * 2 + vid
                if tile * block_M < M:
                    load(x, X[tile * block_M, 0])
                    for step in (0, 1):  # unrolled while parsing
                        if step == 0:
                            T.tile.mul(x, x, alpha)
                        else:
                            T.pipe_barrier("V")
                            T.tile.add(x, x, 1.0)
                    T.set_flag("V", "MTE3", 0)
                    T.wait_flag("V", "MTE3", 0)
                    T.copy(x, Y[tile * block_M, 0])
                else:
                    T.printf("idle AIV %d\n", tile)

    return scale_add
