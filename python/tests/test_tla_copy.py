"""TileLang-Ascend's T.copy and vector-op surface (issue 29, "Surface"), in its own syntax.

Each kernel here is written as TileLang-Ascend's examples write theirs (hybrid `as (cid, vid)`
kernels, alloc_shared tiles, no T.Scope), and each construct was rejected before this change:

* `T.copy` between UB tiles of different dtypes is a Cast, with TileLang-Ascend's rounding
  (CAST_NONE for its exact widenings, CAST_RINT otherwise). Before: "only the fixpipe (out of L0C)
  converts dtypes; expected float16 like 'src', got float32" [copy-dtype].
* Copy regions match after dropping unit dimensions anywhere (`X[0:H, r, 0:D]` against an [H, D]
  tile). Before: "expected the extents of 'src' [4, 1, 64] (leading 1s ignored), got [4, 64]".
* A start-point region with fewer indices than the other side's rank takes its trailing extents
  (`T.copy(c[1, :, :], Z[r, 0])`). Before: "start-point region of 'Z' has 2 indices but the
  extents come from 'c' with 3 dimensions".
* Slice extents are simplified (`W[r, m * 32:(m + 1) * 32]`). Before: "expected the extents of
  'src' [(m + 1) * 32 - m * 32] ..., got [32]" [copy-shape-mismatch].
* Vector ops take `[n]` where `[n, 1]` is declared. Before: "T.tile.mul: operand 'src0' ...
  expected the extents of 'dst' [64, 1], got [64]" [shape-mismatch].
* `pad_value=` takes any constant expression (`-T.infinity(dtype)`). Before: "T.copy: argument
  'pad_value' must be a number, got Expr float("-inf")".
* `T.wait_cross_flag(flag, pipe)`, TileLang-Ascend's two-argument form. Before: "T.wait_cross_flag
  (event_id): too many positional arguments".
References are torch's and live here; block counts on the tails 1, 7, 33, 1000 (two rows each, one
per AIV: an expert copy past its tensor is not clipped yet, see test_tla_modes.py).
"""


import pytest
import torch

import tl_ascend as tilelang
import tl_ascend.language as T

TAILS = (1, 7, 33, 1000)
AUTO = {tilelang.PassConfigKey.TL_ASCEND_AUTO_CV_COMBINE: True,
        tilelang.PassConfigKey.TL_ASCEND_AUTO_SYNC: True,
        tilelang.PassConfigKey.TL_ASCEND_MEMORY_PLANNING: True}


# ---- T.copy between dtypes is a cast ------------------------------------------------------------


@tilelang.jit(out_idx=[1, 2], pass_configs=AUTO, check_hazards=True)
def cast_copies(blocks: int, D: int = 64):
    M = 2 * blocks

    @T.prim_func
    def main(X: T.Tensor((M, D), "float16"), Y: T.Tensor((M, D), "float16"),
             I: T.Tensor((M, D), "int32")):
        with T.Kernel(blocks, is_npu=True) as (cid, vid):
            r = cid * 2 + vid
            x16 = T.alloc_shared((1, D), "float16")
            x32 = T.alloc_shared((1, D), "float32")
            y16 = T.alloc_ub((1, D), "float16")
            xi = T.alloc_ub((1, D), "int32")
            T.copy(X[r, 0], x16)
            T.copy(x16, x32)  # half -> float: CAST_NONE (exact)
            T.tile.mul(x32, x32, 2.5)
            T.copy(x32, y16)  # float -> half: CAST_RINT
            T.copy(x32, xi)  # float -> int32: CAST_RINT (half to even)
            T.copy(y16, Y[r, 0])
            T.copy(xi, I[r, 0])

    return main


@pytest.mark.parametrize("blocks", TAILS)
def test_copy_between_ub_dtypes_is_a_cast_with_tilelang_ascends_rounding(blocks: int) -> None:
    # Before: rejected, "only the fixpipe (out of L0C) converts dtypes; expected float16 like
    # 'src', got float32 (use T::tile::cast on UB)" [copy-dtype].
    x = (torch.randn(2 * blocks, 64) * 4).half()
    # Exact halves (k + 0.5) * 2.5 / 2.5 ... : x * 2.5 for x = k/5 lands on .5; round-half-even
    # shows in the int32 output.
    x[0, :8] = torch.tensor([0.2, 0.6, 1.0, 1.4, -0.2, -0.6, -1.0, 3.0]).half()
    y, i = cast_copies(blocks)(x)
    ref = x.float() * 2.5
    torch.testing.assert_close(y, ref.half(), rtol=0, atol=0)
    torch.testing.assert_close(i, torch.round(ref).int(), rtol=0, atol=0)


def test_a_cast_copy_rejects_copy_options() -> None:
    # A padded / relu copy cannot be a Cast: an error naming the option, not a dropped option.
    with pytest.raises(tilelang.Error, match=r"T.copy from 'a' \(float16\) to 'b' \(float32\) on chip converts "
                                             r"dtypes \(a T.tile.cast\); option 'pad' does not apply"):
        @T.prim_func
        def main(X: T.Tensor((2, 16), "float16")):
            with T.Kernel(1, is_npu=True) as (cid, vid):
                a = T.alloc_ub((1, 16), "float16", name="a")
                b = T.alloc_ub((1, 16), "float32", name="b")
                T.copy(a, b, pad_value=0)


# ---- region matching: unit dimensions anywhere, trailing start points, simplified extents ----------


@tilelang.jit(out_idx=[2], pass_configs=AUTO, check_hazards=True)
def region_forms(blocks: int, H: int = 4, D: int = 64):
    M = 2 * blocks

    @T.prim_func
    def main(X: T.Tensor((H, M, D), "float32"), W: T.Tensor((M, D), "float32"),
             Z: T.Tensor((M, H * D), "float32")):
        with T.Kernel(blocks, is_npu=True) as (cid, vid):
            r = cid * 2 + vid
            a = T.alloc_shared((H, D), "float32")
            w = T.alloc_shared((1, D), "float32")
            c = T.alloc_shared((2, 1, H * D), "float32")
            T.copy(X[0:H, r, 0:D], a)  # [H, 1, D] against [H, D]: an interior 1
            for m in T.serial(2):
                T.copy(W[r, m * (D // 2):(m + 1) * (D // 2)], w[0, m * (D // 2):(m + 1) * (D // 2)])
            for h in T.serial(H):
                T.tile.add(c[1, 0, h * D:(h + 1) * D], a[h, :], w)
            T.copy(c[1, :, :], Z[r, 0])  # a start point with 2 indices against a 3-D region

    return main


@pytest.mark.parametrize("blocks", TAILS)
def test_copy_regions_match_without_unit_dims_and_with_trailing_start_points(blocks: int) -> None:
    # Before: rejected at the first copy, "expected the extents of 'src' [4, 1, 64] (leading 1s
    # ignored), got [4, 64]"; then "(m + 1) * 32 - m * 32"; then "start-point region of 'Z' has 2
    # indices but the extents come from 'c' with 3 dimensions".
    x = torch.randn(4, 2 * blocks, 64)
    w = torch.randn(2 * blocks, 64)
    z = region_forms(blocks)(x, w)
    ref = (x.permute(1, 0, 2) + w[:, None, :]).reshape(2 * blocks, 4 * 64)
    torch.testing.assert_close(z, ref)


def test_a_start_point_whose_dropped_extent_is_not_1_is_an_error() -> None:
    # TileLang-Ascend would take the trailing extents [1, 64] of the [2, 1, 64] tile and move a
    # different count than the tile holds; here that is an error naming both buffers.
    with pytest.raises(tilelang.Error, match=r"start-point region of 'Z' has 2 indices but the extents come from "
                                             r"'c' with 3 dimensions, and its leading extent 2 \(dimension 0\) is "
                                             r"not 1"):
        @T.prim_func
        def main(Z: T.Tensor((4, 64), "float32")):
            with T.Kernel(1, is_npu=True) as (cid, vid):
                c = T.alloc_ub((2, 1, 64), "float32", name="c")
                T.copy(c, Z[0, 0])


# ---- vector ops count elements: [n] where [n, 1] is declared ------------------------------------


@tilelang.jit(out_idx=[1], pass_configs=AUTO, check_hazards=True)
def column_and_flat(blocks: int, n: int = 64):
    M = 2 * blocks

    @T.prim_func
    def main(X: T.Tensor((M, n), "float32"), Y: T.Tensor((M, n), "float32")):
        with T.Kernel(blocks, is_npu=True) as (cid, vid):
            r = cid * 2 + vid
            s = T.alloc_shared((n,), "float32")
            t = T.alloc_shared((n, 1), "float32")
            T.copy(X[r, 0], s)
            T.tile.mul(t, s, 2.0)  # dst [n, 1], src [n]
            T.tile.add(s, s, t)  # dst [n], src1 [n, 1]
            T.copy(s, Y[r, 0])

    return main


@pytest.mark.parametrize("blocks", TAILS)
def test_vector_ops_take_n_where_n_by_1_is_declared(blocks: int) -> None:
    # Before: rejected, "T.tile.mul: operand 'src0' (buffer 's' in UB): expected the extents of
    # 'dst' [64, 1], got [64]" [shape-mismatch] (layer_norm.py's form).
    x = torch.randn(2 * blocks, 64)
    torch.testing.assert_close(column_and_flat(blocks)(x), 3 * x)


# ---- pad_value: any constant expression -------------------------------------------------------------


@tilelang.jit(out_idx=[1], pass_configs=AUTO, check_hazards=True)
def padded_rows(blocks: int):
    M = 2 * blocks

    @T.prim_func
    def main(X: T.Tensor((M, 7), "float32"), Z: T.Tensor((M, 8), "float32")):
        with T.Kernel(blocks, is_npu=True) as (cid, vid):
            r = cid * 2 + vid
            a = T.alloc_shared((1, 8), "float32")
            T.copy(X[r, 0:7], a[0, 0:7], pad_value=-T.infinity("float32"))
            T.copy(a, Z[r, 0])

    return main


@pytest.mark.parametrize("blocks", TAILS)
def test_pad_value_takes_a_constant_expression(blocks: int) -> None:
    # Before: rejected, "T.copy: argument 'pad_value' must be a number, got Expr -inf"
    # (softmax/example_online_softmax.py's -T.infinity(cal_dtype)).
    x = torch.randn(2 * blocks, 7)
    ref = torch.cat([x, torch.full((2 * blocks, 1), -torch.inf)], dim=1)
    torch.testing.assert_close(padded_rows(blocks)(x), ref)


def test_pad_value_of_kernel_variables_is_an_error() -> None:
    with pytest.raises(tilelang.Error, match=r"argument 'pad_value' must be a number or a constant expression .*"
                                             r"is not a constant"):
        @T.prim_func
        def main(X: T.Tensor((2, 7), "float32")):
            with T.Kernel(1, is_npu=True) as (cid, vid):
                a = T.alloc_ub((1, 8), "float32")
                T.copy(X[0, 0:7], a[0, 0:7], pad_value=T.cast(cid, "float32"))


# ---- T.wait_cross_flag(flag, pipe) --------------------------------------------------------------------


@tilelang.jit(out_idx=[1], check_hazards=True)
def cube_then_vector(pipe: str):
    @T.prim_func
    def main(X: T.Tensor((16, 16), "float32"), Y: T.Tensor((16, 16), "float32")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            a = T.alloc_ub((8, 16), "float32")
            with T.Scope("C"):
                T.set_cross_flag("MTE3", 0)
            with T.Scope("V"):
                T.wait_cross_flag(0, pipe)
                T.copy(X[vid * 8, 0], a)
                T.set_flag("MTE2", "MTE3", 0)
                T.wait_flag("MTE2", "MTE3", 0)
                T.copy(a, Y[vid * 8, 0])

    return main


@pytest.mark.parametrize("pipe", ["MTE2", "mte2", "V", ""])
def test_wait_cross_flag_takes_tilelang_ascends_pipe_argument(pipe: str) -> None:
    # Before: "T.wait_cross_flag(event_id): too many positional arguments" (HISA's
    # T.wait_cross_flag(CROSS_FLAG_C2V_0, "MTE2")). The wait blocks the whole core either way.
    x = torch.randn(16, 16)
    torch.testing.assert_close(cube_then_vector(pipe)(x), x)


def test_wait_cross_flag_rejects_an_unknown_pipe() -> None:
    with pytest.raises(tilelang.Error, match=r"T.wait_cross_flag: argument 'pipe': unknown pipe 'XYZ'"):
        @T.prim_func
        def main(X: T.Tensor((16, 16), "float32")):
            with T.Kernel(1, is_npu=True) as (cid, vid):
                with T.Scope("V"):
                    T.wait_cross_flag(0, "XYZ")


# ---- the JIT disk cache and hybrid kernels ----------------------------------------------------------


def test_a_hybrid_kernel_compiles_again_from_the_disk_cache(tmp_path) -> None:
    # Before: the second process (a disk-cache hit) verified the hybrid kernel as written, before
    # combine_cv, and failed: "T.alloc_shared (buffer 'x16' in shared): 'x16' is a developer-mode
    # shared buffer ..." [developer-scope-in-expert-mode], where the first run had passed.
    import os
    import subprocess
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    code = ("import sys, torch; sys.path.insert(0, %r); import test_tla_copy as t; "
            "x = torch.randn(2, 64).half(); y, i = t.cast_copies(1)(x); "
            "torch.testing.assert_close(y, (x.float() * 2.5).half()); print('ok')" % here)
    env = dict(os.environ, TL_CACHE_DIR=str(tmp_path))
    for run in ("miss", "hit"):
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0 and r.stdout.strip().endswith("ok"), f"{run}: {r.stderr[-2000:]}"
    assert any(f.endswith(".tlir") for f in os.listdir(tmp_path))


# ---- UB capacity: the 256 B TileLang-Ascend's code generator leaves out ------------------------------


@tilelang.jit(out_idx=[2], check_hazards=True)
def three_tiles(blocks: int, rows: int = 64):
    # elementwise/elementwise_add.py's kernel: per AIV three fp32 tiles of rows x 256, 192 KB at
    # rows = 64, the whole UB of an A2 AIV.
    @T.prim_func
    def main(A: T.Tensor((blocks * 2 * rows, 256), "float32"), B: T.Tensor((blocks * 2 * rows, 256), "float32"),
             C: T.Tensor((blocks * 2 * rows, 256), "float32")):
        with T.Kernel(blocks, is_npu=True) as (cid, vid):
            a = T.alloc_ub((rows, 256), "float32")
            b = T.alloc_ub((rows, 256), "float32")
            c = T.alloc_ub((rows, 256), "float32")
            with T.Scope("V"):
                T.copy(A[cid * 2 * rows + vid * rows, 0], a)
                T.copy(B[cid * 2 * rows + vid * rows, 0], b)
                T.barrier_all()
                T.tile.add(c, a, b)
                T.barrier_all()
                T.copy(c, C[cid * 2 * rows + vid * rows, 0])

    return main


@pytest.mark.parametrize("blocks", (1, 7, 33))
def test_three_64k_tiles_fill_the_whole_192k_ub(blocks: int) -> None:
    # elementwise/elementwise_add.py: 3 x 64 KB = 196,608 bytes of UB, exactly the A2 AIV's 192 KB.
    # Before: "UB needs 196,608 bytes, capacity 196,352 on A2" (the capacity was the UB TBuf
    # TileLang-Ascend's code generator allocates, 256 B short; AscendC's own UB bound on A2 is
    # TOTAL_UB_SIZE = 192 * 1024, docs/hardware.md section 1).
    a, b = torch.randn(blocks * 128, 256), torch.randn(blocks * 128, 256)
    torch.testing.assert_close(three_tiles(blocks)(a, b), a + b, rtol=0, atol=0)


def test_ub_over_192k_is_still_a_capacity_error() -> None:
    # One more 32-byte row per tile (3 x 65 x 1 KiB, 199,680 bytes): over the physical UB.
    with pytest.raises(tilelang.Error, match=r"UB needs 199,680 bytes, capacity 196,608 on A2"):
        three_tiles(1, 65)(torch.randn(130, 256), torch.randn(130, 256))
