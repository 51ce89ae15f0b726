// Internal to the hazard checker (src/npu/hazard.cpp, docs/virtual_npu.md "Hazard checker",
// How): the records of its shadow memories, the shadows (interval indexes, tl/npu/range_index.h)
// and the cover test that decides which earlier access a later one replaces.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tl/npu/range_index.h"
#include "tl/npu/trace.h"

namespace tl::npu::hazard_shadow {

constexpr int kPipes = 7;           // S V M MTE1 MTE2 MTE3 FIX
constexpr int kLocal = 3 * kPipes;  // timelines of one block

/// What a pipe knows has completed: one clock per timeline of its block, and the last
/// sync_all generation it is ordered after (hazard.cpp).
struct Know {
  std::array<uint32_t, kLocal> vc{};
  uint32_t gen = 0;
  void join(const Know& o) {
    for (int i = 0; i < kLocal; ++i) vc[i] = std::max(vc[i], o.vc[i]);
    gen = std::max(gen, o.gen);
  }
};

/// A FIFO of flag knowledge (the sets of one flag not yet waited for). A std::deque of these
/// 88-byte records allocated a block every few sets as set/wait pairs walked through it (a
/// tenth of a flag-heavy checked run); here the storage is reused once the queue drains, which
/// a balanced set/wait pattern does after every wait.
class KnowQueue {
 public:
  bool empty() const { return head_ == v_.size(); }
  size_t size() const { return v_.size() - head_; }
  const Know& front() const { return v_[head_]; }
  void push_back(const Know& k) { v_.push_back(k); }
  void pop_front() {
    if (++head_ == v_.size()) {
      v_.clear();
      head_ = 0;
    } else if (head_ >= 64 && 2 * head_ >= v_.size()) {  // long-lived backlog: compact
      v_.erase(v_.begin(), v_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
  }

 private:
  std::vector<Know> v_;
  size_t head_ = 0;
};

/// True if every byte of `r` is a byte of `w`.
inline bool covers(const Access& w, const Access& r) {
  if (!(w.mem == r.mem)) return false;
  if (r.start < w.start || r.end() > w.end()) return false;
  if (w.count <= 1 || w.pitch <= w.len) return true;  // contiguous
  if (r.count > 1 && r.pitch <= r.len) {              // r is one contiguous range
    uint64_t off = r.start - w.start;
    return off % w.pitch + (r.end() - r.start) <= w.len;
  }
  for (uint64_t i = 0; i < r.count; ++i) {
    uint64_t off = r.start + i * r.pitch - w.start;
    uint64_t row = off / w.pitch, col = off % w.pitch;
    if (row >= w.count || col + r.len > w.len) return false;
  }
  return true;
}

/// The reads a GM store replaced in the shadow (it covers them and is ordered after them), by
/// block: the latest clock of each timeline among them. A component c means "reads up to
/// instruction c of that timeline", so one test per timeline tells whether all of them are
/// ordered before a later access (the duplicate-store rule needs that: the replaced reads are
/// no longer in the shadow to report a race with a second, identical store themselves).
struct ReadClocks {
  std::vector<std::pair<int64_t, std::array<uint32_t, kLocal>>> blocks;
  void add(int64_t block, uint8_t t, uint32_t clock) {
    auto it =
        std::find_if(blocks.begin(), blocks.end(), [&](const auto& b) { return b.first == block; });
    if (it == blocks.end()) it = blocks.insert(blocks.end(), {block, {}});
    it->second[t] = std::max(it->second[t], clock);
  }
  void merge(const ReadClocks& o) {
    for (const auto& [b, vc] : o.blocks)
      for (int i = 0; i < kLocal; ++i)
        if (vc[i]) add(b, static_cast<uint8_t>(i), vc[i]);
  }
};

/// One store's bytes again: both digested plain stores of one byte range (same start, row
/// length, row count and pitch) with equal digests (Access::digest).
inline bool same_store(const Access& w, const Access& a) {
  return w.write && a.write && w.digested && a.digested && !w.atomic && !a.atomic &&
         w.start == a.start && w.len == a.len && w.count == a.count &&
         (a.count <= 1 || w.pitch == a.pitch) && w.digest == a.digest;
}

/// Stores (and their cores) a GM read is ordered after.
using Sources = std::vector<std::pair<const Access*, uint32_t>>;

/// What a report names of an instruction: kept with its accesses, as its event may be retired
/// (HazardStream) before a later access conflicts with one of them.
struct EventInfo {
  TraceName name;
  TraceLoc loc;
  Pipe pipe = Pipe::S;
  static EventInfo of(const TraceEvent& e) { return {e.name, e.loc, e.pipe}; }
};

struct Rec {
  const Access* acc;  // the trace's (on-chip) or a kept copy (GM)
  uint32_t core;
  uint32_t event;
  int64_t block;
  uint8_t t;  // timeline within the block
  bool write;
  bool atomic;
  uint32_t clock;
  uint64_t start, end, seq;           // the access's bounding range; seq: insertion order
  std::unique_ptr<ReadClocks> reads;  // digested GM stores: the reads they replaced
  std::unique_ptr<Sources> srcs;  // a GM read: the shadowed stores it is ordered after and meets
  EventInfo info;
  /// A GM read checked while the launch runs: its access's copy (acc points here). Nothing but
  /// its record refers to a read, so the copy goes with the record; a store's copy is kept
  /// (Engine::kept_: the data-cache rule and later reads' Sources refer to it).
  Access own;
};

/// Two cores' stores of one GM byte range with equal digests of what they stored (the
/// duplicate-store rule, docs/virtual_npu.md): the bytes are the same whichever lands last.
inline bool same_bytes(const Access& w, int wcore, const Access& a, int acore) {
  return wcore != acore && a.mem.scope == MemScope::GM && same_store(w, a);
}

/// A GM read ordered after the stores `srcs` (Rec::srcs) and unordered with store `w` reads
/// the same bytes whenever `w` lands if those of them that meet w's bytes are all another core's
/// stores of those bytes to w's range, at least one (dequantize_gemm/example_dequant_gemm_w4a8.py:
/// the blocks of one column of C dequantize the same rows of B into one workspace; each cube
/// reads them after its own block's stores).
inline bool reads_same_bytes(const Sources* srcs, const Access& w, uint32_t wcore) {
  if (!srcs) return false;
  bool dup = false;
  for (const auto& [o, core] : *srcs) {
    if (!overlaps(*o, w)) continue;
    if (!same_bytes(*o, static_cast<int>(core), w, static_cast<int>(wcore))) return false;
    dup = true;
  }
  return dup;
}

/// Rec::srcs of a GM read `a`, from the ids of the stores it is ordered after (`before`): those
/// that meet it; null if none, or more than 64 (then no read of them is excused).
inline std::unique_ptr<Sources> sources_of(const std::deque<Rec>& recs,
                                           const std::vector<uint32_t>& before, const Access& a) {
  std::unique_ptr<Sources> out;
  for (uint32_t id : before) {
    const Rec& o = recs[id];
    if (!overlaps(*o.acc, a)) continue;
    if (!out) out = std::make_unique<Sources>();
    if (out->size() == 64) return nullptr;
    out->emplace_back(o.acc, o.core);
  }
  return out;
}

/// The bounding ranges of every GM write (plain, atomic or scalar) of a trace, sorted and
/// merged: [start, end) pairs, disjoint and not adjacent.
inline std::vector<std::pair<uint64_t, uint64_t>> gm_write_ranges(const Trace& t) {
  std::vector<std::pair<uint64_t, uint64_t>> r;
  for (const auto& c : t.cores)
    for (const auto& e : c.events)
      for (const auto& a : e.accesses)
        if (a.write && a.mem.scope == MemScope::GM && a.end() > a.start)
          r.emplace_back(a.start, a.end());
  std::sort(r.begin(), r.end());
  size_t k = 0;
  for (const auto& x : r) {
    if (k > 0 && x.first <= r[k - 1].second)
      r[k - 1].second = std::max(r[k - 1].second, x.second);
    else
      r[k++] = x;
  }
  r.resize(k);
  return r;
}

/// True if [lo, hi) meets one of the merged ranges `r` (gm_write_ranges).
inline bool meets_any(const std::vector<std::pair<uint64_t, uint64_t>>& r, uint64_t lo,
                      uint64_t hi) {
  // The first range ending after lo: it meets [lo, hi) if it starts before hi.
  auto it = std::upper_bound(
      r.begin(), r.end(), lo,
      [](uint64_t v, const std::pair<uint64_t, uint64_t>& x) { return v < x.second; });
  return it != r.end() && it->first < hi;
}

/// A GM read no GM write of the launch meets (their bounding ranges, gm_write_ranges): it can
/// be in no reported pair (a read conflicts only with writes), no write replaces it or collects
/// its clocks (a write that covers it would meet it), and it is the source of no later read
/// (only stores are), so the checker neither tests nor records it. The inputs a kernel only
/// reads (the K and V rows FlashAttention streams, the KV rows a sparse attention gathers)
/// were most of a large launch's GM shadow (docs/virtual_npu.md, "Trace memory").
inline bool inert_gm_read(const std::vector<std::pair<uint64_t, uint64_t>>& written,
                          const Access& a) {
  return !a.write && a.mem.scope == MemScope::GM && !meets_any(written, a.start, a.end());
}

/// The recent accesses of one memory. Reads and writes are indexed apart (a read conflicts
/// only with writes), and GM's also per block (only the same block's accesses, or any block's
/// after a sync_all, can be ordered before an access and so replaced by it).
struct Shadow {
  bool per_block = false;  // GM
  RangeIndex reads, writes;
  std::unordered_map<int64_t, std::array<RangeIndex, 2>> blocks;  // GM: [block] = {reads, writes}
};

}  // namespace tl::npu::hazard_shadow
