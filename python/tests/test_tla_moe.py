"""TileLang-Ascend MoE-style kernels (issue 29: the moe_token_permute scripts), in its own syntax.

* Gathered rows: a row copied from GM at an index read from UB (`src = idx_ub[0, k]`,
  `T.copy(x[src, h], rows[0, :])`) is not clipped at the tensor by the compiler, since clipping it
  could only drop the whole row: a valid index never needs that and an invalid one must not be
  hidden. Before, developer mode treated the row as possibly past the tensor's end and refused the
  store of the weighted sum ("stores 'acc', which holds stale data past its valid part"), which
  stopped moe_token_unpermute.py; now it matches torch, and an index outside the tensor is a
  run-time error naming the copy, the tensor and the dimension.
* DataCopyPad rows: a GM copy of a whole one-row UB tile of any byte length (16-byte id rows, a
  one-element int32); multi-row tiles, rows ending inside their tile and event ids past 7 stay
  errors.
* Row halves `vid * bM // 2 : (vid + 1) * bM // 2` clip at a tail (exact floor division).
* The undefined tail of a clipped copy followed through copies between tiles into a reduction.
Each section's comment says what the code gave before. The references (torch, fp32) live only
here.
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


# ---- DataCopyPad rows: a one-row UB tile of any byte length ------------------------------------
#
# TileLang-Ascend moves every GM <-> UB copy with DataCopyPad (blockLen in bytes, the UB row
# padded to 32 B). A tile of one row copied whole therefore moves rows of any length: 4 int32
# ids (16 bytes), one int32 (4 bytes). Before, the verifier refused them: "the innermost
# contiguous run is 4 x int32 = 16 bytes; UB rows must be a multiple of 32 bytes"
# (moe_token_permute.py:100, setvalue_example.py:46, moe_token_unpermute_grad.py:277).

SYNCED = {KEY.TL_ASCEND_AUTO_SYNC: True}


def scaled_rows(R: int, W: int) -> Any:
    """y[r, :] = 2 x[r, :] + 1 per row r, one row of W floats per AIV; idx[r] = r * W + W - 1 (a
    single int32 stored by a one-element tile)."""

    @T.prim_func
    def main(x: T.Tensor((R, W), "float32"), y: T.Tensor((R, W), "float32"),
             last: T.Tensor((R,), "int32")):
        with T.Kernel(T.ceildiv(R, 2), is_npu=True) as (cid, vid):
            row = T.alloc_ub((1, W), "float32")
            one = T.alloc_ub((1,), "int32")
            with T.Scope("V"):
                r = cid * 2 + vid
                if r < R:
                    T.copy(x[r, 0], row)
                    T.tile.mul(row, row, 2.0)
                    T.tile.add(row, row, 1.0)
                    T.copy(row, y[r, 0])
                    one[0] = r * W + W - 1
                    T.copy(one, last[r])

    return tilelang.compile(main, out_idx=[1, 2], pass_configs=SYNCED)


@pytest.mark.parametrize("W", [1, 7, 33, 1000, 4097])
def test_one_row_tiles_of_any_length_move_as_datacopypad(W: int) -> None:
    R = 3
    x = torch.randn(R, W)
    y, last = scaled_rows(R, W)(x)
    torch.testing.assert_close(y, 2 * x + 1)
    torch.testing.assert_close(last, torch.arange(R, dtype=torch.int32) * W + W - 1)


def test_short_rows_of_a_multi_row_tile_stay_rejected() -> None:
    # DataCopyPad would place each 28-byte row on a 32-byte boundary, not where the tile's
    # row-major layout has it: the verifier keeps its rule.
    @T.prim_func
    def main(x: T.Tensor((2, 7), "float32"), y: T.Tensor((2, 7), "float32")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            t = T.alloc_ub((2, 7), "float32")
            with T.Scope("V"):
                T.copy(x, t)
                T.copy(t, y)

    with pytest.raises(tilelang.Error, match=r"rows of 't' are 28 bytes apart; multi-row UB regions need rows on "
                                             r"32-byte boundaries"):
        tilelang.compile(main, out_idx=[1], pass_configs=SYNCED)


def test_a_short_row_ending_inside_its_tile_overwrites_its_pad_lanes() -> None:
    # The pad lanes up to 32 bytes overwrite the tile's own elements [4, 8), on the chip with
    # undefined values (TileLang-Ascend's DataCopyPad, isPad=false): storing them is reported by
    # the stale-data checker (test_tla_corp.py has the kernels that keep to the row).
    @T.prim_func
    def main(x: T.Tensor((1, 4), "int32"), y: T.Tensor((1, 16), "int32")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            t = T.alloc_ub((1, 16), "int32")
            with T.Scope("V"):
                T.copy(y, t)
                T.copy(x, t[0, 0:4])
                T.copy(t, y)

    kernel = tilelang.compile(main, out_idx=[], pass_configs=SYNCED, check_stale=True)
    with pytest.raises(tilelang.Error, match=r"(?s)stores 4 invalid of 16 elements into 'y', the first y\[0, 4\]; "
                                             r"the pad lanes of the copy at"):
        kernel(torch.arange(4, dtype=torch.int32).reshape(1, 4), torch.zeros(1, 16, dtype=torch.int32))


def test_event_id_past_seven_stays_rejected() -> None:
    # AscendC's SetFlag/WaitFlag take event ids 0-7 on A2 (moe_token_permute.py uses 10): a
    # clear error naming the line, as on the chip's toolchain.
    @T.prim_func
    def main(x: T.Tensor((1, 8), "float32"), y: T.Tensor((1, 8), "float32")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            t = T.alloc_ub((1, 8), "float32")
            with T.Scope("V"):
                T.copy(x, t)
                T.set_flag("mte2", "mte3", 10)
                T.wait_flag("mte2", "mte3", 10)
                T.copy(t, y)

    with pytest.raises(tilelang.Error, match=r"expected an event id in \[0, 8\) on A2, got 10"):
        tilelang.compile(main, out_idx=[1])


# ---- Row halves written `vid * block_M // VEC_NUM` -------------------------------------------
#
# TileLang-Ascend's normalization scripts slice each AIV's rows as
# `A[bx * bM + vid * bM // 2 : bx * bM + (vid + 1) * bM // 2, ...]`: the extent is 16 for bM = 32
# only once `(vid + 1) * 32 // 2 - vid * 32 // 2` is seen as linear (an exact floor division).
# Before, the clipping rule saw two different extents, left the copy as written, and the launch
# stopped: "T.copy: out-of-bounds access to 'A' (global, shape [34, 34]) by operand 'src':
# dimension 1 covers [32, 64)" (layer_norm.py:60). Now the copy clips at the tensor's end.


def scaled_halves(M: int, N: int, bM: int = 32, bN: int = 32) -> Any:
    """B = 3 A - 1, each block of bM rows split between the two AIVs, bN columns at a time."""
    VEC_NUM = 2

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, bM), is_npu=True) as (cid, vid):
            a = T.alloc_ub([bM // VEC_NUM, bN], "float32")
            with T.Scope("V"):
                for by in T.serial(T.ceildiv(N, bN)):
                    T.copy(A[cid * bM + vid * bM // VEC_NUM:cid * bM + (vid + 1) * bM // VEC_NUM,
                             by * bN:(by + 1) * bN], a)
                    T.tile.mul(a, a, 3.0)
                    T.tile.sub(a, a, 1.0)
                    T.copy(a, B[cid * bM + vid * bM // VEC_NUM:cid * bM + (vid + 1) * bM // VEC_NUM,
                                by * bN:(by + 1) * bN])

    return tilelang.compile(main, out_idx=[1], pass_configs=SYNCED)


@pytest.mark.parametrize("M,N", [(1, 1), (7, 33), (34, 34), (33, 1000), (3, 4097)])
def test_row_halves_by_floor_division_clip_at_the_tail(M: int, N: int) -> None:
    x = torch.randn(M, N)
    torch.testing.assert_close(scaled_halves(M, N)(x), 3 * x - 1)


# ---- A clipped tile copied to another tile, then reduced ---------------------------------------
#
# layer_norm.py copies its clipped input tile to a compute tile (`T.copy(a_ub, a_cal)`, its
# cast_or_copy for float) before summing it. Before, the analysis did not follow the undefined
# part through a copy between tiles, and the row sums silently took in the undefined elements
# (layer_norm.py at 34 x 34: 1111 of 1156 elements wrong). The part past the tensor now holds
# the pad copy_gm_to_ub fills (0 by default), followed through the copy (clip_pad_values.cpp).


def row_sums(M: int, N: int, pad: bool, bM: int = 16, bN: int = 32) -> Any:
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), S: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, 2 * bM), is_npu=True) as (cid, vid):
            a = T.alloc_ub([bM, bN], "float32")
            a_cal = T.alloc_ub([bM, bN], "float32")
            acc = T.alloc_ub([bM, bN], "float32")
            s = T.alloc_ub([bM], "float32")
            with T.Scope("V"):
                T.tile.fill(acc, 0.0)
                for by in T.serial(T.ceildiv(N, bN)):
                    r0 = cid * 2 * bM + vid * bM
                    if pad:
                        T.copy(A[r0:r0 + bM, by * bN:(by + 1) * bN], a, pad_value=0.0)
                    else:
                        T.copy(A[r0:r0 + bM, by * bN:(by + 1) * bN], a)
                    T.copy(a, a_cal)
                    T.tile.add(acc, acc, a_cal)
                T.reduce_sum(acc, s, dim=-1)
                T.copy(s, S[cid * 2 * bM + vid * bM:cid * 2 * bM + vid * bM + bM])

    return tilelang.compile(main, out_idx=[1], pass_configs=SYNCED)


@pytest.mark.parametrize("N", [1, 7, 33, 1000])
def test_a_tail_read_without_pad_value_copied_between_tiles_then_summed_is_exact(N: int) -> None:
    """Without pad_value the partial tile holds 0 past the tensor, as TileLang-Ascend's
    copy_gm_to_ub Duplicates its default pad over it (test_tla_pad.py); the copy between tiles
    and the accumulation keep it 0, the sum's identity. (Until the pad was modelled this was
    the error "T.reduce_sum: its operand 'acc' holds undefined ...".)"""
    x = torch.randn(32, N)
    torch.testing.assert_close(row_sums(32, N, pad=False)(x), x.sum(1), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("N", [1, 7, 33, 1000])
def test_tail_padded_with_the_sums_identity_matches_torch(N: int) -> None:
    x = torch.randn(32, N)
    torch.testing.assert_close(row_sums(32, N, pad=True)(x), x.sum(1), rtol=1e-4, atol=1e-4)
