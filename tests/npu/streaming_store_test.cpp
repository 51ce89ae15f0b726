// The UB -> GM stores with non-temporal (streaming) stores (src/npu/move_runs.h store_streaming,
// taken for row moves of at least 4 KiB into a kernel parameter of at least 32 MiB): the bytes
// equal memmove's at every alignment and length, nothing around the destination is touched, and
// a library softmax whose output is large enough to stream gives the plain paths' bytes.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "cann_ops_tilelang/softmax.h"
#include "tl/runtime.h"

namespace tl::npu {
void store_streaming(uint8_t* dst, const uint8_t* src, size_t n);  // src/npu/move_runs.h
}

namespace {

TEST(StreamingStore, EqualsMemmoveAtEveryAlignmentAndLength) {
  std::vector<uint8_t> src(70000);
  std::iota(src.begin(), src.end(), uint8_t{1});
  for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{33}, size_t{63}, size_t{64}, size_t{65},
                   size_t{1000}, size_t{4097}, size_t{65536 + 13}})
    for (size_t doff = 0; doff <= 16; ++doff)
      for (size_t soff : {size_t{0}, size_t{1}, size_t{3}}) {
        std::vector<uint8_t> dst(n + 64, 0xA5), want(n + 64, 0xA5);
        std::memcpy(want.data() + doff, src.data() + soff, n);
        tl::npu::store_streaming(dst.data() + doff, src.data() + soff, n);
        ASSERT_EQ(dst, want) << "n " << n << " dst offset " << doff << " src offset " << soff;
      }
}

/// Sets TL_NPU_PLAIN_PATHS for its lifetime.
struct PlainPaths {
  explicit PlainPaths(bool on) { ::setenv("TL_NPU_PLAIN_PATHS", on ? "1" : "0", 1); }
  ~PlainPaths() { ::unsetenv("TL_NPU_PLAIN_PATHS"); }
};

TEST(StreamingStore, LargeSoftmaxOutputSameBytesAsThePlainPaths) {
  // 4100 x 4096 bf16: a 33.6 MB output, streamed by its resident tiles and by the tail tile's
  // row-by-row stores (8 KiB rows); the plain paths move every row with copy_regions.
  tl::Device dev;
  auto x = tl::randn(dev, {4100, 4096}, tl::DType::BFloat16, 11);
  x.set(5, std::numeric_limits<double>::quiet_NaN());
  x.set(4096 * 4099 + 7, -std::numeric_limits<double>::infinity());
  std::vector<uint8_t> fast, plain;
  for (bool p : {false, true}) {
    PlainPaths env(p);
    auto y = cann_ops_tilelang::softmax(x);
    ASSERT_GE(y.nbytes(), int64_t{32} << 20);
    (p ? plain : fast).assign(y.data(), y.data() + y.nbytes());
  }
  EXPECT_TRUE(fast == plain);
}

}  // namespace
