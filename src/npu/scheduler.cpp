// The block scheduler of a functional launch: host threads, deadlock detection, the
// instruction budget and progress lines.
//
// Each host thread runs its core groups in sweeps (every core runs until it blocks or
// finishes). Cross-core flags are local to a block, and a block's three cores share a thread,
// so a thread none of whose cores can move and none of which waits at sync_all is deadlocked
// on its own. A thread with a core at sync_all may still be released by other threads (the
// barrier completes; a core of this thread then sets a flag another one waits for), so it
// waits; the barrier can never complete only when every thread still running waits that way,
// which the threads find together under LaunchState::mu.
//
// Determinism: a core passes a barrier only in a sweep that started after the barrier
// completed (Core::see_barrier), so which cores move in which sweep, and therefore each
// thread's first error, does not depend on when another thread completed the barrier.
#include "scheduler.h"

#include <cerrno>
#include <cstdlib>
#include <optional>
#include <set>
#include <thread>

#include "exec.h"
#include "tl/ir_functor.h"
#include "tl/npu/hazard.h"
#include "tl/npu/npu.h"
#include "tl/pass.h"
#include "trace_stream.h"

namespace tl::npu {

namespace {

/// Launches under this many interpreter steps stay quiet (as the timing model's progress does
/// below two million events); longer ones report at each `progress_percent` of the blocks and
/// at least every kHeartbeatSteps steps (a long block, or a loop that does not end).
constexpr int64_t kQuietSteps = 2'000'000;
constexpr int64_t kHeartbeatSteps = int64_t{1} << 27;

/// Up to `max` names, then "and N more".
std::string name_list(const std::vector<std::string>& names, size_t max = 12) {
  std::string s;
  for (size_t i = 0; i < names.size() && i < max; ++i) s += (i ? ", " : "") + names[i];
  if (names.size() > max) s += fmt::format(" and {} more", names.size() - max);
  return s;
}

/// The launch-wide deadlock at sync_all: every running thread waits for the barrier. Lists
/// the cores of every group (all threads are parked, so their cores do not change; the caller
/// holds LaunchState::mu, which orders their last writes before these reads).
std::string barrier_deadlock(const LaunchState& ls, const std::vector<Group>& groups) {
  std::vector<std::string> at_barrier, finished;
  std::string other, where;
  for (const auto& g : groups)
    for (const auto& c : g.cores) {
      const bool participant = ls.program.sync_all_kinds & (c->kind == CoreKind::Cube ? 1 : 2);
      if (c->at_barrier()) {
        at_barrier.push_back(c->name());
        if (where.empty()) where = c->blocked_on();
      } else if (c->status() == Core::Status::Blocked) {
        other += fmt::format("  {} blocked on {}; last events:\n{}", c->name(), c->blocked_on(),
                             c->last_events());
      } else if (c->status() == Core::Status::Done && participant) {
        finished.push_back(c->name());
      }
    }
  std::string s = fmt::format(
      "deadlock in kernel {}: {} can never complete: {} of the {} participating cores "
      "reached it ({})",
      ls.program.func->name, where, at_barrier.size(), ls.barrier_participants,
      name_list(at_barrier));
  if (!finished.empty())
    s +=
        fmt::format("; {} finished without reaching it ({})", finished.size(), name_list(finished));
  s += "\n";
  if (!other.empty())
    s += "the others wait for something only cores at the barrier could give:\n" + other;
  return s;
}

/// Waits until another thread completes the barrier this thread's cores wait at (true), or
/// until every running thread waits so (false: the barrier never completes; `report` is the
/// deadlock message, or empty when another thread failed and its error explains the rest).
bool wait_for_barrier(LaunchState& ls, int64_t gen_seen, const std::vector<Group>& all,
                      std::string& report) {
  std::unique_lock<std::mutex> lk(ls.mu);
  if (ls.barrier_generation != gen_seen) return true;
  ++ls.parked_threads;
  if (ls.parked_threads == ls.live_threads) {
    ls.stuck = true;
    ls.cv.notify_all();
  }
  ls.cv.wait(lk, [&] { return ls.stuck || ls.barrier_generation != gen_seen; });
  // The barrier's completion reset the count (Core, SyncAll): a thread parked on an older
  // generation is not waiting any more, even if it has not been scheduled to wake yet.
  // Counting it found a false deadlock when another thread reached the *next* sync_all first.
  if (ls.barrier_generation != gen_seen) return true;
  --ls.parked_threads;
  if (ls.failed_threads == 0) report = barrier_deadlock(ls, all);
  return false;
}

/// A thread stops running cores (all done, or failed): the others may now all be waiting.
void leave(LaunchState& ls, bool failed) {
  std::lock_guard<std::mutex> lk(ls.mu);
  --ls.live_threads;
  ls.failed_threads += failed;
  if (ls.live_threads > 0 && ls.parked_threads == ls.live_threads) {
    ls.stuck = true;
    ls.cv.notify_all();
  }
}

/// Where the kernel raises and awaits cross-core flag `id`: "set by the cube at lines 139, 215;
/// waited for by the vector at line 250", so that a pending flag names the statements to look
/// at (often a set before the loop, as an initial credit, with no drain after it).
/// `setter`/`waiter`: the scopes that set and wait (undefined: either).
std::string cross_flag_lines(const KernelNode& k, int64_t id, std::optional<CoreKind> setter,
                             std::optional<CoreKind> waiter) {
  std::set<int> sets, waits;
  auto visit = [&](const Stmt& body, std::optional<CoreKind> core) {
    pre_order_visit(body, [&](const Stmt& x) {
      auto* y = x.as<SyncNode>();
      if (!y || as_const_int(y->event_id) != id) return;
      if (y->sync_kind == SyncKind::SetCrossFlag && (!core || !setter || *core == *setter))
        sets.insert(y->loc.line);
      if (y->sync_kind == SyncKind::WaitCrossFlag && (!core || !waiter || *core == *waiter))
        waits.insert(y->loc.line);
    });
  };
  bool scoped = false;
  pre_order_visit(k.body, [&](const Stmt& x) {
    if (auto* sc = x.as<ScopeNode>()) {
      scoped = true;
      visit(sc->body, sc->core);
    }
  });
  if (!scoped) visit(k.body, std::nullopt);
  auto lines = [](const std::set<int>& v) {
    std::string out = v.size() == 1 ? "line " : "lines ";
    for (const int& l : v) out += (&l == &*v.begin() ? "" : ", ") + std::to_string(l);
    return out;
  };
  auto who = [](std::optional<CoreKind> c) {
    return !c ? "" : *c == CoreKind::Cube ? " by the cube" : " by the vector";
  };
  std::string out;
  if (!sets.empty()) out += fmt::format("; set{} at {}", who(setter), lines(sets));
  out += waits.empty() ? fmt::format("; no wait{} for it", who(waiter))
                       : fmt::format(", waited for{} at {}", who(waiter), lines(waits));
  return out;
}

/// Flags a finished block left pending: an intra-core set no wait consumed, a cross-core
/// counter above zero. On the chip they stay set for the next block or kernel on that core,
/// which then synchronises on a stale flag (or, for mode 1, hangs).
void check_block_flags(LaunchState& ls, const Group& g, int64_t block) {
  std::string left;
  for (const auto& c : g.cores)
    for (const auto& f : c->pending_flags())
      left += fmt::format("\n  {}: {} was never consumed by a wait_flag", c->name(), f);
  static const char* kSlot[LaunchState::kCrossSlots] = {
      "",
      "for AIV0",
      "for AIV1",
      "from AIV0 for the AIC",
      "from AIV1 for the AIC",
      "(mode 1) from AIV0 that AIV1 never matched",
      "(mode 1) from AIV1 that AIV0 never matched"};
  // Who sets and who waits, per slot: the AIC for the AIVs, the AIVs for the AIC, AIV to AIV.
  const std::optional<CoreKind> kSetter[LaunchState::kCrossSlots] = {
      std::nullopt,     CoreKind::Cube,   CoreKind::Cube,  CoreKind::Vector,
      CoreKind::Vector, CoreKind::Vector, CoreKind::Vector};
  bool any_cross = false;
  for (int slot = 1; slot < LaunchState::kCrossSlots; ++slot) {
    const auto& counters = ls.cross_counters(block, slot);
    const std::optional<CoreKind> setter = kSetter[slot];
    const CoreKind waiter =
        slot >= 5 || *setter == CoreKind::Cube ? CoreKind::Vector : CoreKind::Cube;
    for (size_t id = 0; id < counters.size(); ++id)
      if (counters[id] != 0) {
        any_cross = true;
        left += fmt::format(
            "\n  cross-core flag {}: {} set(s) {} never consumed by a wait_cross_flag{}", id,
            counters[id], kSlot[slot],
            cross_flag_lines(*ls.program.kernel, static_cast<int64_t>(id), setter, waiter));
      }
  }
  if (any_cross)
    left +=
        "\n  the kernel raises these flags more often than the other core waits for them (an "
        "initial set with no matching wait at the end?): every set_cross_flag needs one "
        "wait_cross_flag on the other core";
  if (!left.empty())
    throw Error(ls.program.kernel->loc,
                fmt::format("kernel {}, block {}: flags left pending when the block ended (on the "
                            "chip they stay set "
                            "for the next block or kernel on these cores):{}",
                            ls.program.func->name, block, left));
}

void run_thread(LaunchState& ls, const std::vector<Group*>& groups, const std::vector<Group>& all,
                HazardStream* hazards) {
  const int64_t P = ls.physical_blocks;
  auto start_next = [&](Group& g) {
    if (g.next_block >= ls.num_blocks) return false;
    for (auto& c : g.cores) c->start(g.next_block);
    g.next_block += P;
    g.running = true;
    return true;
  };
  for (auto* g : groups) start_next(*g);
  // A plain functional launch runs each group's cores again while they move, before the next
  // group: the block's cores pass their data on through flags and GM workspaces, so going round
  // the thread's other groups (12 of them with 24 AICs on 2 threads) between two steps of one
  // block evicted its memories (about 1 MB a group) from the host's caches. Within a group the
  // cores take the same turns (each runs until it blocks); only the order of different blocks'
  // instructions on one thread changes, which no flag orders and no race-free kernel sees.
  // Launches that record (traces, the stale-data checker's shadows, the hazard checker's GM
  // digests, the timed launch's op ticks and GM snapshot) keep the sweep of one run per core,
  // as TL_NPU_PLAIN_PATHS=1 does (the fast-path tests compare the two orders' bytes).
  const bool local_sweeps = !ls.trace && !ls.stale && !ls.digest_gm_stores && !ls.op_ticks &&
                            !ls.gm_keep && !plain_paths();
  // A failure on another thread does not stop this one (only a barrier it can no longer pass
  // does): every thread reaches its own first error, so which error the launch reports does
  // not depend on how the threads were scheduled.
  for (;;) {
    int64_t gen_seen;
    {
      std::lock_guard<std::mutex> lk(ls.mu);
      gen_seen = ls.barrier_generation;
    }
    bool progress = false, all_done = true, at_barrier = false;
    for (auto* g : groups) {
      bool group_done = true, group_moved;
      do {
        group_moved = false;
        group_done = true;
        for (auto& c : g->cores) {
          c->see_barrier(gen_seen);
          if (c->status() != Core::Status::Done) {
            group_moved |= c->run();
            // A finished core's events stay until the checkers run after the launch: give
            // back the vector's growth slack (up to half of it; docs/virtual_npu.md, "Trace
            // memory"). A streamed trace hands its chunks on instead.
            if (CoreTrace* ct = c->trace(); ct && !ct->stream && c->status() == Core::Status::Done)
              ct->events.shrink_to_fit();
            // A streamed timed launch: what the core recorded goes to the timing model now
            // (the model may be waiting for it), with whether the core can move on its own.
            if (CoreTrace* ct = c->trace(); ct && ct->stream)
              ct->stream->publish(*ct, c->status() == Core::Status::Done,
                                  c->status() == Core::Status::Blocked);
          }
          group_done &= c->status() == Core::Status::Done;
        }
        progress |= group_moved;
      } while (local_sweeps && group_moved && !group_done);
      if (group_done && g->running) {
        g->running = false;
        if (ls.check_block_flags) check_block_flags(ls, *g, g->next_block - P);
        if (hazards) hazards->block_done(g->next_block - P);
        ls.block_done();
      }
      if (group_done && start_next(*g)) {
        progress = true;
        group_done = false;
      }
      all_done &= group_done;
      for (auto& c : g->cores) at_barrier |= c->at_barrier();
    }
    if (all_done) return;
    if (progress) continue;
    // Cores held until the timing model consumes their events (trace_stream.h) are not a
    // deadlock: wait for room. (A core that stopped runnable was held; one whose hold was
    // lifted since, when its events were handed over, runs again at once.)
    std::vector<CoreTrace*> held;
    bool released = false;
    for (auto* g : groups)
      for (auto& c : g->cores)
        if (c->status() == Core::Status::Runnable && c->trace() && c->trace()->stream)
          (c->trace()->hold ? held.push_back(c->trace()) : void(released = true));
    if (released) continue;
    if (!held.empty()) {
      held.front()->stream->wait_for_room(held);
      continue;
    }
    if (!at_barrier) {
      // No core of this thread can move, and no other thread can change that.
      std::string waits;
      for (auto* g : groups)
        for (auto& c : g->cores)
          if (c->status() == Core::Status::Blocked)
            waits += fmt::format("  {} blocked on {}; last events:\n{}", c->name(), c->blocked_on(),
                                 c->last_events());
      throw Error(fmt::format("deadlock in kernel {}: a wait can never be satisfied\n{}",
                              ls.program.func->name, waits));
    }
    std::string report;
    if (!wait_for_barrier(ls, gen_seen, all, report)) {
      if (report.empty()) return;  // another thread failed: its error is the launch's
      throw Error(report);
    }
  }
}

}  // namespace

void run_groups(LaunchState& ls, std::vector<Group>& groups, int n, HazardStream* hazards) {
  std::vector<std::vector<Group*>> per_thread(n);
  for (size_t g = 0; g < groups.size(); ++g) per_thread[g % n].push_back(&groups[g]);
  ls.live_threads = n;
  // Each thread's first error; the launch reports the one of the lowest thread (the lowest
  // physical groups), whatever order the threads failed in.
  std::vector<std::exception_ptr> errors(n);
  auto body = [&](int t) {
    try {
      run_thread(ls, per_thread[t], groups, hazards);
      leave(ls, false);
    } catch (...) {
      errors[t] = std::current_exception();
      leave(ls, true);
    }
  };
  if (n == 1) {
    body(0);
  } else {
    std::vector<std::thread> threads;
    for (int t = 0; t < n; ++t) threads.emplace_back(body, t);
    for (auto& th : threads) th.join();
  }
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
}

void LaunchState::throw_cancelled() const {
  throw LaunchCancelled(
      fmt::format("launch of kernel {} cancelled (LaunchOptions::cancel was set); the tensors "
                  "hold a partial result",
                  program.func->name));
}

void configure_budget(LaunchState& ls, const LaunchOptions& opt) {
  ls.progress_percent = std::max(opt.progress_percent, 0);
  ls.next_progress_percent = ls.progress_percent;
  ls.next_progress_steps = kQuietSteps;
  ls.cancel = opt.cancel;
  if (opt.max_steps < 0)
    throw Error(fmt::format(
        "LaunchOptions::max_steps must be positive (interpreter steps per core and block), 0 "
        "for the default (TL_MAX_STEPS, else 2^30) or tl::kNoStepBudget for none, got {}",
        opt.max_steps));
  if (opt.max_steps > 0) {
    ls.max_steps = opt.max_steps;
    ls.max_steps_source = "LaunchOptions::max_steps";
    return;
  }
  // The default: a loop that never ends must fail, not run for hours (Ctrl-C aside).
  ls.max_steps = kDefaultMaxSteps;
  ls.max_steps_source = "the default budget, 2^30";
  const std::string env = env_value("TL_MAX_STEPS");
  if (env.empty()) return;
  if (env == "none") {
    ls.max_steps = kNoStepBudget;
    return;
  }
  // An integer, or a number such as 1e9 that is one.
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(env.c_str(), &end, 10);
  if (errno == 0 && *end != '\0') {
    errno = 0;
    double d = std::strtod(env.c_str(), &end);
    v = -1;
    if (errno == 0 && *end == '\0' && d >= 0 && d < 9.2e18 &&
        d == static_cast<double>(static_cast<long long>(d)))
      v = static_cast<long long>(d);
  }
  if (errno != 0 || *end != '\0' || v < 0)
    throw Error(fmt::format(
        "TL_MAX_STEPS must be a positive integer (interpreter steps per core and block), or 0 "
        "or 'none' for no budget, got '{}'",
        env));
  ls.max_steps = v > 0 ? v : kNoStepBudget;
  ls.max_steps_source = "TL_MAX_STEPS";
}

void LaunchState::add_steps(int64_t n) {
  int64_t now = steps.fetch_add(n, std::memory_order_relaxed) + n;
  if (progress_percent > 0 && now >= kQuietSteps)
    report_progress(now, blocks_done.load(std::memory_order_relaxed));
}

void LaunchState::block_done() {
  int64_t now = blocks_done.fetch_add(1, std::memory_order_relaxed) + 1;
  if (progress_percent > 0) report_progress(steps.load(std::memory_order_relaxed), now);
}

void LaunchState::report_progress(int64_t steps_now, int64_t blocks_now) {
  if (steps_now < kQuietSteps) return;
  std::lock_guard<std::mutex> g(progress_mu);
  const int pct = static_cast<int>(100 * blocks_now / std::max<int64_t>(num_blocks, 1));
  bool line = steps_now >= next_progress_steps;
  if (pct >= next_progress_percent) {
    line = true;
    next_progress_percent = (pct / progress_percent + 1) * progress_percent;
  }
  if (!line) return;
  next_progress_steps = steps_now + kHeartbeatSteps;
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  fmt::print(
      stderr,
      "launch {}: {}% of the blocks finished ({} of {}), {:.1f}M interpreter steps, {:.1f} s\n",
      program.func->name, pct, blocks_now, num_blocks, static_cast<double>(steps_now) / 1e6, secs);
}

}  // namespace tl::npu
