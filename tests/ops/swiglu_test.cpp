// cann_ops_tilelang SwiGLU (include/cann_ops_tilelang/activation.h) against the fp64 references
// of tests/ops/swiglu_ref.h: forward and backward, split on columns and on rows, with and
// without the clamp and the per-token weight, bf16/fp16/fp32, token tails 1, 7, 33, 1000, 4097
// and widths that are not a multiple of the widest tile (H = 112, 1000 fp32). Level 1 (the
// default, OPS_TILELANG_TEST_LEVEL) has the must-show [1024, 18432] bf16 with clamp 10.
#include <gtest/gtest.h>

#include "cann_ops_tilelang/activation.h"
#include "ops/ops_seed.h"
#include "ops/ops_testing.h"
#include "ops/swiglu_ref.h"

namespace {

using namespace cann_ops_tilelang;
using tl::DType;

struct Case {
  int64_t T, H;
  DType dt;
  bool rows, weight;
  double clamp;  // 0: none
};

std::string name(const Case& c) {
  return fmt::format("T{}_H{}_{}{}{}{}", c.T, c.H, tl::dtype_name(c.dt), c.rows ? "_rows" : "",
                     c.weight ? "_w" : "", c.clamp > 0 ? "_clamp" : "");
}

// gtest prints a parameter without PrintTo as its raw bytes, struct padding included: the test's
// ctest name then changes from one discovery to the next, and ctest runs a name that is gone.
void PrintTo(const Case& c, std::ostream* os) {
  *os << name(c);
}

std::vector<Case> grid() {
  const int level = opstest::test_level();
  if (level == 0) return {{7, 256, DType::BFloat16, false, true, 1.0}};
  std::vector<Case> v;
  for (DType dt : {DType::BFloat16, DType::Float16, DType::Float32}) {
    for (int64_t T : {1, 7, 33}) v.push_back({T, 512, dt, T == 7, T != 1, T == 33 ? 1.5 : 0});
    v.push_back({1000, 112, dt, false, true, 1.0});
  }
  v.push_back({4097, 256, DType::BFloat16, true, true, 1.5});
  v.push_back({1000, 1000, DType::Float32, false, false, 0});
  v.push_back({1024, 9216, DType::BFloat16, false, false, 10.0});  // [1024, 18432]
  if (level >= 2) v.push_back({4097, 9216, DType::BFloat16, false, true, 10.0});
  return v;
}

/// x's a and b halves as [T, H] values.
void halves(const tl::Tensor& x, const Case& c, std::vector<double>& a, std::vector<double>& b) {
  auto v = x.to_vector();
  a.resize(c.T * c.H);
  b.resize(c.T * c.H);
  for (int64_t i = 0; i < c.T; ++i)
    for (int64_t j = 0; j < c.H; ++j) {
      a[i * c.H + j] = c.rows ? v[i * c.H + j] : v[i * 2 * c.H + j];
      b[i * c.H + j] = c.rows ? v[(c.T + i) * c.H + j] : v[i * 2 * c.H + c.H + j];
    }
}

struct Inputs {
  tl::Tensor x, w;
  SwigluConfig cfg;
};
Inputs make(tl::Device& dev, const Case& c, uint64_t seed) {
  Inputs in;
  // Scaled so that a clamp of 1.5 or 10 clips some values: x ~ 2 N(0, 1) (or 5 N for L = 10).
  auto x = tl::randn(
      dev, c.rows ? std::vector<int64_t>{2 * c.T, c.H} : std::vector<int64_t>{c.T, 2 * c.H},
      DType::Float32, seed);
  auto xv = x.to_vector();
  for (auto& e : xv) e *= c.clamp >= 10 ? 5 : 2;
  in.x = tl::from_vector(dev, x.shape(), c.dt, xv);
  if (c.weight) in.w = tl::uniform(dev, {c.T}, DType::Float32, seed + 1, 0.1, 1.0);
  in.cfg.split = c.rows ? SwigluSplit::Rows : SwigluSplit::Columns;
  if (c.clamp > 0) in.cfg.clamp = c.clamp;
  return in;
}

class SwigluGrid : public ::testing::TestWithParam<Case> {};

TEST_P(SwigluGrid, ForwardMatchesFp64Reference) {
  const Case c = GetParam();
  tl::Device dev;
  auto in = make(dev, c, opstest::test_seed());
  auto y = swiglu(in.x, in.w, in.cfg);
  std::vector<double> a, b, wv = c.weight ? in.w.to_vector() : std::vector<double>();
  halves(in.x, c, a, b);
  auto want = opstest::ref::swiglu_fwd(a, b, c.weight ? &wv : nullptr, c.T, c.H, c.clamp);
  ASSERT_EQ(y.shape(), (std::vector<int64_t>{c.T, c.H}));
  EXPECT_EQ(opstest::allclose(y.to_vector(), want, c.H, opstest::tolerance(c.dt), "y"), "");
  EXPECT_LT(opstest::calc_diff(y.to_vector(), want), 1e-4);
  opstest::record_gm_peak(dev);
}

TEST_P(SwigluGrid, BackwardMatchesFp64Reference) {
  const Case c = GetParam();
  const uint64_t seed = opstest::test_seed();
  tl::Device dev;
  auto in = make(dev, c, seed);
  auto dy = tl::randn(dev, {c.T, c.H}, c.dt, seed + 2);
  auto g = swiglu_backward(dy, in.x, in.w, in.cfg);
  std::vector<double> a, b, wv = c.weight ? in.w.to_vector() : std::vector<double>();
  halves(in.x, c, a, b);
  auto want =
      opstest::ref::swiglu_bwd(dy.to_vector(), a, b, c.weight ? &wv : nullptr, c.T, c.H, c.clamp);
  std::vector<double> da, db;
  halves(g.dx, c, da, db);
  const auto tol = opstest::tolerance(c.dt);
  EXPECT_EQ(opstest::allclose(da, want.da, c.H, tol, "da"), "");
  EXPECT_EQ(opstest::allclose(db, want.db, c.H, tol, "db"), "");
  if (c.weight) {
    // dweight sums H terms in fp32: its error scales with the sum of their magnitudes.
    std::vector<double> scale(c.T), dyv = dy.to_vector();
    for (int64_t i = 0; i < c.T; ++i)
      for (int64_t j = 0; j < c.H; ++j)
        scale[i] += std::abs(dyv[i * c.H + j] * a[i * c.H + j] * b[i * c.H + j]);
    EXPECT_EQ(opstest::allclose(g.dweight.to_vector(), want.dw, 1, {1e-4, 1e-4}, "dweight", &scale),
              "");
  }
  opstest::record_gm_peak(dev);
}

INSTANTIATE_TEST_SUITE_P(Grid, SwigluGrid, ::testing::ValuesIn(grid()),
                         [](const auto& info) { return name(info.param); });

}  // namespace
