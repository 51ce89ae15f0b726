"""TileLang-Ascend data movement and debug surface the example corpus stopped on (issue 29), in
TileLang-Ascend's syntax, on the virtual NPU with the hazard and stale-data checkers, against
torch references that live only here:

- a GM -> L1 copy from the start point of a one-dimensional tensor into a [16, K] L1 tile, and
  the L0C -> GM copy of its first row back (gemv/example_gemv_c.py): the tile's first row moves;
- `T.dump_tensor(t, desc, dump_size, shape_info)`, and T.printf / T.dump_tensor outside
  `with T.Kernel` (print/elementwise_print.py): printed on the host before / after the launch.
"""

import pytest
import torch

import tl_ascend as tilelang
import tl_ascend.language as T

CV = {tilelang.PassConfigKey.TL_ASCEND_AUTO_SYNC: True, tilelang.PassConfigKey.TL_ASCEND_AUTO_CV_COMBINE: True}


def gemv(N: int, K: int, block_N: int = 32, block_K: int = 64, dtype: str = "float16"):
    """y = A @ x on the cube: x's slice is row 0 of a 16-row L1 tile, y the first row of L0C."""
    k_num = T.ceildiv(K, block_K)

    @T.prim_func
    def main(x: T.Tensor((K,), dtype), A: T.Tensor((N, K), dtype), y: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), is_npu=True) as (cid, _):
            A_L1 = T.alloc_L1((block_N, block_K), dtype)
            x_L1 = T.alloc_L1((16, block_K), dtype)
            C_L0 = T.alloc_L0C((16, block_N), "float32")
            for bk in T.serial(k_num):
                T.copy(x[bk * block_K], x_L1)
                T.copy(A[cid * block_N, bk * block_K], A_L1)
                T.gemm_v0(x_L1, A_L1, C_L0, transpose_B=True, init=(bk == 0))
            T.copy(C_L0, y[cid * block_N])

    return main


@pytest.mark.parametrize("N,K", [(1, 7), (7, 33), (33, 100), (1000, 64), (64, 4097)])
def test_a_one_dimensional_start_point_moves_the_first_row_of_a_cube_tile(N: int, K: int) -> None:
    torch.manual_seed(N + K)
    x, A = torch.randn(K).half(), torch.randn(N, K).half()
    kernel = tilelang.compile(gemv(N, K), out_idx=[-1], pass_configs=CV, check_hazards=True, check_stale=True)
    y = kernel(x, A)
    ref = (A.double() @ x.double()).half()
    torch.testing.assert_close(y, ref, rtol=2e-3, atol=2e-3)


def test_a_one_dimensional_start_point_against_a_ub_tile_of_several_rows_stays_an_error() -> None:
    """UB copies are dense: which elements a [K] slice would fill in an [8, K] tile is not
    TileLang-Ascend's one-fractal-row rule, so the ambiguity stays an error."""
    with pytest.raises(tilelang.Error, match=r"start-point region of 'x' has 1 indices but the extents come from "
                                             r"'x_ub' with 2 dimensions, and its leading extent 8"):
        @T.prim_func
        def main(x: T.Tensor((64,), "float32")):
            with T.Kernel(1, is_npu=True) as (cid, vid):
                x_ub = T.alloc_ub((8, 64), "float32")
                with T.Scope("V"):
                    T.copy(x[0], x_ub)


# ---- T.dump_tensor and prints outside the kernel --------------------------------------------------


def printed(M: int, N: int):
    half = M // 2

    @T.prim_func
    def main(A: T.Tensor((M, N), "int16"), C: T.Tensor((M, N), "int16")):
        T.printf("A: %d x %d\n", M, N)
        T.dump_tensor(A, 111, M * N, (M, N))
        with T.Kernel(1, is_npu=True) as (cid, vid):
            a = T.alloc_ub((half, N), "int16")
            with T.Scope("V"):
                T.copy(A[vid * half, 0], a)
                T.dump_tensor(a, 222, half * N, (half, N))
                T.tile.add(a, a, a)
                T.copy(a, C[vid * half, 0])
        T.printf("C:\n")
        T.dump_tensor(C, 111, M * N, (M, N))

    return main


def test_prints_outside_the_kernel_run_on_the_host_before_and_after_the_launch(capfd) -> None:
    M, N = 2, 16
    kernel = tilelang.compile(printed(M, N), out_idx=[-1], pass_configs=CV, check_hazards=True)
    a = torch.arange(M * N, dtype=torch.int16).reshape(M, N)
    c = kernel(a)
    torch.testing.assert_close(c, 2 * a)
    lines = capfd.readouterr().out.splitlines()
    row = lambda t: ", ".join(str(v) for v in t.reshape(-1).tolist())  # noqa: E731
    assert lines.index("[host] A: 2 x 16") == 0
    assert lines[1] == f"[host] dump_tensor desc=111 A int16 [{row(a)}]"
    assert f"[block 0 AIV0] dump_tensor desc=222 a int16 [{row(a[:1])}]" in lines
    assert f"[block 0 AIV1] dump_tensor desc=222 a int16 [{row(a[1:])}]" in lines
    assert lines[-2:] == ["[host] C:", f"[host] dump_tensor desc=111 C int16 [{row(2 * a)}]"]


def _dump_kernel(dump):
    @T.prim_func
    def main(A: T.Tensor((2, 16), "int16")):
        dump(A)
        with T.Kernel(1, is_npu=True) as (cid, vid):
            a = T.alloc_ub((1, 16), "int16")
            with T.Scope("V"):
                T.copy(A[vid, 0], a)

    return main


@pytest.mark.parametrize("dump,what", [
    (lambda A: T.dump_tensor(A, 1, 16, (1, 16)),
     r"T\.dump_tensor: argument 'dump_size' must be src's element count \(32 elements"),
    (lambda A: T.dump_tensor(A, 1, 32, (4, 16)), r"argument 'shape_info' must be a shape of dump_size=32 elements"),
    (lambda A: T.dump_tensor(A, 1, 32, "2x16"), r"argument 'shape_info' must be a tuple of positive ints"),
])
def test_bad_dump_and_host_print_arguments_are_errors(dump, what: str) -> None:
    with pytest.raises(tilelang.Error, match=what):
        _dump_kernel(dump)


def test_a_host_printf_of_a_kernel_value_is_an_error() -> None:
    with pytest.raises(tilelang.Error, match=r"test_tla_surf_io\.py:\d+: .*T\.printf outside T\.Kernel prints on the "
                                             r"host: argument args\[0\] must be a Python number"):
        @T.prim_func
        def main(A: T.Tensor((2, 16), "int16")):
            T.printf("%d\n", A[0, 0])
            with T.Kernel(1, is_npu=True) as (cid, vid):
                T.printf("%d\n", cid)


def test_a_host_printf_whose_format_does_not_fit_its_numbers_is_an_error() -> None:
    with pytest.raises(tilelang.Error, match=r"T\.printf\('%d %d\\n'\): the format does not take 1 number\(s\)"):
        @T.prim_func
        def main(A: T.Tensor((2, 16), "int16")):
            with T.Kernel(1, is_npu=True) as (cid, vid):
                T.printf("%d\n", cid)
            T.printf("%d %d\n", 1)


def test_a_kernel_level_dump_of_a_ub_tile_runs_on_the_aivs_only(capfd) -> None:
    """Outside any T.Scope a dump of a UB tile runs where UB is (each AIV), not on the AIC,
    which has no UB (print/elementwise_print.py's `T.dump_tensor(c_ub, ...)`)."""
    @T.prim_func
    def main(A: T.Tensor((2, 16), "int16"), C: T.Tensor((2, 16), "int16")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            a = T.alloc_ub((1, 16), "int16")
            with T.Scope("V"):
                T.copy(A[vid, 0], a)
                T.barrier_all()
            T.dump_tensor(a, 5)
            with T.Scope("V"):
                T.barrier_all()
                T.copy(a, C[vid, 0])

    a = torch.arange(32, dtype=torch.int16).reshape(2, 16)
    c = tilelang.compile(main, out_idx=[-1], check_hazards=True)(a)
    torch.testing.assert_close(c, a)
    dumps = [ln for ln in capfd.readouterr().out.splitlines() if "dump_tensor desc=5" in ln]
    assert sorted(ln.split("]")[0] for ln in dumps) == ["[block 0 AIV0", "[block 0 AIV1"]


# ---- an L0C zero fill by T.Parallel in the cube scope -------------------------------------------------


def grouped_dw(M: int, N: int, K: int, bm: int = 32, bn: int = 32, bk: int = 32, kmax: int = 4):
    """C = A[:k_iters * bk]^T @ B[:k_iters * bk] per [bm, bn] block, k_iters read from GM at run
    time (grouped_gemm/example_grouped_gemm_bwd.py): C_L0 is cleared by an element loop in the
    cube scope first, so a block with no K step stores zeros."""
    n_num = T.ceildiv(N, bn)

    @T.prim_func
    def main(A: T.Tensor((K, M), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16"),
             kit: T.Tensor((1,), "int32")):
        with T.Kernel(T.ceildiv(M, bm) * n_num, is_npu=True) as (cid, _):
            mb = cid // n_num
            nb = cid % n_num
            k_iters = kit[0]
            A_L1 = T.alloc_L1([bk, bm], "float16")
            B_L1 = T.alloc_L1([bk, bn], "float16")
            C_L0 = T.alloc_L0C([bm, bn], "float32")
            with T.Scope("C"):
                for i, j in T.Parallel(bm, bn):
                    C_L0[i, j] = 0
                for k in T.serial(kmax):
                    if k < k_iters:
                        T.copy(A[k * bk, mb * bm], A_L1)
                        T.copy(B[k * bk, nb * bn], B_L1)
                        T.barrier_all()
                        T.gemm_v0(A_L1, B_L1, C_L0, transpose_A=True, init=(k == 0))
                        T.barrier_all()
                T.copy(C_L0, C[mb * bm, nb * bn])

    return main


@pytest.mark.parametrize("M,N,K,k_iters", [(1, 7, 33, 2), (7, 33, 100, 4), (33, 1000, 64, 0), (64, 64, 128, 1)])
def test_an_l0c_zero_fill_in_the_cube_scope_clears_the_accumulator(M: int, N: int, K: int, k_iters: int) -> None:
    torch.manual_seed(M + N + K)
    A, B = torch.randn(K, M).half(), torch.randn(K, N).half()
    kernel = tilelang.compile(grouped_dw(M, N, K), out_idx=[2], check_hazards=True, check_stale=True)
    c = kernel(A, B, torch.tensor([k_iters], dtype=torch.int32))
    rows = min(k_iters * 32, K)
    ref = (A[:rows].double().T @ B[:rows].double()).half()
    torch.testing.assert_close(c, ref, rtol=2e-3, atol=2e-3)


def test_other_element_loops_in_the_cube_scope_stay_an_error() -> None:
    @T.prim_func
    def main(C: T.Tensor((32, 32), "float16")):
        with T.Kernel(1, is_npu=True) as (cid, _):
            C_L0 = T.alloc_L0C([32, 32], "float32")
            with T.Scope("C"):
                for i, j in T.Parallel(32, 32):
                    C_L0[i, j] = 1.0
                T.copy(C_L0, C[0, 0])

    with pytest.raises(tilelang.Error, match=r"T\.Parallel in an expert kernel is lowered only inside "
                                             r"T::Scope\(Core::Vector\)"):
        tilelang.compile(main, out_idx=[0])
