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

/// A block's home entry: runs of 64 blocks (32 KB) stay together, for locality; the runs are
/// scattered by a multiplicative hash, so that two tensors whose addresses differ by a multiple
/// of the table's span do not pile up in one probe sequence.
size_t home(uint64_t base, size_t mask) {
  return static_cast<size_t>((((base >> 6) * 0x9E3779B97F4A7C15ull) >> 20 << 6) | (base & 63)) &
         mask;
}

}  // namespace

L2Cache::L2Cache(double capacity_bytes) : capacity_(capacity_bytes) {
  // Address space only (pages are touched as blocks fill): a full L2 of whole blocks never
  // reallocates, and a timed launch that touches little pays nothing.
  blocks_.reserve(static_cast<size_t>(std::min(capacity_bytes, 1e10) / kBlock) + 1);
}

uint32_t L2Cache::find(uint64_t base) const {
  const size_t mask = table_.size() - 1;
  for (size_t h = home(base, mask);; h = (h + 1) & mask) {
    if (table_[h].base == base) return table_[h].slot;
    if (table_[h].base == kEmpty) return kNone;
  }
}

void L2Cache::insert(uint64_t base, uint32_t slot) {
  if (2 * (entries_ + 1) > table_.size()) {  // keep the load at most 1/2
    std::vector<Entry> old(table_.size() * 2);
    old.swap(table_);
    entries_ = 0;
    for (const Entry& x : old)
      if (x.base != kEmpty) insert(x.base, x.slot);
  }
  const size_t mask = table_.size() - 1;
  size_t h = home(base, mask);
  while (table_[h].base != kEmpty) h = (h + 1) & mask;
  table_[h] = {base, slot};
  ++entries_;
}

void L2Cache::erase(uint64_t base) {
  const size_t mask = table_.size() - 1;
  size_t h = home(base, mask);
  while (table_[h].base != base) h = (h + 1) & mask;
  // Backward-shift deletion: move up every later entry of the run that may sit at `h`.
  for (size_t j = (h + 1) & mask; table_[j].base != kEmpty; j = (j + 1) & mask) {
    const size_t at = home(table_[j].base, mask);
    if (((j - at) & mask) >= ((j - h) & mask)) {
      table_[h] = table_[j];
      h = j;
    }
  }
  table_[h] = Entry{};
  --entries_;
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
    erase(blocks_[i].base);
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
    uint32_t i = find(base);
    if (i != kNone) {
      if (i != head_) {
        unlink(i);
        push_front(i);
      }
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
      insert(base, i);
      push_front(i);
    }
    Block& b = blocks_[i];
    uint64_t had = 0;
    if (end - off == kBlock) {  // a whole block (the common case of long contiguous rows)
      had = b.bytes;
      b.mask.fill(~uint64_t{0});
    } else {
      for (uint64_t w = off / 64; w * 64 < end; ++w) {
        const uint64_t m =
            bits(std::max(off, w * 64) - w * 64, std::min(end, w * 64 + 64) - w * 64);
        had += static_cast<uint64_t>(std::popcount(b.mask[w] & m));
        b.mask[w] |= m;
      }
    }
    const uint64_t added = (end - off) - had;
    t.hit += had;
    if (b.dirtied == 0 || b.dirtied == serial_) t.clean += had;
    if (write && b.dirtied == 0) b.dirtied = serial_;
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
    if (const uint32_t i = find(base); i != kNone) {
      const Block& b = blocks_[i];
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
  if (++serial_ == 0) serial_ = 1;
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
