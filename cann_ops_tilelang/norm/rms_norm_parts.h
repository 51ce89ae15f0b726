// The pieces the RMSNorm kernels share: the backward schedules' signature (the chunked kernel,
// rms_norm_bwd_kernel.cpp; the chunked resident one, rms_norm_bwd_resident.cpp; the whole-row
// one, rms_norm_bwd_rows.cpp), which the launch binds by position; the weight load into fp32
// (forward and backward); the row-tile copies; the whole-row backwards' widening and tail tile
// (RMSNorm's and LayerNorm's) and the UB layout of LayerNorm's (its key's fit). Private to
// cann_ops_tilelang/norm/. The Python
// twins share the same pieces in python/cann_ops_tilelang/kernels/_rms_norm_parts.py.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "tl/lang.h"

namespace cann_ops_tilelang {

/// DY, X [M, H], W [H], DX [M, H], DWP [2 * blocks, H] fp32 (one dW partial per AIV), eps.
struct RmsNormBwdParams {
  tl::Var M;  // the dynamic row count
  tl::Buffer DY, X, W, DX, DWP;
  tl::Var eps;
  std::vector<tl::ParamRef> list;  // in the launch's order
};

RmsNormBwdParams rms_norm_bwd_params(tl::DType dt, int H, int blocks);
/// LayerNorm's backward signature, the same but for its partials: DWBP [2 * blocks, cols] fp32
/// (dW | dB, cols = 2H, or 2Hp for a ragged row) in DWP's place.
RmsNormBwdParams layer_norm_bwd_params(tl::DType dt, int H, int blocks, int cols);

/// W [H] into wf [H] (fp32), ready for the vector unit: copied when W is fp32, else loaded into
/// a buffer `w_ub` of W's dtype (at `w_address`, -1: the planner's choice; a kernel that places
/// its UB by hand gives it bytes that are dead until the first tile) and widened. The load
/// waits MTE2 -> V on event `ev` before the cast.
void load_weight_f32(const tl::Buffer& W, const tl::Buffer& wf, int ev, int64_t w_address = -1);

/// The rows [row0, row0 + nrows) of an [M, H] tensor and a UB tile (row j of the tile: row
/// row0 + j): src -> dst, `to_ub` when src is the tensor. With nrows unset, the whole tile in
/// one copy; with nrows (a tail), one copy per row, so no row past the tensor is touched.
void copy_rows(const tl::Buffer& src, const tl::Buffer& dst, tl::Expr row0,
               std::optional<tl::Expr> nrows, bool to_ub, int H);

/// The whole-row backward schedules' tiles (rms_norm_bwd_rows.cpp, layer_norm_bwd_rows.cpp): the
/// input slots `in` [slots * rM, H] of the I/O dtype, the tile in fp32 (xf: x, gf: dy), and the
/// MTE3 -> V event id of dx's buffer (the 16-bit dy slot, or gf for fp32 I/O).
struct WholeRowTiles {
  tl::Buffer in, xf, gf;
  int rM, H, ev_out;
};

/// The tile as loaded (slots xs, gs) into fp32 (fp32 I/O: copied, once dx's buffer gf is free).
void widen_tile(const WholeRowTiles& t, const tl::BufferRegion& xs, const tl::BufferRegion& gs);

/// The tail tile of the whole-row schedules (M % rM rows), dealt to the worker the round robin
/// reaches next: slots 0 and 1 zero-filled, its valid rows loaded one by one (event `ev`),
/// widened, `compute(rows, out)` (dx into slot 1, fp32 I/O: gf), dx's valid rows stored.
void whole_row_tail(const WholeRowTiles& t, const tl::Buffer& X, const tl::Buffer& DY,
                    const tl::Buffer& DX, tl::Expr M, tl::Expr full_tiles, tl::Expr worker,
                    tl::Expr workers, int ev,
                    const std::function<void(tl::Expr, const tl::TileArg&)>& compute);

/// The UB addresses of LayerNorm's whole-row backward (layer_norm_bwd_rows.cpp) for rM-row tiles
/// of H columns in `slots` input slots; `end` is the first byte past them (layer_norm_bwd_key's
/// fit).
struct LnBwdRowsLayout {
  int64_t wf, dwb, in, xf, gf, pp, mu, rs, sg, sx, rt, end;
};
LnBwdRowsLayout layer_norm_bwd_rows_layout(tl::DType dt, int64_t H, int64_t rM, int64_t slots);

}  // namespace cann_ops_tilelang
