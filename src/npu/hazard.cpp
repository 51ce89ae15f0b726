// The hazard checker and the flag/deadlock checker (tl/npu/hazard.h).
//
// Happens-before with vector clocks. Knowledge is per block: one component per (core, pipe)
// timeline of the block (3 cores x 7 pipes); a component value c on a pipe's knowledge means
// "instruction c of that timeline (and, transitively, everything it was ordered after) has
// completed before the next instruction issued on this pipe starts". Only sync_all orders
// blocks against each other; for that each pipe also knows the generation g of the last
// sync_all it is ordered after, and sync_vc[g][block] holds what every core of `block` had
// completed when it arrived there.
//
// In-order pipes (S, M, MTE1, FIX) know their own previous instruction; V, MTE2 and MTE3 only
// learn their own completions through pipe_barrier / barrier_all / flags, each of which
// drains the whole pipe, so a component value always means "everything up to c is done".
//
// The trace is replayed core by core (run until a cross-core wait or sync_all blocks, then the
// next core), which is a valid interleaving; every access is checked against the shadow state
// of its memory: the recent accesses not yet replaced by a covering access that is ordered
// after them (FastTrack-style: a later write that covers an earlier access and is ordered
// after it reports every future conflict the earlier one would have), kept in interval indexes
// (hazard_shadow.h, tl/npu/range_index.h) so that only candidates near the access are tested
// with overlaps().
#include "tl/npu/hazard.h"

#include <algorithm>
#include <array>
#include <iostream>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>

#include "hazard_shadow.h"
#include "tl/error.h"
#include "tl/ops.h"
#include "tl/sync_rules.h"

namespace tl::npu {

namespace {

using namespace hazard_shadow;
constexpr int kAll = static_cast<int>(Pipe::ALL);

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
  const Access* acc;
  uint64_t seq;
  bool scalar;
  const TraceEvent* ev;
};
/// A dcci of a core: the bytes it covers (or its whole cache), and when.
struct Dcci {
  const Access* acc;
  uint64_t seq;
  bool entire;
};

struct CoreState {
  size_t pc = 0;
  std::array<Know, kPipes> know{};
  std::array<uint32_t, kPipes> issued{};
  int syncs = 0;
  bool arrived = false;
  std::map<std::tuple<int, int, int>, KnowQueue> flags;
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
    if (check_) gm_written_ = gm_write_ranges(tr_);
    participants_ = 0;
    for (const auto& c : tr_.cores)
      for (const auto& e : c.events)
        if (e.kind == EventKind::SyncAll) {
          ++participants_;
          break;
        }
    bool progress = true;
    while (progress) {
      progress = false;
      for (size_t ci = 0; ci < n; ++ci) {
        const auto& evs = tr_.cores[ci].events;
        while (st_[ci].pc < evs.size() && step(static_cast<int>(ci), evs[st_[ci].pc])) {
          ++st_[ci].pc;
          progress = true;
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
  std::vector<Hazard> duplicates;          // duplicate stores: remarks, not hazards
  uint64_t seq_ = 0;                       // data-cache order: one step per event
  std::vector<GmWrite> gm_writes_;         // every GM write so far, for the data-cache rule
  RangeIndex gm_write_index_;              // of gm_writes_ (id: its index, seq: the same)
  std::vector<GmWrite> scalar_writes_;     // the scalar stores among them (read by every GM read)
  RangeIndex scalar_write_index_;          // of scalar_writes_ (id, seq: its index)
  std::map<int, std::vector<Dcci>> dcci_;  // per core, its dccis (in seq order)
  std::vector<FlagIssue> issues;

 private:
  const Trace& tr_;
  int max_pending_;
  bool check_;
  std::vector<CoreState> st_;
  int participants_ = 0;
  std::map<int, int> arrivals_;                                     // sync index -> cores arrived
  std::vector<std::vector<std::array<uint32_t, kLocal>>> sync_vc_;  // [generation][block]
  std::map<std::tuple<int64_t, int, int>, KnowQueue> cross_;        // (block, slot, id)
  std::map<std::tuple<int64_t, int, int>, bool> cross_reported_;
  std::map<MemKey, Shadow> shadow_;
  std::vector<Rec> recs_;       // the shadows' records; ids index it
  std::vector<uint32_t> free_;  // ids of erased records, reused
  uint64_t rec_seq_ = 0;        // insertion order of the records (the old map's tie order)
  struct Cand {
    uint64_t start, seq;
    uint32_t id;
  };
  std::vector<Cand> cand_;                      // scratch: the conflicts of one access
  std::vector<uint32_t> before_;                // scratch: the stores a GM read is ordered after
  std::vector<std::unique_ptr<Sources>> srcs_;  // scratch: Rec::srcs per access of one event
  std::vector<uint32_t> kill_;                  // scratch: the records one access replaces
  std::unordered_map<std::string, size_t> seen_;
  std::unordered_map<std::string, size_t> seen_dup_;
  std::vector<std::pair<uint64_t, uint64_t>> gm_written_;  // gm_write_ranges of the trace

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

  Shadow& shadow_of(const MemoryId& m) {
    auto [it, fresh] = shadow_.try_emplace(MemKey{static_cast<int>(m.scope), m.block, m.core});
    if (fresh) it->second.per_block = m.scope == MemScope::GM;
    return it->second;
  }
  RangeIndex& index_of(Shadow& sh, const Rec& r, bool by_block) {
    if (by_block) return sh.blocks[r.block][r.write ? 1 : 0];
    return r.write ? sh.writes : sh.reads;
  }

  bool inert(const Access& a) const { return inert_gm_read(gm_written_, a); }

  void access(int ci, const TraceEvent& e, int p, uint32_t c, const Know& start) {
    const int64_t block = block_of(ci);
    const uint8_t t = static_cast<uint8_t>(slot_of(ci) * kPipes + p);
    // Check every access against the recent ones, then record them. A read conflicts only
    // with writes; the conflicts are reported in (start, insertion) order, as the single map
    // by start this replaced visited them.
    srcs_.clear();
    srcs_.resize(e.accesses.size());
    for (const Access& a : e.accesses) {
      if (inert(a)) continue;
      Shadow& sh = shadow_of(a.mem);
      cand_.clear();
      before_.clear();
      const bool gm_read = !a.write && a.mem.scope == MemScope::GM;
      const auto visit = [&](uint32_t id, uint64_t s, uint64_t q) {
        const Rec& r = recs_[id];
        if (r.atomic && a.atomic) return;  // atomic adds commute and do not tear
        // The O(1) order test first: most candidates of a synchronised program are ordered,
        // and overlaps() walks the rows of strided accesses (same result, either order).
        if (hb(r, start, block)) {
          if (gm_read && r.write) before_.push_back(id);
          return;
        }
        if (!overlaps(*r.acc, a)) return;
        cand_.push_back({s, q, id});
      };
      sh.writes.overlapping(a.start, a.end(), visit);
      if (a.write) sh.reads.overlapping(a.start, a.end(), visit);
      std::sort(cand_.begin(), cand_.end(), [](const Cand& x, const Cand& y) {
        return x.start != y.start ? x.start < y.start : x.seq < y.seq;
      });
      srcs_[static_cast<size_t>(&a - e.accesses.data())] = sources_of(recs_, before_, a);
      const Sources* mine = srcs_[static_cast<size_t>(&a - e.accesses.data())].get();
      for (const Cand& k : cand_) {
        const Rec& r = recs_[k.id];
        const bool same =
            r.write ? reads_same_bytes(mine, *r.acc, r.core)
                    : a.write && reads_same_bytes(r.srcs.get(), a, static_cast<uint32_t>(ci));
        if (!same) report(r, ci, e, a, start, block);
      }
    }
    for (const Access& a : e.accesses) {
      if (inert(a)) continue;
      Shadow& sh = shadow_of(a.mem);
      // A store that may later be found a duplicate keeps the clocks of the reads it replaces.
      const bool keep_reads = a.write && a.digested && a.mem.scope == MemScope::GM;
      std::unique_ptr<ReadClocks> reads;
      // Only accesses ordered before this one (or of this very event) are replaced: without a
      // sync_all behind it, only its own block's.
      const bool by_block = sh.per_block && start.gen == 0;
      kill_.clear();
      const auto visit = [&](uint32_t id, uint64_t, uint64_t) {
        const Rec& r = recs_[id];
        bool same = r.core == static_cast<uint32_t>(ci) && r.event == st_[ci].pc;
        if ((same || hb(r, start, block)) && covers(a, *r.acc)) kill_.push_back(id);
      };
      RangeIndex* rd = &sh.reads;
      RangeIndex* wr = &sh.writes;
      if (by_block) {
        auto& bl = sh.blocks[block];
        rd = &bl[0];
        wr = &bl[1];
      }
      rd->inside(a.start, a.end(), visit);
      if (a.write) wr->inside(a.start, a.end(), visit);
      for (uint32_t id : kill_) {
        Rec& r = recs_[id];
        if (keep_reads && (!r.write || r.reads)) {
          if (!reads) reads = std::make_unique<ReadClocks>();
          if (!r.write)
            reads->add(r.block, r.t, r.clock);
          else
            reads->merge(*r.reads);
        }
        index_of(sh, r, false).erase(r.start, r.end, r.seq);
        if (sh.per_block) index_of(sh, r, true).erase(r.start, r.end, r.seq);
        r.reads.reset();
        r.srcs.reset();
        free_.push_back(id);
      }
      uint32_t id;
      if (!free_.empty()) {
        id = free_.back();
        free_.pop_back();
      } else {
        id = static_cast<uint32_t>(recs_.size());
        recs_.emplace_back();
      }
      Rec& r = recs_[id];
      r = Rec{&a,
              static_cast<uint32_t>(ci),
              static_cast<uint32_t>(st_[ci].pc),
              block,
              t,
              a.write,
              a.atomic,
              c,
              a.start,
              a.end(),
              rec_seq_++,
              std::move(reads),
              std::move(srcs_[static_cast<size_t>(&a - e.accesses.data())])};
      index_of(sh, r, false).insert(r.start, r.end, r.seq, id);
      if (sh.per_block) index_of(sh, r, true).insert(r.start, r.end, r.seq, id);
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
        if (a.write) dcci_[ci].push_back({&a, seq_, e.mode == 1});
        continue;
      }
      if (!a.write) {
        // A scalar load: written since this core's last covering dcci by DMA or another core?
        // (Reported in (start, order of the writes), as the map by start this replaced did.)
        if (scalar) {
          cand_.clear();
          gm_write_index_.overlapping(a.start, a.end(), [&](uint32_t id, uint64_t s, uint64_t q) {
            const GmWrite& w = gm_writes_[id];
            if ((w.core != ci || !w.scalar) && overlaps(*w.acc, a) && !dcci_after(ci, w.seq, a))
              cand_.push_back({s, q, id});
          });
          std::sort(cand_.begin(), cand_.end(), [](const Cand& x, const Cand& y) {
            return x.start != y.start ? x.start < y.start : x.seq < y.seq;
          });
          for (const Cand& k : cand_)
            cache_hazard(
                gm_writes_[k.id], ci, a,
                "a scalar load of GM that DMA or another core wrote reads this core's data "
                "cache, which may hold the old bytes: dcci (DataCacheCleanAndInvalid) them "
                "after the write, before the load");
        }
        // Anything but the storing core's own scalar unit reading bytes a scalar store left in
        // that core's cache (in the order of the stores).
        cand_.clear();
        scalar_write_index_.overlapping(a.start, a.end(), [&](uint32_t id, uint64_t, uint64_t) {
          const GmWrite& w = scalar_writes_[id];
          if ((w.core != ci || !scalar) && overlaps(*w.acc, a) &&
              !dcci_after(w.core, w.seq, *w.acc))
            cand_.push_back({0, id, id});
        });
        std::sort(cand_.begin(), cand_.end(),
                  [](const Cand& x, const Cand& y) { return x.seq < y.seq; });
        for (const Cand& k : cand_)
          cache_hazard(scalar_writes_[k.id], ci, a,
                       "a scalar store to GM stays in the storing core's data cache until a dcci "
                       "(DataCacheCleanAndInvalid) on that core writes it back");
        continue;
      }
      const GmWrite w{ci, &a, seq_, scalar, &e};
      const auto n = static_cast<uint32_t>(gm_writes_.size());
      gm_write_index_.insert(a.start, a.end(), n, n);
      gm_writes_.push_back(w);
      if (scalar) {
        const auto m = static_cast<uint32_t>(scalar_writes_.size());
        scalar_write_index_.insert(a.start, a.end(), m, m);
        scalar_writes_.push_back(w);
      }
    }
  }
  /// True if core `core` ran a dcci covering `a` after data-cache step `seq`.
  bool dcci_after(int core, uint64_t seq, const Access& a) const {
    auto it = dcci_.find(core);
    if (it == dcci_.end()) return false;
    const auto& v = it->second;  // in seq order: skip the earlier ones
    auto d = std::upper_bound(v.begin(), v.end(), seq,
                              [](uint64_t s, const Dcci& x) { return s < x.seq; });
    for (; d != v.end(); ++d)
      if (d->entire || covers(*d->acc, a)) return true;
    return false;
  }
  void cache_hazard(const GmWrite& w, int ci, const Access& a, const char* why) {
    Hazard h;
    h.kind = "RAW";
    h.memory = "GM";
    const auto& evs = tr_.cores[w.core].events;
    h.first = side(w.core, static_cast<size_t>(w.ev - evs.data()), *w.acc);
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

std::vector<Hazard> check_hazards(const Trace& trace, const Target& target) {
  Engine e(trace, target.max_pending_cross_sets, true);
  e.run();
  return std::move(e.hazards);
}

std::vector<Hazard> duplicate_stores(const Trace& trace, const Target& target) {
  Engine e(trace, target.max_pending_cross_sets, true);
  e.run();
  return std::move(e.duplicates);
}

std::vector<FlagIssue> check_flags(const Trace& trace, int max_pending_cross_sets) {
  Engine e(trace, max_pending_cross_sets, false);
  e.run();
  return std::move(e.issues);
}

std::string hazard_report(const Trace& trace, const Target& target,
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

void throw_on_hazards(const Trace& trace, const Target& target) {
  std::vector<std::string> remarks;
  std::string msg = hazard_report(trace, target, &remarks);
  for (const auto& r : remarks) std::cerr << r << "\n";
  if (!msg.empty()) throw Error(msg);
}

}  // namespace tl::npu
