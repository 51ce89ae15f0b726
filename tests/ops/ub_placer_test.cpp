// cann_ops_tilelang's UbPlacer (include/cann_ops_tilelang/core.h), the one UB placement the
// resident RMSNorm kernels and softmax's resident and streamed schedules share: each buffer at
// the residue modulo 512 asked, sizes rounded up to 32 bytes, in order and never overlapping.
// The kernels' IR (the RmsNorm / Softmax suites and the Python twins' identical-IR tests) fixes
// the addresses it gives; this pins the rule itself on tail sizes.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "cann_ops_tilelang/core.h"

namespace {

using cann_ops_tilelang::UbPlacer;

TEST(UbPlacer, AddressesWorkedByHand) {
  UbPlacer place;
  EXPECT_EQ(place(1, 0), 0);          // 1 byte takes a 32-byte block: next free 32
  EXPECT_EQ(place(7, 256), 256);      // skips to residue 256
  EXPECT_EQ(place(33, 0), 512);       // 288 -> 512; 33 bytes take 64
  EXPECT_EQ(place(1000, 256), 768);   // 576 -> 768; 1000 bytes take 1024
  EXPECT_EQ(place(4097, 256), 1792);  // already at residue 256: no skip; 4097 take 4128
  EXPECT_EQ(place(32, 0), 6144);      // 5920 -> 6144
  EXPECT_EQ(place(0, 0), 6656);       // an empty buffer still starts at its residue
  EXPECT_EQ(place.at, 6656);
}

TEST(UbPlacer, EveryBufferAtItsResidueAndDisjoint) {
  UbPlacer place;
  int64_t end = 0;
  for (int64_t bytes : {1, 7, 33, 1000, 4097}) {
    for (int64_t residue : {0, 256, 96, 0, 480}) {
      const int64_t before = place.at;
      const int64_t a = place(bytes, residue);
      EXPECT_EQ(a % 512, residue) << bytes << " bytes at residue " << residue;
      EXPECT_GE(a, end) << "overlaps the buffer before";
      EXPECT_LT(a - before, 512) << "skipped more than one period";
      end = a + bytes;
      EXPECT_EQ(place.at, a + (bytes + 31) / 32 * 32);
      EXPECT_EQ(place.at % 32, 0);
    }
  }
}

}  // namespace
