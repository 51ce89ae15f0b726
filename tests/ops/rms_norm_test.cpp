// cann_ops_tilelang RMSNorm (include/cann_ops_tilelang/norm.h) against the fp64 references of
// tests/ops/rms_norm_ref.h: forward with and without the fused residual and rstd, backward dX
// and dW, for bf16/fp16/fp32, tails of rows 1, 3, 7, 33, 1000, 4099 and hidden sizes incl. 7168
// and 5120. The grid depends on OPS_TILELANG_TEST_LEVEL (tests/ops/ops_testing.h): level 1 (the
// default) has 4096 x 7168 bf16, only level 2 has 16384 x 7168. Also: bad inputs (message
// text), empty tensors (no launch), NaN propagation, the kernel cache, deterministic dW.
#include <gtest/gtest.h>

#include <cmath>

#include "cann_ops_tilelang/norm.h"
#include "ops/ops_bench.h"
#include "ops/ops_seed.h"
#include "ops/ops_testing.h"
#include "ops/rms_norm_ref.h"

namespace {

using namespace cann_ops_tilelang;
using tl::DType;

struct Case {
  int64_t M, H;
  DType dt;
  bool residual, rstd;
};

std::string name(const Case& c) {
  return fmt::format("M{}_H{}_{}{}{}", c.M, c.H, tl::dtype_name(c.dt), c.residual ? "_res" : "",
                     c.rstd ? "_rstd" : "");
}

// gtest prints a parameter without PrintTo as its raw bytes, struct padding included: the test's
// ctest name then changes from one discovery to the next, and ctest runs a name that is gone.
void PrintTo(const Case& c, std::ostream* os) {
  *os << name(c);
}

std::vector<Case> grid() {
  const int level = opstest::test_level();
  std::vector<Case> v;
  if (level == 0)
    return {{1, 256, DType::BFloat16, true, true}, {7, 512, DType::Float16, false, false}};
  for (DType dt : {DType::BFloat16, DType::Float16, DType::Float32}) {
    for (int64_t M : {1, 3, 7, 33}) v.push_back({M, 7168, dt, M % 2 == 1, M != 7});
    v.push_back({1000, 512, dt, true, true});
    v.push_back({33, 5120, dt, false, true});
  }
  v.push_back({4099, 5120, DType::BFloat16, true, true});
  // 4097 rows: a 1-row tail after the resident forward's 4-row tiles, dealt past 21 double-
  // buffered tiles per AIV; the backward's 1-row tiles run 85 or 86 per AIV.
  v.push_back({4097, 5120, DType::BFloat16, false, false});
  v.push_back({4096, 7168, DType::BFloat16, false, false});
  if (level >= 2) v.push_back({16384, 7168, DType::BFloat16, true, true});
  return v;
}

class RmsNormGrid : public ::testing::TestWithParam<Case> {};

TEST_P(RmsNormGrid, ForwardMatchesFp64Reference) {
  const Case c = GetParam();
  const uint64_t seed = opstest::test_seed();
  tl::Device dev;
  auto x = tl::randn(dev, {c.M, c.H}, c.dt, seed);
  auto w = tl::uniform(dev, {c.H}, c.dt, seed + 1, 0.5, 1.5);
  tl::Tensor r = c.residual ? tl::randn(dev, {c.M, c.H}, c.dt, seed + 2) : tl::Tensor();
  auto out = rms_norm(x, w, r, {.eps = 1e-6, .return_rstd = c.rstd});
  auto rv = c.residual ? r.to_vector() : std::vector<double>();
  auto want = opstest::ref::rms_norm_fwd(x.to_vector(), c.residual ? &rv : nullptr, w.to_vector(),
                                         c.M, c.H, 1e-6);
  const auto tol = opstest::tolerance(c.dt);
  EXPECT_EQ(opstest::allclose(out.y.to_vector(), want.y, c.H, tol, "y"), "");
  if (c.residual) {
    EXPECT_EQ(opstest::allclose(out.residual.to_vector(), want.h, c.H, tol, "residual"), "");
  }
  if (c.rstd) {
    EXPECT_EQ(opstest::allclose(out.rstd.to_vector(), want.rstd, 1, {1e-4, 1e-5}, "rstd"), "");
  }
  EXPECT_LT(opstest::calc_diff(out.y.to_vector(), want.y), 1e-4);
  opstest::record_gm_peak(dev);
}

TEST_P(RmsNormGrid, BackwardMatchesFp64Reference) {
  const Case c = GetParam();
  if (c.M * c.H > 4099 * 5120 && opstest::test_level() < 2)
    GTEST_SKIP() << "backward at this size: level 2";
  const uint64_t seed = opstest::test_seed();
  tl::Device dev;
  auto x = tl::randn(dev, {c.M, c.H}, c.dt, seed);
  auto w = tl::uniform(dev, {c.H}, c.dt, seed + 1, 0.5, 1.5);
  auto dy = tl::randn(dev, {c.M, c.H}, c.dt, seed + 3);
  auto g = rms_norm_backward(dy, x, w, 1e-6);
  auto want =
      opstest::ref::rms_norm_bwd(dy.to_vector(), x.to_vector(), w.to_vector(), c.M, c.H, 1e-6);
  auto tol = opstest::tolerance(c.dt);
  EXPECT_EQ(opstest::allclose(g.dx.to_vector(), want.dx, c.H, tol, "dx", &want.dx_abs), "");
  // dW sums M rows: its error scales with the sum of the terms' magnitudes (want.dw_abs), of
  // which the 16-bit inputs' rounding is a fraction too.
  auto dw_scale = want.dw_abs;
  for (auto& v : dw_scale) v *= tol.rtol / opstest::kApprox;
  EXPECT_EQ(opstest::allclose(g.dw.to_vector(), want.dw, c.H, tol, "dw", &dw_scale), "");
  EXPECT_LT(opstest::calc_diff(g.dw.to_vector(), want.dw), 1e-4);
  opstest::record_gm_peak(dev);
}

INSTANTIATE_TEST_SUITE_P(Grid, RmsNormGrid, ::testing::ValuesIn(grid()),
                         [](const auto& info) { return name(info.param); });

// The benchmarks (opt-in, tests/ops/ops_bench.h): issue 30's must-show shapes, forward (plain
// and with the fused residual and rstd) and backward.
std::vector<opsbench::Case> bench_cases() {
  std::vector<opsbench::Case> v;
  const std::pair<int64_t, int64_t> shapes[] = {
      {4096, 7168}, {16384, 7168}, {3, 7168}, {4099, 5120}};
  for (auto [M, H] : shapes) {
    const std::string s = fmt::format("{}x{} bfloat16", M, H);
    const DType dt = DType::BFloat16;
    v.push_back({"rms_norm", s, [=](tl::Device& d) {
                   rms_norm(tl::Tensor::empty(d, {M, H}, dt), tl::Tensor::empty(d, {H}, dt));
                   return rms_norm_cost(M, H, dt, false, false);
                 }});
    if (M == 4096) {
      v.push_back({"rms_norm", s + " residual rstd", [=](tl::Device& d) {
                     rms_norm(tl::Tensor::empty(d, {M, H}, dt), tl::Tensor::empty(d, {H}, dt),
                              tl::Tensor::empty(d, {M, H}, dt), {.return_rstd = true});
                     return rms_norm_cost(M, H, dt, true, true);
                   }});
    }
    v.push_back({"rms_norm_backward", s, [=](tl::Device& d) {
                   rms_norm_backward(tl::Tensor::empty(d, {M, H}, dt),
                                     tl::Tensor::empty(d, {M, H}, dt),
                                     tl::Tensor::empty(d, {H}, dt));
                   return rms_norm_backward_cost(M, H, dt);
                 }});
  }
  return v;
}
OPS_BENCH(rms_norm_test, bench_cases())

}  // namespace
