// The fixpipe's ReLU and fp32 -> fp16 / bf16 saturation on a staged fp32 row
// (src/npu/move_runs.h fixpipe_activate, AVX-512 on hosts that have it): every lane, at every
// length (the masked tail included), equals the scalar definition bit for bit, on NaN, the
// infinities, signed zeros, subnormals, the bounds and values around them.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace tl::npu {
void fixpipe_activate(float* x, int64_t n, bool relu, bool saturate, float mx);  // move_runs.h
}

namespace {

float reference(float v, bool relu, bool saturate, float mx) {
  if (relu) v = v > 0 ? v : (std::isnan(v) ? v : 0.0f);
  if (saturate) v = std::isnan(v) ? 0.0f : std::clamp(v, -mx, mx);
  return v;
}

TEST(FixpipeActivate, EqualsTheScalarDefinitionOnEveryLane) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> specials = {0.0f,
                                       -0.0f,
                                       1.0f,
                                       -1.0f,
                                       inf,
                                       -inf,
                                       std::numeric_limits<float>::quiet_NaN(),
                                       -std::numeric_limits<float>::quiet_NaN(),
                                       std::bit_cast<float>(0x7F800001u),  // sNaN
                                       std::numeric_limits<float>::denorm_min(),
                                       -std::numeric_limits<float>::denorm_min(),
                                       65504.0f,
                                       -65504.0f,
                                       65505.0f,
                                       -65520.0f,
                                       3.38953139e38f,
                                       -3.38953139e38f,
                                       std::numeric_limits<float>::max(),
                                       -std::numeric_limits<float>::max(),
                                       1e-30f,
                                       -7.5f};
  for (float mx : {65504.0f, 3.38953139e38f})
    for (int mode = 1; mode < 4; ++mode)
      for (int64_t n : {1, 7, 16, 17, 33, 1000, 4097}) {
        const bool relu = mode & 1, saturate = mode & 2;
        std::vector<float> x(n + 1);
        for (int64_t i = 0; i < n; ++i) x[i] = specials[(i * 7 + n) % specials.size()];
        x[n] = 12345.0f;  // past the row: untouched
        std::vector<float> want(x);
        for (int64_t i = 0; i < n; ++i) want[i] = reference(x[i], relu, saturate, mx);
        tl::npu::fixpipe_activate(x.data(), n, relu, saturate, mx);
        for (int64_t i = 0; i <= n; ++i)
          ASSERT_EQ(std::bit_cast<uint32_t>(x[i]), std::bit_cast<uint32_t>(want[i]))
              << "n " << n << " lane " << i << " relu " << relu << " saturate " << saturate;
      }
}

}  // namespace
