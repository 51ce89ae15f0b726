"""T.reinterpretcast, TileLang-Ascend's view of a UB tile's bytes as another dtype (issue 29).

TileLang-Ascend lowers `T.reinterpretcast(dst, src, "uint32_t")` to Ascend C's
`LocalTensor<uint32_t> dst = src.ReinterpretCast<uint32_t>();`: from there on `dst` names src's
bytes (rope.py and rms_rope_fused.py read gather offsets so). tl-ascend rebinds the name to a view
of src (_reinterpret.py); the bitwise ops then work on the integer view. Before this change every
use was "T.reinterpretcast is not in tl-ascend: not supported yet".
References are torch's: clearing the sign bit is torch.abs, a gather by reversed offsets is
flip; block counts on the tails 1, 7, 33, 1000 (two rows each, one per AIV).
"""

import runpy

import pytest
import torch

import tl_ascend as tilelang
import tl_ascend.language as T

TAILS = (1, 7, 33, 1000)
AUTO = {tilelang.PassConfigKey.TL_ASCEND_AUTO_CV_COMBINE: True,
        tilelang.PassConfigKey.TL_ASCEND_AUTO_SYNC: True,
        tilelang.PassConfigKey.TL_ASCEND_MEMORY_PLANNING: True}
# (float dtype, its same-width integer dtype, Ascend C names of both, the sign-clearing mask).
# The chip's And / Or / Not take 16-bit elements (T.tile.bitwise_* on A2: int16, uint16).
WIDTHS = {"float16": ("uint16", "uint16_t", "half", 0x7FFF),
          "bfloat16": ("int16", "int16_t", "bfloat16_t", 0x7FFF)}


@tilelang.jit(out_idx=[1], pass_configs=AUTO, check_hazards=True)
def abs_by_bits(blocks: int, dtype: str, N: int = 64):
    udtype, ctype, back, mask = WIDTHS[dtype]
    M = 2 * blocks

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(blocks, is_npu=True) as (cid, vid):
            r = cid * 2 + vid
            x = T.alloc_ub((1, N), dtype)
            bits = T.alloc_ub((1, N), udtype)
            m = T.alloc_ub((1, N), udtype)
            out = T.alloc_ub((1, N), dtype)
            T.copy(X[r, 0], x)
            T.reinterpretcast(bits, x, ctype)  # bits: x's bytes from here on
            T.tile.fill(m, mask)
            T.tile.bitwise_and(bits, bits, m)  # writes x's memory
            T.reinterpretcast(out, bits, back)
            T.copy(out, Y[r, 0])

    return main


@pytest.mark.parametrize("dtype", sorted(WIDTHS))
@pytest.mark.parametrize("blocks", TAILS)
def test_reinterpretcast_views_the_bytes_and_bitwise_ops_work_on_them(blocks: int, dtype: str) -> None:
    x = torch.randn(2 * blocks, 64).to(getattr(torch, dtype))
    torch.testing.assert_close(abs_by_bits(blocks, dtype)(x), x.abs(), rtol=0, atol=0)


@tilelang.jit(out_idx=[1], pass_configs=AUTO, check_hazards=True)
def reverse_rows(blocks: int, N: int = 64):
    """rope.py's use: gather offsets computed in int32, read as the uint32 T.tile.gather takes."""
    M = 2 * blocks

    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(blocks, is_npu=True) as (cid, vid):
            r = cid * 2 + vid
            x = T.alloc_ub((1, N), "float32")
            y = T.alloc_ub((1, N), "float32")
            idx = T.alloc_ub((1, N), "int32")
            off = T.alloc_ub((1, N), "uint32")
            T.copy(X[r, 0], x)
            T.tile.createvecindex(idx, 0)
            T.tile.mul(idx, idx, -4)
            T.tile.add(idx, idx, (N - 1) * 4)  # byte offset of element N - 1 - j
            T.reinterpretcast(off, idx, "uint32_t")
            T.tile.gather(y, x, off, 0)
            T.copy(y, Y[r, 0])

    return main


@pytest.mark.parametrize("blocks", TAILS)
def test_int32_offsets_read_as_uint32_drive_a_gather(blocks: int) -> None:
    x = torch.randn(2 * blocks, 64)
    torch.testing.assert_close(reverse_rows(blocks)(x), x.flip(-1))


@pytest.mark.parametrize("call,why", [
    ("T.reinterpretcast(u16, x, 'uint16_t')", r"'x' \(float32\) read as uint16: elements of another width are not "
                                               r"supported yet"),
    ("T.reinterpretcast(u32, x, 'int32_t')", r"'casttype' 'int32_t' is int32, but 'dst' \('u32'\) is uint32"),
    ("T.reinterpretcast(u32_row, x, 'uint32_t')", r"'dst' \('u32_row', shape \[1, 64\]\) must have the shape of "
                                                   r"'src' \('x', shape \[8, 64\]\)"),
    ("T.reinterpretcast(u32, x, 'uint33_t')", r"argument 'casttype' must be one of half, .*got 'uint33_t'"),
    ("y = T.reinterpretcast(u32, x, 'uint32_t')", r"T.reinterpretcast\(dst, src, casttype\) is a statement of its "
                                                   r"own"),
])
def test_what_reinterpretcast_cannot_do_is_an_error_at_its_line(call: str, why: str, tmp_path) -> None:
    src = f'''import tl_ascend.language as T
@T.prim_func
def main(X: T.Tensor((8, 64), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        x = T.alloc_ub((8, 64), "float32")
        u16 = T.alloc_ub((8, 64), "uint16")
        u32 = T.alloc_ub((8, 64), "uint32")
        u32_row = T.alloc_ub((1, 64), "uint32")
        T.copy(X, x)
        {call}
'''
    with pytest.raises(tilelang.Error, match=r"reinterpret_case.py:10: .*" + why):
        (tmp_path / "reinterpret_case.py").write_text(src)
        runpy.run_path(str(tmp_path / "reinterpret_case.py"))
