// Internal: a map from IR node pointers to small non-negative integers (a Program's variable
// slots and buffer indices). The interpreter looks one up for every variable it reads and every
// operand it resolves; std::unordered_map's lookup (a division by a prime bucket count and a
// node chain) was a measurable share of the vector ops' host time (docs/virtual_npu.md, "Host
// speed"). This is open addressing with linear probing over a power-of-two table: one multiply,
// one shift and usually one probe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tl::npu {

template <typename K>
class PtrIndex {
 public:
  /// Inserts k -> v unless k is present (std::unordered_map::emplace's rule); whether it did.
  bool emplace(const K* k, int v) {
    if (2 * (n_ + 1) > keys_.size()) grow();
    size_t i = slot(k);
    if (keys_[i] == k) return false;
    keys_[i] = k;
    vals_[i] = v;
    ++n_;
    return true;
  }
  /// The value of k, or -1 when k is absent.
  int find(const K* k) const {
    if (n_ == 0) return -1;
    const size_t i = slot(k);
    return keys_[i] == k ? vals_[i] : -1;
  }
  size_t count(const K* k) const { return find(k) >= 0 ? 1 : 0; }
  size_t size() const { return n_; }

 private:
  // The first slot holding k or empty (the table is at most half full, so one exists).
  size_t slot(const K* k) const {
    const size_t mask = keys_.size() - 1;
    auto x = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(k));
    size_t i = static_cast<size_t>((x * 0x9E3779B97F4A7C15ull) >> 32) & mask;
    while (keys_[i] != nullptr && keys_[i] != k) i = (i + 1) & mask;
    return i;
  }
  void grow() {
    std::vector<const K*> keys = std::move(keys_);
    std::vector<int> vals = std::move(vals_);
    const size_t cap = keys.empty() ? 16 : 2 * keys.size();
    keys_.assign(cap, nullptr);
    vals_.assign(cap, -1);
    n_ = 0;
    for (size_t i = 0; i < keys.size(); ++i)
      if (keys[i]) emplace(keys[i], vals[i]);
  }
  std::vector<const K*> keys_;
  std::vector<int> vals_;
  size_t n_ = 0;
};

}  // namespace tl::npu
