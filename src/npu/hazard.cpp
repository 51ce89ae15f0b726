// The hazard checker and the flag/deadlock checker (tl/npu/hazard.h): the replay's driver, the
// synchronisation rules, and retiring a block when the checker runs while the launch does
// (HazardStream). The engine is described in hazard_engine.h; its shadow memories and reports
// are in hazard_access.cpp.
#include "tl/npu/hazard.h"

#include <algorithm>
#include <climits>
#include <iostream>
#include <mutex>

#include "hazard_engine.h"
#include "tl/env.h"
#include "tl/error.h"
#include "tl/ops.h"
#include "tl/sync_rules.h"

namespace tl::npu {

namespace hazard_engine {

namespace {

constexpr int kAll = static_cast<int>(Pipe::ALL);

// The in-order pipes and the scalar unit's issue order come from the rule table insert_syncs
// and plan_memory share (tl/sync_rules.h).
bool in_order(int p) {
  return pipe_in_order(static_cast<Pipe>(p));
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

}  // namespace

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

void Engine::begin(bool streaming) {
  streaming_ = streaming;
  st_.assign(tr_.cores.size(), {});
  // Unwritten GM reads are skipped only when every write of the launch is known up front.
  if (check_ && !streaming) gm_written_ = gm_write_ranges(tr_);
  participants_ = 0;
  if (streaming) return;  // no sync_all (HazardStream::applies)
  for (const auto& c : tr_.cores)
    for (const auto& e : c.events)
      if (e.kind == EventKind::SyncAll) {
        ++participants_;
        break;
      }
}

// Block by block: without sync_all a block's cores wait only for each other, so each block is
// replayed to its end (or its deadlock) before the next, which is what lets a launch retire a
// block as soon as it is checked. With sync_all, the blocks take turns until none can move.
void Engine::run() {
  begin(false);
  const int64_t nb = num_blocks();
  if (participants_ == 0) {
    for (int64_t b = 0; b < nb; ++b) {
      run_block(b);
      close_block(b);
    }
  } else {
    bool progress = true;
    while (progress) {
      progress = false;
      for (int64_t b = 0; b < nb; ++b) progress |= run_block(b);
    }
    for (int64_t b = 0; b < nb; ++b) close_block(b);
  }
  finish();
}

void Engine::start_stream() {
  begin(true);
}

void Engine::feed_block(int64_t b) {
  run_block(b);
  close_block(b);
  retire_block(b);
}

void Engine::finish() {
  for (auto* v : {&dead_, &left_, &cross_left_}) {
    issues.insert(issues.end(), std::make_move_iterator(v->begin()),
                  std::make_move_iterator(v->end()));
    v->clear();
  }
}

/// Runs block b's cores in turn, each until it blocks, while any moves; true if one did.
bool Engine::run_block(int64_t b) {
  const size_t lo = static_cast<size_t>(b) * 3, hi = std::min(lo + 3, tr_.cores.size());
  bool any = false, moved = true;
  while (moved) {
    moved = false;
    for (size_t ci = lo; ci < hi; ++ci) {
      const auto& evs = tr_.cores[ci].events;
      while (st_[ci].pc < evs.size() && step(static_cast<int>(ci), evs[st_[ci].pc])) {
        ++st_[ci].pc;
        moved = true;
      }
    }
    any |= moved;
  }
  return any;
}

/// The flag issues of a block that can move no further: its stuck cores, its leftover flags.
void Engine::close_block(int64_t b) {
  const size_t lo = static_cast<size_t>(b) * 3, hi = std::min(lo + 3, tr_.cores.size());
  for (size_t ci = lo; ci < hi; ++ci) {
    const auto& evs = tr_.cores[ci].events;
    if (st_[ci].pc >= evs.size()) continue;
    const TraceEvent& e = evs[st_[ci].pc];
    if (e.kind == EventKind::WaitCross)
      issue(dead_, static_cast<int>(ci), "deadlock", Pipe::ALL,
            fmt::format("wait_cross_flag({})", e.id), e,
            "no matching set_cross_flag is ever issued: every pipe of the core stalls forever");
    else
      issue(dead_, static_cast<int>(ci), "deadlock", Pipe::ALL, "sync_all()", e,
            "some participating core finished (or is stuck) without reaching this sync_all");
  }
  unbalanced(b);
}

/// Drops what only block b's instructions can meet: its on-chip memories' shadows (memories of
/// a logical block: no other block's access is ever checked against them), its flag queues,
/// and its own index of GM records (only an access ordered after a record replaces it, and
/// without sync_all only the block's own are). Its GM records stay, on kept copies of their
/// accesses (Engine::keep): a later block's access may still race with them.
void Engine::retire_block(int64_t b) {
  for (auto it = shadow_.begin(); it != shadow_.end();) {
    if (it->first.scope == static_cast<int>(MemScope::GM) || it->first.block != b) {
      ++it;
      continue;
    }
    const auto drop = [&](uint32_t id, uint64_t, uint64_t) { free_rec(id); };
    it->second.reads.each(drop);
    it->second.writes.each(drop);
    it = shadow_.erase(it);
  }
  for (auto& [k, sh] : shadow_)
    if (k.scope == static_cast<int>(MemScope::GM)) sh.blocks.erase(b);
  const auto lo = std::make_tuple(b, INT_MIN, INT_MIN),
             hi = std::make_tuple(b + 1, INT_MIN, INT_MIN);
  cross_.erase(cross_.lower_bound(lo), cross_.lower_bound(hi));
  cross_reported_.erase(cross_reported_.lower_bound(lo), cross_reported_.lower_bound(hi));
  const size_t c0 = static_cast<size_t>(b) * 3, c1 = std::min(c0 + 3, tr_.cores.size());
  for (size_t ci = c0; ci < c1; ++ci) st_[ci].flags.clear();
}

Know Engine::drained(int ci, int p) const {
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

/// The last event of core `ci` matching `pred` (for the location of a leftover set).
template <typename Pred>
const TraceEvent* Engine::last_event(int ci, Pred pred) const {
  const auto& evs = tr_.cores[ci].events;
  for (size_t i = evs.size(); i-- > 0;)
    if (pred(evs[i])) return &evs[i];
  return nullptr;
}

/// Flags must be balanced when a block ends: a set_flag no wait_flag consumed, or a cross-core
/// set no core waited for, stays raised on the hardware and is consumed by whatever the next
/// kernel on that core waits for first. Cores that did not finish are reported as deadlocks.
void Engine::unbalanced(int64_t b) {
  const size_t c0 = static_cast<size_t>(b) * 3, c1 = std::min(c0 + 3, tr_.cores.size());
  for (size_t ci = c0; ci < c1; ++ci) {
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
      issue(
          left_, static_cast<int>(ci), "flag left set", static_cast<Pipe>(p),
          fmt::format("set_flag({}, {}, {})", pipe_name(static_cast<Pipe>(p)),
                      pipe_name(static_cast<Pipe>(d)), id),
          *set,
          fmt::format("{} set(s) never consumed by a wait_flag when the core finished", q.size()));
    }
  }
  const auto from = cross_.lower_bound(std::make_tuple(b, INT_MIN, INT_MIN));
  const auto to_end = cross_.lower_bound(std::make_tuple(b + 1, INT_MIN, INT_MIN));
  for (auto it = from; it != to_end; ++it) {
    const auto& [key, q] = *it;
    if (q.empty()) continue;
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
    issue(cross_left_, waiter, "cross flag left set", set->pipe,
          fmt::format("cross-core flag {}", id), *set,
          fmt::format("{} set(s) never consumed by a wait_cross_flag on {} when it finished",
                      q.size(), core_name_of(waiter)));
  }
}

void Engine::issue(std::vector<FlagIssue>& to, int ci, std::string kind, Pipe pipe,
                   std::string flag, const TraceEvent& e, const std::string& why) {
  FlagIssue f;
  f.kind = std::move(kind);
  f.core = core_name_of(ci);
  f.pipe = pipe;
  f.flag = std::move(flag) + ": " + why;
  f.loc = e.loc;
  const auto& evs = tr_.cores[ci].events;
  size_t pc = st_[ci].pc;
  for (size_t i = pc > 6 ? pc - 6 : 0; i < pc; ++i) f.last_events.push_back(event_str(evs[i]));
  to.push_back(std::move(f));
}

bool Engine::step(int ci, const TraceEvent& e) {
  CoreState& s = st_[ci];
  int p = static_cast<int>(e.pipe);
  switch (e.kind) {
    case EventKind::Op: {
      if (p >= kPipes) p = 0;
      Know start = s.know[p];
      uint32_t c = ++s.issued[p];
      const bool dcci = e.name == ops::dcci().name;
      event_kept_.clear();
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
        issue(issues, ci, "set twice", e.pipe,
              fmt::format("set_flag({}, {}, {})", pipe_name(e.pipe), pipe_name(e.dst), e.id), e,
              "the flag is still set (no wait_flag consumed the previous set)");
      q.push_back(drained(ci, p));
      return true;
    }
    case EventKind::WaitFlag: {
      auto& q = s.flags[{p, static_cast<int>(e.dst), e.id}];
      if (q.empty()) {
        issue(
            issues, ci, "deadlock", e.dst,
            fmt::format("wait_flag({}, {}, {})", pipe_name(e.pipe), pipe_name(e.dst), e.id), e,
            fmt::format("no earlier set_flag raised it; pipe {} stalls forever", pipe_name(e.dst)));
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
          issue(issues, ci, "too many pending cross-core sets", e.pipe,
                fmt::format("set_cross_flag({}, {}, mode {})", pipe_name(e.pipe), e.id, e.mode), e,
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
        issue(issues, ci, "unsupported", e.pipe,
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
      TL_ASSERT(!streaming_, "a sync_all in a launch checked while it runs");
      int k = s.syncs;
      if (sync_vc_.size() < static_cast<size_t>(k) + 2)
        sync_vc_.resize(k + 2, std::vector<std::array<uint32_t, kLocal>>(tr_.cores.size() / 3 + 1));
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

}  // namespace hazard_engine

using hazard_engine::Engine;

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

namespace {

std::string report_of(const std::string& kernel, const Engine& e,
                      std::vector<std::string>* remarks) {
  if (remarks)
    for (const auto& d : e.duplicates)
      remarks->push_back(
          fmt::format("{}: remark: hazard checker: {}", d.second.loc.str(), d.str()));
  if (e.hazards.empty() && e.issues.empty()) return "";
  std::string msg =
      fmt::format("hazard check of kernel {}: {} unordered access pair(s), {} flag issue(s)",
                  kernel, e.hazards.size(), e.issues.size());
  for (const auto& i : e.issues) msg += "\n  " + i.str();
  for (const auto& h : e.hazards) msg += "\n  " + h.str();
  return msg;
}

}  // namespace

std::string hazard_report(const Trace& trace, const Target& target,
                          std::vector<std::string>* remarks) {
  Engine e(trace, target.max_pending_cross_sets, true);
  e.run();
  return report_of(trace.kernel, e, remarks);
}

void throw_on_hazards(const Trace& trace, const Target& target) {
  std::vector<std::string> remarks;
  std::string msg = hazard_report(trace, target, &remarks);
  for (const auto& r : remarks) std::cerr << r << "\n";
  if (!msg.empty()) throw Error(msg);
}

struct HazardStream::Impl {
  Impl(Trace& t, const Target& target) : trace(t), engine(t, target.max_pending_cross_sets, true) {
    engine.start_stream();
    done.assign(static_cast<size_t>(t.num_blocks), 0);
  }
  Trace& trace;
  Engine engine;
  std::mutex mu;
  std::vector<char> done;  // [block]: its cores have finished
  int64_t next = 0;        // the next block to check
  bool draining = false;   // a thread is checking blocks
  bool finished = false;
};

HazardStream::HazardStream(Trace& trace, const Target& target)
    : impl_(std::make_unique<Impl>(trace, target)) {}
HazardStream::~HazardStream() = default;

bool HazardStream::applies(bool uses_sync_all) {
  if (uses_sync_all) return false;
  const std::string v = env_value("TL_HAZARD_RETIRE");
  if (v.empty() || v == "1") return true;
  if (v == "0") return false;
  throw Error(fmt::format("TL_HAZARD_RETIRE must be 0 or 1, got '{}'", v));
}

void HazardStream::block_done(int64_t block) {
  Impl& m = *impl_;
  std::unique_lock<std::mutex> lk(m.mu);
  m.done[static_cast<size_t>(block)] = 1;
  if (m.draining) return;  // that thread checks this block too once it is next
  m.draining = true;
  // The blocks are checked in order, whichever thread finished them: the findings are those of
  // the replay after the launch. Checking runs without the lock (the other threads only mark
  // blocks done); a block's events are freed once it is checked.
  try {
    while (m.next < static_cast<int64_t>(m.done.size()) && m.done[static_cast<size_t>(m.next)]) {
      const int64_t b = m.next;
      lk.unlock();
      m.engine.feed_block(b);
      const size_t c0 = static_cast<size_t>(b) * 3;
      for (size_t ci = c0; ci < std::min(c0 + 3, m.trace.cores.size()); ++ci)
        std::vector<TraceEvent>().swap(m.trace.cores[ci].events);
      lk.lock();
      ++m.next;
    }
  } catch (...) {
    if (!lk.owns_lock()) lk.lock();
    m.draining = false;
    throw;
  }
  m.draining = false;
}

void HazardStream::finish() {
  Impl& m = *impl_;
  TL_ASSERT(m.next == static_cast<int64_t>(m.done.size()) && !m.draining,
            "the hazard checker finished before every block of {} was checked", m.trace.kernel);
  if (!m.finished) m.engine.finish();
  m.finished = true;
}

std::string HazardStream::report(std::vector<std::string>* remarks) {
  finish();
  return report_of(impl_->trace.kernel, impl_->engine, remarks);
}

const std::vector<Hazard>& HazardStream::hazards() {
  finish();
  return impl_->engine.hazards;
}
const std::vector<Hazard>& HazardStream::duplicates() {
  finish();
  return impl_->engine.duplicates;
}
const std::vector<FlagIssue>& HazardStream::flag_issues() {
  finish();
  return impl_->engine.issues;
}

}  // namespace tl::npu
