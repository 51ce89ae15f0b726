"""Issue 29, TileLang-Ascend's sparse / fa_opt scripts: pinned-address live ranges in nested loops,
T.Pipelined(cross_interval=), hand-written event ids 6 and 7, T.tile.bitwise_and / bitwise_or on
uint8 tiles, and torch_npu.npu_sparse_flash_attention. Our own kernels in TileLang-Ascend syntax;
the references (torch) live only here.

Before: two pinned buffers sharing bytes, each written whole and used within one iteration of an
inner loop, were "both live at the same time" (a buffer used in a loop nested in another counted
as live over the whole outer loop); cross_interval= was a TypeError; set_flag(..., 6) was "event id
6 is reserved by the runtime on A2"; bitwise_and of uint8 tiles "takes {int16, uint16}, got uint8";
npu_sparse_flash_attention "has no CPU version".
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

import tl_ascend as tilelang
import tl_ascend.language as T
from tl_ascend.torch_npu import npu_sparse_flash_attention

TAILS = (1, 7, 33, 1000, 4097)
BLOCK = 64  # float32 elements per UB tile (256 B)
ROWS = 4  # rows of X per kernel block


def nested_reuse(reuse_inside: bool) -> Any:
    """Y = (X + 1) * 2 per row through three pinned UB tiles, c on a's bytes, in a loop over the
    block's rows with an inner loop over column chunks. With reuse_inside=False, a is read again
    after c is written (Y = (X + 1) * 2 + X): a real overlap, which stays an error."""
    R = T.symbolic("R")

    @T.prim_func
    def main(X: T.Tensor((R, 2 * BLOCK), "float32"), Y: T.Tensor((R, 2 * BLOCK), "float32")):
        with T.Kernel(T.ceildiv(R, ROWS), is_npu=True) as (cid, vid):
            with T.Scope("V"):
                a = T.alloc_ub((BLOCK,), "float32")
                b = T.alloc_ub((BLOCK,), "float32")
                c = T.alloc_ub((BLOCK,), "float32")
                T.annotate_address({a: 0, b: 256, c: 0})
                if vid == 0:
                    for r in T.serial(ROWS):
                        row = cid * ROWS + r
                        if row < R:
                            for j in T.serial(2):
                                T.copy(X[row, j * BLOCK], a)
                                T.barrier_all()
                                T.tile.add(b, a, 1.0)
                                T.barrier_all()
                                T.tile.mul(c, b, 2.0)
                                T.barrier_all()
                                if not reuse_inside:
                                    T.tile.add(c, c, a)
                                    T.barrier_all()
                                T.copy(c, Y[row, j * BLOCK])
                                T.barrier_all()

    return main


@pytest.mark.parametrize("rows", TAILS)
def test_pinned_bytes_reused_within_an_inner_loop_iteration(rows: int) -> None:
    # Before: "the explicit addresses ... of two UB buffers overlap: 'a' ... and 'c' ...; both are
    # live at the same time" (a and c each counted live over the whole row loop), as in
    # sparse_flash_attn_dynamic_shape.py:82 (kv_tail_l1 / acc_s_l1).
    kernel = tilelang.compile(nested_reuse(True), out_idx=[-1])
    x = torch.randn(rows, 2 * BLOCK)
    torch.testing.assert_close(kernel(x), (x + 1) * 2)


def test_a_pinned_overlap_inside_the_iteration_stays_an_error() -> None:
    # c = b * 2 overwrites a before the add reads it: x = 1 would give 8.0 where 5.0 is right.
    with pytest.raises(tilelang.Error) as e:
        tilelang.compile(nested_reuse(False), out_idx=[-1])
    msg = str(e.value)
    assert "of two UB buffers overlap" in msg and "'a'" in msg and "'c'" in msg
    assert "both are live at the same time" in msg and "test_tla_pinned.py:" in msg


def branch_and_sweep(valid_branch_writes: bool) -> Any:
    """Per row: s = X row (a copy) if the row's flag is set, else 0 (a fill); then t[i, :] = s * i
    row by row (a sweep), Y = t. s and t share pinned bytes with u, a scratch of the previous phase.
    With valid_branch_writes=False the else branch leaves s unwritten (it keeps the last row's
    value), so s is live across rows and overlapping u is an error."""
    R = T.symbolic("R")

    @T.prim_func
    def main(X: T.Tensor((R, BLOCK), "float32"), F: T.Tensor((R,), "int32"),
             Y: T.Tensor((R, 2, BLOCK), "float32")):
        with T.Kernel(T.ceildiv(R, ROWS), is_npu=True) as (cid, vid):
            with T.Scope("V"):
                u = T.alloc_ub((2, BLOCK), "float32")
                s = T.alloc_ub((BLOCK,), "float32")
                t = T.alloc_ub((2, BLOCK), "float32")
                T.annotate_address({u: 0, s: 0, t: 1024})
                if vid == 0:
                    for r in T.serial(ROWS):
                        row = cid * ROWS + r
                        if row < R:
                            T.tile.fill(u, 3.0)
                            T.barrier_all()
                            T.copy(u, Y[row, 0, 0])
                            T.barrier_all()
                            if F[row] != 0:
                                T.copy(X[row, 0], s)
                            else:
                                if valid_branch_writes:
                                    T.tile.fill(s, 0.0)
                            T.barrier_all()
                            for i in T.serial(2):
                                T.tile.mul(t[i, :], s, 1.0 + i)
                                T.barrier_all()
                            T.copy(t, Y[row, 0, 0])
                            T.barrier_all()

    return main


@pytest.mark.parametrize("rows", (1, 7, 33))
def test_pinned_reuse_after_an_if_else_write_and_a_row_sweep(rows: int) -> None:
    # Before: "... overlap: 'u' ... and 's' ...; both are live at the same time" (s written in
    # either branch of an if inside two ifs, as kv_ub in sparse_flash_attn_mask_pa.py:108).
    kernel = tilelang.compile(branch_and_sweep(True), out_idx=[-1])
    x = torch.randn(rows, BLOCK)
    f = torch.randint(0, 2, (rows,), dtype=torch.int32)
    s = x * (f != 0).unsqueeze(1)
    ref = torch.stack([s, 2 * s], dim=1)
    torch.testing.assert_close(kernel(x, f), ref)


def test_a_branch_that_skips_the_write_keeps_the_overlap_an_error() -> None:
    with pytest.raises(tilelang.Error, match=r"'u'.*'s'.*both are live at the same time"):
        tilelang.compile(branch_and_sweep(False), out_idx=[-1])


# ---- T.Pipelined(cross_interval=) --------------------------------------------------------------


def pipelined_copy(cross_interval: Any) -> Any:
    N = T.symbolic("N")

    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            buf = T.alloc_ub((BLOCK,), "float32")
            with T.Scope("V"):
                if vid == 0:
                    for k in T.Pipelined(T.ceildiv(N, BLOCK), num_stages=2, cross_interval=cross_interval):
                        T.copy(X[k * BLOCK], buf)
                        T.tile.add(buf, buf, 1.0)
                        T.copy(buf, Y[k * BLOCK])

    return main


@pytest.mark.parametrize("n", TAILS)
@pytest.mark.parametrize("interval", (1, 2, 3))
def test_cross_interval_is_scheduling_only(n: int, interval: int) -> None:
    # Before: TypeError "Pipelined() got an unexpected keyword argument 'cross_interval'".
    kernel = tilelang.compile(pipelined_copy(interval), out_idx=[-1])
    x = torch.randn(n)
    torch.testing.assert_close(kernel(x), x + 1)


@pytest.mark.parametrize("bad,what", [(0, r"'cross_interval' must be >= 1"), ("2", r"'cross_interval' must be a Python int")])
def test_bad_cross_interval_is_an_error(bad: Any, what: str) -> None:
    with pytest.raises(tilelang.Error, match=what):
        tilelang.compile(pipelined_copy(bad), out_idx=[-1])


# ---- event ids 6 and 7 -------------------------------------------------------------------------


def flags_6_7() -> Any:
    N = T.symbolic("N")

    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, BLOCK), is_npu=True) as (cid, vid):
            with T.Scope("V"):
                a = T.alloc_ub((BLOCK,), "float32")
                if vid == 0:
                    T.copy(X[cid * BLOCK], a)
                    T.set_flag("MTE2", "V", 6)
                    T.wait_flag("MTE2", "V", 6)
                    T.tile.mul(a, a, 3.0)
                    T.set_flag("V", "MTE3", 7)
                    T.wait_flag("V", "MTE3", 7)
                    T.copy(a, Y[cid * BLOCK])

    return main


@pytest.mark.parametrize("n", TAILS)
def test_event_ids_6_and_7_are_the_authors(n: int) -> None:
    # Before: "event id 6 is reserved by the runtime on A2 (reserved: {6, 7})"; AscendC's
    # SetFlag/WaitFlag page gives A2 ids 0-7 (flash_attn_bhsd_expert_h16_d128.py:145).
    kernel = tilelang.compile(flags_6_7(), out_idx=[-1])
    x = torch.randn(n)
    torch.testing.assert_close(kernel(x), x * 3)


# ---- bitwise_and / bitwise_or of uint8 tiles ---------------------------------------------------


def byte_bitwise(op: str, n: int, dtype: str = "uint8") -> Any:
    @T.prim_func
    def main(A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype), C: T.Tensor((n,), dtype)):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            with T.Scope("V"):
                a = T.alloc_ub((n,), dtype)
                b = T.alloc_ub((n,), dtype)
                if vid == 0:
                    T.copy(A[0], a)
                    T.copy(B[0], b)
                    T.barrier_all()
                    if op == "and":
                        T.tile.bitwise_and(a, a, b)
                    else:
                        T.tile.bitwise_or(a, a, b)
                    T.barrier_all()
                    T.copy(a, C[0])

    return main


@pytest.mark.parametrize("n", (1, 7, 8, 16))
@pytest.mark.parametrize("op", ("and", "or"))
@pytest.mark.parametrize("dtype", ("uint8", "int8"))
def test_byte_bitwise_matches_torch(n: int, op: str, dtype: str) -> None:
    # Before: "T.tile.bitwise_and on A2 takes {int16, uint16}, got uint8"
    # (sparse_flash_attn_mask_pa.py:224 ANDs two 8-byte uint8 masks).
    kernel = tilelang.compile(byte_bitwise(op, n, dtype), out_idx=[-1])
    tdt = torch.uint8 if dtype == "uint8" else torch.int8
    lo, hi = (0, 256) if dtype == "uint8" else (-128, 128)
    a = torch.randint(lo, hi, (n,), dtype=tdt)
    b = torch.randint(lo, hi, (n,), dtype=tdt)
    torch.testing.assert_close(kernel(a, b), a & b if op == "and" else a | b)


@pytest.mark.parametrize("n", (17, 33, 1000, 4097))
def test_byte_bitwise_of_whole_tiles_of_any_length_matches_torch(n: int) -> None:
    # The bytes run as int16 lanes (ceil(n / 2)); an odd n's extra byte is the tile's padding.
    # Before (AscendC::And<uint8_t> with the count unchanged, 2n bytes): an error past n = 16.
    kernel = tilelang.compile(byte_bitwise("and", n), out_idx=[-1])
    a = torch.randint(0, 256, (n,), dtype=torch.uint8)
    b = torch.randint(0, 256, (n,), dtype=torch.uint8)
    torch.testing.assert_close(kernel(a, b), a & b)


def test_byte_bitwise_of_a_part_of_a_tile_is_an_error() -> None:
    @T.prim_func
    def main(A: T.Tensor((64,), "uint8"), C: T.Tensor((64,), "uint8")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            with T.Scope("V"):
                a = T.alloc_ub((64,), "uint8")
                if vid == 0:
                    T.copy(A[0], a)
                    T.barrier_all()
                    T.tile.bitwise_and(a[0:7], a[0:7], a[32:39])
                    T.barrier_all()
                    T.copy(a, C[0])

    with pytest.raises(tilelang.Error, match=r"odd number of bytes \(7\) in a region that does not end at the end "
                                             r"of 'a'"):
        tilelang.compile(main, out_idx=[-1])


# ---- torch_npu.npu_sparse_flash_attention ------------------------------------------------------


def dense_reference(q: torch.Tensor, qr: torch.Tensor, k: torch.Tensor, kr: torch.Tensor, v: torch.Tensor,
                    chosen: list[list[set[int]]], scale: float) -> torch.Tensor:
    """[T, N1, Dv] from full scores over every key token, masked to the chosen ones."""
    t_rows, heads = q.shape[0], q.shape[1]
    s = torch.einsum("tnd,sd->tns", q.float(), k.float()) + torch.einsum("tnd,sd->tns", qr.float(), kr.float())
    mask = torch.zeros(t_rows, k.shape[0], dtype=torch.bool)
    for r in range(t_rows):
        for tok in chosen[r][0]:
            mask[r, tok] = True
    s = (s * scale).masked_fill(~mask.unsqueeze(1), float("-inf"))
    p = torch.softmax(s, dim=-1).nan_to_num(0.0)
    out = torch.einsum("tns,sd->tnd", p, v.float())
    return out.to(q.dtype).reshape(t_rows, heads, -1)


@pytest.mark.parametrize("kv_len", TAILS)
@pytest.mark.parametrize("mode", (0, 3))
def test_npu_sparse_flash_attention_matches_dense_masked_attention(kv_len: int, mode: int) -> None:
    # Before: "tl_ascend.torch_npu has no CPU version of this torch_npu operator yet".
    torch.manual_seed(kv_len + mode)
    t_rows, heads, d, dr, block, topk = 3, 4, 16, 8, 16, 6
    blocks = (kv_len + block - 1) // block
    q = torch.randn(t_rows, heads, d, dtype=torch.bfloat16)
    qr = torch.randn(t_rows, heads, dr, dtype=torch.bfloat16)
    kv_pool = torch.randn(blocks + 2, block, 1, d, dtype=torch.bfloat16)
    kr_pool = torch.randn(blocks + 2, block, 1, dr, dtype=torch.bfloat16)
    table = torch.randperm(blocks + 2)[:blocks].to(torch.int32).reshape(1, blocks)
    idx = torch.full((t_rows, 1, topk), -1, dtype=torch.int32)
    chosen: list[list[set[int]]] = []
    for r in range(t_rows):
        pick = torch.randperm(kv_len)[:min(topk - 1, kv_len)]
        idx[r, 0, :len(pick)] = pick.to(torch.int32)
        limit = kv_len - t_rows + r + 1 if mode == 3 else kv_len
        chosen.append([{int(i) for i in pick if int(i) < limit}])
    out, smax, ssum = npu_sparse_flash_attention(
        q, kv_pool, kv_pool, idx, 0.3, block_table=table,
        actual_seq_lengths_query=torch.tensor([t_rows], dtype=torch.int32),
        actual_seq_lengths_kv=torch.tensor([kv_len], dtype=torch.int32), query_rope=qr, key_rope=kr_pool,
        layout_query="TND", layout_kv="PA_BSND", sparse_mode=mode, attention_mode=2)
    seq = lambda pool: pool[table[0].long()].reshape(-1, pool.shape[-1])[:kv_len]  # noqa: E731
    ref = dense_reference(q, qr, seq(kv_pool), seq(kr_pool), seq(kv_pool), chosen, 0.3)
    torch.testing.assert_close(out.float(), ref.float(), rtol=1e-2, atol=1e-2)
    assert smax.numel() == 0 and ssum.numel() == 0


@pytest.mark.parametrize("kw,what", [
    ({"sparse_mode": 1}, r"'sparse_mode' must be 0 \(no mask\) or 3"),
    ({"return_softmax_lse": True}, r"'return_softmax_lse': True is not modelled"),
    ({"layout_kv": "BNSD"}, r"'layout_kv' must be 'BSND', 'TND' or 'PA_BSND'"),
    ({"query_rope": None}, r"'query_rope' and 'key_rope' go together"),
    ({"sparse_block_size": 0}, r"'sparse_block_size' must be an int >= 1"),
])
def test_npu_sparse_flash_attention_rejects_what_it_does_not_model(kw: dict, what: str) -> None:
    q = torch.randn(1, 2, 1, 8)
    k = torch.randn(1, 16, 1, 8)
    args: dict = {"query_rope": torch.randn(1, 2, 1, 4), "key_rope": torch.randn(1, 16, 1, 4), "attention_mode": 2}
    args.update(kw)
    with pytest.raises(tilelang.Error, match=what):
        npu_sparse_flash_attention(q.permute(0, 2, 1, 3), k, k, torch.zeros(1, 1, 1, 4, dtype=torch.int32), 1.0,
                                   **args)


def test_npu_sparse_flash_attention_rejects_a_negative_index() -> None:
    q = torch.randn(1, 1, 2, 8)
    k = torch.randn(1, 16, 1, 8)
    idx = torch.tensor([[[[3, -2]]]], dtype=torch.int32)
    with pytest.raises(tilelang.Error, match=r"'sparse_indices' holds -2"):
        npu_sparse_flash_attention(q, k, k, idx, 1.0, sparse_mode=0)
