// The pieces the norm kernels share (rms_norm_parts.h says which and why).
#include "rms_norm_parts.h"

#include "cann_ops_tilelang/core.h"

namespace cann_ops_tilelang {

namespace T = tl::T;
using tl::Buffer;
using tl::Expr;
using tl::Pipe;

namespace {
RmsNormBwdParams bwd_params(tl::DType dt, int H, const char* partials, int rows, int cols) {
  RmsNormBwdParams p;
  p.M = T::dynamic("M");
  p.DY = T::Tensor("DY", {p.M, H}, dt);
  p.X = T::Tensor("X", {p.M, H}, dt);
  p.W = T::Tensor("W", {H}, dt);
  p.DX = T::Tensor("DX", {p.M, H}, dt);
  p.DWP = T::Tensor(partials, {rows, cols}, tl::DType::Float32);
  p.eps = T::Scalar("eps", tl::DType::Float32);
  p.list = {p.DY, p.X, p.W, p.DX, p.DWP, p.eps};
  return p;
}
}  // namespace

RmsNormBwdParams rms_norm_bwd_params(tl::DType dt, int H, int blocks) {
  return bwd_params(dt, H, "DWP", 2 * blocks, H);
}

RmsNormBwdParams layer_norm_bwd_params(tl::DType dt, int H, int blocks, int cols) {
  return bwd_params(dt, H, "DWBP", 2 * blocks, cols);
}

void load_weight_f32(const Buffer& W, const Buffer& wf, int ev, int64_t w_address) {
  if (W->dtype == tl::DType::Float32) {
    T::copy(W, wf);
    set_then_wait(Pipe::MTE2, Pipe::V, ev);
    return;
  }
  auto w_b = T::alloc_ub("w_ub", W->shape, W->dtype, w_address);
  T::copy(W, w_b);
  set_then_wait(Pipe::MTE2, Pipe::V, ev);
  T::tile::cast(wf, w_b);
}

void copy_rows(const Buffer& src, const Buffer& dst, Expr row0, std::optional<Expr> nrows,
               bool to_ub, int H) {
  if (!nrows) {
    if (to_ub)
      T::copy(src.at({row0, 0}), dst);
    else
      T::copy(src, dst.at({row0, 0}));
    return;
  }
  T::serial("j", *nrows, [&](Expr j) {
    if (to_ub)
      T::copy(src.at({row0 + j, 0}), dst.region({j, 0}, {1, H}));
    else
      T::copy(src.region({j, 0}, {1, H}), dst.at({row0 + j, 0}));
  });
}

void widen_tile(const WholeRowTiles& t, const tl::BufferRegion& xs, const tl::BufferRegion& gs) {
  T::pipe_barrier(Pipe::V);  // the last tile's instructions have read what this writes
  if (t.in->dtype != tl::DType::Float32) {
    T::tile::cast(t.xf, xs);
    T::tile::cast(t.gf, gs);
  } else {
    T::wait_flag(Pipe::MTE3, Pipe::V, t.ev_out);
    T::tile::add(t.xf, xs, 0.0);
    T::tile::add(t.gf, gs, 0.0);
  }
}

void whole_row_tail(const WholeRowTiles& t, const Buffer& X, const Buffer& DY, const Buffer& DX,
                    Expr M, Expr full_tiles, Expr worker, Expr workers, int ev,
                    const std::function<void(Expr, const tl::TileArg&)>& compute) {
  const int rM = t.rM, H = t.H;
  const bool wide = t.in->dtype != tl::DType::Float32;
  auto tail = T::let("tail", M % rM);
  T::If(tail > 0 && worker == full_tiles % workers, [&] {
    auto xs = t.in.region({Expr(0), 0}, {rM, H}), gs = t.in.region({Expr(rM), 0}, {rM, H});
    T::set_flag(Pipe::MTE3, Pipe::V, t.ev_out);
    T::pipe_barrier(Pipe::V);
    T::tile::fill(xs, 0.0);
    T::tile::fill(gs, 0.0);
    set_then_wait(Pipe::V, Pipe::MTE2, ev);
    T::serial("j", tail, [&](Expr j) {
      T::copy(X.at({full_tiles * rM + j, 0}), t.in.region({j, 0}, {1, H}));
    });
    T::serial("j", tail, [&](Expr j) {
      T::copy(DY.at({full_tiles * rM + j, 0}), t.in.region({rM + j, 0}, {1, H}));
    });
    set_then_wait(Pipe::MTE2, Pipe::V, ev);
    widen_tile(t, xs, gs);
    compute(tail, wide ? tl::TileArg(gs) : tl::TileArg(t.gf));
    set_then_wait(Pipe::V, Pipe::MTE3, ev);
    T::serial("j", tail, [&](Expr j) {  // dx's valid rows (16-bit: in gs)
      T::copy(wide ? t.in.region({rM + j, 0}, {1, H}) : t.gf.region({j, 0}, {1, H}),
              DX.at({full_tiles * rM + j, 0}));
    });
  });
}

}  // namespace cann_ops_tilelang
