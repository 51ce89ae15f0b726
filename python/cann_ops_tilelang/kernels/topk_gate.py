"""The MoE top-k gate's kernel generator in TileLang-Ascend syntax: the Python twin of
cann_ops_tilelang/moe/topk_gate_kernel.cpp, building the identical IR (the printed text is
compared in python/tests/test_opslib_twin.py).

A key (cann_ops_tilelang.kernels.topk_gate_key gives the library's for a shape on a target):
dtype of the logits, experts (E), k, rows_per_tile (rM), blocks, scoring (0 none, 1 sigmoid,
2 softmax), bias (a selection bias [E] fp32), normalize. T, the token count, is T.dynamic("M").

The design: expert mode, vector cores only. Per rM-token tile: the scores in fp32, the bias
added for the selection only, T.topk per token (descending, ties to the smaller expert: the
order the routing gate needs), the position lanes extracted with gather_mask("P1010") and
rounded to int32, and the unbiased scores of the chosen experts fetched by byte offset with
T.tile.gather; then w / (1e-20 + sum w) * scale. Full tiles are dealt round-robin to the AIVs;
the tail tile is zero-filled in UB, loaded and stored row by row.
"""

# No `from __future__ import annotations`: the parser reads the T.Tensor annotations from the
# evaluated __annotations__.
import tl_ascend.language as T
from tl_ascend.language.parser import PrimFunc

EV_IN, EV_OUT = 0, 1


@T.macro
def _sync(src, dst, ev):
    T.set_flag(src, dst, ev)
    T.wait_flag(src, dst, ev)


def topk_gate_kernel(dtype: str, experts: int, k: int, rows_per_tile: int, blocks: int, scoring: int,
                     bias: bool, normalize: bool) -> PrimFunc:
    """Z [T, E], (Bias [E] fp32), Wt [T, k] fp32, Idx [T, k] int32, scale."""
    E, K, rM = experts, k, rows_per_tile
    wide = dtype != "float32"
    M = T.dynamic("M")
    num_blocks = T.min(blocks, T.ceildiv(M, rM))

    @T.macro
    def tile_rows(Z, Wt, Idx, scale, s_ub, z_ub, sel_ub, biasb_ub, pairs_ub, idxf_ub, idx_ub, off_ub,
                  offu_ub, w_ub, den_ub, row0, nrows):
        if nrows is not None:  # rows past T: zeros, not stale data
            T.tile.fill(z_ub, 0.0)
        _sync("V", "MTE2", EV_IN)  # the last V op has read z_ub
        if nrows is None:
            # A full tile is never clipped; the pad value says what a clipped row would hold.
            T.copy(Z[row0, 0], z_ub, pad_value=0.0)
        else:
            for j in T.serial(nrows):
                T.copy(Z[row0 + j, 0], z_ub[j:j + 1, 0:E])
        _sync("MTE2", "V", EV_IN)
        if wide:
            T.tile.cast(s_ub, z_ub)
            T.pipe_barrier("V")
        if scoring == 1:
            T.tile.sigmoid(s_ub, s_ub)
            T.pipe_barrier("V")
        elif scoring == 2:
            T.reduce_max(s_ub, den_ub, -1)
            T.pipe_barrier("V")
            T.tile.row_expand_sub(s_ub, s_ub, den_ub)
            T.pipe_barrier("V")
            T.tile.exp(s_ub, s_ub)
            T.pipe_barrier("V")
            T.reduce_sum(s_ub, den_ub, -1)
            T.pipe_barrier("V")
            T.tile.row_expand_div(s_ub, s_ub, den_ub)
            T.pipe_barrier("V")
        if biasb_ub is not None:
            T.tile.add(sel_ub, s_ub, biasb_ub)
            T.pipe_barrier("V")
        for r in T.serial(rM):
            T.topk(pairs_ub[r:r + 1, 0:2 * K], sel_ub[r:r + 1, 0:E], K, E)
        T.pipe_barrier("V")
        T.tile.gather_mask(idxf_ub, pairs_ub, "P1010")  # [score, position] -> [position]
        _sync("MTE3", "V", EV_OUT)  # the previous stores have read idx_ub, w_ub
        T.pipe_barrier("V")
        T.tile.cast(idx_ub, idxf_ub, "CAST_ROUND")
        T.pipe_barrier("V")
        T.tile.mul(off_ub, idx_ub, 4)
        T.pipe_barrier("V")
        # The unbiased scores of the chosen experts, row by row: a row's offsets address its own
        # row of s_ub, so the pad rows of a tail tile feed only pad rows.
        for r in T.serial(rM):
            T.tile.gather(w_ub[r:r + 1, 0:K], s_ub[r:r + 1, 0:E], offu_ub[r:r + 1, 0:K], 0)
        T.pipe_barrier("V")
        if normalize:
            T.reduce_sum(w_ub, den_ub, -1)
            T.pipe_barrier("V")
            T.tile.add(den_ub, den_ub, 1e-20)
            T.pipe_barrier("V")
            T.tile.row_expand_div(w_ub, w_ub, den_ub)
            T.pipe_barrier("V")
        T.tile.mul(w_ub, w_ub, scale)
        _sync("V", "MTE3", EV_OUT)
        if nrows is None:
            T.copy(w_ub, Wt[row0, 0])
            T.copy(idx_ub, Idx[row0, 0])
        else:
            for j in T.serial(nrows):
                T.copy(w_ub[j:j + 1, 0:K], Wt[row0 + j, 0])
                T.copy(idx_ub[j:j + 1, 0:K], Idx[row0 + j, 0])

    @T.macro
    def body(Z, Bias, Wt, Idx, scale):
        with T.Kernel(num_blocks, is_npu=True) as (cid, vid):
            with T.Scope("V"):
                s_ub = T.alloc_ub((rM, E), "float32")  # scores (unbiased)
                z_ub = s_ub  # logits as loaded: fp32 loads straight into s_ub
                if wide:
                    z_ub = T.alloc_ub((rM, E), dtype)
                pairs_ub = T.alloc_ub((rM, 2 * K), "float32")  # topk's (score, position)
                idxf_ub = T.alloc_ub((rM, K), "float32")  # positions as floats
                idx_ub = T.alloc_ub((rM, K), "int32")
                off_ub = T.alloc_ub((rM, K), "int32")  # byte offsets into s_ub
                w_ub = T.alloc_ub((rM, K), "float32")
                den_ub = T.alloc_ub((rM,), "float32")
                sel_ub = s_ub  # what topk ranks: s, or s + bias
                biasb_ub = None
                if Bias is not None:
                    bias_ub = T.alloc_ub((E,), "float32")
                    biasb_ub = T.alloc_ub((rM, E), "float32")  # the bias on every row, made once
                    sel_ub = T.alloc_ub((rM, E), "float32")
                    T.copy(Bias, bias_ub)
                    _sync("MTE2", "V", EV_IN)
                    T.tile.broadcast(biasb_ub, bias_ub)
                offu_ub = T.view(off_ub, "uint32")

                workers = num_blocks * 2
                worker = cid * 2 + vid
                full_tiles = M // rM
                for t in T.Persistent([full_tiles], workers, worker):
                    row0 = t * rM
                    tile_rows(Z, Wt, Idx, scale, s_ub, z_ub, sel_ub, biasb_ub, pairs_ub, idxf_ub, idx_ub, off_ub,
                              offu_ub, w_ub, den_ub, row0, None)
                tail = M % rM
                if tail > 0 and worker == full_tiles % workers:
                    tile_rows(Z, Wt, Idx, scale, s_ub, z_ub, sel_ub, biasb_ub, pairs_ub, idxf_ub, idx_ub, off_ub,
                              offu_ub, w_ub, den_ub, full_tiles * rM, tail)

    if bias:
        @T.prim_func
        def topk_gate(Z: T.Tensor((M, E), dtype), Bias: T.Tensor((E,), "float32"), Wt: T.Tensor((M, K), "float32"),
                      Idx: T.Tensor((M, K), "int32"), scale: T.float32):
            body(Z, Bias, Wt, Idx, scale)
    else:
        @T.prim_func
        def topk_gate(Z: T.Tensor((M, E), dtype), Wt: T.Tensor((M, K), "float32"), Idx: T.Tensor((M, K), "int32"),
                      scale: T.float32):
            body(Z, None, Wt, Idx, scale)
    return topk_gate
