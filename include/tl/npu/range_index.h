// An index of byte ranges by their start, for the hazard checker's shadows (src/npu/hazard.cpp,
// docs/virtual_npu.md "Hazard checker", How): which entries may meet a range, and which lie
// inside one, without visiting the others.
//
// The checker used one map by start and widened every query by the longest range ever stored,
// so one long access (a strided tile of a large GM tensor: its bounding range spans all its
// rows) made every query of a short one visit thousands of entries. Here the entries are kept
// in classes by the length of their bounding range (powers of two), and a query visits, in
// each class, only the entries that start at most that class's longest length before it.
// Answers are exact supersets on bounding ranges ([start, end)); the caller tests the actual
// runs (tl::npu::overlaps / covers). Entries with equal starts are told apart, and ordered, by
// a caller-given sequence number, so a caller can replay the old map's (start, insertion) order.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <map>

namespace tl::npu {

class RangeIndex {
 public:
  /// Adds entry `id` with bounding range [start, end); `seq` is unique within the index.
  void insert(uint64_t start, uint64_t end, uint64_t seq, uint32_t id) {
    const int k = class_of(end - start);
    Class& c = classes_[static_cast<size_t>(k)];
    c.map.emplace(Key{start, seq}, Entry{end, id});
    c.maxspan = std::max(c.maxspan, end - start);
    mask_ |= uint64_t{1} << k;
    ++size_;
  }
  /// Removes the entry inserted with (start, end, seq); true if it was there.
  bool erase(uint64_t start, uint64_t end, uint64_t seq) {
    const int k = class_of(end - start);
    Class& c = classes_[static_cast<size_t>(k)];
    if (c.map.erase(Key{start, seq}) == 0) return false;
    if (c.map.empty()) {
      mask_ &= ~(uint64_t{1} << k);
      c.maxspan = 0;
    }
    --size_;
    return true;
  }
  /// Calls f(id, start, seq) for every entry whose bounding range meets [lo, hi), i.e.
  /// start < hi and end > lo (class by class, each class in (start, seq) order).
  template <typename F>
  void overlapping(uint64_t lo, uint64_t hi, F&& f) const {
    for (uint64_t m = mask_; m; m &= m - 1) {
      const Class& c = classes_[static_cast<size_t>(std::countr_zero(m))];
      const uint64_t from = lo > c.maxspan ? lo - c.maxspan : 0;
      for (auto it = c.map.lower_bound(Key{from, 0}); it != c.map.end() && it->first.start < hi;
           ++it)
        if (it->second.end > lo) f(it->second.id, it->first.start, it->first.seq);
    }
  }
  /// Calls f(id, start, seq) for every entry with lo <= start < hi and end <= hi: the entries
  /// a range [lo, hi) may cover.
  template <typename F>
  void inside(uint64_t lo, uint64_t hi, F&& f) const {
    for (uint64_t m = mask_; m; m &= m - 1) {
      const Class& c = classes_[static_cast<size_t>(std::countr_zero(m))];
      for (auto it = c.map.lower_bound(Key{lo, 0}); it != c.map.end() && it->first.start < hi; ++it)
        if (it->second.end <= hi) f(it->second.id, it->first.start, it->first.seq);
    }
  }
  /// Calls f(id, start, seq) for every entry.
  template <typename F>
  void each(F&& f) const {
    for (uint64_t m = mask_; m; m &= m - 1)
      for (const auto& [k, e] : classes_[static_cast<size_t>(std::countr_zero(m))].map)
        f(e.id, k.start, k.seq);
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  struct Key {
    uint64_t start, seq;
    bool operator<(const Key& o) const { return start != o.start ? start < o.start : seq < o.seq; }
  };
  struct Entry {
    uint64_t end;
    uint32_t id;
  };
  struct Class {
    std::map<Key, Entry> map;
    uint64_t maxspan = 0;  // the longest bounding range in the class
  };
  // Class k holds spans in [2^(k-1), 2^k); the last class also everything longer.
  static int class_of(uint64_t span) {
    return span == 0 ? 0 : std::min(63, 64 - std::countl_zero(span));
  }
  std::array<Class, 64> classes_{};
  uint64_t mask_ = 0;  // bit k: class k is not empty
  size_t size_ = 0;
};

}  // namespace tl::npu
