// When the time-ordered replay (replay.cpp) would compute nothing the functional run has not
// already computed, so a timed launch with data can keep the functional run's memory and skip
// the replay (docs/virtual_npu.md, "Data in simulated-time order").
//
// The argument. Suppose every op is isolated (replay_isolation.h: no op whose simulated interval
// overlaps another's conflicts with it on a byte), no scalar load or store touches memory, no
// op is atomic, and no load steers control flow or an operand outside the trace. The replay then
// executes every op once, in place, at its start cycle, with the scalar state the program gives
// it (which memory cannot change). Two ops that conflict on a byte (one of them writes it) do
// not overlap in simulated time, so one of them lands before the other starts. If, for every
// such pair, that one is also the one the functional run finished before the other began (the
// ticks of LaunchState::op_clock around each op), then each byte an op reads has the same last
// writer in both runs (the writers of one byte conflict pairwise, so they are ordered the same
// way in both), and by induction over that order every op reads the same bytes and writes the
// same bytes in both runs: the final memory, the path of every core and every error are the
// functional run's. A synchronised kernel is the common case: its flags order every conflicting
// pair in the functional run and in the timing model alike.
//
// The check walks the ops in start order, keeping per memory (GM by host address, each on-chip
// memory of a physical core by offset) byte segments with the end tick of their last writer and
// the latest end tick of the ops that read them since. An op must begin (in ticks) after the last
// writer of every byte it reads, and after the last writer and those readers of every byte it
// writes. Comparing with the latest of them is enough: they were checked against the earlier ones
// in the same way, and ticks are totally ordered.
#include <algorithm>
#include <iterator>
#include <map>
#include <unordered_map>

#include "replay_isolation.h"
#include "tl/ir_functor.h"

namespace tl::npu {
namespace {

/// Per memory: disjoint byte segments [lo, hi) with the end tick of their last writer (0: none)
/// and the latest end tick of an op that read them since that write.
class ByteTicks {
 public:
  /// The latest tick an op touching [lo, hi) must begin after.
  uint64_t latest(uint64_t lo, uint64_t hi, bool write) const {
    uint64_t t = 0;
    for (auto it = first_at(lo); it != segs_.end() && it->first < hi; ++it)
      t = std::max(t, write ? std::max(it->second.w, it->second.r) : it->second.w);
    return t;
  }
  /// An op that ended at `tick` read (or wrote) [lo, hi).
  void mark(uint64_t lo, uint64_t hi, bool write, uint64_t tick) {
    split(lo);
    split(hi);
    if (write) {
      segs_.erase(segs_.lower_bound(lo), segs_.lower_bound(hi));
      segs_.emplace(lo, Seg{hi, tick, 0});
      return;
    }
    uint64_t at = lo;
    auto it = segs_.lower_bound(lo);
    while (at < hi) {
      if (it == segs_.end() || it->first > at) {  // a gap nobody touched yet
        const uint64_t gap_end = it == segs_.end() ? hi : std::min(hi, it->first);
        it = std::next(segs_.emplace_hint(it, at, Seg{gap_end, 0, tick}));
        at = gap_end;
        continue;
      }
      it->second.r = std::max(it->second.r, tick);
      at = it->second.hi;
      ++it;
    }
  }

 private:
  struct Seg {
    uint64_t hi;
    uint64_t w, r;
  };
  using Map = std::map<uint64_t, Seg>;
  Map::const_iterator first_at(uint64_t lo) const {
    auto it = segs_.upper_bound(lo);
    if (it != segs_.begin() && std::prev(it)->second.hi > lo) --it;
    return it;
  }
  /// Makes `at` a segment boundary.
  void split(uint64_t at) {
    auto it = segs_.upper_bound(at);
    if (it == segs_.begin()) return;
    --it;
    if (it->first < at && at < it->second.hi) {
      Seg tail = it->second;
      it->second.hi = at;
      segs_.emplace_hint(std::next(it), at, tail);
    }
  }
  Map segs_;
};

/// Calls f(lo, hi) for each byte run of `s` (one range when its runs touch).
template <typename F>
void for_each_run(const IsolatedOps::Span& s, F&& f) {
  if (s.len == 0 || s.count == 0) return;
  if (s.count == 1 || s.pitch <= s.len) return f(s.start, s.end());
  for (uint64_t i = 0; i < s.count; ++i) f(s.start + i * s.pitch, s.start + i * s.pitch + s.len);
}

/// T.printf and T.dump_tensor: their lines would be the functional run's, which the launch
/// discards (it prints the replay's); not worth a special case.
bool prints(const Program& p) {
  bool found = false;
  pre_order_visit(p.func->body, [&](const Stmt& s) {
    if (s->kind != StmtKind::TileOp) return;
    const std::string& name = static_cast<const TileOpNode*>(s.get())->op->name;
    found |= name == "printf" || name == "dump_tensor";
  });
  return found;
}

}  // namespace

bool IsolatedOps::same_as_functional_run(const Program& p,
                                         const std::vector<std::vector<OpTicks>>& ticks) {
  const bool same = all_isolated_ && !prints(p) && ordered_alike(ticks);
  all_ = {};
  spans_ = {};
  order_ = {};
  return same;
}

bool IsolatedOps::ordered_alike(const std::vector<std::vector<OpTicks>>& ticks) const {
  ByteTicks gm;
  std::unordered_map<uint64_t, ByteTicks> on_chip;
  for (uint32_t gi : order_) {
    const Group& g = all_[gi];
    // The op's ticks: the last entry at its first event (an op recording no event would share it,
    // and comes first).
    const auto& core = ticks[g.core];
    auto it = std::upper_bound(core.begin(), core.end(), g.first,
                               [](uint32_t e, const OpTicks& t) { return e < t.event; });
    if (it == core.begin() || std::prev(it)->event != g.first) return false;
    const OpTicks t = *std::prev(it);
    for (uint32_t k = g.span_begin; k < g.span_end; ++k) {
      const Span& s = spans_[k];
      const ByteTicks& m = s.gm ? gm : on_chip[s.key];
      bool ok = true;
      for_each_run(s, [&](uint64_t lo, uint64_t hi) { ok &= m.latest(lo, hi, s.write) < t.begin; });
      if (!ok) return false;
    }
    // Reads first: a byte the op reads and writes ends up written by it.
    for (bool write : {false, true})
      for (uint32_t k = g.span_begin; k < g.span_end; ++k) {
        const Span& s = spans_[k];
        if (s.write != write) continue;
        ByteTicks& m = s.gm ? gm : on_chip[s.key];
        for_each_run(s, [&](uint64_t lo, uint64_t hi) { m.mark(lo, hi, write, t.end); });
      }
  }
  return true;
}

}  // namespace tl::npu
