"""TileLang-Ascend's placement and scheduling hints (issue 29, "Surface"), in its own syntax:
T.annotate_address, T.annotate_layout with tilelang.intrinsics' make_zn_layout / make_nz_layout,
T.use_swizzle, tilelang.utils.target.determine_platform, and torch_npu.npu_fusion_attention.

Before this change T.annotate_address, T.annotate_layout and T.use_swizzle were each an Error
("T.annotate_address is not in tl-ascend: not supported ..."), `import tilelang.intrinsics` and
`tilelang.utils` an UnsupportedModuleError, and torch_npu.npu_fusion_attention an Error ("no CPU
version of this torch_npu operator yet"). Two pinned buffers (address= on T.alloc_*) at
overlapping bytes were never checked against each other: the kernel compiled and computed a
wrong figure (test_overlapping_live_pins_are_an_error_naming_both says which). The references
(torch, and a Python replica of Catlass's GemmIdentityBlockSwizzle) live only here.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest
import torch

import tl_ascend as tilelang
import tl_ascend.language as T
from tl_ascend.intrinsics import make_nz_layout, make_zn_layout
from tl_ascend.torch_npu import npu_fusion_attention
from tl_ascend.utils.target import determine_platform, determine_target

TAILS = (1, 7, 33, 1000, 4097)
BLOCK = 64  # float32 elements per UB tile (256 B)


# ---- T.annotate_address ----------------------------------------------------------------------------


def pinned_affine(a_at: int, b_at: int, c_at: int, a_addr_kw: int = -1) -> Any:
    """Y = (X + 1) * 2 through three pinned UB tiles: a = X, b = a + 1, c = b * 2. c may take a's
    bytes: a's last access (the add) and c's first (the mul) are on the in-order V pipe."""
    N = T.symbolic("N")

    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, BLOCK), is_npu=True) as (cid, vid):
            with T.Scope("V"):
                a = T.alloc_ub((BLOCK,), "float32", address=a_addr_kw)
                b = T.alloc_ub((BLOCK,), "float32")
                c = T.alloc_ub((BLOCK,), "float32")
                T.annotate_address({a: a_at, b: b_at, c: c_at})
                if vid == 0:
                    T.copy(X[cid * BLOCK], a)
                    T.set_flag("MTE2", "V", 0)
                    T.wait_flag("MTE2", "V", 0)
                    T.tile.add(b, a, 1.0)
                    T.pipe_barrier("V")
                    T.tile.mul(c, b, 2.0)
                    T.set_flag("V", "MTE3", 0)
                    T.wait_flag("V", "MTE3", 0)
                    T.copy(c, Y[cid * BLOCK])

    return main


@pytest.mark.parametrize("n", TAILS)
@pytest.mark.parametrize("at", [(0, 256, 512), (1024, 0, 1024), (65536, 256, 65536)])
def test_annotated_addresses_are_used_and_match_torch(n: int, at: tuple[int, int, int]) -> None:
    # Before: "T.annotate_address is not in tl-ascend". (1024, 0, 1024): c reuses a's bytes,
    # which the program orders (same V pipe), so it is accepted.
    kernel = tilelang.compile(pinned_affine(*at), out_idx=[-1])
    src = kernel.get_tile_ir()
    for name, addr in zip("abc", at):
        assert f"address={addr}" in src.split(f"{name} = T.alloc_ub", 1)[1].split("\n", 1)[0], src
    x = torch.randn(n)
    torch.testing.assert_close(kernel(x), (x + 1) * 2)


def clobber(annotate: bool) -> Any:
    """Y = 2 * (X + 1) + X, with c pinned on a's bytes while a is still to be read (the last add)."""
    N = T.symbolic("N")

    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, BLOCK), is_npu=True) as (cid, vid):
            with T.Scope("V"):
                a = T.alloc_ub((BLOCK,), "float32", address=-1 if annotate else 0)
                b = T.alloc_ub((BLOCK,), "float32", address=-1 if annotate else 256)
                c = T.alloc_ub((BLOCK,), "float32", address=-1 if annotate else 0)
                if annotate:
                    T.annotate_address({a: 0, b: 256, c: 0})
                if vid == 0:
                    T.copy(X[cid * BLOCK], a)
                    T.set_flag("MTE2", "V", 0)
                    T.wait_flag("MTE2", "V", 0)
                    T.tile.add(b, a, 1.0)
                    T.pipe_barrier("V")
                    T.tile.mul(c, b, 2.0)
                    T.pipe_barrier("V")
                    T.tile.add(b, c, a)
                    T.set_flag("V", "MTE3", 0)
                    T.wait_flag("V", "MTE3", 0)
                    T.copy(b, Y[cid * BLOCK])

    return main


@pytest.mark.parametrize("annotate", [False, True])
def test_overlapping_live_pins_are_an_error_naming_both(annotate: bool) -> None:
    # Before (address= on the allocations): nothing compared two pinned buffers, the kernel
    # compiled, and c = b * 2 overwrote a before the last add read it: x = 1 gave 8.0 where
    # 2 * (x + 1) + x = 5.0. (The annotate=True form was "T.annotate_address is not in tl-ascend".)
    with pytest.raises(tilelang.Error) as e:
        tilelang.compile(clobber(annotate), out_idx=[-1])
    msg = str(e.value)
    assert "explicit addresses (address= or T.annotate_address) of two UB buffers overlap" in msg
    assert "'a' (declared at " in msg and "'c' (declared at " in msg and "both are live at the same time" in msg
    assert "test_tla_annot.py:" in msg


def unordered_reuse() -> Any:
    """c takes a's bytes, but c is written by an MTE2 copy that nothing orders after the V add that
    last reads a: on the chip the copy may overwrite a before the add reads it."""
    @T.prim_func
    def main(X: T.Tensor((BLOCK,), "float32"), Z: T.Tensor((BLOCK,), "float32"), Y: T.Tensor((BLOCK,), "float32")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            with T.Scope("V"):
                a = T.alloc_ub((BLOCK,), "float32")
                b = T.alloc_ub((BLOCK,), "float32")
                c = T.alloc_ub((BLOCK,), "float32")
                T.annotate_address({a: 0, b: 256, c: 0})
                if vid == 0:
                    T.copy(X[0], a)
                    T.set_flag("MTE2", "V", 0)
                    T.wait_flag("MTE2", "V", 0)
                    T.tile.add(b, a, 1.0)
                    T.copy(Z[0], c)
                    T.set_flag("MTE2", "V", 1)
                    T.wait_flag("MTE2", "V", 1)
                    T.tile.add(b, b, c)
                    T.set_flag("V", "MTE3", 0)
                    T.wait_flag("V", "MTE3", 0)
                    T.copy(b, Y[0])

    return main


def test_an_unordered_reuse_of_pinned_bytes_is_a_race_named() -> None:
    # Before: "T.annotate_address is not in tl-ascend"; with address= on the allocations (a, c at 0)
    # the kernel compiled and ran without a word (12.0 for x = 1, z = 10 in the simulator's
    # order), while on the chip the MTE2 copy into c may overwrite a before the V add reads it.
    with pytest.raises(tilelang.Error) as e:
        tilelang.compile(unordered_reuse(), out_idx=[-1])
    msg = str(e.value)
    assert "'a'" in msg and "'c'" in msg and "nothing orders 'c' after 'a'" in msg


def bad_annotation(kind: str) -> Any:
    @T.prim_func
    def main(X: T.Tensor((BLOCK,), "float32")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            ws = T.alloc_workspace((BLOCK,), "float32")
            with T.Scope("V"):
                a = T.alloc_ub((BLOCK,), "float32", address=0)
                b = T.alloc_ub((BLOCK,), "float32")
                if kind == "gm":
                    T.annotate_address({ws: 0})
                elif kind == "tensor":
                    T.annotate_address({X: 0})
                elif kind == "negative":
                    T.annotate_address({b: -32})
                elif kind == "float":
                    T.annotate_address({b: 256.0})
                elif kind == "repin":
                    T.annotate_address({a: 512})
                elif kind == "not_a_dict":
                    T.annotate_address([(b, 0)])
                elif kind == "beyond":
                    T.annotate_address({b: 196608})
                T.copy(X[0], a)
                T.copy(X[0], b)

    return main


@pytest.mark.parametrize("kind,what", [
    ("gm", r"'ws' is a global buffer; only L1, L0A, L0B, L0C and UB buffers"),
    ("tensor", r"'X' is a global buffer"),
    ("negative", r"the address of 'b' is -32, expected a byte offset >= 0"),
    ("float", r"the address of 'b' must be a Python int \(a byte offset\), got float 256.0"),
    ("repin", r"'a' is already at address 0 \(address= or an earlier annotation\), this annotation gives 512"),
    ("not_a_dict", r"argument 'address_map' must be a dict"),
    ("beyond", r"'b' occupies bytes \[196608, 196864\) but"),
])
def test_bad_address_annotations_are_errors(kind: str, what: str) -> None:
    with pytest.raises(tilelang.Error, match=what) as e:
        tilelang.compile(bad_annotation(kind))
    assert "test_tla_annot.py:" in str(e.value)


# ---- T.annotate_layout, tilelang.intrinsics ---------------------------------------------------------


def gemm_abt(M: int, N: int, K: int, layouts: str = "zn_nz") -> Any:
    """C = A @ B^T on the cube, with the L1 tiles annotated as TileLang-Ascend's fa_opt scripts do
    (A zN; B, read by the transposed copy, nZ)."""
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((N, K), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            a_l1 = T.alloc_L1((M, K), "float16")
            b_l1 = T.alloc_L1((N, K), "float16")
            c_l0 = T.alloc_L0C((M, N), "float32")
            c_ub = T.alloc_ub((M, N), "float32")
            if layouts == "zn_nz":
                T.annotate_layout({a_l1: make_zn_layout(a_l1), b_l1: make_nz_layout(b_l1)})
            elif layouts == "ub":
                T.annotate_layout({c_ub: make_zn_layout(c_ub)})
            elif layouts == "other":
                T.annotate_layout({a_l1: make_zn_layout(b_l1)})
            elif layouts == "not_a_layout":
                T.annotate_layout({a_l1: "zN"})
            with T.Scope("C"):
                T.copy(A, a_l1)
                T.copy(B, b_l1)
                T.barrier_all()
                T.gemm_v0(a_l1, b_l1, c_l0, transpose_B=True, init=True)
                T.barrier_all()
                T.copy(c_l0, C)

    if layouts != "one_dim":
        return main

    @T.prim_func
    def one(X: T.Tensor((16,), "float16")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            x1 = T.alloc_L1((16,), "float16")
            T.annotate_layout({x1: make_zn_layout(x1)})
            with T.Scope("C"):
                T.copy(X, x1)

    return one


@pytest.mark.parametrize("mnk", [(16, 16, 16), (32, 48, 64), (64, 16, 128)])
def test_zn_and_nz_layouts_of_l1_tiles_are_what_copy_does(mnk: tuple[int, int, int]) -> None:
    # Before: `from tilelang.intrinsics import make_zn_layout` was an UnsupportedModuleError and
    # T.annotate_layout an Error.
    M, N, K = mnk
    a = torch.randn(M, K).half()
    b = torch.randn(N, K).half()
    c = tilelang.compile(gemm_abt(M, N, K), out_idx=[-1])(a, b)
    torch.testing.assert_close(c, a.float() @ b.float().T, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("layouts,what", [
    ("ub", r"'c_ub' is a UB buffer; tl-ascend honours a layout annotation only on an L1 tile"),
    ("other", r"the layout given for 'a_l1' was made for 'b_l1'"),
    ("not_a_layout", r"the layout of 'a_l1' must be make_zn_layout\(a_l1\) or make_nz_layout\(a_l1\)"),
    ("one_dim", r"make_zn_layout: 'x1' has 1 dimension\(s\); a fractal layout needs at least 2"),
])
def test_layouts_tl_ascend_cannot_honour_are_errors(layouts: str, what: str) -> None:
    with pytest.raises(tilelang.Error, match=what):
        tilelang.compile(gemm_abt(16, 16, 16, layouts), out_idx=[-1])


def test_make_col_major_layout_is_named_as_unsupported() -> None:
    import tl_ascend.intrinsics as intrinsics

    with pytest.raises(tilelang.Error, match=r"make_col_major_layout is not in tl-ascend: not supported"):
        intrinsics.make_col_major_layout  # noqa: B018


# ---- T.use_swizzle -----------------------------------------------------------------------------------


def swizzle_reference(pid: int, rows: int, cols: int, off: int, direction: int) -> int:
    """Catlass GemmIdentityBlockSwizzle<off, direction>::GetBlockCoord, flattened row * cols + col
    (TileLang-Ascend's thread_block_swizzle), written out independently of the implementation."""
    idx = pid % (rows * cols)
    if direction == 0:
        band_count = (rows + off - 1) // off
        band, pos = divmod(idx, off * cols)
        height = rows - off * band if band == band_count - 1 else off
        r, c = band * off + pos % height, pos // height
        if band % 2:
            c = cols - c - 1
    else:
        band_count = (cols + off - 1) // off
        band, pos = divmod(idx, off * rows)
        width = cols - off * band if band == band_count - 1 else off
        r, c = pos // width, band * off + pos % width
        if band % 2:
            r = rows - r - 1
    return r * cols + c


GRIDS = [(1, 1), (1, 7), (7, 1), (3, 11), (8, 4), (5, 5)]


@pytest.mark.parametrize("rows,cols", GRIDS)
@pytest.mark.parametrize("off,direction", [(1, 0), (3, 0), (2, 1), (4, 1)])
def test_use_swizzle_of_python_ints_is_catlass_order(rows: int, cols: int, off: int, direction: int) -> None:
    bm, bn = 16, 32
    got = [T.use_swizzle(p, rows * bm, cols * bn, 64, bm, bn, off=off, dir=direction) for p in range(2 * rows * cols)]
    assert got == [swizzle_reference(p, rows, cols, off, direction) for p in range(2 * rows * cols)]
    assert sorted(got[: rows * cols]) == list(range(rows * cols))  # a permutation of the tiles


def swizzled_gather(rows: int, cols: int, off: int, direction: int, cores: int) -> Any:
    """Y[t] = X[use_swizzle(t)] per 64-element tile t, each of `cores` blocks looping over
    t = i * cores + cid as the GEMM example does (`cid = T.use_swizzle(i * core_num + cid, ...)`)."""
    tiles = rows * cols
    rounds = -(-tiles // cores)

    @T.prim_func
    def main(X: T.Tensor((tiles * BLOCK,), "float32"), Y: T.Tensor((tiles * BLOCK,), "float32")):
        with T.Kernel(cores, is_npu=True) as (cid, vid):
            with T.Scope("V"):
                x = T.alloc_ub((BLOCK,), "float32")
                for i in T.serial(rounds):
                    t = i * cores + cid
                    src = T.use_swizzle(t, rows * 16, cols * 16, 16, 16, 16, off=off, dir=direction)
                    if vid == 0 and t < tiles:
                        T.copy(X[src * BLOCK], x)
                        T.set_flag("MTE2", "MTE3", 0)
                        T.wait_flag("MTE2", "MTE3", 0)
                        T.copy(x, Y[t * BLOCK])
                        T.set_flag("MTE3", "MTE2", 0)
                        T.wait_flag("MTE3", "MTE2", 0)

    return main


@pytest.mark.parametrize("rows,cols,off,direction,cores", [
    (1, 1, 1, 0, 1), (3, 11, 3, 0, 4), (8, 4, 3, 0, 5), (7, 5, 2, 1, 3), (2, 9, 4, 1, 7)])
def test_use_swizzle_in_a_kernel_matches_the_reference(rows: int, cols: int, off: int, direction: int,
                                                       cores: int) -> None:
    # Before: "T.use_swizzle is not in tl-ascend: not supported yet".
    tiles = rows * cols
    x = torch.randn(tiles * BLOCK)
    y = tilelang.compile(swizzled_gather(rows, cols, off, direction, cores), out_idx=[-1])(x)
    want = torch.cat([x[swizzle_reference(t, rows, cols, off, direction) * BLOCK:][:BLOCK] for t in range(tiles)])
    torch.testing.assert_close(y, want)


@pytest.mark.parametrize("args,kw,what", [
    ((0, 100, 64, 64, 16, 16), {}, r"m \(100\) and n \(64\) must be multiples of block_m \(16\)"),
    ((0, 64, 64, 64, 16, 16), {"off": 0}, r"argument 'off' must be a Python int >= 1"),
    ((0, 64, 64, 64, 16, 16), {"dir": 2}, r"argument 'dir' must be 0 \(bands of tile rows\) or 1"),
    ((0.5, 64, 64, 64, 16, 16), {}, r"argument 'cid' must be an int or an integer kernel expression"),
    ((0, 64, "64", 64, 16, 16), {}, r"argument 'n' must be a Python int >= 1"),
])
def test_bad_use_swizzle_arguments_are_errors(args: tuple, kw: dict, what: str) -> None:
    with pytest.raises(tilelang.Error, match=what):
        T.use_swizzle(*args, **kw)


# ---- tilelang.utils.target -------------------------------------------------------------------------


def test_determine_platform_is_the_virtual_npus_target(monkeypatch) -> None:
    # Before: `from tilelang.utils.target import determine_platform` was an UnsupportedModuleError.
    monkeypatch.delenv("TL_PLATFORM", raising=False)
    assert determine_platform() == "A2"
    assert determine_platform("A5") == "A5"
    monkeypatch.setenv("TL_PLATFORM", "A3")
    assert determine_platform() == "A3"
    assert determine_target("ascendc") == determine_target("pto") == "llvm --keys=ascend"
    with pytest.raises(tilelang.Error, match=r"target 'cuda' is not an Ascend target"):
        determine_target("cuda")
    with pytest.raises(tilelang.Error, match=r"argument 'platform' must be a str"):
        determine_platform(3)


def test_tilelang_intrinsics_and_utils_import_through_the_alias(tmp_path) -> None:
    script = tmp_path / "s.py"
    script.write_text("from tilelang.intrinsics import make_zn_layout, make_nz_layout\n"
                      "from tilelang.utils.target import determine_platform\n"
                      "import tilelang.utils\n"
                      "print(determine_platform(), tilelang.utils.target.determine_platform is determine_platform)\n")
    env = dict(os.environ)
    env.pop("TL_PLATFORM", None)
    r = subprocess.run([sys.executable, "-m", "tl_ascend.run", str(script)], capture_output=True, text=True,
                       timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "A2 True"


# ---- torch_npu.npu_fusion_attention -------------------------------------------------------------------


def sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float, mask: torch.Tensor | None = None) -> torch.Tensor:
    """[B, N, S, D] reference: torch's scaled_dot_product_attention in float32, GQA by repetition."""
    rep = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
    return torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), scale=scale,
                                                            attn_mask=None if mask is None else ~mask)


@pytest.mark.parametrize("s", (1, 7, 33, 130))
@pytest.mark.parametrize("layout", ["BNSD", "BSND", "BSH", "SBH"])
def test_npu_fusion_attention_matches_sdpa(s: int, layout: str) -> None:
    # Before: "torch_npu.npu_fusion_attention is not in tl-ascend: tl_ascend.torch_npu has no CPU version".
    torch.manual_seed(s)
    b, n, kvn, d = 2, 4, 2, 32
    q, k, v = (torch.randn(b, h, s, d).half() for h in (n, kvn, kvn))
    to = {"BNSD": lambda x: x, "BSND": lambda x: x.transpose(1, 2).contiguous(),
          "BSH": lambda x: x.transpose(1, 2).reshape(b, s, -1),
          "SBH": lambda x: x.transpose(1, 2).reshape(b, s, -1).transpose(0, 1).contiguous()}[layout]
    out, mx, sm, _, seed, offset, numels = npu_fusion_attention(to(q), to(k), to(v), n, input_layout=layout,
                                                                scale=d ** -0.5, pre_tockens=65535,
                                                                next_tockens=65535)
    want = sdpa(q, k, v, d ** -0.5)
    torch.testing.assert_close(out.float(), to(want.half()).float(), rtol=2e-3, atol=2e-3)
    assert mx.shape == sm.shape == (b, n, s, 8) and (seed, offset, numels) == (0, 0, 0)
    scores = (q.float() @ k.repeat_interleave(2, 1).float().transpose(-1, -2)) * d ** -0.5
    torch.testing.assert_close(mx[..., 0], scores.amax(-1))


def test_npu_fusion_attention_with_a_causal_mask() -> None:
    b, n, s, d = 1, 2, 33, 16
    q, k, v = (torch.randn(b, n, s, d).half() for _ in range(3))
    mask = torch.triu(torch.ones(s, s, dtype=torch.bool), diagonal=1)  # True = masked out
    out = npu_fusion_attention(q, k, v, n, "BNSD", atten_mask=mask, scale=0.25)[0]
    torch.testing.assert_close(out.float(), sdpa(q, k, v, 0.25, mask).half().float(), rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("kw,what", [
    ({"input_layout": "TND"}, r"argument 'input_layout' must be one of BNSD, BSND, BSH, SBH, got 'TND'"),
    ({"pse": torch.zeros(1)}, r"argument 'pse' is not supported"),
    ({"sparse_mode": 2}, r"argument 'sparse_mode' is not supported"),
    ({"keep_prob": 0.9}, r"argument 'keep_prob' is not supported"),
    ({"pre_tockens": 4}, r"argument 'pre_tockens' = 4 limits the attention band"),
    ({"head_num": 3}, r"argument 'head_num' is 3 but query has 2 heads"),
    ({"atten_mask": torch.zeros(5, 5, dtype=torch.bool)}, r"argument 'atten_mask' must have shape"),
])
def test_npu_fusion_attention_rejects_what_it_does_not_model(kw: dict, what: str) -> None:
    q = torch.randn(1, 2, 8, 16).half()
    args = {"head_num": 2, "input_layout": "BNSD", **kw}
    with pytest.raises(tilelang.Error, match=what):
        npu_fusion_attention(q, q, q, args.pop("head_num"), args.pop("input_layout"), **args)


# ---- TVM immediates: `.value` of T.min / T.max / T.ceildiv of Python ints -------------------------


@pytest.mark.parametrize("n", TAILS)
def test_folded_min_max_ceildiv_have_tvms_value(n: int) -> None:
    # Before: fa_opt/flash_attn_bhsd_auto_pipeline_h32_d512.py's
    # `T.min(T.ceildiv(seq_len, block_N), NUM_STAGES).value` crashed with "AttributeError: 'int'
    # object has no attribute 'value'" (TVM folds these calls to an IntImm, which has .value).
    assert T.min(T.ceildiv(n, 128), 2).value == min(-(-n // 128), 2)
    assert T.max(T.ceildiv(n * 512 * 2, 65536), 1).value == max(-(-n * 1024 // 65536), 1)
    assert T.floordiv(n, 7).value == n // 7 and T.floormod(n, 7).value == n % 7
    assert T.max(0.5, n).value == n and T.min(0.5, n).value == 0.5
    assert type(T.min(n, 3) + 1) is int  # arithmetic gives plain ints
