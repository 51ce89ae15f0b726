"""Issue 29, "Natural developer-mode code": the forms a new user writes first, in
TileLang-Ascend syntax, each against a torch reference that lives only here.

Each kernel runs fast and under the hazard checker (the suite sets TL_CHECK_STALE=1, so the
stale-data checker watches every launch too), on tails: rows 1, 7, 33 and rows that are not a
multiple of the block, widths that are not whole 32-byte blocks. Each test says what the code
before the fix did (docs/developer_mode.md, "Natural developer code").
"""

from typing import Callable, List

import pytest
import torch

import tl_ascend as tilelang
import tl_ascend.language as T

ROWS = [1, 7, 33]


def run2(func, make: Callable[[], List[torch.Tensor]]) -> List[List[torch.Tensor]]:
    """The tensors of two launches of `func` on fresh inputs: fast and hazard-checked."""
    kernel = tilelang.compile(func)
    out = []
    for hazards in (False, True):
        args = make()
        kernel.run(*args, check_hazards=hazards)
        out.append(args)
    return out


# --- 1. an fp32 row statistic of fewer than 8 rows in an element loop ---------------------


def centre_rows(M: int, N: int, block_M: int):
    @T.prim_func
    def k(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), threads=2) as cid:
            x = T.alloc_shared((block_M, N), "float32")
            s = T.alloc_fragment((block_M,), "float32")
            y = T.alloc_shared((block_M, N), "float32")
            T.copy(X[cid * block_M, 0], x)
            T.reduce_sum(x, s, dim=-1)
            for i, j in T.Parallel(block_M, N):
                y[i, j] = x[i, j] - s[i] * (1.0 / N)
            T.copy(y, Y[cid * block_M, 0])

    return k


@pytest.mark.parametrize("N", [100, 7168])
@pytest.mark.parametrize("M", ROWS)
def test_row_statistic_of_two_rows_in_an_element_loop(M: int, N: int) -> None:
    # Before: "T.Parallel: cannot vectorise: unaligned innermost run: operand s[i] (region
    # s[0:2]) has rows of 2 x float32 = 8 bytes", while T.tile.row_expand_sub ran.
    x = torch.randn(M, N)
    want = x - x.sum(-1, keepdim=True) * (1.0 / N)
    for _, y in run2(centre_rows(M, N, 2), lambda: [x.clone(), torch.empty(M, N)]):
        torch.testing.assert_close(y, want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("block_M", [2, 8])
def test_a_short_row_statistic_splits_over_both_aivs(block_M: int) -> None:
    # Before: block_M = 2 stayed on AIV 0 with the remark "'x' and 's' share a row label but
    # have 2 and 8 rows" (legalize_copies pads s to 8 floats); now each AIV takes its rows
    # (its copies start at row cid * block_M + vid * block_M / 2). block_M = 8 split before
    # too: it guards that case.
    M, N = 13, 256
    kernel = tilelang.compile(centre_rows(M, N, block_M))
    src = kernel.get_tile_ir()
    assert f"X[cid * {block_M} + vid" in src, src
    x = torch.randn(M, N)
    y = torch.empty(M, N)
    kernel.run(x, y, check_hazards=True)
    torch.testing.assert_close(y, x - x.sum(-1, keepdim=True) * (1.0 / N), rtol=1e-5, atol=1e-4)


def layer_norm_one_pass(M: int, N: int, bM: int):
    @T.prim_func
    def k(X: T.Tensor((M, N), "float32"), W: T.Tensor((N,), "float32"),
          Y: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, bM), threads=2) as cid:
            x = T.alloc_shared((bM, N), "float32")
            w = T.alloc_shared((N,), "float32")
            sq = T.alloc_shared((bM, N), "float32")
            s = T.alloc_fragment((bM,), "float32")
            q = T.alloc_fragment((bM,), "float32")
            mean = T.alloc_fragment((bM,), "float32")
            rstd = T.alloc_fragment((bM,), "float32")
            T.copy(X[cid * bM, 0], x)
            T.copy(W, w)
            T.reduce_sum(x, s, dim=-1)
            for i, j in T.Parallel(bM, N):
                sq[i, j] = x[i, j] * x[i, j]
            T.reduce_sum(sq, q, dim=-1)
            for i in T.Parallel(bM):
                mean[i] = s[i] * (1.0 / N)
                rstd[i] = q[i] * (1.0 / N) - mean[i] * mean[i] + 1e-5
            T.tile.rsqrt(rstd, rstd)
            for i, j in T.Parallel(bM, N):
                x[i, j] = (x[i, j] - mean[i]) * rstd[i] * w[j]
            T.copy(x, Y[cid * bM, 0])

    return k


@pytest.mark.parametrize("N", [100, 7168])
@pytest.mark.parametrize("M", ROWS)
def test_one_pass_layer_norm_with_two_row_statistics(M: int, N: int) -> None:
    # Before: "unaligned innermost run: operand s[i] (region s[0:2]) has rows of 2 x float32 =
    # 8 bytes" (the element loops over the two-row statistics). The 1-D loops over mean and
    # rstd run over their padding, so this kernel stays on AIV 0 with a remark saying so.
    x, w = torch.randn(M, N), torch.randn(N)
    want = torch.nn.functional.layer_norm(x, (N,), eps=1e-5) * w
    for *_, y in run2(layer_norm_one_pass(M, N, 2),
                      lambda: [x.clone(), w.clone(), torch.empty(M, N)]):
        torch.testing.assert_close(y, want, rtol=1e-4, atol=1e-3)


# --- 2. UB temporaries beside a loop's scratch tile --------------------------------------


def scratch_loop(M: int, N: int, bM: int, bN: int):
    @T.prim_func
    def k(X: T.Tensor((M, N), "float32"), G: T.Tensor((M, N), "float32"),
          Y: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, bM)) as cid:
            x = T.alloc_shared((bM, bN), "float32")
            g = T.alloc_shared((bM, bN), "float32")
            y = T.alloc_shared((bM, bN), "float32")
            a = T.alloc_shared((bM, bN), "float32")
            for c in T.serial(T.ceildiv(N, bN)):
                T.copy(X[cid * bM, c * bN], x)
                T.copy(G[cid * bM, c * bN], g)
                for i, j in T.Parallel(bM, bN):
                    a[i, j] = x[i, j] * g[i, j]
                for i, j in T.Parallel(bM, bN):
                    y[i, j] = (a[i, j] + 1.0) * (x[i, j] - 2.0) + (g[i, j] * 3.0) * (x[i, j] + g[i, j])
                T.copy(y, Y[cid * bM, c * bN])

    return k


@pytest.mark.parametrize("M", [1, 7, 16, 33])
def test_a_scratch_tile_written_first_each_iteration_shares_ub(M: int) -> None:
    # Before: "kernel k: UB needs 196,608 bytes, capacity 196,352 on A2": 'a', written before
    # it is read in each iteration, counted as live across the whole loop, beside the two
    # temporaries of the second element loop (6 tiles of 32 KiB).
    N, bM, bN = 2048, 8, 1024
    x, g = torch.randn(M, N), torch.randn(M, N)
    a = x * g
    want = (a + 1) * (x - 2) + (g * 3) * (x + g)
    for *_, y in run2(scratch_loop(M, N, bM, bN),
                      lambda: [x.clone(), g.clone(), torch.empty(M, N)]):
        torch.testing.assert_close(y, want, rtol=1e-5, atol=1e-4)


# --- 3. element loops over a chunk at a column offset ------------------------------------


def chunk_loop(M: int, N: int, off: int, W: int):
    @T.prim_func
    def k(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, 8)) as cid:
            x = T.alloc_shared((8, N), "float32")
            T.copy(X[cid * 8, 0], x)
            for i, j in T.Parallel(8, W):
                x[i, off + j] = (x[i, off + j] + 1.0) * (x[i, off + j] - 0.5)
            T.copy(x, Y[cid * 8, 0])

    return k


@pytest.mark.parametrize("W", [1, 7, 33])
@pytest.mark.parametrize("M", ROWS)
def test_an_element_loop_over_a_chunk_of_any_width(M: int, W: int) -> None:
    # Before: "unaligned innermost run: destination x[i, j + 8] ... has rows of 7 x float32 =
    # 28 bytes" (and the temporary's rows were 28 bytes apart).
    N, off = 48, 8
    x = torch.randn(M, N)
    want = x.clone()
    c = want[:, off:off + W]
    want[:, off:off + W] = (c + 1) * (c - 0.5)
    for _, y in run2(chunk_loop(M, N, off, W), lambda: [x.clone(), torch.empty(M, N)]):
        torch.testing.assert_close(y, want, rtol=1e-6, atol=1e-6)


def test_a_chunk_that_starts_mid_block_names_the_remedy() -> None:
    # A vector instruction cannot start mid-block and neither can a UB copy: the error names
    # the line and says what to do (before: no remedy).
    with pytest.raises(tilelang.Error, match=r"test_natural_forms.py:\d+.*unaligned start.*start "
                       r"the chunk at a multiple of 8 float32 elements.*scalar_fallback"):
        tilelang.compile(chunk_loop(8, 48, 3, 7))


def test_a_chunk_that_starts_mid_block_runs_with_scalar_fallback() -> None:
    # The remedy the error names works (it did before too: a guard, not a regression test).
    M, N, off, W = 7, 48, 3, 7
    func = chunk_loop(M, N, off, W)
    kernel = tilelang.compile(func, pass_configs={"tl.dev.scalar_fallback": True})
    x = torch.randn(M, N)
    y = torch.empty(M, N)
    kernel.run(x, y, check_hazards=True)
    want = x.clone()
    c = want[:, off:off + W]
    want[:, off:off + W] = (c + 1) * (c - 0.5)
    torch.testing.assert_close(y, want, rtol=1e-6, atol=1e-6)


# --- 4. a 3-D element loop broadcasting cos[t, j] across heads (RoPE) ---------------------


def rope(S: int, H: int, D: int, bS: int):
    half = D // 2

    @T.prim_func
    def k(X: T.Tensor((S, H, D), "float32"), C: T.Tensor((S, D), "float32"),
          Sn: T.Tensor((S, D), "float32"), Y: T.Tensor((S, H, D), "float32")):
        with T.Kernel(T.ceildiv(S, bS)) as cid:
            x = T.alloc_shared((bS, H, D), "float32")
            c = T.alloc_shared((bS, D), "float32")
            s = T.alloc_shared((bS, D), "float32")
            y = T.alloc_shared((bS, H, D), "float32")
            T.copy(X[cid * bS, 0, 0], x)
            T.copy(C[cid * bS, 0], c)
            T.copy(Sn[cid * bS, 0], s)
            for t, h, j in T.Parallel(bS, H, half):
                y[t, h, j] = x[t, h, j] * c[t, j] - x[t, h, j + half] * s[t, j]
            for t, h, j in T.Parallel(bS, H, half):
                y[t, h, j + half] = x[t, h, j + half] * c[t, j + half] + x[t, h, j] * s[t, j + half]
            T.copy(y, Y[cid * bS, 0, 0])

    return k


@pytest.mark.parametrize("S", ROWS)
def test_rope_broadcasts_cos_across_heads(S: int) -> None:
    # Before: "unsupported broadcast: c[t, j] uses loop variables (t, j); supported are all of
    # them, all but the innermost (a row broadcast) or the innermost ones"; now the outer
    # variable runs serially around a column broadcast.
    H, D, bS = 4, 64, 4
    x = torch.randn(S, H, D)
    ang = torch.randn(S, D)
    c, s = ang.cos(), ang.sin()
    x1, x2 = x[..., :D // 2], x[..., D // 2:]
    rot = torch.cat([-x2, x1], dim=-1)
    want = x * c[:, None, :] + rot * s[:, None, :]
    for *_, y in run2(rope(S, H, D, bS),
                      lambda: [x.clone(), c.clone(), s.clone(), torch.empty(S, H, D)]):
        torch.testing.assert_close(y, want, rtol=1e-5, atol=1e-5)


# --- 6. T.atomic_add of a tail that is not whole 32-byte rows ----------------------------


def accumulate(M: int, N: int, bM: int):
    @T.prim_func
    def k(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, bM)) as cid:
            x = T.alloc_shared((bM, N), "float32")
            T.copy(X[cid * bM, 0], x)
            for i, j in T.Parallel(bM, N):
                x[i, j] = x[i, j] * 2.0
            T.atomic_add(Y[cid * bM, 0], x)

    return k


@pytest.mark.parametrize("N", [5, 8, 33])
@pytest.mark.parametrize("M", ROWS)
def test_atomic_add_of_a_tail(M: int, N: int) -> None:
    # Before: "tl-ascend internal error at src/ir/ir.cpp:296: ... atomic_add: no bool attribute
    # pad" (legalize_copies asked a clipped atomic_add for its pad flag), and then the verifier
    # demanded whole 32-byte rows, which DataCopyPad under SetAtomicAdd does not need.
    x = torch.randn(M, N)
    y0 = torch.randn(M, N)
    for _, y in run2(accumulate(M, N, 4), lambda: [x.clone(), y0.clone()]):
        torch.testing.assert_close(y, y0 + 2 * x, rtol=1e-6, atol=1e-6)


# --- 5. T.view of a developer tile --------------------------------------------------------


@pytest.mark.parametrize("N", [8, 40, 1000])
def test_a_view_of_a_developer_tile(N: int) -> None:
    # Before: "T.view (view 'pi' of 'p'): 'p' is in shared; a view reinterprets an on-chip
    # buffer (L1, L0A, L0B, L0C or UB) [rule: view-scope]": the verifier ran before
    # infer_scopes placed the tile. The int32 bits of sort pairs, as a top-k reads them (on the
    # virtual NPU the index lanes hold each position as a float: docs/language.md, sort).
    P = (N + 31) // 32 * 32  # sort writes whole groups of 32 pairs

    @T.prim_func
    def k(X: T.Tensor((N,), "float32"), Y: T.Tensor((2 * P,), "int32")):
        with T.Kernel(1) as cid:
            x = T.alloc_shared((N,), "float32")
            p = T.alloc_shared((2 * P,), "float32")
            T.copy(X, x)
            T.sort(p, x, N)
            pi = T.view(p, "int32")
            T.copy(pi, Y)

    x = torch.randn(N)
    want = torch.sort(x, descending=True, stable=True)
    for _, y in run2(k, lambda: [x.clone(), torch.zeros(2 * P, dtype=torch.int32)]):
        pairs = y.view(torch.float32).view(P, 2)[:N]
        assert torch.equal(pairs[:, 0], want.values)
        assert torch.equal(pairs[:, 1].to(torch.int64), want.indices)


# --- 7. T.Persistent with a vector epilogue of a GEMM accumulator -------------------------


def persistent_gemm_bias_relu(M: int, N: int, K: int, bM: int = 32, bN: int = 64, bK: int = 64,
                              workers: int = 3):
    """Y = relu(A @ B + bias): persistent workers over the output tiles, the accumulator
    read by an element loop (bias add and relu), stored in fp16."""
    tm, tn = T.ceildiv(M, bM), T.ceildiv(N, bN)

    @T.prim_func
    def k(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
          bias: T.Tensor((N,), "float32"), Y: T.Tensor((M, N), "float16")):
        with T.Kernel(workers, threads=2) as cid:
            a = T.alloc_shared((bM, bK), "float16")
            b = T.alloc_shared((bK, bN), "float16")
            c = T.alloc_fragment((bM, bN), "float32")
            bias_s = T.alloc_shared((bN,), "float32")
            y = T.alloc_shared((bM, bN), "float16")
            for bx, by in T.Persistent([tm, tn], workers, cid):
                T.clear(c)
                for kk in T.Pipelined(T.ceildiv(K, bK), num_stages=2):
                    T.copy(A[bx * bM, kk * bK], a)
                    T.copy(B[kk * bK, by * bN], b)
                    T.gemm(a, b, c)
                T.copy(bias[by * bN], bias_s)
                for i, j in T.Parallel(bM, bN):
                    y[i, j] = T.max(c[i, j] + bias_s[j], 0.0)
                T.copy(y, Y[bx * bM, by * bN])

    return k


@pytest.mark.parametrize("M,N,K", [(64, 128, 64), (1, 64, 64), (7, 100, 33), (33, 64, 128),
                                   (100, 200, 70)])
def test_persistent_gemm_with_a_bias_relu_epilogue(M: int, N: int, K: int) -> None:
    # Before: an error naming an `if` the user never wrote (T.Persistent's tile guard).
    torch.manual_seed(M + N + K)
    a, b, bias = torch.randn(M, K).half(), torch.randn(K, N).half(), torch.randn(N)
    want = torch.relu(a.float() @ b.float() + bias).half()
    for *_, y in run2(persistent_gemm_bias_relu(M, N, K),
                      lambda: [a.clone(), b.clone(), bias.clone(), torch.empty(M, N).half()]):
        torch.testing.assert_close(y.float(), want.float(), rtol=1e-2, atol=1e-2)
