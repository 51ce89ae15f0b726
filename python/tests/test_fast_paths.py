"""The virtual NPU's batched fast paths give the plain interpreter's bytes (issue 29's large shapes,
issue 31's "every fast path is checked bit for bit against the plain interpreter").

Each kernel runs twice on the same inputs: with TL_NPU_PLAIN_PATHS=1 (the element-by-element paths:
`T.mma` reading each operand element through its layout, L1 -> L0A/L0B loads moving one element or
one fractal row per call, GM -> L1 loads into one stage of a multi-buffered L1 buffer run by run) and
without it (the batched paths of src/npu/exec_cube.cpp and exec_move.cpp); the outputs must be equal
bit for bit, and close to a torch reference. Shapes include tails (1, 7, 33) and sizes that are no
multiple of the block; dtypes fp16, bf16 and fp32 (whose L0B fractals are 8 x 16) and int8.
This is a guard, not a bug's regression test: before the fast paths existed there was only the
plain path, so it passed then too. What the fast paths change is speed: a GEMM 8192x1024x8192
written this way (TileLang-Ascend's example_gemm_intrinsic_persistent.py) took 352 s in its
kernel call on a loaded 2-core machine, 17.7 s after (bench/large_scripts.py, docs/virtual_npu.md).
"""


import os

import pytest
import torch

import tl_ascend as tilelang
import tl_ascend.language as T


@tilelang.jit(out_idx=[-1], target="ascendc")
def staged_mma_gemm(M: int, N: int, K: int, block_M: int, block_N: int, block_K: int, K_L1: int,
                    dtype: str = "float16", accum_dtype: str = "float"):
    """An expert GEMM on T.mma with two-stage L1 and L0 buffers (our own kernel, in the form of
    TileLang-Ascend's gemm intrinsic examples): GM -> one stage of L1, L1 -> one stage of L0A/L0B."""
    m_num = T.ceildiv(M, block_M)
    n_num = T.ceildiv(N, block_N)
    loop_k = T.ceildiv(K, K_L1)
    loop_kk = K_L1 // block_K

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), accum_dtype)):
        with T.Kernel(m_num * n_num, is_npu=True) as (cid, _):
            A_L1 = T.alloc_L1((2, block_M, K_L1), dtype)
            B_L1 = T.alloc_L1((2, K_L1, block_N), dtype)
            A_L0 = T.alloc_L0A((2, block_M, block_K), dtype)
            B_L0 = T.alloc_L0B((2, block_K, block_N), dtype)
            C_L0 = T.alloc_L0C((block_M, block_N), accum_dtype)
            with T.Scope("C"):
                bx = cid // n_num
                by = cid % n_num
                for k in T.serial(loop_k):
                    T.barrier_all()
                    T.copy(A[bx * block_M, k * K_L1], A_L1[k % 2, :, :])
                    T.copy(B[k * K_L1, by * block_N], B_L1[k % 2, :, :])
                    T.barrier_all()
                    for kk in T.serial(loop_kk):
                        T.copy(A_L1[k % 2, 0, kk * block_K], A_L0[kk % 2, :, :])
                        T.copy(B_L1[k % 2, kk * block_K, 0], B_L0[kk % 2, :, :])
                        T.barrier_all()
                        T.mma(A_L0[kk % 2, :, :], B_L0[kk % 2, :, :], C_L0, init=T.And(k == 0, kk == 0))
                        T.barrier_all()
                T.copy(C_L0, C[bx * block_M, by * block_N])

    return main


def _inputs(M: int, N: int, K: int, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(M * 131 + N * 7 + K)
    if dtype == torch.int8:
        return (torch.randint(-128, 128, (M, K), generator=g, dtype=torch.int8),
                torch.randint(-128, 128, (K, N), generator=g, dtype=torch.int8))
    return (torch.randn(M, K, generator=g).to(dtype), torch.randn(K, N, generator=g).to(dtype))


def _both(kernel, a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    fast = kernel(a, b)
    os.environ["TL_NPU_PLAIN_PATHS"] = "1"
    try:
        plain = kernel(a, b)
    finally:
        del os.environ["TL_NPU_PLAIN_PATHS"]
    return fast, plain


CASES = [
    # M, N, K, block_M, block_N, block_K, K_L1
    (1, 7, 33, 16, 16, 16, 32),
    (7, 33, 64, 16, 32, 16, 32),
    (33, 1, 96, 32, 16, 32, 64),
    (64, 48, 128, 32, 32, 32, 64),
    (100, 80, 256, 64, 64, 32, 128),
]
DTYPES = [("float16", torch.float16, "float"), ("bfloat16", torch.bfloat16, "float"),
          ("float32", torch.float32, "float"), ("int8", torch.int8, "int32")]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("dt", DTYPES, ids=[d[0] for d in DTYPES])
def test_mma_gemm_fast_paths_match_the_plain_interpreter_bit_for_bit(case: tuple[int, ...], dt: tuple) -> None:
    M, N, K, bM, bN, bK, kl1 = case
    name, tdtype, acc = dt
    if tdtype == torch.int8:  # int8 fractals are 32 elements wide: block_K and K_L1 whole fractals
        bK, kl1 = 32, max(kl1, 32)
    kernel = staged_mma_gemm(M, N, K, bM, bN, bK, kl1, name, acc)
    a, b = _inputs(M, N, K, tdtype)
    fast, plain = _both(kernel, a, b)
    assert fast.dtype == plain.dtype
    assert torch.equal(fast.view(torch.int32), plain.view(torch.int32)), "fast and plain paths differ"
    if tdtype == torch.int8:
        ref = a.to(torch.int64) @ b.to(torch.int64)
        assert torch.equal(fast.to(torch.int64), ref)
    else:
        torch.testing.assert_close(fast, a.float() @ b.float(), rtol=1e-3, atol=1e-3)


# ---- issue 31: the transposing L1 -> L0 load and the batched fixpipe / fractal copies --------------

def _specials(shape: tuple[int, ...], dtype: torch.dtype, seed: int) -> torch.Tensor:
    """Random values of `dtype` with 1 in 8 replaced by NaN, +-inf, -0, +0 or a subnormal of the dtype."""
    g = torch.Generator().manual_seed(seed)
    x = (torch.rand(shape, generator=g) * 4 - 2).to(dtype)
    tiny = torch.finfo(dtype).tiny
    pool = torch.tensor([float("nan"), float("inf"), -float("inf"), -0.0, 0.0, tiny / 4, -tiny / 8, tiny],
                        dtype=torch.float32).to(dtype)
    pick = torch.randint(0, 8, shape, generator=g)
    which = torch.randint(0, len(pool), shape, generator=g)
    return torch.where(pick == 0, pool[which], x)


def _same_bits(fast: torch.Tensor, plain: torch.Tensor) -> None:
    """Equal bit for bit, NaN payloads included (a NaN keeps its sign and top payload bits on
    every path: include/tl/npu/numerics.h; the plain paths used to give the canonical NaN,
    0xFFC0 in bfloat16, where the fast ones kept the input's payload)."""
    assert fast.dtype == plain.dtype and fast.shape == plain.shape
    view = {1: torch.uint8, 2: torch.int16, 4: torch.int32}[fast.element_size()]
    differ = fast.contiguous().view(view) != plain.contiguous().view(view)
    diff = differ.sum().item()
    assert diff == 0, f"fast and plain paths differ in {diff} elements"


def _plain(fn):
    os.environ["TL_NPU_PLAIN_PATHS"] = "1"
    try:
        return fn()
    finally:
        del os.environ["TL_NPU_PLAIN_PATHS"]


@pytest.mark.parametrize("S", [1, 33, 100, 130])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
@pytest.mark.parametrize("specials", [False, True], ids=["finite", "specials"])
def test_flash_attention_dev_fast_paths_match_the_plain_interpreter(S: int, dtype: torch.dtype,
                                                                    specials: bool) -> None:
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
    from flash_attention_dev import flash_attention, ref_program

    name = "float16" if dtype == torch.float16 else "bfloat16"
    kern = flash_attention(1, 2, S, 64, dtype=name)
    if specials:
        q, k, v = (_specials((1, 2, S, 64), dtype, 7 * S + i) for i in range(3))
    else:
        g = torch.Generator().manual_seed(S)
        q, k, v = (torch.randn(1, 2, S, 64, generator=g).to(dtype) for _ in range(3))
    fast = kern(q, k, v)
    _same_bits(fast, _plain(lambda: kern(q, k, v)))
    if specials and S > 1:
        assert fast.isnan().any(), "the NaN inputs must reach the output"
    if not specials:
        torch.testing.assert_close(fast.float(), ref_program(q, k, v).float(), rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("mnk", [(1, 7, 33), (33, 100, 7), (130, 33, 300)])
@pytest.mark.parametrize("trans_b", [False, True])
@pytest.mark.parametrize("out", ["float16", "bfloat16", "float32"])
def test_library_gemm_fast_paths_match_the_plain_interpreter(mnk: tuple[int, int, int], trans_b: bool,
                                                             out: str) -> None:
    """The fixpipe's saturating fp32 -> fp16 / bf16 conversion through the batched fractal copy."""
    import cann_ops_tilelang as ops

    M, N, K = mnk
    a = _specials((M, K), torch.float16, M + K) * 300  # products past fp16's range saturate
    b = _specials((N, K) if trans_b else (K, N), torch.float16, N + 3 * K) * 300
    fast = ops.gemm(a, b, trans_b=trans_b, out_dtype=out)
    _same_bits(fast, _plain(lambda: ops.gemm(a, b, trans_b=trans_b, out_dtype=out)))


@pytest.mark.parametrize("rows", [1, 7, 33])
@pytest.mark.parametrize("op", ["rms_norm", "softmax", "layer_norm", "swiglu"])
def test_library_vector_ops_fast_paths_match_the_plain_interpreter(rows: int, op: str) -> None:
    import cann_ops_tilelang as ops

    x = _specials((rows, 1024), torch.bfloat16, rows)
    w = _specials((1024,), torch.bfloat16, rows + 1)
    run = {"rms_norm": lambda: ops.rms_norm(x, w).y, "softmax": lambda: ops.softmax(x),
           "layer_norm": lambda: ops.layer_norm(x, w, w).y, "swiglu": lambda: ops.swiglu(x)}[op]
    _same_bits(run(), _plain(run))
