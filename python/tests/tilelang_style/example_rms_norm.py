# An RMSNorm kernel script written the way TileLang-Ascend's examples are (expert mode, the
# vector cores only, explicit UB buffers and flags, lower-case pipe names, element counts on the
# vector ops): only the import lines differ, so it runs on tl-ascend's virtual NPU.
#   y = x / sqrt(mean(x^2) + eps) * gamma, fp16 in and out, fp32 math.
import argparse

import torch

import tl_ascend as tilelang
import tl_ascend.torch_npu  # noqa: F401  (was: import torch_npu)
from tl_ascend import language as T

parser = argparse.ArgumentParser()
parser.add_argument("--s", type=int, default=256)
parser.add_argument("--d", type=int, default=1024)
args = parser.parse_args()

CAST_NONE = "CAST_NONE"
CAST_RINT = "CAST_RINT"


@tilelang.jit(out_idx=[2])
def rms_norm(S, D, block_M, eps=1e-6, dtype="float16"):
    VEC_NUM = 2
    ROWS = block_M // VEC_NUM
    m_num = T.ceildiv(S, block_M)
    acc_dtype = "float32"

    @T.prim_func
    def tilelang_rms_norm(
        A: T.Tensor((S, D), dtype),  # type: ignore
        G: T.Tensor((D,), dtype),  # type: ignore
        B: T.Tensor((S, D), dtype),  # type: ignore
    ):
        with T.Kernel(m_num, is_npu=True) as (cid, vid):
            row_start = cid * block_M + vid * ROWS

            a_ub = T.alloc_ub([ROWS, D], dtype)
            a_cal = T.alloc_ub([ROWS, D], acc_dtype)
            sq = T.alloc_ub([ROWS, D], acc_dtype)
            sum_sq_row = T.alloc_ub([ROWS, 1], acc_dtype)
            inv_rms_tile = T.alloc_ub([ROWS, D], acc_dtype)
            gamma_ub = T.alloc_ub([D], dtype)
            gamma_cal = T.alloc_ub([D], acc_dtype)
            gamma_tile = T.alloc_ub([ROWS, D], acc_dtype)

            with T.Scope("V"):
                T.copy(A[row_start : row_start + ROWS, 0:D], a_ub)
                T.copy(G[0:D], gamma_ub)
                T.set_flag("mte2", "v", 0)
                T.wait_flag("mte2", "v", 0)

                T.tile.cast(a_cal, a_ub, CAST_NONE, ROWS * D)
                T.tile.cast(gamma_cal, gamma_ub, CAST_NONE, D)
                T.pipe_barrier("v")
                T.tile.mul(sq, a_cal, a_cal)
                T.pipe_barrier("v")
                T.reduce_sum(sq, sum_sq_row, dim=-1)
                T.pipe_barrier("v")
                T.tile.mul(sum_sq_row, sum_sq_row, T.cast(1.0 / D, acc_dtype))
                T.pipe_barrier("v")
                T.tile.add(sum_sq_row, sum_sq_row, T.cast(eps, acc_dtype))
                T.pipe_barrier("v")
                T.tile.rsqrt(sum_sq_row, sum_sq_row)
                T.pipe_barrier("v")
                T.tile.broadcast(inv_rms_tile, sum_sq_row)
                T.tile.broadcast(gamma_tile, gamma_cal)
                T.pipe_barrier("v")
                T.tile.mul(a_cal, a_cal, inv_rms_tile)
                T.pipe_barrier("v")
                T.tile.mul(a_cal, a_cal, gamma_tile)
                T.pipe_barrier("v")
                T.tile.cast(a_ub, a_cal, CAST_RINT, ROWS * D)

                T.set_flag("v", "mte3", 0)
                T.wait_flag("v", "mte3", 0)
                T.copy(a_ub, B[row_start : row_start + ROWS, 0:D])

    return tilelang_rms_norm


def golden_rms_norm(x, gamma, epsilon=1e-6):
    x = x.float()
    return (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + epsilon) * gamma.float()).half()


S, D = args.s, args.d
torch.manual_seed(0)
x = torch.randn(S, D, dtype=torch.float16).npu()
gamma = torch.randn(D, dtype=torch.float16).npu()
func = rms_norm(S, D, 16)
y = func(x, gamma)
torch.npu.synchronize()
torch.testing.assert_close(y.cpu(), golden_rms_norm(x, gamma).cpu(), rtol=1e-2, atol=1e-2)
print("Kernel Output Match!")
