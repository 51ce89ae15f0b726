"""TileLang-Ascend MoE-style kernels (issue 29: the moe_token_permute scripts), in its own syntax.

* Gathered rows: a row copied from GM at an index read from UB (`src = idx_ub[0, k]`,
  `T.copy(x[src, h], rows[0, :])`) is not clipped at the tensor by the compiler, since clipping it
  could only drop the whole row: a valid index never needs that and an invalid one must not be
  hidden. Before, developer mode treated the row as possibly past the tensor's end and refused the
  store of the weighted sum ("stores 'acc', which holds stale data past its valid part"), which
  stopped moe_token_unpermute.py; now it matches torch, and an index outside the tensor is a
  run-time error naming the copy, the tensor and the dimension.
The references (torch, fp32) live only here.
"""

from typing import Any

import pytest
import torch

import tl_ascend as tilelang
import tl_ascend.language as T

KEY = tilelang.PassConfigKey
AUTO = {KEY.TL_ASCEND_AUTO_SYNC: True, KEY.TL_ASCEND_AUTO_CV_COMBINE: True,
        KEY.TL_ASCEND_MEMORY_PLANNING: True}


def weighted_gather(N: int, H: int, E: int, K: int, TH: int = 64, cores: int = 4) -> Any:
    """out[i, :] = sum_k w[i, k] * x[idx[i, k], :], token i on core i % cores, H in TH chunks."""
    rounds = T.ceildiv(N, cores)

    @T.prim_func
    def main(x: T.Tensor((E, H), "float32"), idx: T.Tensor((1, N * K), "int32"),
             w: T.Tensor((1, N * K), "float32"), out: T.Tensor((N, H), "float32")):
        with T.Kernel(cores, is_npu=True) as (cid, vid):
            idx_ub = T.alloc_shared([1, K], "int32")
            w_ub = T.alloc_shared([1, K], "float32")
            rows = T.alloc_shared([2, TH], "float32")
            acc = T.alloc_shared([1, TH], "float32")
            for r in T.serial(rounds):
                i = r * cores + cid
                if i < N:
                    T.copy(idx[0, i * K], idx_ub)
                    T.copy(w[0, i * K], w_ub)
                    for ht in T.serial(T.ceildiv(H, TH)):
                        s0 = idx_ub[0, 0]
                        T.copy(x[s0, ht * TH], rows[0, :])
                        T.copy(rows[0, :], acc)
                        T.tile.mul(acc, acc, w_ub[0, 0])
                        for k in T.serial(K - 1):
                            src = idx_ub[0, k + 1]
                            T.copy(x[src, ht * TH], rows[1, :])
                            T.tile.axpy(acc, rows[1, :], w_ub[0, k + 1])
                        T.copy(acc, out[i, ht * TH])

    return tilelang.compile(main, out_idx=[3], pass_configs=AUTO)


def gather_ref(x: torch.Tensor, idx: torch.Tensor, w: torch.Tensor, N: int, K: int) -> torch.Tensor:
    return (x[idx.view(N, K).long()] * w.view(N, K, 1)).sum(1)


@pytest.mark.parametrize("N,H", [(1, 64), (7, 192), (33, 64), (1000, 8)])
def test_gathered_rows_match_torch(N: int, H: int) -> None:
    # Before: rejected at compile time, "`T.copy(acc, out[...])` ... stores 'acc', which holds
    # stale data past its valid part (... the clipped copy at ... filled)".
    E, K = 13, 8
    torch.manual_seed(N)
    kernel = weighted_gather(N, H, E, K, TH=64 if H >= 64 else H)
    x = torch.randn(E, H)
    idx = torch.randint(0, E, (1, N * K), dtype=torch.int32)
    w = torch.randn(1, N * K)
    torch.testing.assert_close(kernel(x, idx, w), gather_ref(x, idx, w, N, K))


def test_gathered_row_outside_the_tensor_is_a_runtime_error() -> None:
    N, H, E, K = 3, 64, 5, 8
    kernel = weighted_gather(N, H, E, K)
    x = torch.randn(E, H)
    idx = torch.randint(0, E, (1, N * K), dtype=torch.int32)
    idx[0, 5] = E
    with pytest.raises(tilelang.Error, match=r"out-of-bounds access to 'x'.*dimension 0 covers \[5, 6\)"):
        kernel(x, idx, torch.randn(1, N * K))
