// The 64-byte aligned storage of the cube's packed operands and the cores' memories
// (tl/npu/cache_aligned.h): every size, and every growth of a vector, starts on a cache line, so
// the kernel's 64-byte vectors never straddle two.
#include <gtest/gtest.h>

#include <cstdint>

#include "tl/npu/cache_aligned.h"
#include "tl/npu/cube_math.h"

namespace {

TEST(CacheAligned, EverySizeAndGrowthStartsOnACacheLine) {
  tl::npu::CoreMemory bytes;
  tl::npu::PackedFloats floats;
  for (size_t n : {size_t{1}, size_t{7}, size_t{33}, size_t{1000}, size_t{4097}, size_t{65549},
                   size_t{1} << 20}) {
    bytes.resize(n);
    floats.resize(n);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(bytes.data()) % 64, 0u) << n;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(floats.data()) % 64, 0u) << n;
    tl::npu::CoreMemory fresh(n, 0xA5);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(fresh.data()) % 64, 0u) << n;
    EXPECT_EQ(fresh[n - 1], 0xA5);
  }
}

}  // namespace
