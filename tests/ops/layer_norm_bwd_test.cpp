// cann_ops_tilelang LayerNorm backward (include/cann_ops_tilelang/norm.h) against the fp64
// reference of tests/ops/layer_norm_ref.h: dX, dW and dB for bf16/fp16/fp32, tails of rows 1, 7,
// 33, 1000, 4099 (the 8-row tile's tail) and hidden sizes 7168, 5120, 512, 64, and rows that are
// not whole 32-byte blocks (H = 7, 33, 1000, 4097: the ragged schedule), the whole-row schedule's
// tails and slot rings (4097 rows, 100 x 5120 and 7168). Also: bad inputs (message text), empty
// tensors (no launch, zero dW / dB), NaN propagation to its row (dX) and its column (dW, dB)
// only, deterministic dW / dB, the hazard checker quiet and timed mode equal to program order,
// the key's choice of schedule and the bytes the whole-row one moves; and the benchmarks of the
// forward and backward (opt-in, ops_bench.h).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include "cann_ops_tilelang/norm.h"
#include "common/error_of.h"
#include "ops/layer_norm_ref.h"
#include "ops/ops_bench.h"
#include "ops/ops_seed.h"
#include "ops/ops_testing.h"

namespace {

using namespace cann_ops_tilelang;
using tl::DType;

struct Case {
  int64_t M, H;
  DType dt;
};

std::string name(const Case& c) {
  return fmt::format("M{}_H{}_{}", c.M, c.H, tl::dtype_name(c.dt));
}

// gtest prints a parameter without PrintTo as its raw bytes (struct padding included).
void PrintTo(const Case& c, std::ostream* os) {
  *os << name(c);
}

std::vector<Case> grid() {
  const int level = opstest::test_level();
  if (level == 0) return {{7, 512, DType::BFloat16}};
  std::vector<Case> v;
  for (DType dt : {DType::BFloat16, DType::Float16, DType::Float32}) {
    v.push_back({1, 7168, dt});
    v.push_back({7, 5120, dt});
    v.push_back({33, 7168, dt});
    v.push_back({1000, 64, dt});
    v.push_back({33, 512, dt});
    // Ragged rows (not whole 32-byte blocks; 1000 fp32 is whole): the column mask, the padded
    // and clipped copies, the chunks past a row's end.
    v.push_back({7, 7, dt});
    v.push_back({33, 33, dt});
    v.push_back({33, 1000, dt});
    v.push_back({9, 4097, dt});
  }
  v.push_back({1000, 4097, DType::BFloat16});
  v.push_back({4099, 512, DType::BFloat16});
  v.push_back({1000, 5120, DType::BFloat16});
  // The whole-row schedule: the 8-row tile's tail (4097 rows), two or three tiles per AIV in
  // the five-slot ring (100 x 5120) and the three-slot one (100 x 7168), fp32 rows.
  v.push_back({4097, 96, DType::BFloat16});
  v.push_back({100, 5120, DType::BFloat16});
  v.push_back({100, 7168, DType::Float16});
  v.push_back({4097, 64, DType::Float32});
  if (level >= 2) v.push_back({4099, 5120, DType::BFloat16});
  return v;
}

class LayerNormBwdGrid : public ::testing::TestWithParam<Case> {};

TEST_P(LayerNormBwdGrid, BackwardMatchesFp64Reference) {
  const Case c = GetParam();
  const uint64_t seed = opstest::test_seed();
  tl::Device dev;
  // An offset mean: subtracting it before the variance is what keeps fp32 accurate.
  auto xv = tl::randn(dev, {c.M, c.H}, DType::Float32, seed).to_vector();
  for (auto& e : xv) e = 3 + 2 * e;
  auto x = tl::from_vector(dev, {c.M, c.H}, c.dt, xv);
  auto w = tl::uniform(dev, {c.H}, c.dt, seed + 1, 0.5, 1.5);
  auto dy = tl::randn(dev, {c.M, c.H}, c.dt, seed + 3);
  auto g = layer_norm_backward(dy, x, w, 1e-5);
  auto want =
      opstest::ref::layer_norm_bwd(dy.to_vector(), x.to_vector(), w.to_vector(), c.M, c.H, 1e-5);
  const auto tol = opstest::tolerance(c.dt);
  EXPECT_EQ(opstest::allclose(g.dx.to_vector(), want.dx, c.H, tol, "dx", &want.dx_abs), "");
  // dW and dB sum M rows: their error scales with the sum of the terms' magnitudes.
  auto scale = [&](std::vector<double> v) {
    for (auto& e : v) e *= tol.rtol / opstest::kApprox;
    return v;
  };
  const auto dw_scale = scale(want.dw_abs), db_scale = scale(want.db_abs);
  EXPECT_EQ(opstest::allclose(g.dw.to_vector(), want.dw, c.H, tol, "dw", &dw_scale), "");
  EXPECT_EQ(opstest::allclose(g.db.to_vector(), want.db, c.H, tol, "db", &db_scale), "");
  EXPECT_LT(opstest::calc_diff(g.dx.to_vector(), want.dx), 1e-4);
  EXPECT_LT(opstest::calc_diff(g.dw.to_vector(), want.dw), 1e-4);
  EXPECT_LT(opstest::calc_diff(g.db.to_vector(), want.db), 1e-4);
  opstest::record_gm_peak(dev);
}

INSTANTIATE_TEST_SUITE_P(Grid, LayerNormBwdGrid, ::testing::ValuesIn(grid()),
                         [](const auto& info) { return name(info.param); });

using tltest::error_of;

#define EXPECT_CONTAINS(s, sub) EXPECT_NE((s).find(sub), std::string::npos) << (s)

TEST(LayerNormBwdEdges, BadInputsAreLocatedErrorsNamingTheArgument) {
  tl::Device dev;
  auto x = tl::randn(dev, {4, 256}, DType::BFloat16, 1);
  auto w = tl::randn(dev, {256}, DType::BFloat16, 2);
  auto m = error_of([&] {
    layer_norm_backward(tl::randn(dev, {4, 128}, DType::BFloat16, 3), x, w);
  });
  EXPECT_CONTAINS(m,
                  "layer_norm_backward: argument 'dy' has the wrong shape: expected [4, 256], got "
                  "[4, 128]");
  EXPECT_CONTAINS(m, "tests/ops/layer_norm_bwd_test.cpp:");
  EXPECT_CONTAINS(
      error_of([&] { layer_norm_backward(x, x, tl::randn(dev, {256}, DType::Float32, 2)); }),
      "layer_norm_backward: argument 'weight' has the wrong dtype: expected bfloat16 "
      "(the dtype of 'x'), got float32");
  EXPECT_CONTAINS(error_of([&] { layer_norm_backward(x, x, w, -1); }),
                  "layer_norm_backward: argument 'eps' is out of range: expected eps >= 0, got -1");
  EXPECT_CONTAINS(error_of([&] { layer_norm_backward(x, x, {}); }),
                  "layer_norm_backward: argument 'weight'");
  EXPECT_CONTAINS(error_of([&] {
                    auto x0 = tl::randn(dev, {3, 0}, DType::BFloat16, 4);
                    layer_norm_backward(x0, x0, tl::randn(dev, {0}, DType::BFloat16, 5));
                  }),
                  "layer_norm_backward: argument 'x' has an empty last dimension");
}

TEST(LayerNormBwdEdges, EmptyTensorsLaunchNothingAndGiveZeroGradients) {
  tl::Device dev;
  clear_kernel_cache();
  auto x = tl::Tensor::empty(dev, {0, 512}, DType::BFloat16);
  auto w = tl::uniform(dev, {512}, DType::BFloat16, 1, 0.5, 1.5);
  auto g = layer_norm_backward(x, x, w);
  EXPECT_EQ(g.dx.shape(), x.shape());
  EXPECT_EQ(g.dw.shape(), std::vector<int64_t>{512});
  EXPECT_EQ(g.db.shape(), std::vector<int64_t>{512});
  for (double v : g.dw.to_vector()) EXPECT_EQ(v, 0.0);
  for (double v : g.db.to_vector()) EXPECT_EQ(v, 0.0);
  EXPECT_EQ(kernel_cache_stats().misses, 0);
}

TEST(LayerNormBwdEdges, NanPropagatesToItsRowAndColumnOnly) {
  tl::Device dev;
  const int64_t M = 9, H = 64;  // row 8 is the tail tile's only row
  auto x = tl::randn(dev, {M, H}, DType::Float32, opstest::test_seed());
  auto w = tl::uniform(dev, {H}, DType::Float32, 2, 0.5, 1.5);
  auto v = tl::randn(dev, {M, H}, DType::Float32, 3).to_vector();
  v[8 * H + 5] = std::numeric_limits<double>::quiet_NaN();
  auto dy = tl::from_vector(dev, {M, H}, DType::Float32, v);
  auto g = layer_norm_backward(dy, x, w);
  auto dx = g.dx.to_vector(), dw = g.dw.to_vector(), db = g.db.to_vector();
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j : {0, 5, 63}) EXPECT_EQ(std::isnan(dx[i * H + j]), i == 8) << i << "," << j;
  for (int64_t j = 0; j < H; ++j) {
    EXPECT_EQ(std::isnan(dw[j]), j == 5) << j;
    EXPECT_EQ(std::isnan(db[j]), j == 5) << j;
  }
}

TEST(LayerNormBwdEdges, ZeroEpsAddsNothingFromTheTailTilesPadRows) {
  // With eps = 0 a zero pad row's rstd is inf and its dW term NaN: only valid rows are summed.
  tl::Device dev;
  const int64_t M = 3, H = 512;
  auto x = tl::randn(dev, {M, H}, DType::Float32, 1);
  auto w = tl::uniform(dev, {H}, DType::Float32, 2, 0.5, 1.5);
  auto dy = tl::randn(dev, {M, H}, DType::Float32, 3);
  auto g = layer_norm_backward(dy, x, w, 0.0);
  auto want = opstest::ref::layer_norm_bwd(dy.to_vector(), x.to_vector(), w.to_vector(), M, H, 0.0);
  EXPECT_EQ(opstest::allclose(g.dw.to_vector(), want.dw, H, opstest::tolerance(DType::Float32),
                              "dw", &want.dw_abs),
            "");
}

TEST(LayerNormBwdEdges, GradientsAreDeterministic) {
  tl::Device dev;
  auto x = tl::randn(dev, {1000, 512}, DType::BFloat16, 1);
  auto w = tl::uniform(dev, {512}, DType::BFloat16, 2, 0.5, 1.5);
  auto dy = tl::randn(dev, {1000, 512}, DType::BFloat16, 3);
  auto a = layer_norm_backward(dy, x, w), b = layer_norm_backward(dy, x, w);
  EXPECT_EQ(a.dx.to_vector(), b.dx.to_vector());
  EXPECT_EQ(a.dw.to_vector(), b.dw.to_vector());
  EXPECT_EQ(a.db.to_vector(), b.db.to_vector());
}

// Both LayerNorm kernels and the partials reduction under the hazard checker and in timed mode
// with data (simulated-time order, as the hardware runs it), bf16 and fp32, a tail tile included.
TEST(LayerNormBwdEdges, KernelsAreHazardFreeAndTimeOrderIndependent) {
  // Whole rows: 512 columns (8-row tiles, bf16 in five slots, fp32 in three), 5120 bf16 (five
  // slots) and 7168 fp16 (three), each AIV three or four tiles; 1001 columns (ragged, the chunked
  // kernel: the padded copies over zero-filled buffers, the mask).
  for (auto [dt, H, M] : {std::tuple{DType::BFloat16, int64_t{512}, int64_t{1157}},
                          {DType::Float32, int64_t{512}, int64_t{1157}},
                          {DType::BFloat16, int64_t{5120}, int64_t{149}},
                          {DType::Float16, int64_t{7168}, int64_t{149}},
                          {DType::BFloat16, int64_t{1001}, int64_t{33}},
                          {DType::Float32, int64_t{1001}, int64_t{33}}}) {
    tl::Device dev;
    auto x = tl::randn(dev, {M, H}, dt, 1);
    auto dy = tl::randn(dev, {M, H}, dt, 3);
    auto w = tl::uniform(dev, {H}, dt, 2, 0.5, 1.5);
    auto calls = [&] {
      layer_norm(x, w, w, {.return_stats = true});
      return layer_norm_backward(dy, x, w);
    };
    RunOptions hazards;
    hazards.launch.check_hazards = true;
    LayerNormGrads fast;
    {
      ScopedRun s(hazards);
      EXPECT_NO_THROW(fast = calls()) << tl::dtype_name(dt);
    }
    RunOptions timed;
    timed.profile = true;
    LayerNormGrads slow;
    {
      ScopedRun s(timed);
      slow = calls();
    }
    ASSERT_EQ(timed.profiles.size(), 3u);
    for (const auto& p : timed.profiles) {
      for (const auto& e : p.time_order_effects)
        ADD_FAILURE() << tl::dtype_name(dt) << " " << H << " " << p.kernel << ": " << e;
    }
    EXPECT_EQ(fast.dx.to_vector(), slow.dx.to_vector());
    EXPECT_EQ(fast.dw.to_vector(), slow.dw.to_vector());
    EXPECT_EQ(fast.db.to_vector(), slow.db.to_vector());
  }
}

// The key takes the whole-row schedule (chunk 0: x and dy read once) where rows fit UB, with five
// slots where 16-bit rows leave room; the chunked kernel for rows that do not fit or are not a
// multiple of 32 columns.
TEST(LayerNormBwdEdges, KeyTakesWholeRowsWhereTheyFit) {
  const tl::Target& a2 = tl::get_target("A2");
  const Checker c("layer_norm_backward", {});
  struct Want {
    DType dt;
    int64_t H, rM, chunk, slots;
  };
  for (const Want& w : {Want{DType::BFloat16, 7168, 1, 0, 3}, Want{DType::BFloat16, 5120, 1, 0, 5},
                        Want{DType::Float16, 512, 8, 0, 5}, Want{DType::Float32, 5120, 1, 0, 3},
                        Want{DType::Float32, 512, 8, 0, 3}}) {
    const LayerNormBwdKey k = layer_norm_bwd_key(w.dt, w.H, a2, c);
    EXPECT_EQ(k.chunk, w.chunk) << k.str();
    EXPECT_EQ(k.rows_per_tile, w.rM) << k.str();
    EXPECT_EQ(k.slots, w.slots) << k.str();
  }
  for (auto [dt, H] : {std::pair{DType::Float32, int64_t{7168}},
                       {DType::BFloat16, int64_t{4097}},
                       {DType::BFloat16, int64_t{1000}},
                       {DType::BFloat16, int64_t{48}}})
    EXPECT_GT(layer_norm_bwd_key(dt, H, a2, c).chunk, 0) << tl::dtype_name(dt) << " " << H;
  // x and dy are read once: past L2 (only dx enters it, docs/ops.md "RMSNorm" step 8).
  const tl::PrimFunc f = layer_norm_bwd_kernel(layer_norm_bwd_key(DType::BFloat16, 5120, a2, c));
  std::map<std::string, tl::L2CacheMode> mode;
  for (const auto& p : f->params)
    if (p.is_tensor()) mode[p.name()] = p.tensor->l2_cache;
  EXPECT_EQ(mode.at("X"), tl::L2CacheMode::Disable);
  EXPECT_EQ(mode.at("DY"), tl::L2CacheMode::Disable);
  EXPECT_EQ(mode.at("DX"), tl::L2CacheMode::Normal);
}

// The whole-row schedule moves what it must: x and dy read once, dx written once, W and the
// dW | dB partials (the chunked kernel read x three times and dy twice: about 1.6x).
TEST(LayerNormBwdEdges, WholeRowsReadXAndDyOnce) {
  for (auto [dt, H] :
       {std::pair{DType::BFloat16, int64_t{5120}}, {DType::Float16, int64_t{7168}}}) {
    tl::Device dev;
    const int64_t M = 480;
    RunOptions timed;
    timed.profile = true;
    timed.launch.timing_only = true;
    {
      ScopedRun s(timed);
      layer_norm_backward(tl::Tensor::empty(dev, {M, H}, dt), tl::Tensor::empty(dev, {M, H}, dt),
                          tl::Tensor::empty(dev, {H}, dt));
    }
    // x, dy and dx once; W read by each of the 48 AIVs; the partials written and read back.
    const double es = tl::dtype_bytes(dt), partials = 48.0 * 2 * H * 4;
    const double least = 3.0 * M * H * es + 48 * H * es + 2 * partials + 2 * H * es;
    const OpProfile p = summarize(timed.profiles, layer_norm_backward_cost(M, H, dt), dev.target());
    EXPECT_GT(p.gm_bytes, 3.0 * M * H * es) << H;
    EXPECT_LT(p.gm_bytes, 1.02 * least) << H;
  }
}

// The benchmarks (opt-in, tests/ops/ops_bench.h): LayerNorm forward and backward at the
// must-show shapes of RMSNorm (the same model layers use either norm).
std::vector<opsbench::Case> bench_cases() {
  std::vector<opsbench::Case> v;
  const DType dt = DType::BFloat16;
  for (auto [M, H] : {std::pair<int64_t, int64_t>{4096, 7168}, {4099, 5120}}) {
    const std::string s = fmt::format("{}x{} bfloat16", M, H);
    v.push_back({"layer_norm", s + " weight bias", [=](tl::Device& d) {
                   layer_norm(tl::Tensor::empty(d, {M, H}, dt), tl::Tensor::empty(d, {H}, dt),
                              tl::Tensor::empty(d, {H}, dt));
                   return layer_norm_cost(M, H, dt, true, true, false);
                 }});
    v.push_back({"layer_norm_backward", s, [=](tl::Device& d) {
                   layer_norm_backward(tl::Tensor::empty(d, {M, H}, dt),
                                       tl::Tensor::empty(d, {M, H}, dt),
                                       tl::Tensor::empty(d, {H}, dt));
                   return layer_norm_backward_cost(M, H, dt);
                 }});
  }
  return v;
}

OPS_BENCH(layer_norm_bwd_test, bench_cases())

}  // namespace
