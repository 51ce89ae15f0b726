// Timed mode with data: the launch re-executed with memory effects in simulated-time order.
//
// The functional run executes each core in program order, which hides a missing
// synchronisation: a vector op that reads a buffer before the MTE2 copy into it has finished
// still sees the copied data. Hardware does not. So, once the timing model has placed every
// instruction in simulated time (timing_model.cpp), the launch runs again from the same memory, one
// global event queue ordering everything by cycle:
//   - Resume(core, i): a core's interpreter may issue trace event i at the cycle its scalar unit
//     reached it (CoreProfile::issue; a scalar load or store acts at its start cycle). Issue
//     cycles never decrease along a core, so everything the core issues from then on starts no
//     earlier than the present, and can be queued;
//   - Start(op): the op executes against memory as it is at its start cycle (it reads its
//     operands then); the bytes it wrote are taken out again and kept;
//   - Commit(op): at its end cycle those bytes land (only the ones the op changed, so bytes it
//     merely spans, e.g. the gaps of a strided write, are not clobbered).
// At equal cycles commits go first: an instruction ordered after another by a flag or barrier
// starts no earlier than that one ends, and must see its result. Write-after-read races: an
// instruction whose operands a later instruction of its core writes while it runs (that one
// started before it, or starts before it ends) reads them as that one leaves them; so does one
// whose operands an instruction that started after it on another core overwrites before it
// ends. atomic_add reads and writes GM at its end, as the atomic unit does. Control flow is
// replayed too; if a core's path differs from the functional run (its scalar unit read data an
// unsynchronised instruction changed), the replay stops with an error naming the instruction.
// The replay is one thread: its order is the simulated one, so the result does not depend on
// the host.
#include "replay.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <queue>

#include "replay_isolation.h"
#include "tl/error.h"
#include "tl/npu/numerics.h"

namespace tl::npu {
namespace {

/// Writes the bytes of `after` that differ from `before` to `at`, a word at a time: a byte mask
/// of the differing bytes merges them into what is there now.
void write_changed(uint8_t* at, const std::vector<uint8_t>& before,
                   const std::vector<uint8_t>& after) {
  constexpr uint64_t kLow7 = 0x7f7f7f7f7f7f7f7full, kHigh = 0x8080808080808080ull;
  const size_t n = after.size();
  size_t b = 0;
  for (; b + 8 <= n; b += 8) {
    uint64_t x, y, z;
    std::memcpy(&x, &before[b], 8);
    std::memcpy(&y, &after[b], 8);
    const uint64_t t = x ^ y;
    if (t == 0) continue;
    const uint64_t mask = ((((t & kLow7) + kLow7) | t) & kHigh) >> 7 & 0x0101010101010101ull;
    const uint64_t bytes = mask * 0xff;
    std::memcpy(&z, at + b, 8);
    z = (z & ~bytes) | (y & bytes);
    std::memcpy(at + b, &z, 8);
  }
  for (; b < n; ++b)
    if (after[b] != before[b]) at[b] = after[b];
}

bool same_event(const TraceEvent& a, const TraceEvent& b) {
  if (a.kind != b.kind || a.name != b.name || a.loc->line != b.loc->line || a.id != b.id ||
      a.accesses.size() != b.accesses.size())
    return false;
  for (size_t i = 0; i < a.accesses.size(); ++i) {
    const Access &x = a.accesses[i], &y = b.accesses[i];
    if (!(x.mem == y.mem) || x.start != y.start || x.len != y.len || x.pitch != y.pitch ||
        x.count != y.count)
      return false;
  }
  return true;
}

class TimeOrderedReplay final : public ReplayDriver {
 public:
  TimeOrderedReplay(LaunchState& ls, DeviceMemories& mem, const Trace& trace, const Profile& prof,
                    const IsolatedOps& isolated)
      : ls_(ls), mem_(mem), trace_(trace), prof_(prof), isolated_(isolated) {}

  void run(int progress_percent);
  std::pair<int64_t, int64_t> counts() const { return {ops_, in_place_}; }
  bool may_issue(Core& core, size_t first, size_t end) override;
  bool reached(Core& core, size_t event) override;
  void defer(Core& core, const TileOpNode& op, size_t first, size_t end) override;

 private:
  enum Phase : int { kCommit = 0, kStart = 1, kResume = 2 };
  struct Action {
    double time;
    int phase;
    int core;
    size_t event;
    uint32_t slot;  // the Deferred in pool_ (Start and Commit)
    bool operator>(const Action& o) const {
      if (time != o.time) return time > o.time;
      if (phase != o.phase) return phase > o.phase;
      if (core != o.core) return core > o.core;
      return event > o.event;
    }
  };
  /// The bytes of one write run: what was there before the op, and what the op wrote.
  struct Run {
    uint8_t* at;
    std::vector<uint8_t> before, after;
  };
  struct Deferred {
    const TileOpNode* op;
    std::vector<Scalar> slots;
    SourceLoc loc;
    size_t first, end;
    bool atomic;
    double start, finish;
    std::vector<Run> runs;
    bool torn = false;      // a later write hit its operands while it ran: it reads them at its end
    bool in_place = false;  // isolated (replay_isolation.h): executes once, in place, at start
  };
  int index_of(const Core& c) const {
    return static_cast<int>(c.block * 3 + (c.kind == CoreKind::Cube ? 0 : 1 + c.vid));
  }
  uint8_t* address(const Access& a) const;
  void check_same_path(const Core& core, int c, size_t first, size_t end) const;
  /// Runs the op against memory as it is now (plus the overlay of later same-core writers) and
  /// keeps its writes in d.runs instead of leaving them in memory.
  void execute(Deferred& d, Core& core);
  void start(Deferred& d, Core& core);
  void commit(Deferred& d, Core& core);
  /// Does `r` (on core rc) read a byte that `w` (on core wc) writes?
  bool reads_what_writes(int rc, const Deferred& r, int wc, const Deferred& w) const;
  void mark_torn_reads(int wc, const Deferred& w);
  void push(double t, int phase, int core, size_t event, uint32_t slot = 0) {
    queue_.push({t, phase, core, event, slot});
  }

  LaunchState& ls_;
  DeviceMemories& mem_;
  const Trace& trace_;
  const Profile& prof_;
  Trace shadow_;  // what the replayed cores record: compared with trace_ event by event
  std::vector<std::unique_ptr<Core>> cores_;
  std::vector<std::vector<int>>
      instr_of_;  // per core, per event: index into prof_.instrs (-1: none)
  const IsolatedOps& isolated_;
  std::deque<Deferred> pool_;  // deferred ops (stable addresses), reused through free_
  std::vector<uint32_t> free_;
  std::vector<std::vector<Deferred*>> running_;  // per core: started, not yet committed
  std::priority_queue<Action, std::vector<Action>, std::greater<>> queue_;
  double now_ = 0;
  int64_t ops_ = 0, in_place_ = 0;
  int resuming_ = -1;  // the core a Resume action is running, and the event it may issue
  size_t resuming_event_ = 0;
};

uint8_t* TimeOrderedReplay::address(const Access& a) const {
  if (a.mem.scope == MemScope::GM)
    return reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(a.start));
  const int phys = trace_.cores[a.mem.block * 3 + a.mem.core].phys;
  auto& m = mem_.cores[phys * 3 + a.mem.core][static_cast<size_t>(a.mem.scope)];
  TL_ASSERT(a.end() <= m.size(),
            "replay: access to {} bytes [{}, {}) outside the {}-byte {} of block {}", a.buffer,
            a.start, a.end(), m.size(), scope_name(a.mem.scope), a.mem.block);
  return m.data() + a.start;
}

void TimeOrderedReplay::check_same_path(const Core& core, int c, size_t first, size_t end) const {
  const auto& want = trace_.cores[c].events;
  const auto& got = shadow_.cores[c].events;
  for (size_t i = first; i < end; ++i) {
    if (i < want.size() && same_event(want[i], got[i])) continue;
    std::string was = i < want.size() ? fmt::format("{} at {}", want[i].name, want[i].loc.str())
                                      : "the end of the core";
    throw Error(
        got[i].loc,
        fmt::format("timed mode: {} took a different path in simulated-time order than in program "
                    "order: instruction {} is {}, was {}. Its scalar unit read data that an "
                    "unsynchronised instruction changed; run with the hazard checker to find it",
                    core.name(), i, got[i].name, was));
  }
}

bool TimeOrderedReplay::reached(Core& core, size_t event) {
  const int c = index_of(core);
  if (resuming_ == c && resuming_event_ == event) return true;
  // Past the functional run's last event the path differs: may_issue reports it.
  if (event >= trace_.cores[c].events.size()) return true;
  // Scalar loads and stores act at their start cycle; everything else is queued at issue.
  const int ti = instr_of_[c][event];
  const bool scalar = ti >= 0 && prof_.instrs[ti].pipe == Pipe::S;
  const double t = scalar ? prof_.instrs[ti].start : prof_.cores[c].issue[event];
  if (t <= now_) return true;
  push(t, kResume, c, event);
  return false;
}

bool TimeOrderedReplay::may_issue(Core& core, size_t first, size_t end) {
  check_same_path(core, index_of(core), first, end);
  return reached(core, first);
}

void TimeOrderedReplay::defer(Core& core, const TileOpNode& op, size_t first, size_t end) {
  const int c = index_of(core);
  uint32_t slot;
  if (free_.empty()) {
    slot = static_cast<uint32_t>(pool_.size());
    pool_.emplace_back();
  } else {
    slot = free_.back();
    free_.pop_back();
  }
  Deferred& d = pool_[slot];
  d.op = &op;
  d.slots.assign(core.scalar_slots().begin(), core.scalar_slots().end());
  d.loc = core.current_loc();
  d.first = first;
  d.end = end;
  d.atomic = op.op->atomic;
  d.start = 1e300;
  d.finish = 0;
  d.runs.clear();
  d.torn = false;
  d.in_place = !d.atomic && isolated_.isolated(c, first);
  ++ops_;
  in_place_ += d.in_place;
  for (size_t i = first; i < end; ++i)
    if (int ti = instr_of_[c][i]; ti >= 0) {
      d.start = std::min(d.start, prof_.instrs[ti].start);
      d.finish = std::max(d.finish, prof_.instrs[ti].end);
    }
  if (d.start > d.finish)
    d.start = d.finish = now_;  // no timed event (cannot happen for ops today)
  TL_ASSERT(d.start >= now_, "replay: {} at {} starts at cycle {} before the present {}",
            op.op->name, op.loc.str(), d.start, now_);
  if (d.atomic)
    push(d.finish, kCommit, c, first, slot);
  else
    push(d.start, kStart, c, first, slot);
}

bool TimeOrderedReplay::reads_what_writes(int rc, const Deferred& r, int wc,
                                          const Deferred& w) const {
  for (size_t i = r.first; i < r.end; ++i)
    for (const Access& a : trace_.cores[rc].events[i].accesses)
      if (!a.write)
        for (size_t j = w.first; j < w.end; ++j)
          for (const Access& b : trace_.cores[wc].events[j].accesses)
            if (b.write && overlaps(a, b)) return true;
  return false;
}

void TimeOrderedReplay::execute(Deferred& d, Core& core) {
  const int c = index_of(core);
  d.runs.clear();
  for (size_t i = d.first; i < d.end; ++i)
    for (const Access& a : trace_.cores[c].events[i].accesses)
      if (a.write)
        for (uint64_t r = 0; r < a.count; ++r) {
          uint8_t* p = address(a) + r * a.pitch;
          d.runs.push_back({p, std::vector<uint8_t>(p, p + a.len), {}});
        }
  // Later instructions of this core already writing what this one reads (a WAR without its
  // synchronisation): this one reads the bytes as they leave them.
  std::vector<Run> overlay;
  for (const Deferred* w : running_[c]) {
    if (w->first <= d.first || !reads_what_writes(c, d, c, *w)) continue;
    for (const auto& run : w->runs) {
      overlay.push_back({run.at, std::vector<uint8_t>(run.at, run.at + run.before.size()), {}});
      write_changed(run.at, run.before, run.after);
    }
  }
  core.exec_deferred(*d.op, d.slots, d.loc);
  for (auto& run : d.runs) run.after.assign(run.at, run.at + run.before.size());
  // Later runs may overlap earlier ones: restore backwards so the oldest bytes win.
  for (auto it = d.runs.rbegin(); it != d.runs.rend(); ++it)
    std::memcpy(it->at, it->before.data(), it->before.size());
  for (auto it = overlay.rbegin(); it != overlay.rend(); ++it)
    std::memcpy(it->at, it->before.data(), it->before.size());
}

void TimeOrderedReplay::start(Deferred& d, Core& core) {
  const int c = index_of(core);
  if (d.in_place) {
    core.exec_deferred(*d.op, d.slots, d.loc);
    return;
  }
  execute(d, core);
  // Earlier instructions of this core still reading what this one starts writing (a WAR
  // without its synchronisation) read it at their end, as this one leaves it.
  for (Deferred* r : running_[c])
    if (!r->torn && r->first < d.first && reads_what_writes(c, *r, c, d)) r->torn = true;
  running_[c].push_back(&d);
}

void TimeOrderedReplay::mark_torn_reads(int wc, const Deferred& w) {
  // Instructions still running whose operands this write just changed, and that come before it
  // (a WAR without its synchronisation: on the same core in program order, across cores by
  // start cycle) read the new bytes. Ones that come after it (a RAW without its
  // synchronisation) keep the stale bytes they read at their start.
  bool gm = false;
  for (size_t j = w.first; j < w.end && !gm; ++j)
    for (const Access& b : trace_.cores[wc].events[j].accesses)
      gm |= b.write && b.mem.scope == MemScope::GM;
  const int lo = gm ? 0 : wc, hi = gm ? static_cast<int>(running_.size()) : wc + 1;
  for (int rc = lo; rc < hi; ++rc)
    for (Deferred* r : running_[rc]) {
      if (r->torn || r == &w) continue;
      const bool before = rc == wc ? r->first < w.first : r->start < w.start;
      if (before && reads_what_writes(rc, *r, wc, w)) r->torn = true;
    }
}

void TimeOrderedReplay::commit(Deferred& d, Core& core) {
  auto& running = running_[index_of(core)];
  running.erase(std::remove(running.begin(), running.end(), &d), running.end());
  if (d.atomic) {
    core.exec_deferred(*d.op, d.slots, d.loc);
  } else {
    if (d.torn) execute(d, core);  // read the operands again, now
    for (const auto& run : d.runs) write_changed(run.at, run.before, run.after);
  }
  mark_torn_reads(index_of(core), d);
}

void TimeOrderedReplay::run(int progress_percent) {
  const Program& p = ls_.program;
  const size_t n = trace_.cores.size();
  instr_of_.resize(n);
  for (size_t c = 0; c < n; ++c) instr_of_[c].assign(trace_.cores[c].events.size(), -1);
  for (size_t i = 0; i < prof_.instrs.size(); ++i)
    instr_of_[prof_.instrs[i].core][prof_.instrs[i].event] = static_cast<int>(i);
  running_.resize(n);
  shadow_.cores.resize(n);
  ls_.trace = &shadow_;
  cores_.resize(n);
  for (size_t c = 0; c < n; ++c) {
    const int slot = static_cast<int>(c % 3), phys = trace_.cores[c].phys;
    cores_[c] = std::make_unique<Core>(p, ls_, slot == 0 ? CoreKind::Cube : CoreKind::Vector,
                                       slot == 0 ? 0 : slot - 1, phys, mem_.cores[phys * 3 + slot]);
    cores_[c]->set_replay(this);
    cores_[c]->start(static_cast<int64_t>(c / 3));
    cores_[c]->run();
  }
  size_t started = 0, step = prof_.instrs.size() * std::max(progress_percent, 1) / 100 + 1,
         next_report = step;
  while (!queue_.empty()) {
    Action a = queue_.top();
    queue_.pop();
    now_ = a.time;
    Core& core = *cores_[a.core];
    if (a.phase == kResume) {
      resuming_ = a.core;
      resuming_event_ = a.event;
      core.run();
      resuming_ = -1;
      continue;
    }
    Deferred& d = pool_[a.slot];
    TL_ASSERT(d.first == a.event, "replay: no deferred op at event {} of {}", a.event, core.name());
    if (a.phase == kStart) {
      start(d, core);
      if (d.in_place)
        free_.push_back(a.slot);
      else
        push(d.finish, kCommit, a.core, d.first, a.slot);
      if (progress_percent > 0 && ++started >= next_report) {
        fmt::print(stderr, "replay in simulated-time order: {}% of the instructions started\n",
                   100 * started / std::max<size_t>(1, prof_.instrs.size()));
        next_report += step;
      }
    } else {
      commit(d, core);
      free_.push_back(a.slot);
    }
  }
  for (size_t c = 0; c < n; ++c) {
    const Core& core = *cores_[c];
    const auto& want = trace_.cores[c].events;
    const auto& got = shadow_.cores[c].events;
    if (core.status() == Core::Status::Done && got.size() == want.size()) continue;
    size_t at = std::min(got.size(), want.size());
    throw Error(
        at < want.size() ? SourceLoc(want[at].loc) : SourceLoc{},
        fmt::format(
            "timed mode: {} took a different path in simulated-time order than in program order: "
            "it "
            "{} after {} of its {} instructions. Its scalar unit read data that an unsynchronised "
            "instruction changed; run with the hazard checker to find it",
            core.name(), core.status() == Core::Status::Done ? "finished" : "stopped", got.size(),
            want.size()));
  }
  ls_.trace = nullptr;
}

}  // namespace

std::pair<int64_t, int64_t> replay_in_time_order(LaunchState& ls, DeviceMemories& mem,
                                                 const Trace& trace, const Profile& profile,
                                                 const IsolatedOps& isolated,
                                                 int progress_percent) {
  TimeOrderedReplay r(ls, mem, trace, profile, isolated);
  r.run(progress_percent);
  return r.counts();
}

}  // namespace tl::npu
