// Unwritten GM (tl/gm_fill.h): the pool of recycled huge blocks, the 0xFF poison, and the proof
// that the library ops which allocate their outputs Unwritten (softmax and log-softmax forward
// and backward, LayerNorm's y, SwiGLU's y, GEMM's C) write every output byte: each output is
// computed once over 0xFF bytes (TL_GM_POISON=1) and once over zeros or a recycled block
// (TL_GM_POISON=0), and the two must be the same bytes, on row and column tails (1, 7, 33, 1000,
// 4097 columns), with NaN, infinities, huge logits (the softmax fallback rows) and subnormals in
// the inputs; a timing-only run (no data) keeps zero-filled outputs.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "cann_ops_tilelang/activation.h"
#include "cann_ops_tilelang/core.h"
#include "cann_ops_tilelang/gemm.h"
#include "cann_ops_tilelang/norm.h"
#include "cann_ops_tilelang/softmax.h"
#include "tl/gm_fill.h"
#include "tl/runtime.h"

namespace {

using tl::DType;

/// Sets TL_GM_POISON for its lifetime, restoring the previous value.
class PoisonEnv {
 public:
  explicit PoisonEnv(const char* v) {
    if (const char* old = std::getenv("TL_GM_POISON")) old_ = old, had_ = true;
    ::setenv("TL_GM_POISON", v, 1);
  }
  ~PoisonEnv() {
    if (had_)
      ::setenv("TL_GM_POISON", old_.c_str(), 1);
    else
      ::unsetenv("TL_GM_POISON");
  }

 private:
  std::string old_;
  bool had_ = false;
};

bool all_bytes(const uint8_t* p, int64_t n, uint8_t v) {
  for (int64_t i = 0; i < n; ++i)
    if (p[i] != v) return false;
  return true;
}

TEST(GmFill, UnwrittenHugeBlocksAreRecycledZeroBlocksStayZero) {
  PoisonEnv env("0");
  tl::Device dev;
  const int64_t bytes = (int64_t{6} << 20) + 12345;  // a huge block of an unusual length
  uint8_t* first = nullptr;
  {
    tl::ScopedGmFill u(tl::GmFill::Unwritten);
    auto s = dev.allocate(bytes);
    first = s->base();
    std::memset(first, 0xAB, static_cast<size_t>(bytes));
  }
  EXPECT_EQ(dev.gm_bytes_in_use(), 0);  // a pooled block is not device GM
  {
    tl::ScopedGmFill u(tl::GmFill::Unwritten);
    auto s = dev.allocate(bytes);
    EXPECT_EQ(s->base(), first);  // the same mapping, its old bytes kept
    EXPECT_TRUE(all_bytes(s->base(), bytes, 0xAB));
    EXPECT_EQ(dev.gm_bytes_in_use(), bytes);
    {
      tl::ScopedGmFill z(tl::GmFill::Zero);  // scopes nest
      EXPECT_EQ(tl::current_gm_fill(), tl::GmFill::Zero);
    }
    EXPECT_EQ(tl::current_gm_fill(), tl::GmFill::Unwritten);
  }
  EXPECT_EQ(tl::current_gm_fill(), tl::GmFill::Zero);
  // A Zero allocation never takes a pooled block: zero bytes even with one of its size pooled.
  auto z = dev.allocate(bytes);
  EXPECT_TRUE(all_bytes(z->base(), bytes, 0));
  auto t = tl::Tensor::empty(dev, {bytes}, DType::UInt8);
  EXPECT_TRUE(all_bytes(t.data(), bytes, 0));
}

TEST(GmFill, PoisonedUnwrittenIsAllOnesAndABadValueIsAnError) {
  tl::Device dev;
  {
    PoisonEnv env("1");
    tl::ScopedGmFill u(tl::GmFill::Unwritten);
    for (int64_t bytes : {int64_t{1}, int64_t{1000}, (int64_t{6} << 20) + 7}) {
      auto s = dev.allocate(bytes);
      EXPECT_TRUE(all_bytes(s->base(), bytes, 0xFF)) << bytes;
    }
  }
  {
    PoisonEnv env("yes");
    tl::ScopedGmFill u(tl::GmFill::Unwritten);
    try {
      dev.allocate(64);
      FAIL() << "no error";
    } catch (const tl::Error& e) {
      EXPECT_NE(std::string(e.what()).find("TL_GM_POISON must be 1 or 0"), std::string::npos);
    }
    EXPECT_EQ(dev.gm_bytes_in_use(), 0);  // nothing reserved by the failed call
  }
}

/// An input with NaN, +-inf, a subnormal and values large enough for softmax's fallback rows.
tl::Tensor input(tl::Device& dev, int64_t rows, int64_t cols, DType dt, uint64_t seed) {
  auto x = tl::randn(dev, {rows, cols}, dt, seed);
  const double inf = std::numeric_limits<double>::infinity();
  const double specials[] = {std::numeric_limits<double>::quiet_NaN(), inf, -inf, 1e-40, 200.0};
  for (int64_t i = 0; i < 5 && i < rows; ++i) x.set(i * cols + (i * 3) % cols, specials[i]);
  return x;
}

/// The output bytes of `run` over 0xFF GM and over zero / recycled GM must be equal.
void expect_every_byte_written(const std::function<tl::Tensor()>& run, const std::string& what) {
  std::vector<uint8_t> plain, poisoned;
  {
    PoisonEnv env("0");  // first: a recycled block then holds this run's bytes, not 0xFF
    auto t = run();
    plain.assign(t.data(), t.data() + t.nbytes());
  }
  {
    PoisonEnv env("1");
    auto t = run();
    poisoned.assign(t.data(), t.data() + t.nbytes());
  }
  ASSERT_EQ(plain.size(), poisoned.size()) << what;
  int64_t differ = 0, first = -1;
  for (size_t i = 0; i < plain.size(); ++i)
    if (plain[i] != poisoned[i]) differ += 1, first = first < 0 ? int64_t(i) : first;
  EXPECT_EQ(differ, 0) << what << ": first differing byte " << first;
}

TEST(GmFill, SoftmaxWritesEveryOutputByte) {
  namespace ops = cann_ops_tilelang;
  tl::Device dev;
  for (DType dt : {DType::BFloat16, DType::Float32})
    for (int64_t cols : {1, 7, 33, 1000, 4097})
      for (int64_t rows : {1, 7, 33}) {
        const std::string at = fmt::format("{} {}x{}", tl::dtype_name(dt), rows, cols);
        auto x = input(dev, rows, cols, dt, 1);
        auto dy = tl::randn(dev, {rows, cols}, dt, 2);
        expect_every_byte_written([&] { return ops::softmax(x); }, "softmax " + at);
        expect_every_byte_written([&] { return ops::log_softmax(x); }, "log_softmax " + at);
        auto y = ops::softmax(x), ly = ops::log_softmax(x);
        expect_every_byte_written([&] { return ops::softmax_backward(dy, y); },
                                  "softmax_backward " + at);
        expect_every_byte_written([&] { return ops::log_softmax_backward(dy, ly); },
                                  "log_softmax_backward " + at);
      }
  // A huge block (>= 4 MiB: the pooled path), resident and streamed rows.
  for (int64_t cols : {4096, 40960}) {
    auto x = input(dev, (int64_t{5} << 20) / cols, cols, DType::BFloat16, 3);
    expect_every_byte_written([&] { return ops::softmax(x); }, fmt::format("softmax {}", cols));
  }
}

TEST(GmFill, LayerNormAndSwigluWriteEveryOutputByte) {
  namespace ops = cann_ops_tilelang;
  tl::Device dev;
  for (DType dt : {DType::BFloat16, DType::Float32})
    for (int64_t rows : {1, 7, 33}) {
      for (int64_t h : {1, 7, 33, 1000, 4097}) {
        auto x = input(dev, rows, h, dt, 4);
        auto w = tl::randn(dev, {h}, dt, 5), b = tl::randn(dev, {h}, dt, 6);
        expect_every_byte_written([&] { return ops::layer_norm(x, w, b).y; },
                                  fmt::format("layer_norm {} {}x{}", tl::dtype_name(dt), rows, h));
      }
      for (int64_t h : {16, 48, 1008, 4112}) {  // h * 2 and h * 4 bytes multiples of 32
        auto x = input(dev, rows, 2 * h, dt, 7);
        expect_every_byte_written([&] { return ops::swiglu(x); },
                                  fmt::format("swiglu {} {}x{}", tl::dtype_name(dt), rows, h));
      }
    }
  auto big = input(dev, 640, 8192, DType::BFloat16, 8);  // y: 5 MiB, a pooled block
  expect_every_byte_written([&] { return ops::layer_norm(big).y; }, "layer_norm 640x8192");
  expect_every_byte_written([&] { return ops::swiglu(big); }, "swiglu 640x4096");
}

TEST(GmFill, GemmWritesEveryOutputByte) {
  namespace ops = cann_ops_tilelang;
  tl::Device dev;
  // M / N / K tails (1, 7, 33, 1000; 4097 rows), each transpose, the three output dtypes.
  struct Case {
    int64_t m, n, k;
    bool ta, tb;
    DType in, out;
  };
  const Case cases[] = {{1, 1, 1, false, false, DType::Float16, DType::Float16},
                        {7, 33, 1000, false, false, DType::Float16, DType::Float32},
                        {33, 7, 33, true, false, DType::BFloat16, DType::BFloat16},
                        {1000, 33, 7, false, true, DType::Float16, DType::Float16},
                        {4097, 7, 33, true, true, DType::BFloat16, DType::Float32},
                        {33, 1000, 1, false, false, DType::BFloat16, DType::Float16}};
  for (const Case& c : cases) {
    auto a = input(dev, c.ta ? c.k : c.m, c.ta ? c.m : c.k, c.in, 10);
    auto b = tl::randn(dev, {c.tb ? c.n : c.k, c.tb ? c.k : c.n}, c.in, 11);
    ops::GemmConfig cfg{.trans_a = c.ta, .trans_b = c.tb, .out_dtype = c.out};
    expect_every_byte_written([&] { return ops::gemm(a, b, cfg); },
                              fmt::format("gemm {}x{}x{} ta={} tb={} {} -> {}", c.m, c.n, c.k, c.ta,
                                          c.tb, tl::dtype_name(c.in), tl::dtype_name(c.out)));
  }
  // C of 2048 x 1040 fp16 (4.06 MiB): a pooled huge block, recycled between the two runs.
  auto a = tl::randn(dev, {2048, 64}, DType::Float16, 12);
  auto b = tl::randn(dev, {64, 1040}, DType::Float16, 13);
  expect_every_byte_written([&] { return ops::gemm(a, b, {}); }, "gemm 2048x1040x64");
}

// A timing-only run computes no data: its outputs are zero-filled GM, never a recycled block's
// old bytes (here a pooled block that held an earlier softmax's output).
TEST(GmFill, TimingOnlyRunsKeepZeroOutputs) {
  namespace ops = cann_ops_tilelang;
  PoisonEnv env("0");
  tl::Device dev;
  auto x = tl::randn(dev, {1280, 4096}, DType::BFloat16, 9);  // y: 10.5 MB, a pooled block
  { auto y = ops::softmax(x); }
  ops::RunOptions ro;
  ro.launch.timing_only = true;
  ops::ScopedRun run(ro);
  auto y = ops::softmax(x);
  EXPECT_TRUE(all_bytes(y.data(), y.nbytes(), 0));
}

}  // namespace
