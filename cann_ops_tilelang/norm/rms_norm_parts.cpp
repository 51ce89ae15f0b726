// The pieces the RMSNorm backward schedules share (rms_norm_parts.h says which and why).
#include "rms_norm_parts.h"

#include "cann_ops_tilelang/core.h"

namespace cann_ops_tilelang {

namespace T = tl::T;
using tl::Buffer;
using tl::Expr;
using tl::Pipe;

RmsNormBwdParams rms_norm_bwd_params(tl::DType dt, int H, int blocks) {
  RmsNormBwdParams p;
  p.M = T::dynamic("M");
  p.DY = T::Tensor("DY", {p.M, H}, dt);
  p.X = T::Tensor("X", {p.M, H}, dt);
  p.W = T::Tensor("W", {H}, dt);
  p.DX = T::Tensor("DX", {p.M, H}, dt);
  p.DWP = T::Tensor("DWP", {2 * blocks, H}, tl::DType::Float32);
  p.eps = T::Scalar("eps", tl::DType::Float32);
  p.list = {p.DY, p.X, p.W, p.DX, p.DWP, p.eps};
  return p;
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

}  // namespace cann_ops_tilelang
