// The RMSNorm forward kernel's parameters, built once for both of its schedules (the chunked
// kernel, rms_norm_fwd_kernel.cpp, and the resident one, rms_norm_fwd_resident.cpp): the launch
// binds them by position, so the two must declare the same tensors in the same order. X [, R],
// W, Y [, HO] [, Rstd], eps: R and HO with the fused residual add, Rstd when the key asks for it.
#pragma once

#include <optional>
#include <vector>

#include "cann_ops_tilelang/norm.h"
#include "tl/lang.h"

namespace cann_ops_tilelang {

struct RmsNormFwdParams {
  tl::Var M;  // the dynamic row count
  tl::Buffer X, W, Y;
  std::optional<tl::Buffer> R, HO, Rstd;
  tl::Var eps;
  std::vector<tl::ParamRef> list;  // in the launch's order
};

inline RmsNormFwdParams rms_norm_fwd_params(const RmsNormKey& k, int H) {
  namespace T = tl::T;
  const tl::DType dt = k.dtype, f32 = tl::DType::Float32;
  RmsNormFwdParams p;
  p.M = T::dynamic("M");
  p.X = T::Tensor("X", {p.M, H}, dt);
  if (k.residual) p.R = T::Tensor("R", {p.M, H}, dt);
  p.W = T::Tensor("W", {H}, dt);
  p.Y = T::Tensor("Y", {p.M, H}, dt);
  if (k.residual) p.HO = T::Tensor("HO", {p.M, H}, dt);
  if (k.rstd) p.Rstd = T::Tensor("Rstd", {T::dynamic("MP")}, f32);
  p.eps = T::Scalar("eps", f32);
  p.list = {p.X};
  if (p.R) p.list.push_back(*p.R);
  p.list.push_back(p.W);
  p.list.push_back(p.Y);
  if (p.HO) p.list.push_back(*p.HO);
  if (p.Rstd) p.list.push_back(*p.Rstd);
  p.list.push_back(p.eps);
  return p;
}

}  // namespace cann_ops_tilelang
