"""An author's own set_flag / wait_flag pairs under TileLang-Ascend's auto sync
(`TL_ASCEND_AUTO_SYNC`), in TileLang-Ascend syntax, against torch (issue 29).

TileLang-Ascend's auto sync keeps the flags an author wrote valid and adds what they leave
unordered (moe_token_unpermute_grad.py syncs its loads with `mte2 -> v` and its stores with
`v -> mte3` / `mte3 -> v` pairs of constant ids and leaves the vector unit's own order and the
tiles' reuse to the compiler). Before, insert_syncs left any scope with an author's flag as
written, and the hazard checker reported 32 unordered pairs in that script. Now the compiler runs
over the author's constant-id pairs: each orders what it orders (no duplicate is added), the rest
gets the compiler's syncs, whose event ids avoid the ids the author uses on the same pipe pair.
Every kernel runs under the hazard checker (check_hazards=True, and the suite's
TL_CHECK_STALE=1), on tails.
"""

import re

import pytest
import torch

import tl_ascend as tilelang
import tl_ascend.language as T

TAILS = (1, 7, 33, 1000, 4097)
AUTO = {tilelang.PassConfigKey.TL_ASCEND_AUTO_CV_COMBINE: True,
        tilelang.PassConfigKey.TL_ASCEND_AUTO_SYNC: True,
        tilelang.PassConfigKey.TL_ASCEND_MEMORY_PLANNING: True}
NO_SYNC = {tilelang.PassConfigKey.TL_ASCEND_AUTO_CV_COMBINE: True,
           tilelang.PassConfigKey.TL_ASCEND_MEMORY_PLANNING: True}


def affine_pair(M: int, N: int, R: int, tiles: int, auto_sync: bool):
    """Y = 3 X + Z by row tiles, `tiles` per block, each AIV on its half of the columns. The
    author syncs X's load (mte2 -> v, id 0) and the store (v -> mte3, id 0) by hand; Z's load
    comes after the author's set, the two vector ops write y one after the other, and the next
    tile's loads overwrite x and z while this tile's vector ops may still read them: those are
    left to the compiler, which must not take id 0 for its own mte2 -> v flag."""
    half = N // 2

    @tilelang.jit(out_idx=[2], pass_configs=AUTO if auto_sync else NO_SYNC, check_hazards=True)
    def build(M: int, N: int, R: int, tiles: int, dtype: str = "float32"):
        @T.prim_func
        def main(X: T.Tensor((M, N), dtype), Z: T.Tensor((M, N), dtype),
                 Y: T.Tensor((M, N), dtype)):
            with T.Kernel(T.ceildiv(M, R * tiles), is_npu=True) as (cid, vid):
                x = T.alloc_ub((R, half), dtype)
                z = T.alloc_ub((R, half), dtype)
                y = T.alloc_ub((R, half), dtype)
                with T.Scope("V"):
                    for t in T.serial(tiles):
                        row = (cid * tiles + t) * R
                        T.copy(X[row, vid * half], x)
                        T.set_flag("mte2", "v", 0)
                        T.wait_flag("mte2", "v", 0)
                        T.copy(Z[row, vid * half], z)
                        T.tile.mul(y, x, 3.0)
                        T.tile.add(y, y, z)
                        T.set_flag("v", "mte3", 0)
                        T.wait_flag("v", "mte3", 0)
                        T.copy(y, Y[row, vid * half])

        return main

    return build(M, N, R, tiles)


@pytest.mark.parametrize("M", (32,) + TAILS)
def test_auto_sync_adds_what_the_authors_flags_leave_unordered(M: int) -> None:
    torch.manual_seed(M)
    x, z = torch.randn(M, 64), torch.randn(M, 64)
    torch.testing.assert_close(affine_pair(M, 64, 4, 4, auto_sync=True)(x, z), 3 * x + z)


def test_without_auto_sync_the_authors_flags_alone_race() -> None:
    # The same kernel with only the author's flags: Z's load is not ordered before the add that
    # reads z (and the next tile's loads not after this tile's vector reads), as the checker says.
    x, z = torch.randn(32, 64), torch.randn(32, 64)
    with pytest.raises(tilelang.Error, match=r"unordered access pair"):
        affine_pair(32, 64, 4, 4, auto_sync=False)(x, z)


def flags_of(src: str):
    """(src pipe, dst pipe, id, auto) of every set_flag in a kernel's text."""
    return [(m[1], m[2], int(m[3]), m[4] is not None) for m in re.finditer(
        r'T\.set_flag\("(\w+)", "(\w+)", (\d+)(, auto=True)?\)', src)]


def test_the_compilers_flags_avoid_the_authors_ids_on_the_same_pipe_pair() -> None:
    src = affine_pair(32, 64, 4, 4, auto_sync=True).get_tile_ir()
    flags = flags_of(src)
    author = {(p, q, i) for p, q, i, auto in flags if not auto}
    assert author == {("MTE2", "V", 0), ("V", "MTE3", 0)}, src
    compiler = [(p, q, i) for p, q, i, auto in flags if auto]
    # Z's load needs MTE2 -> V after the author's set: the compiler's own flag, not id 0.
    assert any(p == "MTE2" and q == "V" for p, q, _ in compiler), src
    for p, q, i in compiler:
        assert (p, q, i) not in author, f"compiler flag {p} -> {q} reuses the author's id {i}:\n{src}"


def carried_store(M: int, N: int, R: int, tiles: int):
    """Y = 2 X + 1 by row tiles, the store's reuse of y synchronised as emit_lane in
    moe_token_unpermute_grad.py: a pre-set mte3 -> v (id 2) before the loop, its wait before
    the vector ops that overwrite y, a set after the store, the drain after the loop. The loads
    and the vector unit's own order are the compiler's."""
    half = N // 2

    @tilelang.jit(out_idx=[1], pass_configs=AUTO, check_hazards=True)
    def build(M: int, N: int, R: int, tiles: int, dtype: str = "float32"):
        @T.prim_func
        def main(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
            with T.Kernel(T.ceildiv(M, R * tiles), is_npu=True) as (cid, vid):
                x = T.alloc_ub((R, half), dtype)
                y = T.alloc_ub((R, half), dtype)
                with T.Scope("V"):
                    T.set_flag("mte3", "v", 2)
                    for t in T.serial(tiles):
                        row = (cid * tiles + t) * R
                        T.copy(X[row, vid * half], x)
                        T.wait_flag("mte3", "v", 2)
                        T.tile.mul(y, x, 2.0)
                        T.tile.add(y, y, 1.0)
                        T.set_flag("v", "mte3", 4)
                        T.wait_flag("v", "mte3", 4)
                        T.copy(y, Y[row, vid * half])
                        T.set_flag("mte3", "v", 2)
                    T.wait_flag("mte3", "v", 2)

        return main

    return build(M, N, R, tiles)


@pytest.mark.parametrize("M", (32,) + TAILS)
def test_an_authors_loop_carried_pair_orders_what_it_orders(M: int) -> None:
    torch.manual_seed(M)
    x = torch.randn(M, 64)
    torch.testing.assert_close(carried_store(M, 64, 4, 4)(x), 2 * x + 1)


def test_no_duplicate_of_an_authors_pair() -> None:
    # The author's mte3 -> v and v -> mte3 pairs order the store and y's reuse: the compiler
    # adds no flag of those pipe pairs (only what the author left: x's load, V after V).
    src = carried_store(32, 64, 4, 4).get_tile_ir()
    compiler = [(p, q) for p, q, _, auto in flags_of(src) if auto]
    assert ("MTE3", "V") not in compiler and ("V", "MTE3") not in compiler, src
    assert ("MTE2", "V") in compiler, src


def test_an_author_using_every_id_of_a_pipe_pair_leaves_the_compiler_none() -> None:
    # The author's MTE2 -> V flags take ids 0-5, the compiler's range (6 and 7 stay the author's,
    # docs/python.md): Z's load needs one more, and the error says whose ids they are.
    @tilelang.jit(out_idx=[2], pass_configs=AUTO, check_hazards=True)
    def build(M: int, N: int, dtype: str = "float32"):
        @T.prim_func
        def main(X: T.Tensor((M, N), dtype), Z: T.Tensor((M, N), dtype),
                 Y: T.Tensor((M, N), dtype)):
            with T.Kernel(1, is_npu=True) as (cid, vid):
                x = T.alloc_ub((M, N), dtype)
                z = T.alloc_ub((M, N), dtype)
                with T.Scope("V"):
                    T.copy(X[0, 0], x)
                    T.set_flag("mte2", "v", 0)
                    T.wait_flag("mte2", "v", 0)
                    T.set_flag("mte2", "v", 1)
                    T.wait_flag("mte2", "v", 1)
                    T.set_flag("mte2", "v", 2)
                    T.wait_flag("mte2", "v", 2)
                    T.set_flag("mte2", "v", 3)
                    T.wait_flag("mte2", "v", 3)
                    T.set_flag("mte2", "v", 4)
                    T.wait_flag("mte2", "v", 4)
                    T.set_flag("mte2", "v", 5)
                    T.wait_flag("mte2", "v", 5)
                    T.copy(Z[0, 0], z)
                    T.tile.add(x, x, z)
                    T.set_flag("v", "mte3", 0)
                    T.wait_flag("v", "mte3", 0)
                    T.copy(x, Y[0, 0])

        return main

    with pytest.raises(tilelang.Error, match=r"the author's set_flag/wait_flag in this scope use "
                                             r"MTE2 -> V event id\(s\) 0, 1, 2, 3, 4, 5"):
        build(8, 64)
