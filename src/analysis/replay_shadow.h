// The replay's shadow (replay_run.cpp): what each written memory's accesses left that a later
// access must be ordered after, as the hazard checker keeps it (src/npu/hazard.cpp), indexed so
// that an access visits only the records that may overlap it. Internal to the analysis module.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "tl/replay.h"

namespace tl::replay::detail {

constexpr int kClock = 3 * kPipes;  // (core, pipe) timelines of one block

using Clock = std::array<uint32_t, kClock>;
inline void join(Clock& a, const Clock& b) {
  for (int i = 0; i < kClock; ++i) a[i] = std::max(a[i], b[i]);
}

inline bool overlap(const Span& a, const Span& b) {
  if (a.mem != b.mem) return false;
  if (a.base < 0 || b.base < 0 || a.base != b.base) return true;
  return a.lo < b.hi && b.lo < a.hi;
}
inline bool covers(const Span& a, const Span& b) {
  return a.mem == b.mem && a.base >= 0 && a.base == b.base && a.lo <= b.lo && b.hi <= a.hi;
}

/// An access not yet replaced by a covering one ordered after it (the hazard checker's shadow).
struct Rec {
  Span span;
  int core, timeline;
  uint32_t clock;
  size_t event;
};

/// One memory's recorded accesses, by base, length class (the bit width of the length) and first
/// byte, so that an access visits the records that may overlap it (overlap()) without scanning
/// the others: a block's streams touch the rows of a tile hundreds of times, and none covers
/// another. In a class, a record that starts at or before a.lo - 2^(class) ends at or before a.lo.
class Shadow {
 public:
  /// Calls `f` on every record that overlaps `a` (a span of this memory).
  template <class F>
  void overlapping(const Span& a, F&& f) const {
    for (const Rec& r : unknown_) f(r);
    for (const auto& [base, classes] : bases_)
      for (const Class& m : classes) {
        if (a.base < 0 || base != a.base) {  // another base, or an unknown one: every record
          for (const Rec& r : m.sorted)
            if (r.clock) f(r);
          for (const Rec& r : m.recent) f(r);
          continue;
        }
        int64_t from;
        auto it = m.cls >= 63 || __builtin_sub_overflow(a.lo, int64_t{1} << m.cls, &from)
                      ? m.sorted.begin()
                      : std::upper_bound(m.sorted.begin(), m.sorted.end(), from, by_lo);
        for (; it != m.sorted.end() && it->span.lo < a.hi; ++it)
          if (it->clock && overlap(it->span, a)) f(*it);
        for (const Rec& r : m.recent)
          if (overlap(r.span, a)) f(r);
      }
  }
  /// Erases the records `a` covers (covers()) for which `pred` holds.
  template <class P>
  void erase_covered(const Span& a, P&& pred) {
    if (a.base < 0) return;
    auto b = std::find_if(bases_.begin(), bases_.end(),
                          [&](const auto& x) { return x.first == a.base; });
    if (b == bases_.end()) return;
    auto gone = [&](const Rec& r) { return r.clock && covers(a, r.span) && pred(r); };
    for (Class& m : b->second) {
      auto from = std::lower_bound(m.sorted.begin(), m.sorted.end(), a.lo, lo_before);
      for (auto it = from; it != m.sorted.end() && it->span.lo <= a.hi; ++it)
        if (gone(*it)) it->clock = 0;
      m.recent.erase(std::remove_if(m.recent.begin(), m.recent.end(), gone), m.recent.end());
    }
  }
  /// Every record: `f(rec)` may change its clock (never its span, which orders the classes).
  template <class F>
  void each(F&& f) {
    for (Rec& r : unknown_) f(r);
    for (auto& [base, classes] : bases_)
      for (Class& m : classes) {
        for (Rec& r : m.sorted)
          if (r.clock) f(r);
        for (Rec& r : m.recent) f(r);
      }
  }
  void add(const Rec& r) {
    if (r.span.base < 0) {
      unknown_.push_back(r);
      return;
    }
    int64_t length;
    if (__builtin_sub_overflow(r.span.hi, r.span.lo, &length) || length < 0) length = INT64_MAX;
    const int cls = 64 - __builtin_clzll(static_cast<uint64_t>(length) | 1);  // length < 2^cls
    auto b = std::find_if(bases_.begin(), bases_.end(),
                          [&](const auto& x) { return x.first == r.span.base; });
    if (b == bases_.end()) b = bases_.insert(b, {r.span.base, {}});
    auto c = std::find_if(b->second.begin(), b->second.end(),
                          [&](const Class& x) { return x.cls == cls; });
    if (c == b->second.end()) c = b->second.insert(c, Class{cls, {}, {}});
    c->recent.push_back(r);
    if (c->recent.size() >= kRecent) c->merge();
  }

 private:
  // Bases and length classes in the order first seen, searched in order: a memory has a few of
  // each, and every access visits them all (overlapping()), which tree nodes made dear. A class
  // keeps its records contiguous, as every access scans a window of them (on other bases, all
  // of them): sorted by first byte, erased ones left in place as tombstones (clock 0, which no
  // access is ordered before, the live records' clocks being issue counts from 1), the latest
  // added unsorted until kRecent of them are merged in with the tombstones dropped. Inserting
  // each into the sorted records moved all those after it: quadratic in a tile's rows, which
  // are added interleaved with another buffer's (the 171-row-tile RoPE).
  static constexpr size_t kRecent = 32;
  struct Class {
    int cls;                  // the length class
    std::vector<Rec> sorted;  // by lo, with tombstones
    std::vector<Rec> recent;  // in the order added
    void merge() {
      std::stable_sort(recent.begin(), recent.end(),
                       [](const Rec& x, const Rec& y) { return x.span.lo < y.span.lo; });
      std::vector<Rec> out;
      out.reserve(sorted.size() + recent.size());
      auto live = [](const Rec& x) { return x.clock != 0; };
      auto it = sorted.begin();
      for (const Rec& r : recent) {
        for (; it != sorted.end() && it->span.lo <= r.span.lo; ++it)
          if (live(*it)) out.push_back(*it);
        out.push_back(r);
      }
      for (; it != sorted.end(); ++it)
        if (live(*it)) out.push_back(*it);
      sorted = std::move(out);
      recent.clear();
    }
  };
  static bool by_lo(int64_t lo, const Rec& r) { return lo < r.span.lo; }
  static bool lo_before(const Rec& r, int64_t lo) { return r.span.lo < lo; }
  std::vector<Rec> unknown_;  // base < 0: overlaps every span
  std::vector<std::pair<int, std::vector<Class>>> bases_;
};

}  // namespace tl::replay::detail
