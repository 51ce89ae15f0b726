// cann_ops_tilelang FlashAttention forward (include/cann_ops_tilelang/attention.h) against the
// fp64 reference of tests/ops/flash_attention_ref.h: o and lse for fp16/bf16, BSHD and BHSD,
// causal or not, sequence tails S = 1, 7, 33, 273, 1000, 2049 (none a multiple of the 128 x 128
// tiles; 2049: 17 kv steps, 8 unrolled pairs and a remainder) and S = 256 (a multiple). Level 2
// (OPS_TILELANG_TEST_LEVEL=2) adds B=4 S=4096 H=16 D=128. Also: bad inputs (message text, located
// at this file), empty tensors (no launch), NaN propagation, one compiled kernel for every B and S,
// hazard-free and time-order independent, the kernel's tile-size limit, and the opt-in benchmark
// cases (tests/ops/ops_bench.h).
#include <gtest/gtest.h>

#include <cmath>

#include "cann_ops_tilelang/attention.h"
#include "common/error_of.h"
#include "ops/flash_attention_case.h"
#include "ops/flash_attention_ref.h"
#include "ops/ops_bench.h"
#include "ops/ops_checked.h"
#include "ops/ops_seed.h"
#include "ops/ops_testing.h"
#include "tl/npu/trace.h"
#include "tl/printer.h"

namespace {

using namespace cann_ops_tilelang;
using tl::DType;

using fa_case::Case;
using fa_case::name;
using fa_case::shape_of;

std::vector<Case> grid() {
  const int level = opstest::test_level();
  if (level == 0) return {{1, 33, 2, 64, DType::Float16, true, true}};
  std::vector<Case> v;
  for (int64_t S : {1, 7, 33, 273}) {
    v.push_back({2, S, 2, 128, DType::Float16, true, S % 2 == 1});
    v.push_back({1, S, 3, 64, DType::BFloat16, false, S != 7});
  }
  v.push_back({1, 273, 2, 128, DType::BFloat16, true, false});
  v.push_back({1, 1000, 1, 128, DType::Float16, false, true});
  v.push_back({1, 1000, 1, 64, DType::BFloat16, true, false});
  // S a multiple of both tile sizes: no tile masks keys past S (the unmasked branch only).
  v.push_back({1, 256, 2, 128, DType::Float16, true, false});
  v.push_back({1, 256, 1, 64, DType::BFloat16, false, true});
  // Long kv loops: 17 kv steps, the last one partial (8 unrolled trips of 2 and a remainder).
  v.push_back({1, 2049, 1, 64, DType::BFloat16, true, true});
  v.push_back({1, 2049, 1, 128, DType::Float16, false, false});
  // Causal's flattened loop with an odd q tile count (33: the last tile paired with none) and
  // an even one (8 at S = 1000 above).
  v.push_back({1, 4097, 1, 64, DType::BFloat16, false, true});
  if (level >= 2) {
    v.push_back({4, 4096, 16, 128, DType::BFloat16, true, false});
    v.push_back({4, 4096, 16, 128, DType::BFloat16, true, true});
  }
  return v;
}

// P is rounded to the I/O dtype before P V (as FlashAttention kernels do) and exp is the chip's
// approximation: an output's error is a few roundings of the dtype over |v| ~ 1.
opstest::Tol o_tol(DType dt) {
  return dt == DType::BFloat16 ? opstest::Tol{1.6e-2, 1.6e-2} : opstest::Tol{4e-3, 4e-3};
}

class FlashAttentionGrid : public ::testing::TestWithParam<Case> {};

TEST_P(FlashAttentionGrid, MatchesFp64Reference) {
  const Case c = GetParam();
  const uint64_t seed = opstest::test_seed();
  tl::Device dev;
  auto q = tl::randn(dev, shape_of(c), c.dt, seed);
  auto k = tl::randn(dev, shape_of(c), c.dt, seed + 1);
  auto v = tl::randn(dev, shape_of(c), c.dt, seed + 2);
  const AttentionLayout layout = c.bshd ? AttentionLayout::BSHD : AttentionLayout::BHSD;
  auto r = flash_attention(q, k, v, {.causal = c.causal, .layout = layout});
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.D));
  auto want = opstest::ref::flash_attention(q.to_vector(), k.to_vector(), v.to_vector(), c.B, c.S,
                                            c.H, c.D, c.bshd, c.causal, scale);
  EXPECT_EQ(r.o.shape(), q.shape());
  EXPECT_EQ(r.lse.shape(), (std::vector<int64_t>{c.B, c.H, c.S}));
  EXPECT_EQ(opstest::allclose(r.o.to_vector(), want.o, c.D, o_tol(c.dt), "o"), "");
  EXPECT_EQ(opstest::allclose(r.lse.to_vector(), want.lse, c.S, {1e-3, 1e-3}, "lse"), "");
  EXPECT_LT(opstest::calc_diff(r.o.to_vector(), want.o), 1e-4);
  opstest::record_gm_peak(dev);
}

INSTANTIATE_TEST_SUITE_P(Grid, FlashAttentionGrid, ::testing::ValuesIn(grid()),
                         [](const auto& info) { return name(info.param); });

using tltest::error_of;

#define EXPECT_CONTAINS(s, sub) EXPECT_NE((s).find(sub), std::string::npos) << (s)

TEST(FlashAttentionEdges, BadInputsAreLocatedErrorsNamingTheArgument) {
  tl::Device dev;
  auto q = tl::randn(dev, {1, 8, 2, 64}, DType::Float16, 1);
  auto m = error_of([&] {
    flash_attention(tl::randn(dev, {1, 8, 2, 64}, DType::Float32, 1), q, q);
  });
  EXPECT_CONTAINS(m,
                  "flash_attention: argument 'q' has the wrong dtype: expected float16 or "
                  "bfloat16, got float32");
  EXPECT_CONTAINS(m, "tests/ops/flash_attention_test.cpp:");
  EXPECT_CONTAINS(error_of([&] {
                    flash_attention(q, tl::randn(dev, {1, 8, 2, 64}, DType::BFloat16, 2), q);
                  }),
                  "flash_attention: argument 'k' has the wrong dtype: expected float16 (the dtype "
                  "of 'q'), got bfloat16");
  EXPECT_CONTAINS(error_of([&] {
                    flash_attention(q, q, tl::randn(dev, {1, 9, 2, 64}, DType::Float16, 3));
                  }),
                  "flash_attention: argument 'v' has the wrong shape: expected [1, 8, 2, 64], got "
                  "[1, 9, 2, 64]");
  EXPECT_CONTAINS(error_of([&] {
                    auto q3 = tl::randn(dev, {8, 2, 64}, DType::Float16, 4);
                    flash_attention(q3, q3, q3);
                  }),
                  "flash_attention: argument 'q' has the wrong rank: expected 4 dimensions (BSHD), "
                  "got 3");
  EXPECT_CONTAINS(error_of([&] {
                    auto q96 = tl::randn(dev, {1, 8, 2, 96}, DType::Float16, 5);
                    flash_attention(q96, q96, q96);
                  }),
                  "flash_attention: argument 'q' has an unsupported head dimension: expected D = "
                  "64 or 128 (the last dimension), got 96");
  EXPECT_CONTAINS(error_of([&] { flash_attention(q, q, q, {.scale = -1.0}); }),
                  "flash_attention: argument 'scale' is out of range: expected a finite scale > 0, "
                  "got -1");
}

TEST(FlashAttentionEdges, EmptyTensorsLaunchNothing) {
  tl::Device dev;
  const auto before = kernel_cache_stats();
  for (auto shape : {std::vector<int64_t>{1, 0, 2, 64}, std::vector<int64_t>{0, 5, 2, 64},
                     std::vector<int64_t>{1, 5, 0, 128}}) {
    auto q = tl::Tensor::empty(dev, shape, DType::Float16);
    auto r = flash_attention(q, q, q);
    EXPECT_EQ(r.o.shape(), shape);
    EXPECT_EQ(r.lse.shape(), (std::vector<int64_t>{shape[0], shape[2], shape[1]}));
  }
  const auto after = kernel_cache_stats();
  EXPECT_EQ(after.hits + after.misses,
            before.hits + before.misses);  // nothing compiled or looked up
}

TEST(FlashAttentionEdges, NanStaysInTheRowsItFeeds) {
  tl::Device dev;
  const int64_t S = 70, D = 64;
  auto q = tl::randn(dev, {1, 1, S, D}, DType::Float16, 7);
  auto k = tl::randn(dev, {1, 1, S, D}, DType::Float16, 8);
  auto v = tl::randn(dev, {1, 1, S, D}, DType::Float16, 9);
  auto qv = q.to_vector();
  qv[5 * D + 3] = std::nan("");  // query 5: its own output row only
  q = tl::from_vector(dev, {1, 1, S, D}, DType::Float16, qv);
  auto kv = k.to_vector();
  kv[66 * D] = std::nan("");  // key 66: causal, only queries 66.. see it
  k = tl::from_vector(dev, {1, 1, S, D}, DType::Float16, kv);
  auto r = flash_attention(q, k, v, {.causal = true, .layout = AttentionLayout::BHSD});
  auto o = r.o.to_vector(), lse = r.lse.to_vector();
  for (int64_t i = 0; i < S; ++i) {
    const bool want_nan = i == 5 || i >= 66;
    EXPECT_EQ(std::isnan(lse[i]), want_nan) << "query " << i;
    for (int64_t d = 0; d < D; ++d) ASSERT_EQ(std::isnan(o[i * D + d]), want_nan) << "query " << i;
  }
}

// Non-causal calls run each worker's q tiles as one pipelined loop (docs/ops.md, the fagm round):
// a q tile's end resets acc, l and m for the worker's next one. 4 heads x 8 q tiles on 24
// workers: workers 0-7 take a head-0 tile and then a head-3 one, so a NaN query row of head 0
// (its own row only) and a NaN key of head 1 (every row of head 1) must reach no other head.
TEST(FlashAttentionEdges, NanStaysInItsQTileAcrossTheWorkersTiles) {
  tl::Device dev;
  const int64_t S = 1000, H = 4, D = 64;
  auto q = tl::randn(dev, {1, H, S, D}, DType::BFloat16, 31);
  auto k = tl::randn(dev, {1, H, S, D}, DType::BFloat16, 32);
  auto v = tl::randn(dev, {1, H, S, D}, DType::BFloat16, 33);
  auto qv = q.to_vector();
  qv[static_cast<size_t>(5 * D + 3)] = std::nan("");  // head 0, query 5
  q = tl::from_vector(dev, {1, H, S, D}, DType::BFloat16, qv);
  auto kv = k.to_vector();
  kv[static_cast<size_t>((S + 700) * D)] = std::nan("");  // head 1, key 700
  k = tl::from_vector(dev, {1, H, S, D}, DType::BFloat16, kv);
  auto r = flash_attention(q, k, v, {.layout = AttentionLayout::BHSD});
  auto o = r.o.to_vector(), lse = r.lse.to_vector();
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < S; ++i) {
      const bool want_nan = (h == 0 && i == 5) || h == 1;
      ASSERT_EQ(std::isnan(lse[static_cast<size_t>(h * S + i)]), want_nan) << h << " " << i;
      for (int64_t d = 0; d < D; ++d)
        ASSERT_EQ(std::isnan(o[static_cast<size_t>((h * S + i) * D + d)]), want_nan)
            << h << " " << i;
    }
  // The rows without a NaN still match the reference (acc and l restart at each q tile).
  auto want = opstest::ref::flash_attention(q.to_vector(), k.to_vector(), v.to_vector(), 1, S, H, D,
                                            false, false, 1.0 / std::sqrt(double(D)));
  for (int64_t h : {2, 3}) {
    const size_t at = static_cast<size_t>(h * S * D), n = static_cast<size_t>(S * D);
    std::vector<double> got(o.begin() + at, o.begin() + at + n),
        ref(want.o.begin() + at, want.o.begin() + at + n);
    EXPECT_EQ(opstest::allclose(got, ref, D, o_tol(DType::BFloat16), "o"), "") << "head " << h;
  }
}

// Causal calls with square tiles run each worker's units (q tiles u - d and nq - 1 - u of a
// head) as one pipelined loop (docs/ops.md, the fapv round): a q tile's end resets acc, l and m
// for the next tile, inside a unit and across units. 30 heads x 2 units (S = 273: 3 q tiles,
// tile 2 alone, then tiles 0 and 1) on 24 workers: worker 1 runs head 0's tiles 0 and 1, then
// head 12's. A NaN query of head 0 tile 0 stays in its row; a NaN key 200 of head 1 reaches
// its rows 200.. only (tile 1's rows 128-199 stay clean, tile 2 is all NaN).
TEST(FlashAttentionEdges, NanStaysInItsQTileAcrossTheCausalUnits) {
  tl::Device dev;
  const int64_t S = 273, H = 30, D = 64;
  auto q = tl::randn(dev, {1, H, S, D}, DType::Float16, 41);
  auto k = tl::randn(dev, {1, H, S, D}, DType::Float16, 42);
  auto v = tl::randn(dev, {1, H, S, D}, DType::Float16, 43);
  auto qv = q.to_vector();
  qv[static_cast<size_t>(5 * D + 3)] = std::nan("");  // head 0, query 5
  q = tl::from_vector(dev, {1, H, S, D}, DType::Float16, qv);
  auto kv = k.to_vector();
  kv[static_cast<size_t>((S + 200) * D)] = std::nan("");  // head 1, key 200
  k = tl::from_vector(dev, {1, H, S, D}, DType::Float16, kv);
  auto r = flash_attention(q, k, v, {.causal = true, .layout = AttentionLayout::BHSD});
  auto o = r.o.to_vector(), lse = r.lse.to_vector();
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < S; ++i) {
      const bool want_nan = (h == 0 && i == 5) || (h == 1 && i >= 200);
      ASSERT_EQ(std::isnan(lse[static_cast<size_t>(h * S + i)]), want_nan) << h << " " << i;
      for (int64_t d = 0; d < D; ++d)
        ASSERT_EQ(std::isnan(o[static_cast<size_t>((h * S + i) * D + d)]), want_nan)
            << h << " " << i;
    }
  auto want = opstest::ref::flash_attention(q.to_vector(), k.to_vector(), v.to_vector(), 1, S, H, D,
                                            false, true, 1.0 / std::sqrt(double(D)));
  for (int64_t h : {0, 12, 29}) {  // head 0's clean rows too: its tile 0 shares a unit with tile 1
    const size_t at = static_cast<size_t>(h * S * D), n = static_cast<size_t>(S * D);
    std::vector<double> got(o.begin() + at, o.begin() + at + n),
        ref(want.o.begin() + at, want.o.begin() + at + n);
    if (h == 0)
      for (int64_t d = 0; d < D; ++d)  // the NaN row is checked above
        got[static_cast<size_t>(5 * D + d)] = ref[static_cast<size_t>(5 * D + d)] = 0;
    EXPECT_EQ(opstest::allclose(got, ref, D, o_tol(DType::Float16), "o"), "") << "head " << h;
  }
}

TEST(FlashAttentionEdges, OneKernelServesEveryBatchAndLength) {
  tl::Device dev;
  clear_kernel_cache();
  for (int64_t S : {5, 64, 130}) {
    for (int64_t B : {1, 3}) {
      auto q = tl::randn(dev, {B, S, 2, 64}, DType::BFloat16, S + B);
      flash_attention(q, q, q);
    }
  }
  EXPECT_EQ(kernel_cache_stats().misses, 1);
  EXPECT_EQ(kernel_cache_stats().hits, 5);
}

// Under the hazard checker and in timed mode with data (simulated-time order, as the hardware
// runs it): causal with its diagonal masks and longest-first q tiles, and a last kv tile
// masked past S; both with tail q tiles (causal: 3 q tiles, one unit of tile 2 and one of
// tiles 0 and 1 per head, the tile boundary inside the pipelined loop). Non-causal at 9 heads x 3 q
// tiles = 27 tiles on 24 workers: workers 0-2 run two q tiles in one pipelined loop (the tile
// boundary inside it).
TEST(FlashAttentionEdges, HazardFreeAndTimeOrderIndependent) {
  tl::Device dev;
  auto qc = tl::randn(dev, {1, 300, 2, 64}, DType::BFloat16, 21);
  auto qn = tl::randn(dev, {1, 9, 273, 64}, DType::Float16, 22);
  auto calls = [&] {
    flash_attention(qc, qc, qc, {.causal = true});
    flash_attention(qn, qn, qn, {.layout = AttentionLayout::BHSD});
  };
  opstest::expect_hazard_free_and_time_order_free(calls, 2);
}

// The masks' indices are float16 integers (IDX and the bound compared with it): exact only up
// to 2048, so a bigger tile is an error, not a silently wrong mask; the row trees pair column
// blocks, so block_n is a power of two.
TEST(FlashAttentionEdges, KernelRejectsTilesItCannotMaskOrReduce) {
  auto key = flash_attention_key(DType::Float16, 2, 64, true, AttentionLayout::BHSD, 0.125,
                                 tl::Device().target());
  key.block_n = 4096;
  EXPECT_CONTAINS(error_of([&] { flash_attention_kernel(key); }),
                  "flash_attention_kernel: block_m and block_n must be at most 2048 (the float16 "
                  "mask indices) and block_n a power of two (the row trees), got 128 x 4096");
  key.block_n = 192;
  EXPECT_CONTAINS(error_of([&] { flash_attention_kernel(key); }), "got 128 x 192");
}

// Every length takes 128 x 128 tiles with 3 stages and the cube two kv steps ahead (docs/ops.md
// "Performance", the fagm round: the step's cross-core round trip, not the vector unit, bounds
// 128 x 128 on the measured vector rows).
TEST(FlashAttentionEdges, EveryLengthTakes128RowTilesAndASkewOfTwo) {
  const tl::Target& t = tl::Device().target();
  auto key = [&](int64_t seq) {
    return flash_attention_key(DType::BFloat16, 2, 64, false, AttentionLayout::BSHD, 0.125, t, seq);
  };
  for (int64_t seq : {0, 1, 2047, 2048, 4096}) {
    EXPECT_EQ(key(seq).block_m, 128);
    EXPECT_EQ(key(seq).block_n, 128);
    EXPECT_EQ(key(seq).stages, 3);
    EXPECT_EQ(key(seq).skew, 2);
  }
  // A long kernel under the hazard checker and in timed mode with data, with a partial last kv
  // tile, causal or not.
  tl::Device dev;
  auto q = tl::randn(dev, {1, 2049, 1, 64}, DType::BFloat16, 11);
  auto calls = [&] {
    flash_attention(q, q, q, {.causal = true});
    flash_attention(q, q, q);
  };
  opstest::expect_hazard_free_and_time_order_free(calls, 2);
}

// The vector unit bounds the kernel (docs/ops.md "What bounds it"), and a two-source vector op
// whose sources start in bank groups other than opposite ones takes twice its repeats
// (docs/hardware.md section 4): the kernel declares its row vectors so that mj lands 256 bytes
// after s's group (at 128-row tiles m, mj, rs: the 64-row order m, rs, mj puts mj in s's group,
// 4 % of B1 S1024) and compacts the sums' tree. Guard both (a planner or declaration change that
// moves them costs more than the benchmarks' tolerance).
TEST(FlashAttentionEdges, SoftmaxTwoSourceOpsAvoidBankConflicts) {
  tl::Device dev;
  const auto key = flash_attention_key(DType::BFloat16, 2, 128, false, AttentionLayout::BSHD,
                                       1 / std::sqrt(128.0), dev.target());
  auto k = tl::compile(flash_attention_kernel(key), dev.target());
  const int64_t B = 1, S = 600, H = 2;  // 5 kv steps, the last one masked
  auto t = [&] { return tl::Tensor::empty(dev, {B, S, H * 128}, DType::BFloat16); };
  tl::npu::Trace trace;
  k.launch(dev,
           {t(), t(), t(), t(), tl::Tensor::empty(dev, {B, H, S}, DType::Float32),
            flash_attention_idx(dev, key)},
           {.trace = &trace, .timing_only = true});
  int subs = 0, adds = 0, conflicts = 0;
  for (const auto& c : trace.cores)
    for (const auto& e : c.events) {
      const bool sub = e.name == "tile.row_expand_sub";
      // The sums' tree: the whole-row-block adds of an AIV's 64 x 64 fp32 (16 KB) on s.
      const bool add = e.name == "tile.add" && e.bytes == 64 * 64 * 4;
      subs += sub;
      adds += add;
      if ((sub || add) && e.bank_conflict) ++conflicts;
    }
  EXPECT_GT(subs, 0);
  EXPECT_GT(adds, 0);
  EXPECT_EQ(conflicts, 0) << "of " << subs << " subtractions and " << adds << " tree adds";
}

// The benchmarks (opt-in, tests/ops/ops_bench.h): S = 1024 with 16 heads of 128, causal or not
// (B = 4, S = 4096 is 64 times the work: a level-2 test, too slow a simulation for a baseline).
std::vector<opsbench::Case> bench_cases() {
  std::vector<opsbench::Case> v;
  const std::tuple<int64_t, int64_t, int64_t> shapes[] = {{1, 1024, 16}};
  for (auto [B, S, H] : shapes) {
    for (bool causal : {false, true}) {
      const DType dt = DType::BFloat16;
      const std::string s =
          fmt::format("B{} S{} H{} D128 bfloat16 BSHD{}", B, S, H, causal ? " causal" : "");
      v.push_back({"flash_attention", s, [=](tl::Device& d) {
                     auto t = [&] { return tl::Tensor::empty(d, {B, S, H, 128}, dt); };
                     flash_attention(t(), t(), t(), {.causal = causal});
                     return flash_attention_cost(B, S, H, 128, dt, causal);
                   }});
    }
  }
  return v;
}
OPS_BENCH(flash_attention_test, bench_cases())

}  // namespace
