"""A GM read ordered after one of two cores' stores of the same bytes, unordered with the other.

dequantize_gemm/example_dequant_gemm_w4a8.py has every block of a column of C dequantize the same
rows of B into one GM workspace (blocks 0 and 8 at M = 128), then each block's cube reads those
rows after its own block's store, and not after the other block's. The two stores are the hazard
checker's duplicate-store remark (docs/virtual_npu.md, "Duplicate stores"); the read was a RAW
hazard, though GM holds the same bytes from its own block's store on, whenever the other store
lands. Now the read is quiet when every store it is ordered after that meets the other store's
bytes stores those bytes to that range; a read ordered after a store of other bytes, or after
none, stays a hazard. Before: "hazard check of kernel main: 1 unordered access pair(s)", "RAW
hazard on GM: copy (MTE2, block 0 AIC) reads workspace ...". In TileLang-Ascend syntax (the two
AIVs of one block stand for the two blocks), with hand-written flags, under the hazard checker,
on tails of rows; references are torch's and live here.
"""

from __future__ import annotations

import pytest
import torch

import tl_ascend as tilelang
import tl_ascend.language as T

N = 64


def read_back(R: int, same: bool):
    """Each AIV stores a [R, 64] tile to W, waits for its own store, reads W back into Y's half
    of rows. same: both AIVs store X's first R rows (the same bytes); else each its own rows."""
    off = 0 if same else R

    @T.prim_func
    def main(X: T.Tensor((2 * R, N), "float32"), W: T.Tensor((R, N), "float32"),
             Y: T.Tensor((2 * R, N), "float32")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            x = T.alloc_ub((R, N), "float32")
            y = T.alloc_ub((R, N), "float32")
            with T.Scope("V"):
                T.copy(X[vid * off, 0], x)
                T.set_flag("mte2", "mte3", 0)
                T.wait_flag("mte2", "mte3", 0)
                T.copy(x, W[0, 0])
                T.set_flag("mte3", "mte2", 0)
                T.wait_flag("mte3", "mte2", 0)
                T.copy(W[0, 0], y)
                T.set_flag("mte2", "mte3", 0)
                T.wait_flag("mte2", "mte3", 0)
                T.copy(y, Y[vid * R, 0])

    return tilelang.compile(main, out_idx=[2], check_hazards=True)


@pytest.mark.parametrize("R", (1, 7, 33, 300))  # 1000 rows of the two tiles exceed UB
def test_a_read_after_one_of_two_identical_stores_is_quiet(R: int, capfd: pytest.CaptureFixture[str]) -> None:
    torch.manual_seed(R)
    x = torch.randn(2 * R, N)
    w = torch.zeros(R, N)
    y = read_back(R, same=True)(x, w)
    torch.testing.assert_close(y, torch.cat([x[:R], x[:R]]), rtol=0, atol=0)
    assert "remark: hazard checker: duplicate store on GM" in capfd.readouterr().err


@pytest.mark.parametrize("R", (1, 33))
def test_a_read_after_a_store_of_other_bytes_stays_a_hazard(R: int) -> None:
    # Each AIV stores its own rows: the read may see the other AIV's bytes.
    x = torch.randn(2 * R, N)
    with pytest.raises(tilelang.Error, match=r"RAW hazard on GM: copy \(MTE2, block 0 AIV\d\) reads W"):
        read_back(R, same=False)(x, torch.zeros(R, N))
