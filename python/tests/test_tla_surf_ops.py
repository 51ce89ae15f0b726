"""TileLang-Ascend surface the example corpus stopped on (issue 29, docs/tla_corpus.md), each in
TileLang-Ascend's own syntax, run on the virtual NPU with the hazard and stale-data checkers
against a torch reference that lives only here, on tails (1, 7, 33, 1000, 4097 rows or
elements: not a multiple of the block), plus the errors for what stays out:

- `T.tile.mul_add_dst(dst, src0, src1)`: dst = src0 * src1 + dst (causal_conv1d);
- `T.tile.broadcast(dst, src, axis=1)` of a one-dimensional source: one value per row
  (chunk_gated_delta_rule), and TileLang-Ascend's axis inference without `axis`;
- `with T.If(c): with T.Then(): ... with T.Else(): ...` and `with T.If(c), T.Then():` (two
  `with` items at once) (xllm_kernels);
- `T.tile.fill(dst, v)` with `v` a one-element UB buffer (group_norm).
"""

import pytest
import torch

import tl_ascend as tilelang
import tl_ascend.language as T

SYNC = {tilelang.PassConfigKey.TL_ASCEND_AUTO_SYNC: True,
        tilelang.PassConfigKey.TL_ASCEND_MEMORY_PLANNING: True}
TAILS = (1, 7, 33, 1000, 4097)


def _compile(func, out_idx):
    return tilelang.compile(func, out_idx=out_idx, pass_configs=SYNC, check_hazards=True, check_stale=True)


# ---- T.tile.mul_add_dst ---------------------------------------------------------------------------


def mul_add(M: int, N: int, dtype: str, block_M: int = 16):
    """Y = X * W + Z, each AIV half of a block of rows: Z is loaded into the accumulator."""
    half = block_M // 2

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), W: T.Tensor((M, N), dtype), Z: T.Tensor((M, N), dtype),
             Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), is_npu=True) as (cid, vid):
            x = T.alloc_ub((half, N), dtype)
            w = T.alloc_ub((half, N), dtype)
            acc = T.alloc_ub((half, N), dtype)
            with T.Scope("V"):
                T.copy(X[cid * block_M + vid * half, 0], x)
                T.copy(W[cid * block_M + vid * half, 0], w)
                T.copy(Z[cid * block_M + vid * half, 0], acc)
                T.tile.mul_add_dst(acc, x, w)
                T.copy(acc, Y[cid * block_M + vid * half, 0])

    return main


@pytest.mark.parametrize("M", TAILS)
@pytest.mark.parametrize("dtype", ("float32", "float16"))
def test_mul_add_dst_accumulates_the_product_into_dst(M: int, dtype: str) -> None:
    N = 16
    torch.manual_seed(M)
    tdt = getattr(torch, dtype)
    x, w, z = (torch.randn(M, N).to(tdt) for _ in range(3))
    y = _compile(mul_add(M, N, dtype), [3])(x, w, z)
    ref = (x.double() * w.double() + z.double()).to(tdt)
    tol = 1e-6 if dtype == "float32" else 1e-3
    torch.testing.assert_close(y, ref, rtol=tol, atol=tol)


def mul_add_regions(R: int, dtype: str):
    """Y = Z with Y[:, 16:32] += X * W': dst a column slice of a [R, 48] tile, src0 a [R, 16] tile,
    src1 the [2R, 8] left half of a [2R, 16] tile. The three pair by flat index though their rows
    differ (16, 16, 8 elements), and two are strided."""

    @T.prim_func
    def main(X: T.Tensor((R, 16), dtype), W: T.Tensor((2 * R, 16), dtype), Z: T.Tensor((R, 48), dtype),
             Y: T.Tensor((R, 48), dtype)):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            x = T.alloc_ub((R, 16), dtype)
            w = T.alloc_ub((2 * R, 16), dtype)
            acc = T.alloc_ub((R, 48), dtype)
            with T.Scope("V"):
                if vid == 0:
                    T.copy(X[0, 0], x)
                    T.copy(W[0, 0], w)
                    T.copy(Z[0, 0], acc)
                    T.tile.mul_add_dst(acc[0:R, 16:32], x, w[0:2 * R, 0:8])
                    T.copy(acc, Y[0, 0])

    return main


@pytest.mark.parametrize("R", (1, 7, 33, 300))  # 1000 rows of these three tiles exceed UB
@pytest.mark.parametrize("dtype", ("float32", "float16"))
def test_mul_add_dst_pairs_operands_of_other_shapes_by_flat_index(R: int, dtype: str) -> None:
    # The exec walks runs of the gcd of the last extents (8 here) instead of one PrimTile::at per
    # element (corpus3): a run that crossed a row of src1 would pair the wrong elements.
    torch.manual_seed(R)
    tdt = getattr(torch, dtype)
    x, w, z = torch.randn(R, 16).to(tdt), torch.randn(2 * R, 16).to(tdt), torch.randn(R, 48).to(tdt)
    y = _compile(mul_add_regions(R, dtype), [3])(x, w, z)
    ref = z.clone()
    # The product and the sum in fp32, each rounded, as the virtual NPU's float vector ops are.
    prod = x.float().reshape(-1) * w[:, 0:8].float().reshape(-1)
    ref[:, 16:32] = (prod.reshape(R, 16) + z[:, 16:32].float()).to(tdt)
    torch.testing.assert_close(y, ref, rtol=0, atol=0)


def test_mul_add_dst_in_place_reads_the_old_dst() -> None:
    """dst as one of the sources: dst = dst * w + dst, the old value read for both."""
    M, N, half = 16, 16, 8

    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), W: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            x = T.alloc_ub((half, N), "float32")
            w = T.alloc_ub((half, N), "float32")
            with T.Scope("V"):
                T.copy(X[vid * half, 0], x)
                T.copy(W[vid * half, 0], w)
                T.tile.mul_add_dst(x, x, w)
                T.copy(x, Y[vid * half, 0])

    x, w = torch.randn(M, N), torch.randn(M, N)
    y = _compile(main, [2])(x, w)
    torch.testing.assert_close(y, (x.double() * w.double() + x.double()).float(), rtol=1e-6, atol=1e-6)


def test_mul_add_dst_of_mismatched_operands_is_an_error() -> None:
    @T.prim_func
    def main(X: T.Tensor((8, 16), "float32"), Y: T.Tensor((8, 16), "float32")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            x = T.alloc_ub((8, 16), "float32")
            h = T.alloc_ub((8, 16), "float16")
            with T.Scope("V"):
                T.copy(X[0, 0], x)
                T.tile.mul_add_dst(x, h, x)
                T.copy(x, Y[0, 0])

    with pytest.raises(tilelang.Error, match=r"T\.tile\.mul_add_dst.*'src0'.*expected the dtype of 'dst' \(float32\), "
                                             r"got float16"):
        _compile(main, [1])


def test_mul_add_dst_of_an_integer_tile_is_an_error() -> None:
    @T.prim_func
    def main(X: T.Tensor((8, 16), "int32"), Y: T.Tensor((8, 16), "int32")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            x = T.alloc_ub((8, 16), "int32")
            with T.Scope("V"):
                T.copy(X[0, 0], x)
                T.tile.mul_add_dst(x, x, x)
                T.copy(x, Y[0, 0])

    with pytest.raises(tilelang.Error, match=r"T\.tile\.mul_add_dst on A2 takes float16, float32, got int32"):
        _compile(main, [1])


# ---- T.tile.broadcast with axis ------------------------------------------------------------------


def scale_rows(M: int, N: int, axis, block_M: int = 16):
    """Y[i, :] = X[i, :] * exp(G[i]): G's slice is a one-dimensional UB tile, broadcast across
    the row (axis=1, or inferred when axis is None)."""
    half = block_M // 2

    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), G: T.Tensor((M,), "float32"), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), is_npu=True) as (cid, vid):
            x = T.alloc_ub((half, N), "float32")
            g = T.alloc_ub((half,), "float32")
            gb = T.alloc_ub((half, N), "float32")
            with T.Scope("V"):
                T.copy(X[cid * block_M + vid * half, 0], x)
                T.copy(G[cid * block_M + vid * half], g)
                T.tile.exp(g, g)
                if axis is None:
                    T.tile.broadcast(gb, g)
                else:
                    T.tile.broadcast(gb, g, axis=axis)
                T.tile.mul(x, x, gb)
                T.copy(x, Y[cid * block_M + vid * half, 0])

    return main


@pytest.mark.parametrize("M", TAILS)
@pytest.mark.parametrize("axis", (1, None))
def test_broadcast_axis_1_of_a_vector_fills_each_row_with_its_element(M: int, axis) -> None:
    N = 24  # != half: the inference has one reading
    torch.manual_seed(M)
    x, g = torch.randn(M, N), torch.randn(M)
    y = _compile(scale_rows(M, N, axis), [2])(x, g)
    torch.testing.assert_close(y, (x.double() * g.double().exp()[:, None]).float(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("M", (1, 33))
def test_broadcast_axis_0_of_a_vector_is_a_row(M: int) -> None:
    """axis=0 with a [N] source: every row gets it (the right-aligned reading), even when the
    row count equals N, where only the axis tells the two apart."""
    N, block_M = 8, 16
    half = block_M // 2

    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), C: T.Tensor((N,), "float32"), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), is_npu=True) as (cid, vid):
            x = T.alloc_ub((half, N), "float32")
            c = T.alloc_ub((N,), "float32")
            cb = T.alloc_ub((half, N), "float32")
            with T.Scope("V"):
                T.copy(X[cid * block_M + vid * half, 0], x)
                T.copy(C[0], c)
                T.tile.broadcast(cb, c, axis=0)
                T.tile.add(x, x, cb)
                T.copy(x, Y[cid * block_M + vid * half, 0])

    x, c = torch.randn(M, N), torch.randn(N)
    y = _compile(main, [2])(x, c)
    torch.testing.assert_close(y, x + c[None, :], rtol=0, atol=0)


def _bad_broadcast(axis, src_shape):
    @T.prim_func
    def main(X: T.Tensor((8, 16), "float32"), Y: T.Tensor((8, 16), "float32")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            x = T.alloc_ub((8, 16), "float32")
            s = T.alloc_ub(src_shape, "float32")
            with T.Scope("V"):
                T.copy(X[0, 0], x)
                T.tile.fill(s, 1.0)
                T.tile.broadcast(x, s, axis=axis)
                T.copy(x, Y[0, 0])

    return main


@pytest.mark.parametrize("axis,shape,what", [
    (2, (8,), r"T\.tile\.broadcast: argument 'axis' must be 0 \(a row\), 1 \(a column\) or None, got 2"),
    (1, (1, 16), r"axis=1 broadcasts a column \(\[n\] or \[n, 1\]\), but the source is \[1, 16\]"),
    (0, (8, 1), r"axis=0 broadcasts a row \(\[n\] or \[1, n\]\), but the source is \[8, 1\]"),
    (1, (16,), r"cannot broadcast \[16, 1\] to \[8, 16\]"),
])
def test_a_broadcast_axis_that_does_not_fit_the_source_is_an_error(axis, shape, what: str) -> None:
    with pytest.raises(tilelang.Error, match=what):
        _compile(_bad_broadcast(axis, shape), [1])


# ---- T.If / T.Then / T.Else, and two `with` items at once -----------------------------------------


def branchy(M: int, N: int, block_M: int = 16):
    """Even blocks double their rows, odd ones triple them (T.If / T.Then / T.Else); the first
    block also adds 1 (`with T.If(...), T.Then():`, two items on one line)."""
    half = block_M // 2

    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), is_npu=True) as (cid, vid):
            x = T.alloc_ub((half, N), "float32")
            with T.Scope("V"):
                T.copy(X[cid * block_M + vid * half, 0], x)
                with T.If(cid % 2 == 0):
                    with T.Then():
                        T.tile.mul(x, x, 2.0)
                    with T.Else():
                        T.tile.mul(x, x, 3.0)
                with T.If(cid == 0), T.Then():
                    T.tile.add(x, x, 1.0)
                with T.If(N > 4):  # a Python condition: one branch is built
                    with T.Then():
                        T.tile.add(x, x, 0.5)
                T.copy(x, Y[cid * block_M + vid * half, 0])

    return main


@pytest.mark.parametrize("M", TAILS)
def test_if_then_else_frames_branch_like_a_kernel_if(M: int) -> None:
    N = 16
    torch.manual_seed(M)
    x = torch.randn(M, N)
    y = _compile(branchy(M, N), [1])(x)
    block = torch.arange(M) // 16
    scale = torch.where(block % 2 == 0, 2.0, 3.0)[:, None]
    ref = x.double() * scale + (block == 0).double()[:, None] + 0.5
    torch.testing.assert_close(y, ref.float(), rtol=1e-6, atol=1e-6)


def test_an_if_frame_holding_other_statements_is_an_error() -> None:
    with pytest.raises(tilelang.Error, match=r"test_tla_surf_ops\.py:\d+: .*a `with T\.If\(cond\):` block holds "
                                             r"`with T\.Then\(\):` and `with T\.Else\(\):` blocks only"):
        @T.prim_func
        def main(X: T.Tensor((8, 16), "float32")):
            with T.Kernel(1, is_npu=True) as (cid, vid):
                x = T.alloc_ub((8, 16), "float32")
                with T.Scope("V"):
                    T.copy(X[0, 0], x)
                    with T.If(cid == 0):
                        T.tile.add(x, x, 1.0)


def test_then_outside_an_if_frame_is_an_error() -> None:
    with pytest.raises(tilelang.Error, match=r"`with T\.Then\(\):` belongs directly inside a `with T\.If\(cond\):`"):
        @T.prim_func
        def main(X: T.Tensor((8, 16), "float32")):
            with T.Kernel(1, is_npu=True) as (cid, vid):
                x = T.alloc_ub((8, 16), "float32")
                with T.Scope("V"):
                    T.copy(X[0, 0], x)
                    with T.Then():
                        T.tile.add(x, x, 1.0)


def test_an_if_frame_without_then_is_an_error() -> None:
    with pytest.raises(tilelang.Error, match=r"a `with T\.If\(cond\):` block needs a `with T\.Then\(\):` block"):
        @T.prim_func
        def main(X: T.Tensor((8, 16), "float32")):
            with T.Kernel(1, is_npu=True) as (cid, vid):
                x = T.alloc_ub((8, 16), "float32")
                with T.Scope("V"):
                    T.copy(X[0, 0], x)
                    with T.If(cid == 0):
                        with T.Else():
                            T.tile.add(x, x, 1.0)


# ---- T.tile.fill from a one-element UB buffer ---------------------------------------------------------


def shift_by_total(M: int, N: int, block_M: int = 16):
    """Y = X + sum(S): the sum is reduced into a one-element UB buffer, which fills a tile."""
    half = block_M // 2

    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), S: T.Tensor((1, 8), "float32"), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), is_npu=True) as (cid, vid):
            x = T.alloc_ub((half, N), "float32")
            s = T.alloc_ub((1, 8), "float32")
            total = T.alloc_ub([1], "float32")
            row = T.alloc_ub((half, N), "float32")
            with T.Scope("V"):
                T.copy(X[cid * block_M + vid * half, 0], x)
                T.copy(S[0, 0], s)
                T.reduce_sum(s, total, dim=-1)
                T.tile.fill(row, total)
                T.tile.add(x, x, row)
                T.copy(x, Y[cid * block_M + vid * half, 0])

    return main


@pytest.mark.parametrize("M", TAILS)
def test_fill_from_a_one_element_ub_buffer_reads_that_element(M: int) -> None:
    N = 16
    torch.manual_seed(M)
    x, s = torch.randn(M, N), torch.randn(1, 8)
    y = _compile(shift_by_total(M, N), [2])(x, s)
    torch.testing.assert_close(y, (x.double() + s.double().sum()).float(), rtol=1e-5, atol=1e-5)


def test_fill_from_a_buffer_of_several_elements_is_an_error() -> None:
    with pytest.raises(tilelang.Error, match=r"T\.tile\.fill: operand 'value' is a scalar: a buffer stands for one only "
                                             r"when it is a one-element on-chip tile, got 's' \(UB, 8 elements"):
        @T.prim_func
        def main(X: T.Tensor((8, 16), "float32")):
            with T.Kernel(1, is_npu=True) as (cid, vid):
                x = T.alloc_ub((8, 16), "float32")
                s = T.alloc_ub((1, 8), "float32")
                with T.Scope("V"):
                    T.tile.fill(s, 1.0)
                    T.tile.fill(x, s)
                    T.copy(x, X[0, 0])
