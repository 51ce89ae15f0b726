# An elementwise-add kernel script written the way TileLang-Ascend's vector examples are
# (expert mode, one row tile per AIV, `torch.set_default_device("npu")`): only the import lines
# differ, so it runs on tl-ascend's virtual NPU.
import tl_ascend as tilelang
import tl_ascend.language as T
import tl_ascend.torch_npu  # noqa: F401  (was: import torch_npu)
import torch

torch.set_default_device("npu")
tilelang.disable_cache()

M, N = 1024, 1024


@tilelang.jit(out_idx=[-1])
def vec_add(M, N, block_M, block_N, dtype="float16"):
    m_num = M // block_M
    n_num = N // block_N
    VEC_NUM = 2

    @T.prim_func
    def main(
        A: T.Tensor((M, N), dtype),
        B: T.Tensor((M, N), dtype),
        C: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(m_num * n_num, is_npu=True) as (cid, vid):
            bx = cid // n_num
            by = cid % n_num

            a_ub = T.alloc_ub((block_M // VEC_NUM, block_N), dtype)
            b_ub = T.alloc_ub((block_M // VEC_NUM, block_N), dtype)
            c_ub = T.alloc_ub((block_M // VEC_NUM, block_N), dtype)
            with T.Scope("V"):
                T.copy(A[bx * block_M + vid * block_M // VEC_NUM, by * block_N], a_ub)
                T.copy(B[bx * block_M + vid * block_M // VEC_NUM, by * block_N], b_ub)

                T.barrier_all()
                T.tile.add(c_ub, a_ub, b_ub)
                T.barrier_all()

                T.copy(c_ub, C[bx * block_M + vid * block_M // VEC_NUM, by * block_N])

    return main


func = vec_add(M, N, 128, 256)
torch.manual_seed(0)
a = torch.randn(M, N, dtype=torch.float16)
b = torch.randn(M, N, dtype=torch.float16)
torch.npu.synchronize()
c = func(a, b)
torch.testing.assert_close(c, a + b, rtol=1e-3, atol=1e-3)
print("Kernel Output Match!")
