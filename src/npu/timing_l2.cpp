// The timing model's L2 cache: exact bytes touched, write-back (timing_l2.h says the rules).
#include "timing_l2.h"

#include <algorithm>
#include <iterator>

namespace tl::npu {

// Exact bytes, not lines: a line size would make hits depend on where the host placed the
// tensors (the trace's GM offsets are host addresses), and the C11 [64, 64] tiles, 128-byte rows
// side by side, measure no reuse between neighbouring tiles.
double L2Cache::touch(uint64_t s, uint64_t e) {
  double h = 0;
  auto it = touched_.upper_bound(s);
  if (it != touched_.begin() && std::prev(it)->second >= s) --it;
  uint64_t lo = s, hi = e;
  while (it != touched_.end() && it->first <= e) {
    const uint64_t a = std::max(s, it->first), b = std::min(e, it->second);
    if (b > a) h += static_cast<double>(b - a);
    lo = std::min(lo, it->first);
    hi = std::max(hi, it->second);
    it = touched_.erase(it);
  }
  touched_.emplace(lo, hi);
  footprint_ += static_cast<double>(e - s) - h;
  return h;
}

double L2Cache::held(uint64_t s, uint64_t e) const {
  double h = 0;
  auto it = touched_.upper_bound(s);
  if (it != touched_.begin() && std::prev(it)->second > s) --it;
  for (; it != touched_.end() && it->first < e; ++it) {
    const uint64_t a = std::max(s, it->first), b = std::min(e, it->second);
    if (b > a) h += static_cast<double>(b - a);
  }
  return h;
}

double L2Cache::hbm_share(const TraceEvent& e, bool write) {
  double total = 0, hit = 0;
  for (const auto& a : e.accesses) {
    if (a.mem.scope != MemScope::GM || a.len == 0) continue;
    for (uint64_t r = 0; r < a.count; ++r) {
      const uint64_t s = a.start + r * a.pitch;
      total += static_cast<double>(a.len);
      hit += e.l2_bypass ? held(s, s + a.len) : touch(s, s + a.len);
    }
  }
  if (total == 0) return 1.0;
  if (e.l2_bypass && write) return 1.0;  // straight to HBM
  // Beyond L2's capacity only L2 / footprint of the bytes stay resident (no eviction order).
  const double resident = footprint_ > capacity_ ? capacity_ / footprint_ : 1.0;
  if (e.l2_bypass) return 1.0 - hit / total * resident;  // a read that allocates nothing
  const double fresh = total - hit;                      // bytes this instruction allocates in L2
  if (!over_ && footprint_ > capacity_) {
    over_ = true;
    owed_ = dirty_;  // what was written while everything fitted must now go to HBM
  }
  double hbm = write ? 0.0 : total - hit * resident;
  if (!over_) {
    if (write) dirty_ += fresh;
    return hbm / total;
  }
  if (write) hbm = fresh + hit * (1.0 - resident);
  const double back = std::min(owed_, fresh);  // the dirty bytes its allocation evicts
  owed_ -= back;
  return (hbm + back) / total;
}

}  // namespace tl::npu
