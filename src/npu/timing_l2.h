// The timing model's L2 cache (docs/calibration.md, "C7" and "Known gaps of the model"): which
// share of a GM instruction's bytes goes to HBM. Split from timing_model.cpp, which holds the
// pipes and the fluid bandwidth sharing that use the share.
//
// L2 is tracked by bytes: a read hits for the bytes any earlier instruction read or wrote,
// whatever the shapes of the two accesses, while the footprint fits in L2 (beyond it, hits are
// scaled by L2 / footprint: no eviction order). Writes (MTE3, FIX) allocate in L2 and reach HBM
// only when evicted, i.e. once the footprint exceeds L2: a write's HBM share is 1 - L2 /
// footprint (AscendC best practices, "Setting a Proper L2 CacheMode": data moved out by MTE3 or
// Fixpipe goes through L2; old data is written back to GM when it is replaced).
#pragma once

#include <cstdint>
#include <map>

#include "tl/npu/trace.h"

namespace tl::npu {

class L2Cache {
 public:
  explicit L2Cache(double capacity_bytes) : capacity_(capacity_bytes) {}

  /// The share of `e`'s GM bytes that goes to HBM (1 for an instruction touching no GM), and
  /// marks its bytes as held.
  double miss_fraction(const TraceEvent& e, bool write);

 private:
  /// Marks [s, e) as held and returns how many of its bytes were held before.
  double touch(uint64_t s, uint64_t e);

  double capacity_;
  double footprint_ = 0;  // distinct GM bytes touched so far
  // The GM bytes any access touched, as disjoint [start, end) ranges (start -> end).
  std::map<uint64_t, uint64_t> touched_;
};

}  // namespace tl::npu
