// The per-core interpreter: an explicit-stack walk of the kernel body that executes the
// statements of one core (the AIC skips Vector scopes, the AIVs skip Cube scopes), evaluates
// scalar expressions with the IR's semantics (through arith::Evaluator, tl/arith.h, whose
// variable and load hooks read this core's registers and memories), and blocks on cross-core
// waits so the scheduler (scheduler.cpp) can run the other cores of the block.
#include <cmath>
#include <limits>

#include "program.h"
#include "replay.h"
#include "stale.h"
#include "tl/printer.h"
#include "trace_record.h"
#include "values.h"

namespace tl::npu {

namespace {
/// Whether `core` executes `n` (op_core, tl/op.h: no core of its own: wherever it is placed).
bool runs_on(const TileOpNode& n, CoreKind core, const Target& t) {
  auto c = op_core(n, t);
  return !c || *c == core;
}
int core_slot(CoreKind k, int vid) {
  return k == CoreKind::Cube ? 0 : 1 + vid;
}

}  // namespace

Core::Core(const Program& p, LaunchState& ls, CoreKind k, int v, int ph,
           std::array<CoreMemory, kNumMemScopes>& memories,
           std::array<CoreMemory, kNumMemScopes>* shadows)
    : program(p), launch(ls), kind(k), vid(v), phys(ph) {
  // Each memory covers what the planned program can address (the planner has checked it
  // against the target's capacity); L0A/L0B are whole whenever the kernel has cube code,
  // since gemm_v0 loads them from offset 0. Memories only grow, and keep their contents
  // between launches, as on hardware.
  const Target& t = *p.target;
  auto use = [&](MemScope s, int64_t need) {
    auto& m = memories[static_cast<size_t>(s)];
    need = std::min(need, t.cap(s));
    if (static_cast<int64_t>(m.size()) < need) m.resize(need, 0);
    mem[static_cast<size_t>(s)] = std::span<uint8_t>(m.data(), need);
  };
  auto planned = [&](MemScope s) { return p.scope_bytes[static_cast<size_t>(s)]; };
  if (kind == CoreKind::Cube) {
    use(MemScope::L1, planned(MemScope::L1));
    use(MemScope::L0A, p.has_cube_code ? t.cap(MemScope::L0A) : planned(MemScope::L0A));
    use(MemScope::L0B, p.has_cube_code ? t.cap(MemScope::L0B) : planned(MemScope::L0B));
    use(MemScope::L0C, planned(MemScope::L0C));
  } else {
    use(MemScope::UB, planned(MemScope::UB));
  }
  slots_.resize(p.num_slots);
  if (ls.stale) {  // the stale-data checker: shadows of this core's memories and registers
    TL_ASSERT(shadows, "a checked launch without shadow storage for {}", name());
    shadow_ = std::make_unique<CoreShadow>();
    for (size_t s = 0; s < kNumMemScopes; ++s) {
      auto& m = (*shadows)[s];
      if (m.size() < mem[s].size()) m.resize(mem[s].size());
      shadow_->mem[s] = std::span<uint8_t>(m.data(), mem[s].size());
      std::fill(shadow_->mem[s].begin(), shadow_->mem[s].end(), kNeverWritten);
    }
    shadow_->slot.assign(p.num_slots, kValid);
  }
}

Core::~Core() = default;

std::string Core::name() const {
  return kind == CoreKind::Cube ? fmt::format("block {} AIC", block)
                                : fmt::format("block {} AIV{}", block, vid);
}

void Core::start(int64_t b) {
  block = b;
  std::fill(slots_.begin(), slots_.end(), Scalar{});
  const auto& f = program.func;
  for (size_t i = 0; i < f->params.size(); ++i)
    if (!f->params[i].is_tensor())
      slots_[program.slot_of(f->params[i].scalar.node())] = launch.scalars[i];
  for (size_t i = 0; i < f->dynamics.size(); ++i)
    slots_[program.slot_of(f->dynamics[i].node())] = Scalar::of_int(launch.dynamics[i]);
  set_var(program.kernel->cid, Scalar::of_int(b));
  set_var(program.kernel->vid, Scalar::of_int(kind == CoreKind::Vector ? vid : 0));
  flags_.fill(0);
  gate_recorded_ = false;
  trace_ = nullptr;
  if (launch.trace) {
    trace_ = &launch.trace->cores[b * 3 + core_slot(kind, vid)];
    trace_->block = b;
    trace_->kind = kind;
    trace_->vid = vid;
    trace_->phys = phys;
  }
  if (shadow_) stale_block_start();
  stack_.clear();
  // The whole function body: statements before `with T.Kernel` (function-level lets, such as
  // a Python prim_func's `n_offset = N // 2`) run on every core before the kernel body, as on
  // the chip, where each core runs the whole kernel function (they used to be skipped: the
  // variable read 0).
  stack_.emplace_back(program.func->body.get());
  recent_.clear();
  steps_ = steps_reported_ = 0;
  step_mark_ = std::min(launch.max_steps, LaunchState::kStepChunk);
  // Many short blocks never reach a chunk of steps: poll the cancel flag at each start too.
  if (launch.cancelled()) launch.throw_cancelled();
  status_ = Status::Runnable;
}

void Core::set_var(const Var& v, Scalar x) {
  slots_[program.slot_of(v.node())] = x;
}

bool Core::run() {
  bool progressed = false;
  while (status_ == Status::Runnable || status_ == Status::Blocked) {
    if (stack_.empty()) {
      finish();
      return true;
    }
    if (steps_ >= step_mark_) count_steps();
    // A streamed timed launch holds the core while the timing model catches up
    // (trace_stream.h); it is runnable (the scheduler tells a held core from a blocked one).
    if (trace_ && trace_->hold) {
      status_ = Status::Runnable;
      return progressed;
    }
    if (!step()) {
      status_ = Status::Blocked;
      return progressed;
    }
    ++steps_;
    status_ = Status::Runnable;
    progressed = true;
  }
  return progressed;
}

int64_t Core::loop_trip_count(const ForNode& f, int64_t min, int64_t extent) {
  if (extent <= 0) return 0;
  // The variable takes min .. min + extent - 1; each must be a value of its dtype (computing
  // min + extent as the end overflowed: a loop starting near INT64_MAX ran no iteration).
  DType t = f.var.dtype();
  if (!is_int(t)) return extent;
  int64_t last;
  bool overflow = __builtin_add_overflow(min, extent - 1, &last);
  int64_t lo = arith::dtype_min(t),
          hi = t == DType::UInt64 ? std::numeric_limits<int64_t>::max() : arith::dtype_max(t);
  if (overflow || min < lo || last > hi)
    fail(fmt::format(
        "loop '{}' (T.{}, min {}, extent {}): its variable would take the values {} .. {}, outside "
        "the "
        "range [{}, {}] of its dtype {}",
        f.var.name(), for_kind_name(f.for_kind), min, extent, min,
        overflow ? fmt::format("{} + {} - 1", min, extent) : std::to_string(last), lo,
        t == DType::UInt64 ? "18446744073709551615" : std::to_string(hi), dtype_name(t)));
  return extent;
}

void Core::finish() {
  status_ = Status::Done;
  dcache_clean_invalidate(nullptr);  // the block's dirty lines reach GM
  launch.add_steps(steps_ - steps_reported_);
  steps_reported_ = steps_;
  launch.output.done(block * 3 + core_slot(kind, vid));
  if (program.sync_all_kinds & (kind == CoreKind::Cube ? 1 : 2)) {
    std::lock_guard<std::mutex> g(launch.mu);
    ++launch.cores_done;
  }
}

std::vector<std::string> Core::pending_flags() const {
  std::vector<std::string> out;
  for (int src = 0; src < kNumPipes; ++src)
    for (int dst = 0; dst < kNumPipes; ++dst)
      for (int id = 0; id < 8; ++id)
        if (flags_[src * kNumPipes + dst] & (1u << id))
          out.push_back(fmt::format("set_flag(\"{}\", \"{}\", {})",
                                    pipe_name(static_cast<Pipe>(src)),
                                    pipe_name(static_cast<Pipe>(dst)), id));
  return out;
}

void Core::count_steps() {
  launch.add_steps(steps_ - steps_reported_);
  steps_reported_ = steps_;
  if (launch.cancelled()) launch.throw_cancelled();
  if (steps_ >= launch.max_steps) fail_budget();
  step_mark_ = steps_ + std::min(launch.max_steps - steps_, LaunchState::kStepChunk);
}

void Core::fail_budget() {
  // Name the innermost loop being executed: that is the loop that does not end (or the one
  // to look at when the budget is simply too small).
  const ForNode* loop = nullptr;
  int64_t at = 0;
  for (auto it = stack_.rbegin(); it != stack_.rend() && !loop; ++it)
    if (it->node->kind == StmtKind::For && it->index != 0) {  // index 0: bounds not evaluated yet
      loop = static_cast<const ForNode*>(it->node);
      at = it->i - 1;
    }
  std::string where = "outside any loop";
  if (loop) {
    std::string head =
        print(Stmt(std::shared_ptr<const StmtNode>(std::shared_ptr<const StmtNode>{}, loop)),
              {.locations = false});
    head = head.substr(0, head.find('\n'));
    while (!head.empty() && head.back() == ':') head.pop_back();
    where = fmt::format("in the loop `{}`{}, at {} = {}", head,
                        loop->loc.known() ? " at " + loop->loc.str() : "", loop->var.name(), at);
  }
  std::string msg = fmt::format(
      "{} ({}): the instruction budget of {} interpreter steps per core and block ({}) "
      "ran out {}; a loop that never ends? If the kernel is just long, raise the budget "
      "with the environment variable TL_MAX_STEPS=<steps> (0: none) or "
      "LaunchOptions::max_steps (tl::kNoStepBudget: none)",
      name(), program.func->name, launch.max_steps, launch.max_steps_source, where);
  throw Error(loop ? loop->loc : *loc_, msg);
}

// Frames are constructed in place (emplace_back): pushing a braced temporary copied it with a
// 16-byte load over the temporary's two 8-byte stores, a store-forwarding stall on every pushed
// statement (2 % of FlashAttention S = 1024's samples, docs/virtual_npu.md).
bool Core::step() {
  Frame& fr = stack_.back();
  const StmtNode* s = fr.node;
  switch (s->kind) {
    case StmtKind::Seq: {
      auto* q = static_cast<const SeqNode*>(s);
      if (fr.index < q->stmts.size())
        stack_.emplace_back(q->stmts[fr.index++].get());
      else
        stack_.pop_back();
      return true;
    }
    case StmtKind::For: {
      auto* f = static_cast<const ForNode*>(s);
      if (fr.index == 0) {
        loc_ = &s->loc;
        if (shadow_) stale_control(*s, f->min, 0);
        fr.i = eval_int(f->min);
        fr.end = loop_trip_count(*f, fr.i, eval_int(f->extent));
        fr.index = 1;
        // The scalar unit computes the bounds and sets the variable (an unrolled loop's
        // iterations are straight-line code: no loop control).
        if (trace_ && f->for_kind != ForKind::Unrolled)
          trace_->pending_scalar_ops += 1 + scalar_ops_of(f->min) + scalar_ops_of(f->extent);
      }
      // Each test of the loop condition is a compare-and-branch; each iteration an increment.
      if (trace_ && f->for_kind != ForKind::Unrolled)
        trace_->pending_scalar_ops += fr.end > 0 ? 2 : 1;
      if (fr.end > 0) {
        set_var(f->var, Scalar::of_int(fr.i));
        if (--fr.end > 0) ++fr.i;  // never past the last value, which may be the dtype's max
        stack_.emplace_back(f->body.get());
      } else {
        stack_.pop_back();
      }
      return true;
    }
    case StmtKind::If: {
      auto* n = static_cast<const IfNode*>(s);
      loc_ = &s->loc;
      if (shadow_) stale_control(*s, n->cond, 1);
      bool c = eval(n->cond).as_int() != 0;
      if (trace_) trace_->pending_scalar_ops += 1 + scalar_ops_of(n->cond);  // the branch
      stack_.pop_back();
      const Stmt& branch = c ? n->then_case : n->else_case;
      if (branch.defined()) stack_.emplace_back(branch.get());
      return true;
    }
    case StmtKind::Scope: {
      auto* n = static_cast<const ScopeNode*>(s);
      stack_.pop_back();
      if (n->core == kind) stack_.emplace_back(n->body.get());
      return true;
    }
    case StmtKind::Kernel: {
      auto* n = static_cast<const KernelNode*>(s);
      stack_.pop_back();
      stack_.emplace_back(n->body.get());
      return true;
    }
    case StmtKind::Sync: {
      loc_ = &s->loc;
      if (replay_) {
        // The functional run has checked the flags; their ordering is in the simulated times.
        if (!replay_gate(s)) return false;
      } else {
        if (shadow_) stale_control(*s, static_cast<const SyncNode*>(s)->event_id, 2);
        if (!exec_sync(*static_cast<const SyncNode*>(s))) return false;
        if (trace_) record_sync(*this, *trace_, *static_cast<const SyncNode*>(s));
      }
      recent_.push(s);
      stack_.pop_back();
      return true;
    }
    default:
      loc_ = &s->loc;
      if (replay_ && !replay_gate(s)) return false;
      exec_leaf(s);
      recent_.push(s);
      stack_.pop_back();
      return true;
  }
}

void Core::exec_leaf(const StmtNode* s) {
  switch (s->kind) {
    case StmtKind::Let: {
      auto* n = static_cast<const LetNode*>(s);
      if (trace_ && !replay_) record_scalar(*this, *trace_, *s);
      if (shadow_) return stale_let(*n);
      set_var(n->var, eval(n->value));
      return;
    }
    case StmtKind::Allocate:
      return;  // addresses are planned; memory persists (stale data)
    case StmtKind::Store:
      if (trace_ && !replay_) {
        const size_t first = trace_->events.size();
        record_scalar(*this, *trace_, *s);
        if (launch.gm_keep) launch.gm_keep->save_gm_writes(*trace_, first);
      }
      return store(*static_cast<const StoreNode*>(s));
    case StmtKind::TileOp: {
      auto* n = static_cast<const TileOpNode*>(s);
      if (!runs_on(*n, kind, *program.target)) return;
      ExecFn fn = find_exec(n->op);
      if (!fn) fail(fmt::format("T.{} has no virtual-NPU semantics yet", n->op->name));
      if (n->op->unit == OpUnit::Vector) check_overlap(*n);
      if (replay_) return replay_->defer(*this, *n, gate_first_, gate_end_);
      const size_t first = trace_ ? trace_->events.size() : 0;
      if (trace_) record_op(*this, *trace_, *n);
      if (launch.timing_only) return;
      if (launch.gm_keep) launch.gm_keep->save_gm_writes(*trace_, first);
      if (shadow_) stale_before(*n, *this);
      // acq_rel: an op whose begin tick follows another's end tick saw all that one wrote.
      const uint64_t begin =
          launch.op_ticks ? launch.op_clock.fetch_add(1, std::memory_order_acq_rel) : 0;
      if (trace_ && launch.digest_gm_stores && stores_to_gm(*trace_, first)) {
        std::lock_guard<std::mutex> lock(launch.gm_store_mu);
        fn(*n, *this);
        digest_gm_stores(*trace_, first);
      } else {
        fn(*n, *this);
      }
      if (launch.op_ticks)
        (*launch.op_ticks)[block * 3 + core_slot(kind, vid)].push_back(
            {static_cast<uint32_t>(first), begin,
             launch.op_clock.fetch_add(1, std::memory_order_acq_rel)});
      if (shadow_) stale_after(*n, *this);
      return;
    }
    default:
      TL_ASSERT(false, "unexpected leaf statement kind {}", static_cast<int>(s->kind));
  }
}

void Core::record_events(const StmtNode* s) {
  switch (s->kind) {
    case StmtKind::Sync:
      return record_sync(*this, *trace_, *static_cast<const SyncNode*>(s));
    case StmtKind::Let:
    case StmtKind::Store:
      return record_scalar(*this, *trace_, *s);
    case StmtKind::TileOp: {
      auto* n = static_cast<const TileOpNode*>(s);
      if (runs_on(*n, kind, *program.target)) record_op(*this, *trace_, *n);
      return;
    }
    default:
      return;
  }
}

bool Core::replay_gate(const StmtNode* s) {
  // Record the statement's events once (the statement may block here and be re-run).
  if (!gate_recorded_) {
    // Recording evaluates the statement's addresses, whose indices may load from UB (a
    // scatter `y_ub[idx_ub[i]] = ...`): not before simulated time has reached the cycle of the
    // first event it records, when what the statement waited for has landed.
    if (!replay_->reached(*this, trace_->events.size())) {
      blocked_sync_ = nullptr;
      blocked_ = "replay: waiting for simulated time";
      return false;
    }
    gate_first_ = trace_->events.size();
    record_events(s);
    gate_end_ = trace_->events.size();
    gate_recorded_ = true;
  }
  if (gate_end_ > gate_first_ && !replay_->may_issue(*this, gate_first_, gate_end_)) {
    blocked_sync_ = nullptr;
    blocked_ = "replay: waiting for simulated time";
    return false;
  }
  gate_recorded_ = false;
  return true;
}

void Core::exec_deferred(const TileOpNode& op, const std::vector<Scalar>& slots,
                         const SourceLoc& loc) {
  std::vector<Scalar> now = std::move(slots_);
  slots_ = slots;
  own_loc_ = loc;
  loc_ = &own_loc_;
  try {
    find_exec(op.op)(op, *this);
  } catch (...) {
    slots_ = std::move(now);
    throw;
  }
  slots_ = std::move(now);
}

bool Core::exec_sync(const SyncNode& s) {
  auto id_of = [&](int limit) {
    int64_t id = eval_int(s.event_id);
    if (id < 0 || id >= limit)
      fail(fmt::format("T.{}: event id {} is outside [0, {})", sync_name(s.sync_kind), id, limit));
    return static_cast<int>(id);
  };
  switch (s.sync_kind) {
    case SyncKind::SetFlag: {
      // Functional mode executes every pipe in program order, so flags only need bookkeeping:
      // setting a set flag is an error (undefined on hardware); a wait needs a pending set.
      int id = id_of(program.target->num_event_ids);
      uint8_t& bits = flags_[static_cast<int>(s.src) * kNumPipes + static_cast<int>(s.dst)];
      if (bits & (1u << id))
        fail(fmt::format(
            "T.set_flag(\"{}\", \"{}\", {}): the flag is already set (no wait_flag consumed "
            "the previous set)",
            pipe_name(s.src), pipe_name(s.dst), id));
      bits |= static_cast<uint8_t>(1u << id);
      return true;
    }
    case SyncKind::WaitFlag: {
      int id = id_of(program.target->num_event_ids);
      uint8_t& bits = flags_[static_cast<int>(s.src) * kNumPipes + static_cast<int>(s.dst)];
      if (!(bits & (1u << id)))
        fail(fmt::format(
            "deadlock: T.wait_flag(\"{}\", \"{}\", {}) on {} waits for a flag no earlier "
            "set_flag raised; pipe {} would stall forever. Last events:\n{}",
            pipe_name(s.src), pipe_name(s.dst), id, name(), pipe_name(s.dst), last_events()));
      bits &= static_cast<uint8_t>(~(1u << id));
      return true;
    }
    case SyncKind::PipeBarrier:
    case SyncKind::BarrierAll:
      return true;  // program order already holds in functional mode
    case SyncKind::SetCrossFlag: {
      int id = id_of(program.target->num_cross_flags);
      auto bump = [&](int slot) {
        int& c = launch.cross_counters(block, slot)[id];
        if (++c > program.target->max_pending_cross_sets)
          fail(fmt::format(
              "T.set_cross_flag(\"{}\", {}): more than {} pending sets of cross-core flag {} "
              "(hangs on hardware)",
              pipe_name(s.src), id, program.target->max_pending_cross_sets, id));
      };
      if (s.mode == 2) {
        if (kind == CoreKind::Cube) {
          bump(1);
          bump(2);
        } else {
          bump(3 + vid);  // the AIC sees a set once both AIVs have set (see wait below)
        }
      } else if (s.mode == 1) {
        // Mode 1 (CrossCoreSetFlag, "synchronise the AIVs of this AI Core"): each AIV's counter
        // advances once both AIVs have set; each then waits for it. An AIV that only waits
        // hangs on the chip, and does here (a deadlock).
        if (kind == CoreKind::Cube)
          fail("T.set_cross_flag mode 1 synchronises the two AIVs; the AIC cannot use it");
        bump(5 + vid);
        int& from_aiv0 = launch.cross_counters(block, 5)[id];
        int& from_aiv1 = launch.cross_counters(block, 6)[id];
        if (from_aiv0 > 0 && from_aiv1 > 0) {  // a round complete: each AIV may wait once more
          --from_aiv0;
          --from_aiv1;
          bump(1);
          bump(2);
        }
      } else {
        fail(fmt::format(
            "T.set_cross_flag mode {} (all cores of a kind) is not supported by the functional "
            "virtual NPU yet; use sync_all",
            s.mode));
      }
      return true;
    }
    case SyncKind::WaitCrossFlag: {
      int id = id_of(program.target->num_cross_flags);
      if (kind == CoreKind::Cube) {
        // An AIC wait completes when both AIVs of its block have set the flag.
        int& a = launch.cross_counters(block, 3)[id];
        int& b = launch.cross_counters(block, 4)[id];
        if (a > 0 && b > 0) {
          --a;
          --b;
          return true;
        }
      } else {
        int& c = launch.cross_counters(block, 1 + vid)[id];
        if (c > 0) {
          --c;
          return true;
        }
      }
      set_blocked(s, id);
      return false;
    }
    case SyncKind::SyncAll: {
      // A barrier over every participating core of the launch. The first visit arrives; the
      // core then parks (returns false) until the generation moves on, and the scheduler
      // re-runs it.
      std::unique_lock<std::mutex> g(launch.mu);
      if (sync_gen_ >= 0) {
        if (barrier_view_ > sync_gen_) {
          sync_gen_ = -1;
          blocked_sync_ = nullptr;
          blocked_.clear();
          return true;
        }
        return false;
      }
      // A participant that finished without arriving is found by the scheduler once every
      // thread waits (scheduler.cpp): checking here would depend on the thread schedule.
      sync_gen_ = launch.barrier_generation;
      if (++launch.barrier_arrived == launch.barrier_participants) {
        launch.barrier_arrived = 0;
        ++launch.barrier_generation;
        // Threads parked on the old generation can run again: they no longer count towards
        // "every thread waits at the barrier" (scheduler.cpp), even before they wake up.
        launch.parked_threads = 0;
        launch.cv.notify_all();
        sync_gen_ = -1;
        return true;
      }
      set_blocked(s, 0);
      return false;
    }
  }
  return true;
}

// A program's statement outlives the core; a direct one is described while it lives.
void Core::set_blocked(const SyncNode& s, int64_t id) {
  blocked_sync_ = &s;
  blocked_id_ = id;
  if (loc_ == &own_loc_) blocked_ = blocked_on(), blocked_sync_ = nullptr;
}

std::string Core::blocked_on() const {
  if (!blocked_sync_) return blocked_;
  const SyncNode& s = *blocked_sync_;
  return s.sync_kind == SyncKind::SyncAll
             ? fmt::format("T.sync_all() at {}", s.loc.str())
             : fmt::format("T.wait_cross_flag({}) at {}", blocked_id_, s.loc.str());
}

namespace {
constexpr uintptr_t kCacheLineBytes = 64;  // DataCacheCleanAndInvalid: 64-byte lines
constexpr size_t kDataCacheLines = 32 * 1024 / kCacheLineBytes;  // DCache 32 KB (2201 constraints)

// The host bytes [lo, hi) of the tensor storage that GM buffer `t` views.
std::pair<uintptr_t, uintptr_t> storage_bytes(const TileRef& t) {
  const int64_t es = dtype_bytes(t.dtype);
  int64_t lo = 0, hi = 0;
  for (size_t d = 0; d < t.shape.size(); ++d) {
    const int64_t span = (t.shape[d] - 1) * t.strides[d];
    (span < 0 ? lo : hi) += span;
  }
  const auto base = reinterpret_cast<uintptr_t>(t.base);
  return {base + lo * es, base + (hi + 1) * es};
}
}  // namespace

Core::CacheLine& Core::dcache_line(uintptr_t line, const TileRef& t) {
  auto it = dcache_.find(line);
  if (it == dcache_.end()) {
    if (dcache_.size() >= kDataCacheLines) {  // evict the oldest line
      auto old = dcache_.find(dcache_order_.front());
      dcache_write_back(old->first, old->second);
      dcache_.erase(old);
      dcache_order_.pop_front();
    }
    it = dcache_.emplace(line, CacheLine{}).first;
    dcache_order_.push_back(line);
  }
  // A fill brings in the line's bytes of this tensor that it does not hold yet; bytes it holds
  // stay as they were, however GM has changed since: that is the staleness.
  CacheLine& l = it->second;
  auto [lo, hi] = storage_bytes(t);
  for (uintptr_t i = 0; i < kCacheLineBytes; ++i)
    if (!(l.valid >> i & 1) && line + i >= lo && line + i < hi) {
      l.data[i] = *reinterpret_cast<const uint8_t*>(line + i);
      l.valid |= uint64_t{1} << i;
    }
  return l;
}

void Core::dcache_access(const TileRef& t, uint8_t* p, uint8_t* bytes, int64_t n, bool write) {
  for (int64_t k = 0; k < n; ++k) {
    const auto addr = reinterpret_cast<uintptr_t>(p + k);
    const uintptr_t line = addr & ~(kCacheLineBytes - 1), i = addr - line;
    CacheLine& l = dcache_line(line, t);
    if (write) {
      l.data[i] = bytes[k];
      l.valid |= uint64_t{1} << i;
      l.dirty |= uint64_t{1} << i;
    } else {
      bytes[k] = l.data[i];
    }
  }
}

void Core::dcache_write_back(uintptr_t line, CacheLine& l) {
  for (uintptr_t i = 0; i < kCacheLineBytes; ++i)
    if (l.dirty >> i & 1) *reinterpret_cast<uint8_t*>(line + i) = l.data[i];
  l.dirty = 0;
}

void Core::dcache_clean_invalidate(const TileRef* t) {
  std::vector<uintptr_t> lines;
  if (t) {
    for (int64_t f = 0; f < t->numel(); ++f) {
      const auto first = reinterpret_cast<uintptr_t>(t->at_flat(f));
      const auto last = first + static_cast<uintptr_t>(dtype_bytes(t->dtype)) - 1;
      for (uintptr_t line = first & ~(kCacheLineBytes - 1); line <= last; line += kCacheLineBytes)
        if (dcache_.count(line) && (lines.empty() || lines.back() != line)) lines.push_back(line);
    }
  } else {
    lines.assign(dcache_order_.begin(), dcache_order_.end());
  }
  for (uintptr_t line : lines) {
    auto it = dcache_.find(line);
    if (it == dcache_.end()) continue;
    dcache_write_back(line, it->second);
    dcache_.erase(it);
    dcache_order_.erase(std::find(dcache_order_.begin(), dcache_order_.end(), line));
  }
}

Scalar Core::load(const LoadNode& n) {
  const BufferInfo& info = program.buffer(n.buffer.get());
  if (info.scope == MemScope::Var) {
    if (shadow_) taint_slot(info.slot);
    return slots_[info.slot];
  }
  std::vector<int64_t> idx;
  for (const auto& i : n.indices) idx.push_back(eval_int(i));
  BufferRegion r{n.buffer, {}};
  for (auto v : idx) r.ranges.push_back({Expr(v), Expr(1)});
  TileRef t = resolve(r, "load", n.buffer->name);
  uint8_t* p = t.at(idx);
  if (shadow_) taint_load(t, idx);
  uint8_t cached[16];
  if (replay_ && t.scope == MemScope::GM) {  // through the data cache (time-ordered replay)
    dcache_access(t, p, cached, dtype_bytes(t.dtype), false);
    p = cached;
  }
  double v = load_value(t.dtype, p);
  return is_float(t.dtype) ? Scalar::of_float(v) : Scalar::of_int(static_cast<int64_t>(v));
}

void Core::store(const StoreNode& n) {
  const BufferInfo& info = program.buffer(n.buffer.get());
  if (shadow_) stale_store(n, nullptr, {});  // the value's origin
  Scalar v = eval(n.value);
  DType t = n.buffer->dtype;
  Scalar stored = is_float(t) ? Scalar::of_float(round_value(t, v.as_double()))
                              : Scalar::of_int(wrap_int(t, v.as_int()));
  if (info.scope == MemScope::Var) {
    slots_[info.slot] = stored;
    return;
  }
  std::vector<int64_t> idx;
  for (const auto& i : n.indices) idx.push_back(eval_int(i));
  BufferRegion r{n.buffer, {}};
  for (auto x : idx) r.ranges.push_back({Expr(x), Expr(1)});
  TileRef ref = resolve(r, "store", n.buffer->name);
  if (shadow_) stale_store(n, &ref, idx);      // the element's shadow; a finding for GM
  if (replay_ && ref.scope == MemScope::GM) {  // into the data cache (time-ordered replay)
    uint8_t bytes[16];
    store_value(t, bytes, stored.as_double());
    return dcache_access(ref, ref.at(idx), bytes, dtype_bytes(t), true);
  }
  store_value(t, ref.at(idx), stored.as_double());
}

void Core::fail(const std::string& msg) const {
  throw Error(*loc_, fmt::format("{} ({}): {}", name(), program.func->name, msg));
}

std::string Core::last_events() const {
  std::string s;
  for (size_t i = 0; i < recent_.size(); ++i) {
    const StmtNode* st = recent_[i];
    std::string p =
        print(Stmt(std::shared_ptr<const StmtNode>(std::shared_ptr<const StmtNode>{}, st)),
              {.locations = true});
    s += "    " + p.substr(0, p.find('\n')) + "\n";
  }
  return s.empty() ? "    (none)\n" : s;
}

void Core::print_line(const std::string& text) {
  launch.output.line(block * 3 + core_slot(kind, vid), fmt::format("[{}] {}", name(), text));
}

}  // namespace tl::npu
