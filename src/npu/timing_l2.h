// The timing model's L2 cache (docs/calibration.md, "GM side" and "Known gaps of the model"):
// which share of a GM instruction's bytes costs HBM time. Split from timing_model.cpp, which
// holds the pipes and the fluid bandwidth sharing that use the share.
//
// L2 is tracked by bytes: a read hits for the bytes any earlier instruction read or wrote,
// whatever the shapes of the two accesses, while the footprint fits in L2 (beyond it, hits are
// scaled by L2 / footprint: no eviction order). The footprint counts the bytes that entered L2:
// reads and writes of GM tensors in the normal L2 cache mode. A tensor in mode "disable"
// (T.annotate_l2_cache, AscendC's SetL2CacheHint(CACHE_MODE_DISABLE)) does not enter it: its
// reads hit only what is already there, its writes go to HBM.
//
// Writes (MTE3, FIX) allocate in L2 (AscendC best practices, "Setting a Proper L2 CacheMode":
// data moved out by MTE3 or Fixpipe goes through L2; old data is written back to GM when it is
// replaced, which occupies GM bandwidth). While the footprint fits, a write costs no HBM time
// (its dirty bytes are left in L2 at the kernel's end: asc-devkit's add example with its reads
// bypassing L2, 134 MB of writes that do not show in its time). Once the footprint exceeds L2
// the chip pays HBM time for every byte written (the same example with its reads entering L2,
// 403 MB, and asc-devkit's GELU, 537 MB, both move all their bytes at the streaming rate), so:
// a write of bytes new to L2 then costs its bytes in full, a rewrite of bytes L2 holds the share
// 1 - L2 / footprint, and the bytes written before the footprint crossed L2's capacity are owed:
// every later allocation (a read's or a write's new bytes) writes back as many of them as it
// allocates, until none are left. An instruction's share can then exceed 1.
#pragma once

#include <cstdint>
#include <map>

#include "tl/npu/trace.h"

namespace tl::npu {

class L2Cache {
 public:
  explicit L2Cache(double capacity_bytes) : capacity_(capacity_bytes) {}

  /// The HBM bytes of `e` per byte it moves (1 for an instruction touching no GM; more than 1
  /// when it also writes back older dirty bytes), and updates what L2 holds.
  double hbm_share(const TraceEvent& e, bool write);

  double footprint() const { return footprint_; }
  double owed() const { return owed_; }

 private:
  /// Marks [s, e) as held and returns how many of its bytes were held before.
  double touch(uint64_t s, uint64_t e);
  /// How many bytes of [s, e) are held (nothing is marked).
  double held(uint64_t s, uint64_t e) const;

  double capacity_;
  double footprint_ = 0;  // distinct GM bytes that entered L2 so far
  double dirty_ = 0;      // bytes written while the footprint fitted (left in L2 if it still does)
  double owed_ = 0;       // of those, not yet written back once the footprint exceeded L2
  bool over_ = false;     // the footprint has exceeded L2's capacity
  // The GM bytes that entered L2, as disjoint [start, end) ranges (start -> end).
  std::map<uint64_t, uint64_t> touched_;
};

}  // namespace tl::npu
