"""TileLang-Ascend constructs of the xllm_kernels and HISA scripts (issue 29, task tlacorp), in
TileLang-Ascend's syntax (our kernels), checked against torch with tails:

- a GM -> UB copy of a partial row into the first lanes of a longer UB row
  (`T.copy(A_log[0], A_log_ub[0, :4])`, fused_gdn_gating.py): DataCopyPad (blockLen in bytes,
  the UB row padded to 32 B); the lanes from the row's end to its 32-byte boundary are
  overwritten, and on TileLang-Ascend left undefined, so the stale-data checker reports a kernel
  that stores them;
- an element count on an elementwise vector op smaller than an operand
  (`T.tile.cast(cos_sin_ub, gathered_ub, "CAST_NONE", 64)` with `gathered_ub` of 256,
  split_qkv_rmsnorm_mrope.py): the first `count` elements of each operand, as AscendC's count form;
- `T.tile.bitwise_and` / `bitwise_or` of uint8 masks of an even byte count anywhere in a tile
  (block_sparse_mqa_attn_expert_test.py's 32-byte compare masks): the bytes as int16 lanes.

Before (the main build of the day): the partial-row copies were the verifier's
`ub-row-alignment` error ("a partial-row copy the chip's DataCopyPad would take"); the cast was
"T.tile.cast: an element count of 64 ..." / "'src' gathered_ub [256] against 'dst' [64]"; the
32-byte uint8 AND was "counts int16 lanes ... works on 64 bytes".
"""

import os
import subprocess
import sys

import pytest
import torch

import tl_ascend as tilelang
import tl_ascend.language as T

# TileLang-Ascend's switches, as the xllm scripts set them: the compiler inserts the syncs.
SYNC = {"tl.ascend_auto_sync": True, "tl.ascend_memory_planning": True}

# ---- a partial GM row into the first lanes of a UB row ---------------------------------------


def gating(M: int, H: int, R: int, W: int):
    """g = -exp(A) * (a + bias) over [M, H] bf16 rows, R rows per block, UB rows of W >= H floats:
    A and bias (H floats) are read into the first H lanes of a one-row tile and copied to each
    of R rows; each row of `a` (H bf16) into the first H lanes of row r of an [R, W] tile."""

    @T.prim_func
    def main(A: T.Tensor((H,), "float32"), a: T.Tensor((M, H), "bfloat16"), bias: T.Tensor((H,), "float32"),
             G: T.Tensor((M, H), "float32")):
        with T.Kernel(T.ceildiv(M, 2 * R), is_npu=True) as (cid, vid):
            with T.Scope("V"):
                a_ub = T.alloc_ub((1, W), "float32")
                b_ub = T.alloc_ub((1, W), "float32")
                coef = T.alloc_ub((R, W), "float32")
                bias_r = T.alloc_ub((R, W), "float32")
                x_h = T.alloc_ub((R, W), "bfloat16")
                x = T.alloc_ub((R, W), "float32")
                T.copy(A[0], a_ub[0, :H])
                T.copy(bias[0], b_ub[0, :H])
                T.barrier_all()
                T.tile.exp(a_ub, a_ub)
                T.tile.mul(a_ub, a_ub, -1.0)
                for r in T.serial(R):
                    T.copy(a_ub[0, :W], coef[r, :W])
                    T.copy(b_ub[0, :W], bias_r[r, :W])
                base = (cid * 2 + vid) * R
                rows = T.if_then_else(M - base < R, M - base, R)
                for r in T.serial(rows):
                    T.copy(a[base + r, 0], x_h[r, :H])
                T.barrier_all()
                T.tile.cast(x, x_h, "CAST_NONE", R * W)
                T.tile.add(x, x, bias_r)
                T.tile.mul(x, x, coef)
                T.barrier_all()
                for r in T.serial(rows):
                    T.copy(x[r, :H], G[base + r, :])

    return main


@pytest.mark.parametrize("M,H", [(1, 4), (7, 4), (33, 12), (1000, 4), (4097, 12), (5, 1), (9, 7), (3, 33)])
def test_partial_row_into_a_longer_ub_row_matches_torch(M: int, H: int) -> None:
    W = 64 if H <= 64 else 128
    torch.manual_seed(M + H)
    A = torch.randn(H)
    a = torch.randn(M, H).to(torch.bfloat16)
    bias = torch.randn(H)
    kernel = tilelang.compile(gating(M, H, 8, W), out_idx=[-1], pass_configs=SYNC, check_hazards=True,
                              check_stale=True)
    g = kernel(A, a, bias)
    want = -torch.exp(A.double()) * (a.double() + bias.double())
    torch.testing.assert_close(g.double(), want, rtol=1e-5, atol=1e-5)


def pad_lane_store(H: int):
    """Reads H floats into the first lanes of a 64-float row and stores the whole first 8 lanes:
    the lanes past H hold what the chip's DataCopyPad leaves there."""

    @T.prim_func
    def main(A: T.Tensor((H,), "float32"), B: T.Tensor((8,), "float32")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            with T.Scope("V"):
                u = T.alloc_ub((1, 64), "float32")
                if vid == 0:
                    T.tile.fill(u, 1.0)
                    T.barrier_all()
                    T.copy(A[0], u[0, :H])
                    T.barrier_all()
                    T.copy(u[0, :8], B[0])

    return main


@pytest.mark.parametrize("H", [1, 4, 7])
def test_storing_the_pad_lanes_is_reported(H: int) -> None:
    kernel = tilelang.compile(pad_lane_store(H), out_idx=[-1], check_stale=True)
    with pytest.raises(tilelang.Error, match=r"(?s)stale-data check .*the pad lanes of the copy at"):
        kernel(torch.randn(H))


def thresholded(H: int):
    """y = x > 0.5 ? x : -x over H floats read into the first lanes of a 64-float row: the
    compare's first mask byte holds bits of the row (valid) and of its pad lanes (undefined);
    the select reads only the row's bits for the stored lanes (fused_gdn_gating.py's softplus)."""

    @T.prim_func
    def main(X: T.Tensor((H,), "float32"), Y: T.Tensor((H,), "float32")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            with T.Scope("V"):
                x = T.alloc_ub((1, 64), "float32")
                neg = T.alloc_ub((1, 64), "float32")
                y = T.alloc_ub((1, 64), "float32")
                mask = T.alloc_ub((1, 8), "uint8")
                if vid == 0:
                    T.copy(X[0], x[0, :H])
                    T.tile.mul(neg, x, -1.0)
                    T.tile.compare(mask, x, 0.5, "GT")
                    T.tile.select(y, mask, x, neg, "VSEL_TENSOR_TENSOR_MODE")
                    T.copy(y[0, :H], Y[0])

    return main


@pytest.mark.parametrize("H", [1, 4, 7, 33])
def test_select_by_a_partly_valid_mask_byte_is_not_reported(H: int) -> None:
    # Before the per-bit mask validity: "stale-data check ... stores H invalid of H elements"
    # (the mask byte's pad-lane bits made every bit of it invalid).
    torch.manual_seed(H)
    x = torch.randn(H)
    y = tilelang.compile(thresholded(H), out_idx=[-1], pass_configs=SYNC, check_stale=True)(x)
    torch.testing.assert_close(y, torch.where(x > 0.5, x, -x), rtol=0, atol=0)


def test_partial_row_at_an_unaligned_start_is_an_error() -> None:
    @T.prim_func
    def main(A: T.Tensor((4,), "float32"), B: T.Tensor((4,), "float32")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            with T.Scope("V"):
                u = T.alloc_ub((1, 64), "float32")
                if vid == 0:
                    T.copy(A[0], u[0, 4:8])
                    T.barrier_all()
                    T.copy(u[0, 4:8], B[0])

    with pytest.raises(tilelang.Error, match=r"ub-start-alignment"):
        tilelang.compile(main, out_idx=[-1])


# ---- an element count smaller than an operand ----------------------------------------------


def prefix_cast(N: int, S: int, count: int):
    """dst [1, N] float32 = the first `count` bf16 of src [1, S] (count == N: the whole dst)."""

    @T.prim_func
    def main(X: T.Tensor((S,), "bfloat16"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            with T.Scope("V"):
                src = T.alloc_ub((1, S), "bfloat16")
                dst = T.alloc_ub((1, N), "float32")
                if vid == 0:
                    T.tile.fill(dst, 0.0)
                    T.copy(X[0], src[0, :])
                    T.barrier_all()
                    T.tile.cast(dst, src, "CAST_NONE", count)
                    T.barrier_all()
                    T.copy(dst[0, :], Y[0])

    return main


@pytest.mark.parametrize("N,S,count", [(64, 256, 64), (16, 256, 16), (64, 128, 8), (48, 64, 1), (64, 64, 7),
                                       (32, 1024, 32)])
def test_cast_of_the_first_count_elements_matches_torch(N: int, S: int, count: int) -> None:
    torch.manual_seed(N + S + count)
    x = torch.randn(S).to(torch.bfloat16)
    y = tilelang.compile(prefix_cast(N, S, count), out_idx=[-1], check_stale=True)(x)
    want = torch.zeros(N)
    want[:count] = x[:count].float()
    torch.testing.assert_close(y, want, rtol=0, atol=0)


def rows_prefix_add(R: int, C: int, rows: int):
    """dst [R, C] = a + b over the first rows * C elements (whole rows) of [R, C] tiles."""

    @T.prim_func
    def main(A: T.Tensor((R, C), "float32"), B: T.Tensor((R, C), "float32"), Y: T.Tensor((R, C), "float32")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            with T.Scope("V"):
                a = T.alloc_ub((R, C), "float32")
                b = T.alloc_ub((R, C), "float32")
                if vid == 0:
                    T.copy(A[0, 0], a)
                    T.copy(B[0, 0], b)
                    T.barrier_all()
                    T.tile.add(a, a, b, rows * C)
                    T.barrier_all()
                    T.copy(a, Y[0, 0])

    return main


@pytest.mark.parametrize("R,C,rows", [(8, 64, 1), (8, 64, 7), (33, 8, 33), (4, 8, 3)])
def test_add_over_whole_leading_rows_matches_torch(R: int, C: int, rows: int) -> None:
    torch.manual_seed(R * C + rows)
    a, b = torch.randn(R, C), torch.randn(R, C)
    y = tilelang.compile(rows_prefix_add(R, C, rows), out_idx=[-1])(a, b)
    want = a.clone()
    want[:rows] += b[:rows]
    torch.testing.assert_close(y, want, rtol=0, atol=0)


def test_count_larger_than_an_operand_is_an_error() -> None:
    with pytest.raises(tilelang.Error, match=r"operand 'src' \('src', 64 elements\) has fewer than the element "
                                             r"count 128"):
        tilelang.compile(prefix_cast(256, 64, 128), out_idx=[-1])


def test_count_across_rows_of_a_wider_region_is_an_error() -> None:
    # 70 elements of an [8, 64] tile run into a second row only partly: not a region.
    with pytest.raises(tilelang.Error, match=r"the first 70 elements of operand 'dst' .* are not a region"):
        tilelang.compile(_count70(), out_idx=[-1])


def _count70():
    @T.prim_func
    def main(A: T.Tensor((8, 64), "float32"), Y: T.Tensor((8, 64), "float32")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            with T.Scope("V"):
                a = T.alloc_ub((8, 64), "float32")
                if vid == 0:
                    T.copy(A[0, 0], a)
                    T.barrier_all()
                    T.tile.add(a, a, a, 70)
                    T.barrier_all()
                    T.copy(a, Y[0, 0])

    return main


# ---- uint8 masks ANDed as int16 lanes --------------------------------------------------------


def mask_and(n: int, at: int, op: str, L: int = 96):
    """C[at:at + n] = A & B (or |) there, the rest A: masks at byte `at` of L-byte uint8 tiles."""

    @T.prim_func
    def main(A: T.Tensor((L,), "uint8"), B: T.Tensor((L,), "uint8"), C: T.Tensor((L,), "uint8")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            with T.Scope("V"):
                m1 = T.alloc_ub((L,), "uint8")
                m2 = T.alloc_ub((L,), "uint8")
                if vid == 0:
                    T.copy(A[0], m1)
                    T.copy(B[0], m2)
                    T.barrier_all()
                    if op == "and":
                        T.tile.bitwise_and(m1[at:at + n], m1[at:at + n], m2[at:at + n])
                    else:
                        T.tile.bitwise_or(m1[at:at + n], m1[at:at + n], m2[at:at + n])
                    T.barrier_all()
                    T.copy(m1, C[0])

    return main


@pytest.mark.parametrize("n,at", [(2, 0), (32, 0), (32, 32), (64, 32), (96, 0), (8, 64)])
@pytest.mark.parametrize("op", ["and", "or"])
def test_even_byte_masks_match_torch(n: int, at: int, op: str) -> None:
    torch.manual_seed(n + at)
    a = torch.randint(0, 256, (96,), dtype=torch.uint8)
    b = torch.randint(0, 256, (96,), dtype=torch.uint8)
    c = tilelang.compile(mask_and(n, at, op), out_idx=[-1], check_stale=True)(a, b)
    want = a.clone()
    want[at:at + n] = (a & b)[at:at + n] if op == "and" else (a | b)[at:at + n]
    assert torch.equal(c, want)


@pytest.mark.parametrize("n,at", [(7, 0), (33, 32), (1, 64)])
def test_odd_byte_mask_inside_a_tile_is_an_error(n: int, at: int) -> None:
    with pytest.raises(tilelang.Error, match=rf"odd number of bytes \({n}\) in a region that does not end at the "
                                             r"end of 'm1'"):
        tilelang.compile(mask_and(n, at, "and"), out_idx=[-1])


@pytest.mark.parametrize("L,at", [(97, 64), (33, 0), (1, 0), (4097, 4064)])
def test_odd_byte_mask_ending_at_the_buffer_end_matches_torch(L: int, at: int) -> None:
    torch.manual_seed(L)
    a = torch.randint(0, 256, (L,), dtype=torch.uint8)
    b = torch.randint(0, 256, (L,), dtype=torch.uint8)
    c = tilelang.compile(mask_and(L - at, at, "and", L), out_idx=[-1], check_stale=True)(a, b)
    want = a.clone()
    want[at:] = (a & b)[at:]
    assert torch.equal(c, want)


# ---- an expert kernel's alloc_shared tiles read back from the disk cache ---------------------

EXPERT_SHARED = """
import torch
import tl_ascend as tilelang
import tl_ascend.language as T

@T.prim_func
def main(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("V"):
            u = T.alloc_shared((1, 64), "float32")
            T.copy(A[0], u[0, :])
            T.tile.exp(u, u)
            T.copy(u[0, :], B[0])

k = tilelang.compile(main, out_idx=[-1], pass_configs={"tl.ascend_auto_sync": True})
x = torch.linspace(-2.0, 2.0, 64)
torch.testing.assert_close(k(x), torch.exp(x))
print("OK")
"""


def test_an_expert_kernels_shared_tiles_read_back_from_the_disk_cache(tmp_path) -> None:
    """Before: the second process (a disk-cache hit) failed with "T.alloc_shared ... is a
    developer-mode shared buffer": the hit verified the kernel without place_expert_tiles, which
    the pipeline runs before its verifier (fused_gdn_gating.py failed so on every run after the
    first)."""
    cache = tmp_path / "cache"
    script = tmp_path / "expert_shared.py"
    script.write_text(EXPERT_SHARED)
    env = dict(os.environ, TL_CACHE_DIR=str(cache))
    for _ in range(2):
        r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env)
        assert r.returncode == 0 and r.stdout.strip() == "OK", r.stdout + r.stderr
    assert list(cache.rglob("*.tlir"))
