// cann_ops_tilelang RoPE (include/cann_ops_tilelang/rope.h) against the fp64 reference of
// tests/ops/rope_ref.h: forward and backward, interleaved and half, full and partial rotation
// (first or last rot_dim elements), with and without positions, bf16/fp16/fp32, token tails 1,
// 7, 33, 1000, 4097 (none a multiple of the tile's tokens); the must-show shapes BS=16 H=64
// HS=512 rot 256 fp16 and seq 2001 x {1, 5, 32} heads (128 at level 2). The tables are random
// (any table is accepted: the backward is checked as the exact adjoint); one test uses standard
// cos/sin tables and checks that the backward undoes the forward. Edges: bad inputs with their
// messages, empty tensors, NaN, one compile per key, hazard-free in timed mode. Benchmarks: the
// OpsBench cases at the end (baseline tests/ops/baselines/rope_test.jsonl).
#include <gtest/gtest.h>

#include <cmath>

#include "cann_ops_tilelang/rope.h"
#include "common/error_of.h"
#include "ops/ops_bench.h"
#include "ops/ops_checked.h"
#include "ops/ops_seed.h"
#include "ops/ops_testing.h"
#include "ops/rope_ref.h"

namespace {

using namespace cann_ops_tilelang;
using tl::DType;

struct Case {
  int64_t T, H, D, R;
  DType dt;
  bool interleaved, last, positions;
};

std::string name(const Case& c) {
  return fmt::format("T{}_H{}_D{}_R{}_{}_{}{}{}", c.T, c.H, c.D, c.R, tl::dtype_name(c.dt),
                     c.interleaved ? "inter" : "half",
                     c.R < c.D ? (c.last ? "_last" : "_first") : "", c.positions ? "_pos" : "");
}
void PrintTo(const Case& c, std::ostream* os) {
  *os << name(c);
}

std::vector<Case> grid() {
  const int level = opstest::test_level();
  if (level == 0) return {{7, 3, 128, 64, DType::Float16, false, true, true}};
  std::vector<Case> v;
  for (DType dt : {DType::BFloat16, DType::Float16, DType::Float32}) {
    for (bool inter : {false, true}) {
      v.push_back({1, 2, 64, 64, dt, inter, true, false});
      v.push_back({7, 3, 128, 64, dt, inter, true, true});
      v.push_back({33, 4, 128, 32, dt, inter, false, false});
      v.push_back({1000, 2, 64, 16, dt, inter, true, true});
    }
  }
  v.push_back({4097, 1, 128, 128, DType::BFloat16, false, true, true});
  v.push_back({4097, 2, 64, 32, DType::Float32, true, false, false});
  v.push_back({16, 64, 512, 256, DType::Float16, true, true, false});  // BS=16 H=64 HS=512
  v.push_back({16, 64, 512, 256, DType::Float16, false, true, true});
  for (int64_t H : {1, 5, 32}) v.push_back({2001, H, 128, 64, DType::Float16, H != 5, true, true});
  if (level >= 2) v.push_back({2001, 128, 128, 64, DType::BFloat16, false, true, true});
  return v;
}

struct Inputs {
  tl::Tensor x, cos, sin, pos;
  std::vector<int64_t> posv;
  RopeConfig cfg;
  opstest::ref::RopeShape shape;
};

Inputs make(tl::Device& dev, const Case& c, uint64_t seed) {
  Inputs in;
  const int64_t rows = c.positions ? 37 : c.T + 3;  // positions reuse rows; else extra rows
  in.x = tl::randn(dev, {c.T, c.H, c.D}, c.dt, seed);
  in.cos = tl::uniform(dev, {rows, c.R}, DType::Float32, seed + 1, -1.0, 1.0);
  in.sin = tl::uniform(dev, {rows, c.R}, DType::Float32, seed + 2, -1.0, 1.0);
  if (c.positions) {
    std::vector<double> p(c.T);
    for (int64_t t = 0; t < c.T; ++t) p[t] = (t * 7 + 3) % rows, in.posv.push_back(p[t]);
    in.pos = tl::from_vector(dev, {c.T}, DType::Int32, p);
  }
  in.cfg = {.style = c.interleaved ? RopeStyle::Interleaved : RopeStyle::Half,
            .rotate_last = c.last};
  in.shape = {c.T, c.H, c.D, c.R, c.interleaved, c.last};
  return in;
}

// fp32 products of inputs rounded to the I/O dtype: the dtype's tolerance; fp32 I/O agrees
// with fp64 to a few ulps of the terms (|r c| + |r' s| <= 2 max |x|).
opstest::Tol tol(DType dt) {
  return dt == DType::Float32 ? opstest::Tol{1e-5, 1e-5} : opstest::tolerance(dt);
}

class RopeGrid : public ::testing::TestWithParam<Case> {};

TEST_P(RopeGrid, ForwardMatchesFp64Reference) {
  const Case c = GetParam();
  tl::Device dev;
  auto in = make(dev, c, opstest::test_seed());
  auto y = rope(in.x, in.cos, in.sin, in.pos, in.cfg);
  ASSERT_EQ(y.shape(), in.x.shape());
  auto want = opstest::ref::rope(in.x.to_vector(), in.cos.to_vector(), in.sin.to_vector(), in.posv,
                                 in.shape, false);
  EXPECT_EQ(opstest::allclose(y.to_vector(), want, c.H * c.D, tol(c.dt), "y"), "");
  if (c.R < c.D) {  // the pass-through elements are x's bits
    auto xv = in.x.to_vector(), yv = y.to_vector();
    const int64_t off = c.last ? 0 : c.R;
    for (int64_t i = 0; i < c.T * c.H; ++i)
      for (int64_t j = off; j < off + c.D - c.R; ++j)
        ASSERT_EQ(yv[i * c.D + j], xv[i * c.D + j]) << i << ", " << j;
  }
  opstest::record_gm_peak(dev);
}

TEST_P(RopeGrid, BackwardMatchesFp64Reference) {
  const Case c = GetParam();
  const uint64_t seed = opstest::test_seed();
  tl::Device dev;
  auto in = make(dev, c, seed);
  auto dx = rope_backward(in.x, in.cos, in.sin, in.pos, in.cfg);
  auto want = opstest::ref::rope(in.x.to_vector(), in.cos.to_vector(), in.sin.to_vector(), in.posv,
                                 in.shape, true);
  EXPECT_EQ(opstest::allclose(dx.to_vector(), want, c.H * c.D, tol(c.dt), "dx"), "");
  opstest::record_gm_peak(dev);
}

INSTANTIATE_TEST_SUITE_P(Grid, RopeGrid, ::testing::ValuesIn(grid()),
                         [](const auto& info) { return name(info.param); });

/// Standard tables: theta_i = pos base^(-2i/R), equal on a pair's two elements.
void standard_tables(tl::Device& dev, int64_t rows, int64_t R, bool inter, tl::Tensor& cos,
                     tl::Tensor& sin) {
  std::vector<double> c(rows * R), s(rows * R);
  for (int64_t p = 0; p < rows; ++p)
    for (int64_t j = 0; j < R; ++j) {
      const int64_t i = inter ? j / 2 : j % (R / 2);
      const double th = p * std::pow(10000.0, -2.0 * i / R);
      c[p * R + j] = std::cos(th);
      s[p * R + j] = std::sin(th);
    }
  cos = tl::from_vector(dev, {rows, R}, DType::Float32, c);
  sin = tl::from_vector(dev, {rows, R}, DType::Float32, s);
}

TEST(Rope, BackwardUndoesTheForwardWithStandardTables) {
  tl::Device dev;
  for (bool inter : {false, true}) {
    tl::Tensor cos, sin;
    standard_tables(dev, 40, 64, inter, cos, sin);
    auto x = tl::randn(dev, {40, 3, 128}, DType::Float32, opstest::test_seed());
    const RopeConfig cfg{.style = inter ? RopeStyle::Interleaved : RopeStyle::Half};
    auto back = rope_backward(rope(x, cos, sin, {}, cfg), cos, sin, {}, cfg);
    EXPECT_EQ(opstest::allclose(back.to_vector(), x.to_vector(), 384, {1e-5, 1e-5}, "x"), "")
        << (inter ? "interleaved" : "half");
  }
}

// ---- edges ---------------------------------------------------------------------------------

using tltest::error_of;

#define EXPECT_CONTAINS(s, sub) EXPECT_NE((s).find(sub), std::string::npos) << (s)

TEST(RopeEdges, BadInputsAreLocatedErrorsNamingTheArgument) {
  tl::Device dev;
  auto x = tl::randn(dev, {4, 2, 128}, DType::Float16, 1);
  auto cs = tl::uniform(dev, {8, 64}, DType::Float32, 2);
  auto m = error_of([&] { rope(x.reshape({8, 128}), cs, cs); });
  EXPECT_CONTAINS(m,
                  "rope: argument 'x' has the wrong rank: expected 3 dimensions [tokens, heads, "
                  "head_dim], got 2");
  EXPECT_CONTAINS(m, "tests/ops/rope_test.cpp:");
  EXPECT_CONTAINS(error_of([&] {
                    rope(tl::randn(dev, {4, 2, 128}, DType::Float64, 3), cs, cs);
                  }),
                  "argument 'x' has the wrong dtype: expected bfloat16 or float16 or float32, got "
                  "float64");
  EXPECT_CONTAINS(error_of([&] {
                    rope(x, tl::uniform(dev, {8, 64}, DType::Float16, 4), cs);
                  }),
                  "rope: argument 'cos' has the wrong dtype: expected float32, got float16");
  EXPECT_CONTAINS(error_of([&] {
                    rope(x, cs, tl::uniform(dev, {8, 32}, DType::Float32, 5));
                  }),
                  "argument 'sin' has the wrong shape: expected [8, 64], got [8, 32]");
  auto odd = tl::uniform(dev, {8, 24}, DType::Float32, 6);
  EXPECT_CONTAINS(error_of([&] { rope(x, odd, odd); }),
                  "argument 'cos' has a rot_dim the kernel cannot rotate: expected a multiple of "
                  "16 in [16, head_dim = 128] (half style), got 24");
  auto few = tl::uniform(dev, {3, 64}, DType::Float32, 7);
  EXPECT_CONTAINS(error_of([&] { rope(x, few, few); }),
                  "argument 'cos' has too few rows for the tokens without positions: expected at "
                  "least 4 rows (token t uses row t), got 3");
  auto pos = tl::from_vector(dev, {4}, DType::Int32, {0, 7, 8, 1});
  EXPECT_CONTAINS(error_of([&] { rope(x, cs, cs, pos); }),
                  "rope: argument 'positions' has a value out of range: expected 0 <= "
                  "positions[t] < 8 (cos rows), got positions[2] = 8");
  auto pos64 = tl::from_vector(dev, {4}, DType::Int64, {0, 1, 2, 3});
  EXPECT_CONTAINS(error_of([&] { rope(x, cs, cs, pos64); }),
                  "argument 'positions' has the wrong dtype: expected int32, got int64");
  EXPECT_CONTAINS(error_of([&] {
                    rope_backward(tl::randn(dev, {4, 2, 120}, DType::Float16, 8), cs, cs);
                  }),
                  "rope_backward: argument 'dy' has a head_dim that breaks the 32-byte row "
                  "alignment: expected a positive multiple of 16 float16 elements, got 120");
  auto wide = tl::randn(dev, {4, 4, 128}, DType::Float16, 9);
  EXPECT_CONTAINS(error_of([&] { rope(wide.slice(1, 0, 2), cs, cs); }),
                  "argument 'x' must be contiguous");
}

TEST(RopeEdges, EmptyTensorsLaunchNothing) {
  tl::Device dev;
  clear_kernel_cache();
  auto cs = tl::uniform(dev, {8, 64}, DType::Float32, 2);
  auto x = tl::Tensor::empty(dev, {0, 4, 128}, DType::BFloat16);
  EXPECT_EQ(rope(x, cs, cs).shape(), x.shape());
  auto pos = tl::Tensor::empty(dev, {0}, DType::Int32);
  EXPECT_EQ(rope_backward(x, cs, cs, pos).shape(), x.shape());
  auto xh = tl::Tensor::empty(dev, {5, 0, 128}, DType::Float16);
  EXPECT_EQ(rope(xh, cs, cs).shape(), xh.shape());
  EXPECT_EQ(kernel_cache_stats().misses, 0);  // nothing was compiled, nothing launched
}

TEST(RopeEdges, NanStaysInItsPair) {
  tl::Device dev;
  const int64_t T = 9, H = 2, D = 64;
  for (bool inter : {false, true}) {
    auto x = tl::randn(dev, {T, H, D}, DType::BFloat16, opstest::test_seed());
    auto cs = tl::uniform(dev, {T, D}, DType::Float32, 3, 0.5, 1.0);
    x.set((8 * H + 1) * D + 4, NAN);  // token 8 (the tail tile), head 1, element 4
    const RopeConfig cfg{.style = inter ? RopeStyle::Interleaved : RopeStyle::Half};
    const int64_t partner = inter ? 5 : 4 + D / 2;
    for (bool bwd : {false, true}) {
      auto y = (bwd ? rope_backward(x, cs, cs, {}, cfg) : rope(x, cs, cs, {}, cfg)).to_vector();
      for (int64_t i = 0; i < T * H; ++i)
        for (int64_t j = 0; j < D; ++j)
          ASSERT_EQ(std::isnan(y[i * D + j]), i == 8 * H + 1 && (j == 4 || j == partner))
              << i << ", " << j << (inter ? " interleaved" : " half") << (bwd ? " bwd" : "");
    }
  }
}

TEST(RopeEdges, OneCompilePerKeyWhateverTheTokenCount) {
  tl::Device dev;
  clear_kernel_cache();
  auto cs = tl::uniform(dev, {200, 64}, DType::Float32, 2);
  for (int64_t T : {1, 7, 33, 100}) rope(tl::randn(dev, {T, 3, 64}, DType::Float16, T), cs, cs);
  EXPECT_EQ(kernel_cache_stats().misses, 1);
  EXPECT_EQ(kernel_cache_stats().hits, 3);
}

TEST(RopeEdges, KernelsAreHazardFreeAndTimeOrderIndependent) {
  for (DType dt : {DType::BFloat16, DType::Float32}) {
    tl::Device dev;
    auto x = tl::randn(dev, {37, 3, 128}, dt, 1);
    auto cs = tl::uniform(dev, {40, 64}, DType::Float32, 2);
    auto pos = tl::from_vector(dev, {37}, DType::Int32, std::vector<double>(37, 5.0));
    auto calls = [&] {
      rope(x, cs, cs, pos, {.style = RopeStyle::Interleaved});
      rope_backward(x, cs, cs, {}, {.style = RopeStyle::Half, .rotate_last = false});
    };
    opstest::expect_hazard_free_and_time_order_free(calls, 2, std::string(tl::dtype_name(dt)));
  }
}

// A worker's run of items spans several token tiles (two tiles' table rows in UB by parity,
// shared by a tile's head chunks), with a tail tile: 1001 tokens x 32 heads (4 or 16 chunks a
// tile), and 9001 tokens x 1 head (64-token tiles of one chunk: the load of item i + 1 reuses the
// table rows item i - 1 may still be reading, which only the V -> MTE2 flag of the table rows
// orders; the test fails without it).
TEST(RopeEdges, SharedTableRowsAreHazardFreeAcrossHeadChunks) {
  tl::Device dev;
  auto x = tl::randn(dev, {1001, 32, 128}, DType::Float16, 3);
  auto x1 = tl::randn(dev, {9001, 1, 128}, DType::BFloat16, 5);
  auto cs = tl::uniform(dev, {9001, 128}, DType::Float32, 4);
  auto pos = tl::from_vector(dev, {1001}, DType::Int32, std::vector<double>(1001, 7.0));
  auto calls = [&] {
    rope(x, cs, cs, {}, {.style = RopeStyle::Interleaved});
    rope_backward(x, cs, cs, pos, {.style = RopeStyle::Half});
    rope(x1, cs, cs, {}, {.style = RopeStyle::Half});
  };
  opstest::expect_hazard_free_and_time_order_free(calls, 3, "shared table rows");
}

// ---- benchmarks (opt-in: OPS_TILELANG_BENCH, docs/ops.md) ----------------------------------

std::vector<opsbench::Case> bench_cases() {
  std::vector<opsbench::Case> v;
  struct B {
    int64_t T, H, D, R;
    bool inter, pos, bwd;
  };
  const B shapes[] = {
      {16, 64, 512, 256, true, false, false},   {16, 64, 512, 256, true, false, true},
      {2001, 1, 128, 64, false, true, false},   {2001, 5, 128, 64, false, true, false},
      {2001, 32, 128, 64, false, true, false},  {2001, 32, 128, 64, false, false, false},
      {2001, 128, 128, 64, false, true, false}, {2001, 32, 128, 128, true, false, false},
      {2001, 32, 128, 128, false, true, true}};
  for (const B& b : shapes) {
    const DType dt = DType::Float16;
    const std::string s = fmt::format("{}x{}x{} rot {} float16 {}{}", b.T, b.H, b.D, b.R,
                                      b.inter ? "interleaved" : "half", b.pos ? " positions" : "");
    v.push_back({b.bwd ? "rope_backward" : "rope", s, [=](tl::Device& d) {
                   auto x = tl::Tensor::empty(d, {b.T, b.H, b.D}, dt);
                   auto cs = tl::Tensor::empty(d, {b.T, b.R}, DType::Float32);
                   tl::Tensor pos;
                   if (b.pos) pos = tl::Tensor::empty(d, {b.T}, DType::Int32);  // zeros: row 0
                   const RopeConfig cfg{.style =
                                            b.inter ? RopeStyle::Interleaved : RopeStyle::Half};
                   if (b.bwd)
                     rope_backward(x, cs, cs, pos, cfg);
                   else
                     rope(x, cs, cs, pos, cfg);
                   return rope_cost(b.T, b.H, b.D, b.R, dt, b.pos);
                 }});
  }
  return v;
}
OPS_BENCH(rope_test, bench_cases())

}  // namespace
