// The timing model's L2 cache: an LRU of 512-byte blocks holding exact bytes, write-back
// (timing_l2.h says the rules).
#include "timing_l2.h"

#include <algorithm>
#include <bit>

namespace tl::npu {

namespace {

/// The bits [a, b) of a 64-bit word (0 <= a < b <= 64).
uint64_t bits(uint64_t a, uint64_t b) {
  const uint64_t hi = b == 64 ? ~uint64_t{0} : (uint64_t{1} << b) - 1;
  return hi & ~((uint64_t{1} << a) - 1);
}

}  // namespace

L2Cache::L2Cache(double capacity_bytes) : capacity_(capacity_bytes) {
  // Address space only (pages are touched as blocks fill): a full L2 of whole blocks never
  // reallocates, and a timed launch that touches little pays nothing.
  blocks_.reserve(static_cast<size_t>(std::min(capacity_bytes, 1e10) / kBlock) + 1);
}

void L2Cache::unlink(uint32_t i) {
  Block& b = blocks_[i];
  (b.prev == kNone ? head_ : blocks_[b.prev].next) = b.next;
  (b.next == kNone ? tail_ : blocks_[b.next].prev) = b.prev;
  b.prev = b.next = kNone;
}

void L2Cache::push_front(uint32_t i) {
  Block& b = blocks_[i];
  b.prev = kNone;
  b.next = head_;
  (head_ == kNone ? tail_ : blocks_[head_].prev) = i;
  head_ = i;
}

void L2Cache::evict(uint32_t keep) {
  while (static_cast<double>(held_) > capacity_ && tail_ != kNone && tail_ != keep) {
    const uint32_t i = tail_;
    unlink(i);
    held_ -= blocks_[i].bytes;
    index_.erase(blocks_[i].base);
    free_.push_back(i);
    if (!over_) {
      over_ = true;
      owed_ = dirty_;  // what was written while everything fitted must now go to HBM
    }
  }
}

// Exact bytes within a block, not whole lines: a line fill would make hits depend on where the
// host placed the tensors (the trace's GM offsets are host addresses), and the C11 [64, 64]
// tiles, 128-byte rows side by side, measure no reuse between neighbouring tiles.
void L2Cache::touch(uint64_t s, uint64_t e, bool write, Tally& t) {
  while (s < e) {
    const uint64_t base = s / kBlock, off = s % kBlock;
    const uint64_t end = std::min(e - base * kBlock, kBlock);  // [off, end) within the block
    uint32_t i;
    if (auto it = index_.find(base); it != index_.end()) {
      i = it->second;
      unlink(i);
    } else {
      if (free_.empty()) {
        i = static_cast<uint32_t>(blocks_.size());
        blocks_.emplace_back();
      } else {
        i = free_.back();
        free_.pop_back();
        blocks_[i] = Block{};
      }
      blocks_[i].base = base;
      index_.emplace(base, i);
    }
    push_front(i);
    Block& b = blocks_[i];
    uint64_t had = 0;
    for (uint64_t w = off / 64; w * 64 < end; ++w) {
      const uint64_t m = bits(std::max(off, w * 64) - w * 64, std::min(end, w * 64 + 64) - w * 64);
      had += static_cast<uint64_t>(std::popcount(b.mask[w] & m));
      b.mask[w] |= m;
    }
    const uint64_t added = (end - off) - had;
    t.hit += had;
    if (!b.dirty) t.clean += had;
    b.dirty = b.dirty || write;
    b.bytes += static_cast<uint32_t>(added);
    held_ += added;
    evict(i);
    s = base * kBlock + end;
  }
}

uint64_t L2Cache::resident(uint64_t s, uint64_t e) const {
  uint64_t h = 0;
  while (s < e) {
    const uint64_t base = s / kBlock, off = s % kBlock;
    const uint64_t end = std::min(e - base * kBlock, kBlock);
    if (auto it = index_.find(base); it != index_.end()) {
      const Block& b = blocks_[it->second];
      for (uint64_t w = off / 64; w * 64 < end; ++w)
        h += static_cast<uint64_t>(std::popcount(
            b.mask[w] & bits(std::max(off, w * 64) - w * 64, std::min(end, w * 64 + 64) - w * 64)));
    }
    s = base * kBlock + end;
  }
  return h;
}

double L2Cache::hbm_share(const TraceEvent& e, bool write) {
  uint64_t total = 0;
  Tally t;
  for (const auto& a : e.accesses) {
    if (a.mem.scope != MemScope::GM || a.len == 0 || a.count == 0) continue;
    total += a.len * a.count;
    // Back-to-back rows are one range (the same bytes in the same order).
    const bool one = a.count == 1 || a.pitch == a.len;
    const uint64_t rows = one ? 1 : a.count, len = one ? a.len * a.count : a.len;
    for (uint64_t r = 0; r < rows; ++r) {
      const uint64_t s = a.start + r * a.pitch;
      if (e.l2_bypass)
        t.hit += resident(s, s + len);
      else
        touch(s, s + len, write, t);
    }
  }
  if (total == 0) return 1.0;
  if (e.l2_bypass && write) return 1.0;  // straight to HBM
  const double all = static_cast<double>(total), hit = static_cast<double>(t.hit);
  if (e.l2_bypass) return 1.0 - hit / all;  // a read that allocates nothing
  const double fresh = all - hit;           // bytes this instruction allocates in L2
  if (!over_) {
    if (write) {
      dirty_ += fresh;
      return 0.0;
    }
    return fresh / all;
  }
  // Held bytes of clean blocks become dirty: their write-back is charged now, as a new byte's.
  const double hbm = write ? fresh + static_cast<double>(t.clean) : fresh;
  const double back = std::min(owed_, fresh);  // the dirty bytes its allocation evicts
  owed_ -= back;
  return (hbm + back) / all;
}

}  // namespace tl::npu
