// exp_f32 (src/support/exp_f32.cpp), the SIMD exp behind the fast paths of T.tile.exp, sigmoid
// and silu, against std::exp(float) bit for bit, in every implementation the host runs (issue 31:
// the fast paths must not change a result). TL_TEST_LEVEL=2 checks every one of the 2^32 float
// inputs (about a minute on two threads); levels 0 and 1 check a stride through all of them, every
// float near the ends of the SIMD range (-87, 88) and near 0, and dense runs inside the range. The
// op tests run one-op kernels fast and with TL_NPU_PLAIN_PATHS=1 (the element expression of
// vector_ops.def) and require identical bytes, on every float dtype, with tails and special values.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "npu/vector_ops.h"
#include "tl/npu/numerics.h"

namespace tl {
namespace {

int level() {
  const char* e = std::getenv("TL_TEST_LEVEL");
  return e ? std::atoi(e) : 0;
}

float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
uint32_t to_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

/// The inputs whose result from `impl` differs from std::exp's in any bit, among `count`
/// inputs first_bits, first_bits + step, ... (wrapping at 2^32); the first few in `first`.
uint64_t mismatches(const npu::ExpF32Impl& impl, uint64_t first_bits, uint64_t step, uint64_t count,
                    std::vector<uint32_t>& first) {
  constexpr uint64_t kBlock = 4096;
  std::vector<float> in(kBlock), out(kBlock);
  uint64_t bad = 0;
  for (uint64_t done = 0; done < count; done += kBlock) {
    const uint64_t m = std::min(kBlock, count - done);
    for (uint64_t j = 0; j < m; ++j)
      in[j] = from_bits(static_cast<uint32_t>(first_bits + (done + j) * step));
    impl.fn(in.data(), out.data(), static_cast<int64_t>(m));
    for (uint64_t j = 0; j < m; ++j)
      if (to_bits(out[j]) != to_bits(std::exp(in[j]))) {
        if (first.size() < 5) first.push_back(to_bits(in[j]));
        ++bad;
      }
  }
  return bad;
}

std::string describe(const npu::ExpF32Impl& impl, const std::vector<uint32_t>& first) {
  std::string s = fmt::format("{}: ", impl.name);
  for (uint32_t b : first) {
    const float x = from_bits(b);
    float y;
    impl.fn(&x, &y, 1);
    s += fmt::format("exp({:a}) = {:a}, std::exp gives {:a}; ", x, y, std::exp(x));
  }
  return s;
}

/// Every float in [lo, hi] (both of one sign), as bit patterns.
void check_dense(const npu::ExpF32Impl& impl, float lo, float hi) {
  uint32_t a = to_bits(lo), b = to_bits(hi);
  if (a > b) std::swap(a, b);
  std::vector<uint32_t> first;
  const uint64_t bad = mismatches(impl, a, 1, uint64_t{b} - a + 1, first);
  EXPECT_EQ(bad, 0u) << "in [" << lo << ", " << hi << "]: " << describe(impl, first);
}

// Every implementation the host runs (AVX-512, AVX2 and the scalar loop, as the host has them).
TEST(ExpF32, EqualsStdExpBitForBit) {
  const auto impls = npu::exp_f32_impls();
  ASSERT_FALSE(impls.empty());
  for (const auto& impl : impls) {
    if (level() >= 2) {  // all 2^32 inputs, split over the host's threads
      const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
      const uint64_t per = ((uint64_t{1} << 32) + threads - 1) / threads;
      std::atomic<uint64_t> bad{0};
      std::vector<std::vector<uint32_t>> first(threads);
      std::vector<std::thread> pool;
      for (unsigned t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
          const uint64_t lo = t * per, n = std::min(per, (uint64_t{1} << 32) - lo);
          bad += mismatches(impl, lo, 1, n, first[t]);
        });
      for (auto& th : pool) th.join();
      std::vector<uint32_t> all;
      for (const auto& f : first) all.insert(all.end(), f.begin(), f.end());
      EXPECT_EQ(bad.load(), 0u) << describe(impl, all);
      continue;
    }
    // A stride through all bit patterns (odd, so every low bit pattern occurs), ...
    std::vector<uint32_t> first;
    const uint64_t step = level() >= 1 ? 61 : 4093;
    uint64_t bad = mismatches(impl, 12345, step, (uint64_t{1} << 32) / step, first);
    EXPECT_EQ(bad, 0u) << describe(impl, first);
    // ... every float near the ends of the SIMD range and around the overflow / subnormal
    // limits, ...
    check_dense(impl, -87.5f, -86.5f);
    check_dense(impl, 87.5f, 89.0f);
    check_dense(impl, -104.0f, -103.0f);
    // ... near 0 (exp close to 1, where the midpoint test decides most often) ...
    check_dense(impl, 0x1p-7f, 0x1.2p-7f);
    check_dense(impl, -0x1.2p-7f, -0x1p-7f);
    // ... and dense stretches of ordinary arguments.
    check_dense(impl, 1.0f, 1.0625f);
    check_dense(impl, -20.0f, -19.875f);
  }
}

TEST(ExpF32, TailsInPlaceAndSpecials) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-100.0f, 100.0f);
  const float specials[] = {NAN,         -NAN,       INFINITY,   -INFINITY, 0.0f,
                            -0.0f,       0x1p-149f,  -0x1p-149f, 88.72283f, 88.72284f,
                            -103.97208f, -87.33655f, 1e-30f};
  // Sizes around the chunks of 128 (AVX2) and 256 (AVX-512) lanes whose fallbacks run after the
  // chunk.
  for (int64_t n : {0, 1, 3, 7, 8, 9, 33, 127, 128, 129, 255, 256, 257, 513, 1000, 4097}) {
    std::vector<float> in(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      in[i] = i % 5 == 3 ? specials[(i / 5) % std::size(specials)] : u(rng);
    std::vector<float> want(in.size()), out(in.size()), inplace = in;
    for (size_t i = 0; i < in.size(); ++i) want[i] = std::exp(in[i]);
    for (const auto& impl : npu::exp_f32_impls()) {
      inplace = in;
      impl.fn(in.data(), out.data(), n);
      impl.fn(inplace.data(), inplace.data(), n);
      for (size_t i = 0; i < in.size(); ++i) {
        const bool nan = std::isnan(want[i]);
        EXPECT_TRUE(nan ? std::isnan(out[i]) : to_bits(out[i]) == to_bits(want[i]))
            << impl.name << " n " << n << " exp(" << in[i] << ") = " << out[i] << ", want "
            << want[i];
        EXPECT_EQ(to_bits(inplace[i]), to_bits(out[i])) << impl.name << " n " << n << " at " << i;
      }
    }
  }
}

// Every bfloat16 value widened to fp32 (low 16 bits zero), sixteen in a row, which the SIMD forms
// read from their table of std::exp's results (NaNs, infinities, subnormals and zeros of both
// signs among them); and the same values with one lane in each block of 16 not a bfloat16 value
// (those blocks take the evaluation). In place and not, with tails; bit for bit, NaNs included.
TEST(ExpF32, Bf16ValuesEqualStdExpBitForBit) {
  std::vector<float> all(65536 + 5), mixed(all.size());
  for (size_t i = 0; i < all.size(); ++i)
    all[i] = from_bits(static_cast<uint32_t>(i % 65536) << 16);
  for (size_t i = 0; i < all.size(); ++i)
    mixed[i] = i % 16 == 5 ? from_bits(to_bits(all[i]) | 0x8000u) : all[i];
  for (const auto& impl : npu::exp_f32_impls())
    for (const auto* src : {&all, &mixed})
      for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{16}, int64_t{33}, int64_t{1000},
                        int64_t{4097}, static_cast<int64_t>(src->size())}) {
        std::vector<float> out(static_cast<size_t>(n)), inplace(src->begin(), src->begin() + n);
        impl.fn(src->data(), out.data(), n);
        impl.fn(inplace.data(), inplace.data(), n);
        int64_t bad = 0, bad_inplace = 0;
        uint32_t first = 0;
        for (int64_t i = 0; i < n; ++i) {
          const uint32_t want = to_bits(std::exp((*src)[i]));
          if (to_bits(out[i]) != want && bad++ == 0) first = to_bits((*src)[i]);
          bad_inplace += to_bits(inplace[i]) != want;
        }
        EXPECT_EQ(bad, 0) << impl.name << (src == &all ? " bf16" : " mixed") << " n " << n
                          << ", first input bits 0x" << std::hex << first;
        EXPECT_EQ(bad_inplace, 0) << impl.name << " in place, n " << n;
      }
}

// The ops on the virtual NPU: the fast rows (exp_f32) and the plain element expression give the
// same bytes, in every dtype the op takes, on tails and on inputs that overflow, underflow and are
// NaN.
TEST(ExpF32, ExpSigmoidSiluFastEqualsPlain) {
  using optest::Region;
  const std::vector<std::pair<const char*, std::function<void(TileArg, TileArg)>>> ops = {
      {"exp", [](TileArg d, TileArg s) { T::tile::exp(d, s); }},
      {"sigmoid", [](TileArg d, TileArg s) { T::tile::sigmoid(d, s); }},
      {"silu", [](TileArg d, TileArg s) { T::tile::silu(d, s); }},
  };
  for (const auto& [name, op] : ops)
    for (DType t : optest::legal((std::string("tile.") + name).c_str()))
      for (const Region& rg : optest::tail_regions(dtype_bytes(t))) {
        SCOPED_TRACE(fmt::format("tile.{} {} {}", name, dtype_name(t), rg.str()));
        std::vector<std::vector<uint8_t>> results;
        for (bool plain : {true, false}) {
          ::setenv("TL_NPU_PLAIN_PATHS", plain ? "1" : "0", 1);
          Device dev;
          Tensor d = full(dev, rg.shape, t, 7);
          Tensor s = optest::input(dev, rg.shape, t, 5, -120, 120);
          std::vector<double> v = s.to_vector();
          for (size_t i = 0; i < v.size(); i += 7) v[i] = i % 3 ? std::nan("") : -INFINITY;
          s = from_vector(dev, rg.shape, t, v);
          optest::run_one_op(dev, {{"d", rg.shape, t}, {"s", rg.shape, t}}, {},
                             [&](const std::vector<Buffer>& ub, const std::vector<Var>&) {
                               op(rg.of(ub[0]), rg.of(ub[1]));
                             },
                             {d, s});
          results.push_back(optest::bytes_of(d));
        }
        ::unsetenv("TL_NPU_PLAIN_PATHS");
        EXPECT_EQ(results[0], results[1]);
      }
}

}  // namespace
}  // namespace tl
