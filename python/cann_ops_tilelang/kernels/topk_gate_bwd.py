"""The MoE top-k gate's backward kernel generator in TileLang-Ascend syntax: the Python twin of
cann_ops_tilelang/moe/topk_gate_bwd_kernel.cpp, building the identical IR (the printed text is
compared in python/tests/test_opslib_gate_bwd.py).

A key (cann_ops_tilelang.kernels.topk_gate_bwd_key): dtype of the logits, experts (E), k,
rows_per_tile (rM), blocks, scoring (0 none, 1 sigmoid, 2 softmax), bias (unused), normalize.

Per rM-token tile: the scores recomputed, the chosen ones gathered by byte offset, dW turned
into the gradient of the chosen scores (normalisation, routed scale), scattered into a dense
row on the scalar unit, then the scoring's derivative (docs/ops.md, the gate's backward).
"""

import tl_ascend.language as T
from tl_ascend.language.parser import PrimFunc

EV_IN, EV_OUT, EV_SCALAR = 0, 1, 2


@T.macro
def _sync(src, dst, ev):
    T.set_flag(src, dst, ev)
    T.wait_flag(src, dst, ev)


def topk_gate_bwd_kernel(dtype: str, experts: int, k: int, rows_per_tile: int, blocks: int, scoring: int,
                         bias: bool, normalize: bool) -> PrimFunc:
    """Z [T, E], DW [T, k] fp32, Idx [T, k] int32, DZ [T, E], scale."""
    E, K, rM = experts, k, rows_per_tile
    wide = dtype != "float32"
    M = T.dynamic("M")
    num_blocks = T.min(blocks, T.ceildiv(M, rM))

    @T.macro
    def tile_rows(Z, DW, Idx, DZ, scale, s_ub, z_ub, ds_ub, tmp_ub, o_ub, g_ub, gw_ub, idx_ub, off_ub, w_ub,
                  den_ub, dot_ub, offu_ub, expert, row0, nrows):
        _sync("V", "MTE2", EV_IN)  # the last V op has read z_ub, g_ub and idx_ub
        if nrows is not None:
            T.tile.fill(z_ub, 0.0)
            T.tile.fill(g_ub, 0.0)
            T.tile.fill(idx_ub, 0)
            _sync("V", "MTE2", EV_IN)
            for j in T.serial(nrows):
                T.copy(Z[row0 + j, 0], z_ub[j:j + 1, 0:E])
                T.copy(DW[row0 + j, 0], g_ub[j:j + 1, 0:K])
                T.copy(Idx[row0 + j, 0], idx_ub[j:j + 1, 0:K])
        else:
            T.copy(Z[row0, 0], z_ub, pad_value=0.0)
            T.copy(DW[row0, 0], g_ub, pad_value=0.0)
            T.copy(Idx[row0, 0], idx_ub, pad_value=0.0)
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
        T.tile.mul(off_ub, idx_ub, 4)
        T.tile.mul(g_ub, g_ub, scale)
        T.pipe_barrier("V")
        if normalize:
            for r in T.serial(rM):
                T.tile.gather(w_ub[r:r + 1, 0:K], s_ub[r:r + 1, 0:E], offu_ub[r:r + 1, 0:K], 0)
            T.pipe_barrier("V")
            T.reduce_sum(w_ub, den_ub, -1)
            T.tile.mul(gw_ub, g_ub, w_ub)
            T.pipe_barrier("V")
            T.tile.add(den_ub, den_ub, 1e-20)
            T.reduce_sum(gw_ub, dot_ub, -1)
            T.pipe_barrier("V")
            T.tile.div(dot_ub, dot_ub, den_ub)
            T.pipe_barrier("V")
            T.tile.row_expand_sub(g_ub, g_ub, dot_ub)
            T.pipe_barrier("V")
            T.tile.row_expand_div(g_ub, g_ub, den_ub)
            T.pipe_barrier("V")
        _sync("MTE3", "V", EV_OUT)
        T.tile.fill(ds_ub, 0.0)
        _sync("V", "S", EV_SCALAR)
        for r in T.serial(rM):
            for j in T.serial(K):
                expert = T.max(T.min(idx_ub[r, j], E - 1), 0)
                ds_ub[r, expert] = ds_ub[r, expert] + g_ub[r, j]
        _sync("S", "V", EV_SCALAR)
        if scoring == 1:
            T.tile.mul(tmp_ub, s_ub, s_ub)
            T.pipe_barrier("V")
            T.tile.sub(tmp_ub, s_ub, tmp_ub)
            T.pipe_barrier("V")
            T.tile.mul(ds_ub, ds_ub, tmp_ub)
            T.pipe_barrier("V")
        elif scoring == 2:
            T.tile.mul(tmp_ub, ds_ub, s_ub)
            T.pipe_barrier("V")
            T.reduce_sum(tmp_ub, dot_ub, -1)
            T.pipe_barrier("V")
            T.tile.row_expand_sub(ds_ub, ds_ub, dot_ub)
            T.pipe_barrier("V")
            T.tile.mul(ds_ub, ds_ub, s_ub)
            T.pipe_barrier("V")
        if wide:
            T.tile.cast(o_ub, ds_ub, "CAST_RINT")
            T.pipe_barrier("V")
        _sync("V", "MTE3", EV_OUT)
        if nrows is None:
            T.copy(o_ub, DZ[row0, 0])
        else:
            for j in T.serial(nrows):
                T.copy(o_ub[j:j + 1, 0:E], DZ[row0 + j, 0])

    @T.prim_func
    def topk_gate_bwd(Z: T.Tensor((M, E), dtype), DW: T.Tensor((M, K), "float32"),
                      Idx: T.Tensor((M, K), "int32"), DZ: T.Tensor((M, E), dtype), scale: T.float32):
        with T.Kernel(num_blocks, is_npu=True) as (cid, vid):
            with T.Scope("V"):
                s_ub = T.alloc_ub((rM, E), "float32")
                z_ub = s_ub
                if wide:
                    z_ub = T.alloc_ub((rM, E), dtype)
                ds_ub = T.alloc_ub((rM, E), "float32")
                tmp_ub = T.alloc_ub((rM, E), "float32")
                o_ub = ds_ub
                if wide:
                    o_ub = T.alloc_ub((rM, E), dtype)
                g_ub = T.alloc_ub((rM, K), "float32")
                gw_ub = T.alloc_ub((rM, K), "float32")
                idx_ub = T.alloc_ub((rM, K), "int32")
                off_ub = T.alloc_ub((rM, K), "int32")
                w_ub = T.alloc_ub((rM, K), "float32")
                den_ub = T.alloc_ub((rM,), "float32")
                dot_ub = T.alloc_ub((rM,), "float32")
                offu_ub = T.view(off_ub, "uint32")
                expert = T.alloc_var("int32")

                workers = num_blocks * 2
                worker = cid * 2 + vid
                full_tiles = M // rM
                for t in T.Persistent([full_tiles], workers, worker):
                    row0 = t * rM
                    tile_rows(Z, DW, Idx, DZ, scale, s_ub, z_ub, ds_ub, tmp_ub, o_ub, g_ub, gw_ub, idx_ub, off_ub,
                              w_ub, den_ub, dot_ub, offu_ub, expert, row0, None)
                tail = M % rM
                if tail > 0 and worker == full_tiles % workers:
                    tile_rows(Z, DW, Idx, DZ, scale, s_ub, z_ub, ds_ub, tmp_ub, o_ub, g_ub, gw_ub, idx_ub, off_ub,
                              w_ub, den_ub, dot_ub, offu_ub, expert, full_tiles * rM, tail)

    return topk_gate_bwd
