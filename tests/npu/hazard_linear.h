// The hazard checker as it was before its shadows got interval indexes (src/npu/hazard.cpp,
// include/tl/npu/range_index.h): every access scanned one map by start, widened by the longest
// access ever stored. Kept only as the reference of tests/npu/hazard_index_test.cpp, which
// checks that the indexed checker reports exactly what this one does (the same pairs, in the
// same order, with the same counts and remarks) on the examples' sync mutations and on random
// traces. Include it from one test file only.
#pragma once

#include <algorithm>
#include <array>
#include <deque>
#include <iostream>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>

#include "tl/error.h"
#include "tl/npu/hazard.h"
#include "tl/ops.h"
#include "tl/sync_rules.h"

namespace tl::npu::linear {

namespace {

constexpr int kPipes = 7;           // S V M MTE1 MTE2 MTE3 FIX
constexpr int kLocal = 3 * kPipes;  // timelines of one block
constexpr int kAll = static_cast<int>(Pipe::ALL);

struct Know {
  std::array<uint32_t, kLocal> vc{};
  uint32_t gen = 0;
  void join(const Know& o) {
    for (int i = 0; i < kLocal; ++i) vc[i] = std::max(vc[i], o.vc[i]);
    gen = std::max(gen, o.gen);
  }
};

// The in-order pipes and the scalar unit's issue order come from the rule table insert_syncs
// and plan_memory share (tl/sync_rules.h).
bool in_order(int p) {
  return pipe_in_order(static_cast<Pipe>(p));
}

std::string core_name_of(int ci) {
  int slot = ci % 3;
  return slot == 0 ? fmt::format("block {} AIC", ci / 3)
                   : fmt::format("block {} AIV{}", ci / 3, slot - 1);
}

std::string memory_name(const MemoryId& m) {
  if (m.scope == MemScope::GM) return "GM";
  return fmt::format("{} of {}", scope_name(m.scope),
                     core_name_of(static_cast<int>(m.block * 3 + m.core)));
}

std::string event_str(const TraceEvent& e) {
  switch (e.kind) {
    case EventKind::Op:
      return fmt::format("{} ({}) at {}", e.name, pipe_name(e.pipe), e.loc.str());
    case EventKind::SetFlag:
    case EventKind::WaitFlag:
      return fmt::format("{}({}, {}, {}) at {}",
                         e.kind == EventKind::SetFlag ? "set_flag" : "wait_flag", pipe_name(e.pipe),
                         pipe_name(e.dst), e.id, e.loc.str());
    case EventKind::Barrier:
      return fmt::format("{}({}) at {}", e.name, pipe_name(e.pipe), e.loc.str());
    case EventKind::SetCross:
      return fmt::format("set_cross_flag({}, {}, mode {}) at {}", pipe_name(e.pipe), e.id, e.mode,
                         e.loc.str());
    case EventKind::WaitCross:
      return fmt::format("wait_cross_flag({}) at {}", e.id, e.loc.str());
    case EventKind::SyncAll:
      return fmt::format("sync_all() at {}", e.loc.str());
  }
  return e.name;
}

/// True if every byte of `r` is a byte of `w`.
bool covers(const Access& w, const Access& r) {
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

struct Rec {
  const Access* acc;
  uint32_t core;
  uint32_t event;
  int64_t block;
  uint8_t t;  // timeline within the block
  uint32_t clock;
  std::unique_ptr<ReadClocks> reads;  // digested GM stores: the reads they replaced
  std::vector<std::pair<const Access*, uint32_t>> srcs;  // a GM read: the stores it follows
  bool srcs_known = true;                                // false: more than 64 of them
};

struct Shadow {
  std::multimap<uint64_t, Rec> recs;
  uint64_t maxspan = 0;
};

struct MemKey {
  int scope;
  int64_t block;
  int core;
  bool operator<(const MemKey& o) const {
    return std::tie(scope, block, core) < std::tie(o.scope, o.block, o.core);
  }
};

/// A GM write, for the data-cache rule: who wrote (core, scalar unit or not), what, when.
struct GmWrite {
  int core;
  Access acc;
  uint64_t seq;
  bool scalar;
  const TraceEvent* ev;
};
/// A dcci of a core: the bytes it covers (or its whole cache), and when.
struct Dcci {
  Access acc;
  uint64_t seq;
  bool entire;
};

struct CoreState {
  size_t pc = 0;
  std::array<Know, kPipes> know{};
  std::array<uint32_t, kPipes> issued{};
  int syncs = 0;
  bool arrived = false;
  std::map<std::tuple<int, int, int>, std::deque<Know>> flags;
  // The last Mmad's event index and whether a PipeBarrier<PIPE_M> (or a full barrier) came
  // after it: mmad_needs_m_barrier.
  size_t last_mmad = SIZE_MAX;
  bool m_barrier_since = true;
};

class Engine {
 public:
  Engine(const Trace& t, int max_pending, bool hazards)
      : tr_(t), max_pending_(max_pending), check_(hazards) {}

  void run() {
    size_t n = tr_.cores.size();
    st_.assign(n, {});
    participants_ = 0;
    for (const auto& c : tr_.cores)
      for (const auto& e : c.events)
        if (e.kind == EventKind::SyncAll) {
          ++participants_;
          break;
        }
    // Block by block (the checker's order, src/npu/hazard.cpp): each block's cores take turns
    // until none moves; with sync_all the blocks take turns until none can move.
    bool progress = true;
    while (progress) {
      progress = false;
      for (size_t b0 = 0; b0 < n; b0 += 3) {
        bool moved = true;
        while (moved) {
          moved = false;
          for (size_t ci = b0; ci < std::min(b0 + 3, n); ++ci) {
            const auto& evs = tr_.cores[ci].events;
            while (st_[ci].pc < evs.size() && step(static_cast<int>(ci), evs[st_[ci].pc])) {
              ++st_[ci].pc;
              moved = true;
            }
          }
          progress |= moved;
        }
      }
    }
    for (size_t ci = 0; ci < n; ++ci) {
      const auto& evs = tr_.cores[ci].events;
      if (st_[ci].pc >= evs.size()) continue;
      const TraceEvent& e = evs[st_[ci].pc];
      if (e.kind == EventKind::WaitCross)
        issue(static_cast<int>(ci), "deadlock", Pipe::ALL, fmt::format("wait_cross_flag({})", e.id),
              e,
              "no matching set_cross_flag is ever issued: every pipe of the core stalls forever");
      else
        issue(static_cast<int>(ci), "deadlock", Pipe::ALL, "sync_all()", e,
              "some participating core finished (or is stuck) without reaching this sync_all");
    }
    unbalanced();
  }

  std::vector<Hazard> hazards;
  std::vector<Hazard> duplicates;  // duplicate stores: remarks, not hazards
  uint64_t seq_ = 0;               // data-cache order: one step per event
  std::multimap<uint64_t, GmWrite>
      gm_writes_;                       // every GM write so far, by start, for the data-cache rule
  uint64_t gm_maxspan_ = 0;             // the longest of them (range queries, as the shadows)
  std::vector<GmWrite> scalar_writes_;  // the scalar stores among them (read by every GM read)
  std::map<int, std::vector<Dcci>> dcci_;  // per core, its dccis
  std::vector<FlagIssue> issues;

 private:
  const Trace& tr_;
  int max_pending_;
  bool check_;
  std::vector<CoreState> st_;
  int participants_ = 0;
  std::map<int, int> arrivals_;                                      // sync index -> cores arrived
  std::vector<std::vector<std::array<uint32_t, kLocal>>> sync_vc_;   // [generation][block]
  std::map<std::tuple<int64_t, int, int>, std::deque<Know>> cross_;  // (block, slot, id)
  std::map<std::tuple<int64_t, int, int>, bool> cross_reported_;
  std::map<MemKey, Shadow> shadow_;
  std::unordered_map<std::string, size_t> seen_;
  std::unordered_map<std::string, size_t> seen_dup_;

  int64_t block_of(int ci) const { return ci / 3; }
  int slot_of(int ci) const { return ci % 3; }

  Know drained(int ci, int p) const {
    const CoreState& s = st_[ci];
    if (p >= kPipes) {
      Know k;
      for (int q = 0; q < kPipes; ++q) k.join(drained(ci, q));
      return k;
    }
    Know k = s.know[p];
    uint32_t& c = k.vc[slot_of(ci) * kPipes + p];
    c = std::max(c, s.issued[p]);
    return k;
  }
  void join_all(int ci, const Know& k) {
    for (auto& x : st_[ci].know) x.join(k);
  }
  void join_pipe(int ci, int p, const Know& k) {
    if (p >= kPipes)
      join_all(ci, k);
    else
      st_[ci].know[p].join(k);
  }

  /// The last event of core `ci` matching `pred` (for the location of a leftover set).
  template <typename Pred>
  const TraceEvent* last_event(int ci, Pred pred) const {
    const auto& evs = tr_.cores[ci].events;
    for (size_t i = evs.size(); i-- > 0;)
      if (pred(evs[i])) return &evs[i];
    return nullptr;
  }

  /// Flags must be balanced when a block ends: a set_flag no wait_flag consumed, or a cross-core
  /// set no core waited for, stays raised on the hardware and is consumed by whatever the next
  /// kernel on that core waits for first. Cores that did not finish are reported as deadlocks.
  void unbalanced() {
    for (size_t ci = 0; ci < st_.size(); ++ci) {
      if (st_[ci].pc < tr_.cores[ci].events.size()) continue;
      for (const auto& [key, q] : st_[ci].flags) {
        if (q.empty()) continue;
        // Plain copies: lambdas cannot capture structured bindings before C++20 in clang < 16.
        const auto p = std::get<0>(key), d = std::get<1>(key);
        const auto id = std::get<2>(key);
        const TraceEvent* set = last_event(static_cast<int>(ci), [&](const TraceEvent& e) {
          return e.kind == EventKind::SetFlag && static_cast<int>(e.pipe) == p &&
                 static_cast<int>(e.dst) == d && e.id == id;
        });
        TL_ASSERT(set, "a pending flag without a set_flag event");
        issue(static_cast<int>(ci), "flag left set", static_cast<Pipe>(p),
              fmt::format("set_flag({}, {}, {})", pipe_name(static_cast<Pipe>(p)),
                          pipe_name(static_cast<Pipe>(d)), id),
              *set,
              fmt::format("{} set(s) never consumed by a wait_flag when the core finished",
                          q.size()));
      }
    }
    for (const auto& [key, q] : cross_) {
      if (q.empty()) continue;
      const auto b = std::get<0>(key);
      const auto to = std::get<1>(key);
      const auto id = std::get<2>(key);  // a copy: captured by the lambda below (clang < 16)
      // Slots 1, 2: sets for AIV0 / AIV1 (from the AIC, or completed mode-1 rounds);
      // 3, 4: sets for the AIC from AIV0 / AIV1; 5, 6: mode-1 sets of AIV0 / AIV1 the other
      // AIV never matched (reported on that other AIV).
      int waiter = static_cast<int>(b * 3) + (to <= 2 ? to : to >= 5 ? 7 - to : 0);
      int setter = static_cast<int>(b * 3) + (to >= 5 ? to - 4 : to >= 3 ? to - 2 : 0);
      if (static_cast<size_t>(waiter) >= st_.size() ||
          st_[waiter].pc < tr_.cores[waiter].events.size())
        continue;
      const TraceEvent* set = nullptr;
      for (int c : {setter, static_cast<int>(b * 3) + 1, static_cast<int>(b * 3) + 2})
        if (!set && static_cast<size_t>(c) < st_.size())
          set = last_event(
              c, [&](const TraceEvent& e) { return e.kind == EventKind::SetCross && e.id == id; });
      TL_ASSERT(set, "a pending cross-core flag without a set_cross_flag event");
      issue(waiter, "cross flag left set", set->pipe, fmt::format("cross-core flag {}", id), *set,
            fmt::format("{} set(s) never consumed by a wait_cross_flag on {} when it finished",
                        q.size(), core_name_of(waiter)));
    }
  }

  void issue(int ci, std::string kind, Pipe pipe, std::string flag, const TraceEvent& e,
             const std::string& why) {
    FlagIssue f;
    f.kind = std::move(kind);
    f.core = core_name_of(ci);
    f.pipe = pipe;
    f.flag = std::move(flag) + ": " + why;
    f.loc = e.loc;
    const auto& evs = tr_.cores[ci].events;
    size_t pc = st_[ci].pc;
    for (size_t i = pc > 6 ? pc - 6 : 0; i < pc; ++i) f.last_events.push_back(event_str(evs[i]));
    issues.push_back(std::move(f));
  }

  bool step(int ci, const TraceEvent& e) {
    CoreState& s = st_[ci];
    int p = static_cast<int>(e.pipe);
    switch (e.kind) {
      case EventKind::Op: {
        if (p >= kPipes) p = 0;
        Know start = s.know[p];
        uint32_t c = ++s.issued[p];
        const bool dcci = e.name == ops::dcci().name;
        if (check_ && !dcci) access(ci, e, p, c, start);
        if (check_) data_cache(ci, e, p, dcci);
        if (check_ && e.cost == CostClass::Mmad) small_mmad(ci, e);
        if (in_order(p)) s.know[p].vc[slot_of(ci) * kPipes + p] = c;
        if (pipe_orders_later_issue(static_cast<Pipe>(p))) join_all(ci, Know(s.know[p]));
        return true;
      }
      case EventKind::SetFlag: {
        auto& q = s.flags[{p, static_cast<int>(e.dst), e.id}];
        if (!q.empty())
          issue(ci, "set twice", e.pipe,
                fmt::format("set_flag({}, {}, {})", pipe_name(e.pipe), pipe_name(e.dst), e.id), e,
                "the flag is still set (no wait_flag consumed the previous set)");
        q.push_back(drained(ci, p));
        return true;
      }
      case EventKind::WaitFlag: {
        auto& q = s.flags[{p, static_cast<int>(e.dst), e.id}];
        if (q.empty()) {
          issue(ci, "deadlock", e.dst,
                fmt::format("wait_flag({}, {}, {})", pipe_name(e.pipe), pipe_name(e.dst), e.id), e,
                fmt::format("no earlier set_flag raised it; pipe {} stalls forever",
                            pipe_name(e.dst)));
          return true;
        }
        join_pipe(ci, static_cast<int>(e.dst), q.front());
        q.pop_front();
        return true;
      }
      case EventKind::Barrier: {
        if (p >= kPipes || e.pipe == Pipe::M) s.m_barrier_since = true;
        if (p >= kPipes)
          join_all(ci, drained(ci, kAll));
        else
          s.know[p].join(drained(ci, p));
        return true;
      }
      case EventKind::SetCross: {
        Know k = drained(ci, p);
        int64_t b = block_of(ci);
        int slot = slot_of(ci);
        auto push = [&](int to) {
          auto key = std::make_tuple(b, to, e.id);
          auto& q = cross_[key];
          q.push_back(k);
          if (static_cast<int>(q.size()) > max_pending_ && !cross_reported_[key]) {
            cross_reported_[key] = true;
            issue(ci, "too many pending cross-core sets", e.pipe,
                  fmt::format("set_cross_flag({}, {}, mode {})", pipe_name(e.pipe), e.id, e.mode),
                  e,
                  fmt::format("more than {} sets are pending (hangs on hardware)", max_pending_));
          }
        };
        if (e.mode == 2) {
          if (slot == 0) {
            push(1);
            push(2);
          } else {
            push(2 + slot);  // 3: from AIV0, 4: from AIV1
          }
        } else if (e.mode == 1 && slot != 0) {
          // Mode 1: the AIVs' counters advance when both have set; each wait is then ordered
          // after both sets.
          push(4 + slot);  // 5: from AIV0, 6: from AIV1
          auto& q0 = cross_[{b, 5, e.id}];
          auto& q1 = cross_[{b, 6, e.id}];
          if (!q0.empty() && !q1.empty()) {
            Know both = q0.front();
            both.join(q1.front());
            q0.pop_front();
            q1.pop_front();
            cross_[{b, 1, e.id}].push_back(both);
            cross_[{b, 2, e.id}].push_back(both);
          }
        } else {
          issue(ci, "unsupported", e.pipe,
                fmt::format("set_cross_flag({}, {}, mode {})", pipe_name(e.pipe), e.id, e.mode), e,
                "this mode is not modelled (mode 0, or mode 1 on the AIC)");
        }
        return true;
      }
      case EventKind::WaitCross: {
        int64_t b = block_of(ci);
        int slot = slot_of(ci);
        if (slot == 0) {
          auto& a = cross_[{b, 3, e.id}];
          auto& c = cross_[{b, 4, e.id}];
          if (a.empty() || c.empty()) return false;
          join_all(ci, a.front());
          join_all(ci, c.front());
          a.pop_front();
          c.pop_front();
        } else {
          auto& q = cross_[{b, slot, e.id}];
          if (q.empty()) return false;
          join_all(ci, q.front());
          q.pop_front();
        }
        return true;
      }
      case EventKind::SyncAll: {
        int k = s.syncs;
        if (sync_vc_.size() < static_cast<size_t>(k) + 2)
          sync_vc_.resize(k + 2,
                          std::vector<std::array<uint32_t, kLocal>>(tr_.cores.size() / 3 + 1));
        if (!s.arrived) {
          s.arrived = true;
          Know d = drained(ci, kAll);
          auto& v = sync_vc_[k + 1][block_of(ci)];
          for (int i = 0; i < kLocal; ++i) v[i] = std::max(v[i], d.vc[i]);
          ++arrivals_[k];
        }
        if (arrivals_[k] < participants_) return false;
        Know g;
        g.vc = sync_vc_[k + 1][block_of(ci)];
        g.gen = static_cast<uint32_t>(k + 1);
        join_all(ci, g);
        s.arrived = false;
        ++s.syncs;
        return true;
      }
    }
    return true;
  }

  bool hb(const Rec& r, const Know& start, int64_t block) const {
    return hb(r.block, r.t, r.clock, start, block);
  }
  bool hb(int64_t rblock, uint8_t t, uint32_t clock, const Know& start, int64_t block) const {
    if (rblock == block) return start.vc[t] >= clock;
    return start.gen > 0 && sync_vc_[start.gen][rblock][t] >= clock;
  }
  /// True if every read in `rc` is ordered before an access starting with `start` in `block`.
  bool all_before(const ReadClocks& rc, const Know& start, int64_t block) const {
    for (const auto& [b, vc] : rc.blocks)
      for (int i = 0; i < kLocal; ++i)
        if (vc[i] && !hb(b, static_cast<uint8_t>(i), vc[i], start, block)) return false;
    return true;
  }

  void access(int ci, const TraceEvent& e, int p, uint32_t c, const Know& start) {
    const int64_t block = block_of(ci);
    const uint8_t t = static_cast<uint8_t>(slot_of(ci) * kPipes + p);
    // Check every access against the recent ones, then record them.
    srcs_.assign(e.accesses.size(), {{}, true});
    for (const Access& a : e.accesses) {
      Shadow& sh = shadow_[{static_cast<int>(a.mem.scope), a.mem.block, a.mem.core}];
      uint64_t lo = a.start > sh.maxspan ? a.start - sh.maxspan : 0, hi = a.end();
      // A GM read: the stores it is ordered after that meet it (at most 64 are kept).
      auto& srcs = srcs_[static_cast<size_t>(&a - e.accesses.data())];
      srcs = {{}, true};
      if (!a.write && a.mem.scope == MemScope::GM)
        for (auto it = sh.recs.lower_bound(lo); it != sh.recs.end() && it->first < hi; ++it) {
          const Rec& r = it->second;
          if (!r.acc->write || !hb(r, start, block) || !overlaps(*r.acc, a)) continue;
          if (srcs.first.size() == 64) srcs = {{}, false};
          if (!srcs.second) break;
          srcs.first.emplace_back(r.acc, r.core);
        }
      for (auto it = sh.recs.lower_bound(lo); it != sh.recs.end() && it->first < hi; ++it) {
        const Rec& r = it->second;
        if (!r.acc->write && !a.write) continue;
        if (r.acc->atomic && a.atomic) continue;  // atomic adds commute and do not tear
        if (!overlaps(*r.acc, a) || hb(r, start, block)) continue;
        // A read after stores of the bytes another core's unordered store stores again.
        if (r.acc->write && !a.write && srcs.second && same_again(srcs.first, *r.acc, r.core))
          continue;
        if (!r.acc->write && r.srcs_known && same_again(r.srcs, a, static_cast<uint32_t>(ci)))
          continue;
        report(r, ci, e, a, start, block);
      }
    }
    for (const Access& a : e.accesses) {
      Shadow& sh = shadow_[{static_cast<int>(a.mem.scope), a.mem.block, a.mem.core}];
      uint64_t lo = a.start > sh.maxspan ? a.start - sh.maxspan : 0, hi = a.end();
      // A store that may later be found a duplicate keeps the clocks of the reads it replaces.
      const bool keep_reads = a.write && a.digested && a.mem.scope == MemScope::GM;
      std::unique_ptr<ReadClocks> reads;
      for (auto it = sh.recs.lower_bound(lo); it != sh.recs.end() && it->first < hi;) {
        const Rec& r = it->second;
        bool same = r.core == static_cast<uint32_t>(ci) && r.event == st_[ci].pc;
        if ((a.write || !r.acc->write) && covers(a, *r.acc) && (same || hb(r, start, block))) {
          if (keep_reads && (!r.acc->write || r.reads)) {
            if (!reads) reads = std::make_unique<ReadClocks>();
            if (!r.acc->write)
              reads->add(r.block, r.t, r.clock);
            else
              reads->merge(*r.reads);
          }
          it = sh.recs.erase(it);
        } else {
          ++it;
        }
      }
      sh.maxspan = std::max(sh.maxspan, a.end() - a.start);
      auto& srcs = srcs_[static_cast<size_t>(&a - e.accesses.data())];
      sh.recs.emplace(
          a.start, Rec{&a, static_cast<uint32_t>(ci), static_cast<uint32_t>(st_[ci].pc), block, t,
                       c, std::move(reads), std::move(srcs.first), srcs.second});
    }
  }

  /// The scalar unit's data cache over GM (AscendC DataCacheCleanAndInvalid): a scalar load of
  /// GM bytes that DMA or another core wrote may read a stale cached line unless this core ran
  /// a dcci covering them after the write; a scalar store stays in this core's cache (DMA and
  /// the other cores read GM) until a dcci of this core writes it back. Both are reported as
  /// hazards saying so, even when happens-before orders the two accesses.
  void data_cache(int ci, const TraceEvent& e, int p, bool dcci) {
    ++seq_;
    const bool scalar = static_cast<Pipe>(p) == Pipe::S;
    for (const Access& a : e.accesses) {
      if (a.mem.scope != MemScope::GM) continue;
      if (dcci) {
        if (a.write) dcci_[ci].push_back({a, seq_, e.mode == 1});
        continue;
      }
      if (!a.write) {
        // A scalar load: written since this core's last covering dcci by DMA or another core?
        if (scalar) {
          const uint64_t lo = a.start > gm_maxspan_ ? a.start - gm_maxspan_ : 0;
          for (auto it = gm_writes_.lower_bound(lo); it != gm_writes_.end() && it->first < a.end();
               ++it) {
            const GmWrite& w = it->second;
            if ((w.core != ci || !w.scalar) && overlaps(w.acc, a) && !dcci_after(ci, w.seq, a))
              cache_hazard(
                  w, ci, a,
                  "a scalar load of GM that DMA or another core wrote reads this core's data "
                  "cache, which may hold the old bytes: dcci (DataCacheCleanAndInvalid) them "
                  "after the write, before the load");
          }
        }
        // Anything but the storing core's own scalar unit reading bytes a scalar store left in
        // that core's cache.
        for (const auto& w : scalar_writes_)
          if ((w.core != ci || !scalar) && overlaps(w.acc, a) && !dcci_after(w.core, w.seq, w.acc))
            cache_hazard(w, ci, a,
                         "a scalar store to GM stays in the storing core's data cache until a dcci "
                         "(DataCacheCleanAndInvalid) on that core writes it back");
        continue;
      }
      const GmWrite w{ci, a, seq_, scalar, &e};
      gm_writes_.emplace(a.start, w);
      gm_maxspan_ = std::max(gm_maxspan_, a.end() - a.start);
      if (scalar) scalar_writes_.push_back(w);
    }
  }
  bool dcci_after(int core, uint64_t seq, const Access& a) const {
    auto it = dcci_.find(core);
    if (it == dcci_.end()) return false;
    for (const auto& d : it->second)
      if (d.seq > seq && (d.entire || covers(d.acc, a))) return true;
    return false;
  }
  void cache_hazard(const GmWrite& w, int ci, const Access& a, const char* why) {
    Hazard h;
    h.kind = "RAW";
    h.memory = "GM";
    const auto& evs = tr_.cores[w.core].events;
    h.first = side(w.core, static_cast<size_t>(w.ev - evs.data()), w.acc);
    h.second = side(ci, st_[ci].pc, a);
    h.why = why;
    add_rule_hazard(std::move(h));
  }

  /// Records a hazard of a rule beyond "unordered" (`why` set), once per pair of source lines.
  void add_rule_hazard(Hazard h) {
    auto same = std::find_if(hazards.begin(), hazards.end(), [&](const Hazard& o) {
      return o.why == h.why && o.first.loc.str() == h.first.loc.str() &&
             o.second.loc.str() == h.second.loc.str();
    });
    if (same != hazards.end())
      ++same->count;
    else
      hazards.push_back(std::move(h));
  }

  /// An Mmad accumulating into the L0C tile the previous Mmad wrote, without a
  /// PipeBarrier<PIPE_M> between them, when the tile is small (mmad_needs_m_barrier).
  void small_mmad(int ci, const TraceEvent& e) {
    CoreState& s = st_[ci];
    const size_t ev = s.pc;
    const auto l0c_write = [](const TraceEvent& x) -> const Access* {
      for (const Access& a : x.accesses)
        if (a.write && a.mem.scope == MemScope::L0C) return &a;
      return nullptr;
    };
    if (e.accumulates && !s.m_barrier_since && s.last_mmad != SIZE_MAX &&
        mmad_needs_m_barrier(e.m, e.n)) {
      const TraceEvent& prev = tr_.cores[ci].events[s.last_mmad];
      const Access *a = l0c_write(e), *b = l0c_write(prev);
      if (a && b && overlaps(*a, *b)) {
        Hazard h;
        h.kind = "RAW";
        h.memory = memory_name(a->mem);
        h.first = side(ci, s.last_mmad, *b);
        h.second = side(ci, ev, *a);
        h.why = fmt::format(
            "an Mmad accumulating into a {} x {} tile ({} fractals, fewer than 10) needs "
            "pipe_barrier(M) after the previous Mmad into it (AscendC Mmad sync notes)",
            e.m, e.n, ((e.m + 15) / 16) * ((e.n + 15) / 16));
        add_rule_hazard(std::move(h));
      }
    }
    s.last_mmad = ev;
    s.m_barrier_since = false;
  }

  HazardSide side(int ci, size_t ev, const Access& a) const {
    const TraceEvent& e = tr_.cores[ci].events[ev];
    HazardSide s;
    s.op = e.name;
    s.pipe = e.pipe;
    s.core = core_name_of(ci);
    s.buffer = a.buffer;
    s.start = a.start;
    s.end = a.end();
    s.write = a.write;
    s.loc = e.loc;
    s.core_index = ci;
    s.event = ev;
    if (a.mem.scope == MemScope::GM) {
      const auto& gm = tr_.cores[static_cast<size_t>(ci)].gm;
      if (auto it = gm.find(a.buffer); it != gm.end())
        s.where = gm_elements(a.buffer, it->second, a.start, a.end());
    }
    return s;
  }

  /// The stores `srcs` that meet store `w` are all another core's stores of w's bytes to w's
  /// range, at least one.
  static bool same_again(const std::vector<std::pair<const Access*, uint32_t>>& srcs,
                         const Access& w, uint32_t wcore) {
    bool any = false;
    for (const auto& [o, core] : srcs) {
      if (!overlaps(*o, w)) continue;
      if (!same_bytes(*o, static_cast<int>(core), w, static_cast<int>(wcore))) return false;
      any = true;
    }
    return any;
  }
  std::vector<std::pair<std::vector<std::pair<const Access*, uint32_t>>, bool>> srcs_;

  /// Two cores' stores of one GM byte range with equal digests of what they stored (the
  /// duplicate-store rule, docs/virtual_npu.md): the bytes are the same whichever lands last.
  static bool same_bytes(const Access& w, int wcore, const Access& a, int acore) {
    return w.write && a.write && wcore != acore && a.mem.scope == MemScope::GM && w.digested &&
           a.digested && !w.atomic && !a.atomic && w.start == a.start && w.len == a.len &&
           w.count == a.count && (a.count <= 1 || w.pitch == a.pitch) && w.digest == a.digest;
  }

  void report(const Rec& r, int ci, const TraceEvent& e, const Access& a, const Know& start,
              int64_t block) {
    const TraceEvent& first = tr_.cores[r.core].events[r.event];
    std::string kind = r.acc->write ? (a.write ? "WAW" : "RAW") : "WAR";
    std::string why;
    bool duplicate = false;
    if (same_bytes(*r.acc, static_cast<int>(r.core), a, ci)) {
      // Identical bytes; a read the first store replaced in the shadow (it was ordered before
      // that store) must be ordered before this one too, or it may see this store's bytes.
      duplicate = !r.reads || all_before(*r.reads, start, block);
      if (!duplicate)
        why =
            "both store the same bytes, but a read of them ordered before the first store is "
            "not ordered before the second: it may read the second store's bytes";
    }
    auto& seen = duplicate ? seen_dup_ : seen_;
    auto& out = duplicate ? duplicates : hazards;
    std::string key =
        fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}", first.loc.str(), e.loc.str(), r.acc->buffer,
                    a.buffer, kind, first.name, e.name, pipe_name(e.pipe), why);
    auto [it, fresh] = seen.emplace(key, out.size());
    if (!fresh) {
      ++out[it->second].count;
      return;
    }
    Hazard h;
    h.kind = kind;
    h.memory = memory_name(a.mem);
    h.first = side(static_cast<int>(r.core), r.event, *r.acc);
    h.second = side(ci, st_[ci].pc, a);
    h.why = std::move(why);
    h.duplicate = duplicate;
    out.push_back(std::move(h));
  }
};

}  // namespace

inline std::vector<Hazard> check_hazards(const Trace& trace, const Target& target) {
  Engine e(trace, target.max_pending_cross_sets, true);
  e.run();
  return std::move(e.hazards);
}

inline std::vector<Hazard> duplicate_stores(const Trace& trace, const Target& target) {
  Engine e(trace, target.max_pending_cross_sets, true);
  e.run();
  return std::move(e.duplicates);
}

inline std::vector<FlagIssue> check_flags(const Trace& trace, int max_pending_cross_sets) {
  Engine e(trace, max_pending_cross_sets, false);
  e.run();
  return std::move(e.issues);
}

inline std::string hazard_report(const Trace& trace, const Target& target,
                                 std::vector<std::string>* remarks) {
  Engine e(trace, target.max_pending_cross_sets, true);
  e.run();
  if (remarks)
    for (const auto& d : e.duplicates)
      remarks->push_back(
          fmt::format("{}: remark: hazard checker: {}", d.second.loc.str(), d.str()));
  if (e.hazards.empty() && e.issues.empty()) return "";
  std::string msg =
      fmt::format("hazard check of kernel {}: {} unordered access pair(s), {} flag issue(s)",
                  trace.kernel, e.hazards.size(), e.issues.size());
  for (const auto& i : e.issues) msg += "\n  " + i.str();
  for (const auto& h : e.hazards) msg += "\n  " + h.str();
  return msg;
}

}  // namespace tl::npu::linear
