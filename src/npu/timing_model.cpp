// The timing model of the virtual NPU (tl/npu/timing.h): a discrete-event replay of an
// instruction trace, with instruction costs from timing_costs.h and reports in
// timing_report.cpp. A streamed launch (trace_stream.h) feeds it each core's events as they
// are recorded: has() waits for a core's next event, so the model takes the steps, and gives
// the cycles, it takes on the whole trace; the events it no longer needs are freed.
//
// Per core: a scalar unit walks the core's events in program order, paying first the scalar
// ALU operations the interpreter counted before each event (loop control, branches, lets,
// operand addresses: TraceEvent::scalar_ops), then issue_cycles per instruction, and appends
// them to per-pipe queues of pipe_queue_depth instructions (a full queue stalls it until its
// oldest instruction ends; scalar loads/stores, barrier_all, S-pipe flags, cross-core waits
// and sync_all are executed by the scalar unit itself and stall it). Each pipe executes its
// queue in order:
//   - V, MTE2, MTE3 overlap: an instruction may start once the previous one has started plus
//     its issue interval (vector: per_repeat x repeats; GM copies: dma_issue_cycles, the DMA
//     latency of the next copy overlaps the data phase of the previous one, data phases
//     serialise);
//   - S, M, MTE1, FIX serialise (start after the previous instruction ended);
//   - pipe_barrier(P): later P instructions start after every earlier one ended;
//   - set_flag(src, dst): fires when every earlier src instruction ended and the src pipe's
//     earlier waits were satisfied (it sits in src's queue behind them, so a chain
//     set(V, MTE2); wait(V, MTE2); set(MTE2, V) fires after V's work); wait_flag on dst:
//     later dst instructions (flag sets included) start after the matching (FIFO) set fired;
//   - set_cross_flag fires when its pipe's earlier work ended and its earlier waits were
//     satisfied (+ cross_flag_latency); the k-th
//     wait_cross_flag of a core needs the k-th set of every core that sends it that flag id;
//   - sync_all: every participating core drains and meets.
// Blocks are placed on their physical group in waves. Every transfer to or from GM is a fluid
// flow: its latency phase costs fixed cycles, its data phase moves bytes at
// rate = cap x f, cap = the core's rate on that path, f = min(1, HBM / sum of HBM demand,
// L2 / sum of demand) over the flows active at that moment (proportional sharing of the
// chip's aggregate bandwidth, re-evaluated whenever a flow starts or ends). A flow's HBM
// demand is its HBM share (timing_l2.h: exact bytes touched, write-back), so a GM
// workspace written by one core and read back by another (the cross-core data of
// docs/developer_mode.md) costs L2 bandwidth, not HBM bandwidth.
#include "tl/npu/timing.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <queue>
#include <set>

#include "timing_costs.h"
#include "timing_l2.h"
#include "tl/error.h"
#include "tl/npu/trace.h"
#include "trace_stream.h"

namespace tl::npu {
namespace {

constexpr int kP = kNumPipes;
constexpr double kInf = 1e300;

bool overlapping(Pipe p) {
  return p == Pipe::V || p == Pipe::MTE2 || p == Pipe::MTE3;
}

std::string short_loc(const SourceLoc& l) {
  if (!l.known()) return "";
  auto slash = l.file.find_last_of('/');
  return fmt::format("{}:{}", slash == std::string::npos ? l.file : l.file.substr(slash + 1),
                     l.line);
}

class Model {
 public:
  /// A recorded trace, or a stream (`st`) whose events arrive as the model reads them.
  Model(const Trace* t, const StreamedLaunch* st, const Target& tg)
      : tr_(t), st_(st), tg_(tg), c_(tg.costs), costs_(tg), l2_(tg.costs.l2_bytes) {
    clock_hz_ = tg.clock_ghz * 1e9;
    hbm_pc_ = c_.hbm_stream_bytes_per_s / clock_hz_;  // what streams, not the peak
    l2_pc_ = c_.l2_bytes_per_s / clock_hz_;
    num_blocks_ = tr_ ? tr_->num_blocks : st_->num_blocks;
  }

  Profile run(const TimingOptions& opt);

 private:
  struct Item {
    int ev;
    double issue;
  };
  struct PipeState {
    std::deque<Item> q;
    double next_free = 0;   // earliest start of the next instruction (issue interval / end)
    double max_end = 0;     // latest end of the instructions executed so far
    double floor = 0;       // waits and barriers: later instructions start no earlier
    bool inflight = false;  // a GM flow whose end is not known yet
    // The pipe's instruction queue holds queue_depth instructions issued and not yet ended:
    // the ends known so far (min-heap), and how many have no known end (queued, or in flight).
    std::priority_queue<double, std::vector<double>, std::greater<>> ends;
    int unknown_ends = 0;
  };
  struct CoreSim {
    bool started = false, done = false;
    size_t next = 0;
    double scalar = 0, start = 0, end = 0;
    double alu = 0;             // scalar ALU cycles spent (part of the S pipe's busy time)
    size_t charged = SIZE_MAX;  // the event whose scalar operations were charged
    int queue_full = -1;        // the pipe whose full queue stalls the scalar unit
    std::array<PipeState, kP> pipes;
    std::map<int, std::deque<double>> flags;  // (src, dst, id) -> fire times not yet consumed
    std::array<int, 64> cross_consumed{};
    int sync_k = 0;
    bool sync_arrived = false;
  };
  struct Flow {
    int core, pipe, instr;  // instr: index into prof_.instrs (-1 when they are not kept)
    uint64_t busy;          // handle of its busy span
    double begin, remaining, cap, miss, rate = 0;
    int64_t seq;
  };

  // The events of core c in program order: has() waits for event i of a stream.
  bool has(int c, size_t i) {
    return tr_ ? i < tr_->cores[c].events.size() : st_->reader->has(c, i);
  }
  const TraceEvent& event(int c, size_t i) const {
    return tr_ ? tr_->cores[c].events[i] : st_->reader->at(c, i);
  }
  int64_t tail_ops(int c) const {
    return tr_ ? tr_->cores[c].pending_scalar_ops : st_->reader->tail(c);
  }
  /// A stream's events before the first one the core still needs are freed.
  void release(int c);
  int phys_of(int64_t b) const {
    return tr_ ? tr_->cores[b * 3].phys : static_cast<int>(b % std::max(st_->physical_blocks, 1));
  }
  std::string core_name(int c) const {
    return c % 3 == 0 ? fmt::format("block {} AIC", c / 3)
                      : fmt::format("block {} AIV{}", c / 3, c % 3 - 1);
  }
  /// Busy time: the union of a pipe's instruction spans, accumulated in start order as each
  /// instruction's end becomes known.
  struct Span {
    double start, end;
    bool ended;
  };
  struct BusyState {
    std::deque<Span> open;  // started, in start order; the front's end decides the next merge
    uint64_t base = 0;      // handle of open.front()
    double s = -1, e = -1;  // the current merged span
  };
  uint64_t busy_open(int c, int p, double s, double e, bool ended);
  void busy_end(int c, int p, uint64_t h, double end);
  void advance(int c);
  bool run_scalar(int c);
  bool await_queue_slot(CoreSim& cs, int p);
  void instr_ended(PipeState& ps, double end);
  bool run_pipe(int c, int p);
  void start_op(int c, int p, const Item& it);
  void finish_core(int c);
  void mark(int c) {
    if (!in_dirty_[c]) {
      in_dirty_[c] = 1;
      dirty_.push_back(c);
    }
  }
  std::vector<int> cross_dests(int c, int mode) const;
  void fluid_step();
  void set_rates();
  /// Times an instruction (`ended`: its end is known; a GM flow's is set when it completes).
  int record(int c, int ev, Pipe p, double s, double e, bool ended = true);
  uint64_t last_busy_ = 0;  // the busy span record() opened
  size_t timed_ = 0;        // instructions record() timed (progress lines)
  /// The sources of cross-core flag `id` for core c: recorded ones, or, streaming, the cores
  /// the flag's mode makes them (the functional run needs every one of them before a wait).
  const std::set<int>* sources_of(int c, int id);

  const Trace* tr_;
  const StreamedLaunch* st_;
  int64_t num_blocks_ = 0;
  bool keep_instrs_ = true;
  std::vector<std::array<BusyState, kP>> busy_;
  std::vector<int64_t> count_;  // events read per core
  const Target& tg_;
  const CostTable& c_;
  const CostModel costs_;
  double clock_hz_ = 1, hbm_pc_ = 1, l2_pc_ = 1;
  std::vector<CoreSim> cores_;
  std::deque<int> dirty_;
  std::vector<char> in_dirty_;
  // Cross-core flags: (dst core, id) -> src core -> fire times.
  std::map<std::pair<int, int>, std::map<int, std::vector<double>>> chan_;
  std::map<std::pair<int, int>, std::set<int>> sources_;
  // sync_all generations: arrivals and release times.
  int sync_participants_ = 0;
  std::vector<std::vector<double>> sync_arrivals_;
  std::vector<double> sync_release_;
  std::vector<int> sync_waiting_;
  // Waves: blocks in placement order per physical group.
  std::map<int, std::vector<int64_t>> phys_blocks_;
  std::map<int64_t, size_t> wave_pos_;
  // GM flows.
  double now_ = 0;
  std::vector<Flow> active_;
  struct Later {
    bool operator()(const Flow& a, const Flow& b) const {
      return a.begin != b.begin ? a.begin > b.begin : a.seq > b.seq;
    }
  };
  std::priority_queue<Flow, std::vector<Flow>, Later> pending_;
  int64_t flow_seq_ = 0;
  bool rates_dirty_ = true;
  L2Cache l2_;
  std::vector<std::vector<double>> issue_;  // per core, per event: CoreProfile::issue
  Profile prof_;
};

std::vector<int> Model::cross_dests(int c, int mode) const {
  int b = c / 3, s = c % 3;
  std::vector<int> d;
  if (mode == 2) {
    if (s == 0)
      d = {b * 3 + 1, b * 3 + 2};
    else
      d = {b * 3};
  } else if (mode == 1) {  // both AIVs count each AIV's set: a wait needs the sets of both
    if (s != 0) d = {b * 3 + 1, b * 3 + 2};
  } else {
    for (int64_t o = 0; o < num_blocks_; ++o)
      for (int t = 0; t < 3; ++t)
        if ((t == 0) == (s == 0)) d.push_back(static_cast<int>(o * 3 + t));
  }
  return d;
}

uint64_t Model::busy_open(int c, int p, double s, double e, bool ended) {
  BusyState& b = busy_[c][p];
  b.open.push_back({s, e, ended});
  const uint64_t h = b.base + b.open.size() - 1;
  if (ended) busy_end(c, p, h, e);
  return h;
}

void Model::busy_end(int c, int p, uint64_t h, double end) {
  BusyState& b = busy_[c][p];
  b.open[h - b.base].end = end;
  b.open[h - b.base].ended = true;
  // The union in start order, as the post-pass over Profile::instrs computed it.
  while (!b.open.empty() && b.open.front().ended) {
    const Span x = b.open.front();
    b.open.pop_front();
    ++b.base;
    if (x.start >= b.e) {
      if (b.e > b.s) prof_.cores[c].busy[p] += b.e - b.s;
      b.s = x.start;
      b.e = x.end;
    } else {
      b.e = std::max(b.e, x.end);
    }
  }
}

const std::set<int>* Model::sources_of(int c, int id) {
  auto src = sources_.find({c, id});
  if (src != sources_.end() || tr_) return src == sources_.end() ? nullptr : &src->second;
  auto m = st_->cross_mode.find(id);
  if (m == st_->cross_mode.end()) return nullptr;
  const int b = c / 3, slot = c % 3;
  std::set<int> s;
  if (m->second == 2)
    s = slot == 0 ? std::set<int>{b * 3 + 1, b * 3 + 2} : std::set<int>{b * 3};
  else if (m->second == 1 && slot != 0)
    s = {b * 3 + 1, b * 3 + 2};
  if (s.empty()) return nullptr;
  return &(sources_[{c, id}] = std::move(s));
}

void Model::release(int c) {
  if (tr_) return;
  const CoreSim& cs = cores_[c];
  size_t low = cs.next;
  for (const auto& ps : cs.pipes)
    if (!ps.q.empty()) low = std::min(low, static_cast<size_t>(ps.q.front().ev));
  st_->reader->release(c, low);
}

int Model::record(int c, int ev, Pipe p, double s, double e, bool ended) {
  last_busy_ = busy_open(c, static_cast<int>(p), s, e, ended);
  ++timed_;
  if (!keep_instrs_) return -1;
  const TraceEvent& t = event(c, ev);
  TimedInstr ti;
  ti.core = c;
  ti.event = ev;
  ti.pipe = p;
  ti.start = s;
  ti.end = e;
  ti.name = t.name;
  if (t.cost == CostClass::Copy)
    ti.name = fmt::format("{} {}->{}", t.name, scope_name(t.src_scope), scope_name(t.dst_scope));
  ti.loc = short_loc(t.loc);
  ti.bytes = t.bytes;
  ti.m = t.m;
  ti.n = t.n;
  ti.k = t.k;
  prof_.instrs.push_back(std::move(ti));
  return static_cast<int>(prof_.instrs.size()) - 1;
}

void Model::start_op(int c, int p, const Item& it) {
  CoreSim& cs = cores_[c];
  PipeState& ps = cs.pipes[p];
  const TraceEvent& e = event(c, it.ev);
  Cost k = costs_.cost(e);
  double start = std::max({it.issue, ps.floor, ps.next_free});
  if (k.gm) {
    int idx = record(c, it.ev, static_cast<Pipe>(p), start, start, /*ended=*/false);
    double begin = std::max({start + k.fixed, ps.max_end, now_});
    prof_.gm_bytes += static_cast<double>(e.bytes);
    double miss = l2_.hbm_share(e, k.write);
    prof_.gm_hbm_bytes += k.bytes * miss;
    pending_.push(
        Flow{c, p, idx, last_busy_, begin, std::max(k.bytes, 1e-9), k.rate, miss, 0, flow_seq_++});
    ps.inflight = true;
    ps.next_free = overlapping(static_cast<Pipe>(p)) ? start + k.interval : kInf;
    return;
  }
  double end = start + k.fixed;
  record(c, it.ev, static_cast<Pipe>(p), start, end);
  instr_ended(ps, end);
  ps.next_free = overlapping(static_cast<Pipe>(p)) ? start + k.interval : end;
  ps.max_end = std::max(ps.max_end, end);
}

bool Model::run_pipe(int c, int p) {
  CoreSim& cs = cores_[c];
  PipeState& ps = cs.pipes[p];
  bool progressed = false;
  while (!ps.q.empty() && !ps.inflight) {
    Item it = ps.q.front();
    const TraceEvent& e = event(c, it.ev);
    switch (e.kind) {
      case EventKind::Op:
        start_op(c, p, it);
        break;
      case EventKind::SetFlag: {
        int key = (static_cast<int>(e.pipe) * kP + static_cast<int>(e.dst)) * 64 + e.id;
        // The floor too: a wait (or barrier) earlier in this pipe's queue holds the set back
        // (set_flag(V, MTE2); wait_flag(V, MTE2); set_flag(MTE2, V) is a chain V -> MTE2 -> V).
        cs.flags[key].push_back(std::max({it.issue, ps.max_end, ps.floor}));
        break;
      }
      case EventKind::WaitFlag: {
        int key = (static_cast<int>(e.pipe) * kP + static_cast<int>(e.dst)) * 64 + e.id;
        auto& f = cs.flags[key];
        if (f.empty()) return progressed;
        ps.floor = std::max({ps.floor, f.front(), it.issue});
        f.pop_front();
        break;
      }
      case EventKind::Barrier:
        ps.floor = std::max({ps.floor, ps.max_end, it.issue});
        break;
      case EventKind::SetCross: {
        double fire = std::max({it.issue, ps.max_end, ps.floor}) + c_.cross_flag_latency_cycles;
        for (int d : cross_dests(c, e.mode)) {
          chan_[{d, e.id}][c].push_back(fire);
          mark(d);
        }
        break;
      }
      default:
        TL_ASSERT(false, "event kind {} queued on a pipe", static_cast<int>(e.kind));
    }
    ps.q.pop_front();
    progressed = true;
  }
  return progressed;
}

void Model::instr_ended(PipeState& ps, double end) {
  --ps.unknown_ends;
  ps.ends.push(end);
}

bool Model::await_queue_slot(CoreSim& cs, int p) {
  // A pipe's queue holds queue_depth instructions (AscendC 2201 constraints: the MTE1 and Mmad
  // queues are 32 deep and a full one blocks further issue; assumed for every pipe). The scalar
  // unit waits until the oldest outstanding instruction ends.
  PipeState& ps = cs.pipes[p];
  while (!ps.ends.empty() && ps.ends.top() <= cs.scalar) ps.ends.pop();
  const int depth = c_.pipe_queue_depth;
  int over = ps.unknown_ends + static_cast<int>(ps.ends.size()) - depth + 1;
  if (over <= 0) return true;
  if (static_cast<int>(ps.ends.size()) < over) {
    cs.queue_full = p;
    return false;  // retried when one of them starts (its end is then known) or ends
  }
  for (; over > 1; --over) ps.ends.pop();
  cs.scalar = std::max(cs.scalar, ps.ends.top());
  ps.ends.pop();
  cs.queue_full = -1;
  return true;
}

bool Model::run_scalar(int c) {
  CoreSim& cs = cores_[c];
  bool progressed = false;
  auto drained = [&](double& t) {
    t = cs.scalar;
    for (auto& ps : cs.pipes) {
      if (!ps.q.empty() || ps.inflight) return false;
      t = std::max(t, ps.max_end);
    }
    return true;
  };
  while (has(c, cs.next)) {
    const TraceEvent& e = event(c, cs.next);
    const int ev = static_cast<int>(cs.next);
    if (cs.charged != cs.next) {  // once, even if the event blocks and is retried
      const double alu = static_cast<double>(e.scalar_ops) * c_.scalar_alu_cycles;
      cs.scalar += alu;
      cs.alu += alu;
      cs.charged = cs.next;
    }
    const bool to_pipe = e.kind == EventKind::Op && e.pipe != Pipe::S && e.pipe != Pipe::ALL;
    if (to_pipe && !await_queue_slot(cs, static_cast<int>(e.pipe))) return progressed;
    const double issued = cs.scalar;
    auto queue = [&](Pipe p) {
      cs.scalar += c_.issue_cycles;
      cs.pipes[static_cast<int>(p)].q.push_back({ev, cs.scalar});
    };
    switch (e.kind) {
      case EventKind::Op:
        if (!to_pipe) {
          cs.scalar += c_.issue_cycles;
          double s = cs.scalar;
          cs.scalar += costs_.cost(e).fixed;
          record(c, ev, Pipe::S, s, cs.scalar);
          cs.pipes[0].max_end = std::max(cs.pipes[0].max_end, cs.scalar);
        } else {
          ++cs.pipes[static_cast<int>(e.pipe)].unknown_ends;
          queue(e.pipe);
        }
        break;
      case EventKind::SetFlag:
        if (e.pipe == Pipe::S) {
          cs.scalar += c_.issue_cycles;
          cs.flags[(static_cast<int>(e.pipe) * kP + static_cast<int>(e.dst)) * 64 + e.id].push_back(
              cs.scalar);
        } else {
          queue(e.pipe);
        }
        break;
      case EventKind::WaitFlag:
        if (e.dst == Pipe::S) {
          auto& f = cs.flags[(static_cast<int>(e.pipe) * kP + static_cast<int>(e.dst)) * 64 + e.id];
          if (f.empty()) return progressed;
          cs.scalar = std::max(cs.scalar, f.front()) + c_.issue_cycles;
          f.pop_front();
        } else {
          queue(e.dst);
        }
        break;
      case EventKind::Barrier:
        if (e.pipe == Pipe::ALL) {
          double t;
          if (!drained(t)) return progressed;
          cs.scalar = t + c_.issue_cycles;
        } else if (e.pipe == Pipe::S) {
          cs.scalar += c_.issue_cycles;
        } else {
          queue(e.pipe);
        }
        break;
      case EventKind::SetCross:
        if (e.pipe == Pipe::S || e.pipe == Pipe::ALL) {
          cs.scalar += c_.issue_cycles;
          for (int d : cross_dests(c, e.mode)) {
            chan_[{d, e.id}][c].push_back(cs.scalar + c_.cross_flag_latency_cycles);
            mark(d);
          }
        } else {
          queue(e.pipe);
        }
        break;
      case EventKind::WaitCross: {
        const std::set<int>* src = sources_of(c, e.id);
        if (!src) return progressed;  // never satisfied: reported as a deadlock
        int k = cs.cross_consumed[e.id];
        double t = 0;
        auto& ch = chan_[{c, e.id}];
        for (int s : *src) {
          auto& v = ch[s];
          if (static_cast<int>(v.size()) <= k) return progressed;
          t = std::max(t, v[k]);
        }
        ++cs.cross_consumed[e.id];
        cs.scalar = std::max(cs.scalar, t) + c_.issue_cycles;
        break;
      }
      case EventKind::SyncAll: {
        if (!cs.sync_arrived) {
          double t;
          if (!drained(t)) return progressed;
          if (static_cast<int>(sync_arrivals_.size()) <= cs.sync_k) {
            sync_arrivals_.resize(cs.sync_k + 1);
            sync_release_.resize(cs.sync_k + 1, -1);
          }
          auto& arr = sync_arrivals_[cs.sync_k];
          arr.push_back(t);
          cs.sync_arrived = true;
          sync_waiting_.push_back(c);
          if (static_cast<int>(arr.size()) == sync_participants_) {
            sync_release_[cs.sync_k] =
                *std::max_element(arr.begin(), arr.end()) + c_.sync_all_latency_cycles;
            for (int w : sync_waiting_) mark(w);
            sync_waiting_.clear();
          }
        }
        if (sync_release_[cs.sync_k] < 0) return progressed;
        cs.scalar = std::max(cs.scalar, sync_release_[cs.sync_k]) + c_.issue_cycles;
        cs.sync_arrived = false;
        ++cs.sync_k;
        break;
      }
    }
    if (keep_instrs_) issue_[c].push_back(issued);
    ++cs.next;
    ++count_[c];
    progressed = true;
  }
  return progressed;
}

void Model::advance(int c) {
  CoreSim& cs = cores_[c];
  if (!cs.started || cs.done) return;
  bool progress = true;
  while (progress) {
    progress = run_scalar(c);
    for (int p = 0; p < kP; ++p) progress |= run_pipe(c, p);
  }
  release(c);
  if (has(c, cs.next)) return;
  const double tail = static_cast<double>(tail_ops(c)) * c_.scalar_alu_cycles;
  double t = cs.scalar + tail;
  for (auto& ps : cs.pipes) {
    if (!ps.q.empty() || ps.inflight) return;
    t = std::max(t, ps.max_end);
  }
  cs.done = true;
  cs.end = t;
  cs.alu += tail;
  finish_core(c);
}

void Model::finish_core(int c) {
  int64_t b = c / 3;
  for (int s = 0; s < 3; ++s)
    if (!cores_[b * 3 + s].done) return;
  double end = 0;
  for (int s = 0; s < 3; ++s) end = std::max(end, cores_[b * 3 + s].end);
  // The next block of this physical group starts when this one has finished.
  int phys = phys_of(b);
  auto& order = phys_blocks_[phys];
  size_t pos = wave_pos_[b] + 1;
  if (pos < order.size()) {
    int64_t nb = order[pos];
    for (int s = 0; s < 3; ++s) {
      CoreSim& n = cores_[nb * 3 + s];
      n.started = true;
      n.scalar = n.start = end;
      for (auto& ps : n.pipes) ps.next_free = ps.max_end = ps.floor = end;
      mark(static_cast<int>(nb * 3 + s));
    }
  }
}

void Model::set_rates() {
  double demand = 0, hbm = 0;
  for (const auto& f : active_) {
    demand += f.cap;
    hbm += f.cap * f.miss;
  }
  double k = 1;
  if (hbm > 0) k = std::min(k, hbm_pc_ / hbm);
  if (demand > 0) k = std::min(k, l2_pc_ / demand);
  for (auto& f : active_) f.rate = f.cap * k;
  rates_dirty_ = false;
}

void Model::fluid_step() {
  if (rates_dirty_) set_rates();
  double t_done = kInf;
  size_t arg = 0;
  for (size_t i = 0; i < active_.size(); ++i) {
    double t = now_ + active_[i].remaining / active_[i].rate;
    if (t < t_done) {
      t_done = t;
      arg = i;
    }
  }
  double t_begin = pending_.empty() ? kInf : pending_.top().begin;
  double t = std::min(t_done, t_begin);
  double dt = t - now_;
  for (auto& f : active_) f.remaining -= f.rate * dt;
  if (t_done <= t_begin && !active_.empty()) active_[arg].remaining = 0;
  now_ = std::max(now_, t);
  while (!pending_.empty() && pending_.top().begin <= now_) {
    active_.push_back(pending_.top());
    pending_.pop();
    rates_dirty_ = true;
  }
  std::vector<Flow> done;
  for (size_t i = 0; i < active_.size();) {
    if (active_[i].remaining <= 1e-6) {
      done.push_back(active_[i]);
      active_[i] = active_.back();
      active_.pop_back();
      rates_dirty_ = true;
    } else {
      ++i;
    }
  }
  // Keep the active list in a canonical order (determinism of the float sums).
  std::sort(active_.begin(), active_.end(),
            [](const Flow& a, const Flow& b) { return a.seq < b.seq; });
  std::sort(done.begin(), done.end(), [](const Flow& a, const Flow& b) { return a.seq < b.seq; });
  for (const auto& f : done) {
    PipeState& ps = cores_[f.core].pipes[f.pipe];
    if (f.instr >= 0) prof_.instrs[f.instr].end = now_;
    busy_end(f.core, f.pipe, f.busy, now_);
    instr_ended(ps, now_);
    ps.inflight = false;
    ps.max_end = std::max(ps.max_end, now_);
    if (!overlapping(static_cast<Pipe>(f.pipe))) ps.next_free = now_;
    mark(f.core);
  }
}

Profile Model::run(const TimingOptions& opt) {
  const size_t n = static_cast<size_t>(num_blocks_) * 3;
  keep_instrs_ = opt.instructions;
  cores_.resize(n);
  in_dirty_.assign(n, 0);
  busy_.resize(n);
  count_.assign(n, 0);
  issue_.resize(n);
  prof_.cores.resize(n);
  prof_.kernel = tr_ ? tr_->kernel : st_->kernel;
  prof_.target = tg_.name;
  prof_.clock_ghz = tg_.clock_ghz;
  prof_.num_blocks = num_blocks_;
  prof_.physical_blocks = tr_ ? tr_->physical_blocks : st_->physical_blocks;
  size_t total_events = 0;
  if (tr_) {
    for (size_t c = 0; c < n; ++c) {
      const auto& evs = tr_->cores[c].events;
      if (keep_instrs_) issue_[c].reserve(evs.size());
      total_events += evs.size();
      bool syncs = false;
      for (const auto& e : evs) {
        if (e.kind == EventKind::SetCross)
          for (int d : cross_dests(static_cast<int>(c), e.mode))
            sources_[{d, e.id}].insert(static_cast<int>(c));
        if (e.kind == EventKind::SyncAll) syncs = true;
      }
      sync_participants_ += syncs;
    }
    if (keep_instrs_) prof_.instrs.reserve(total_events);
  } else {
    sync_participants_ = st_->sync_participants;
  }
  for (int64_t b = 0; b < num_blocks_; ++b) {
    int phys = phys_of(b);
    wave_pos_[b] = phys_blocks_[phys].size();
    phys_blocks_[phys].push_back(b);
  }
  for (auto& [phys, order] : phys_blocks_)
    for (int s = 0; s < 3; ++s) {
      cores_[order[0] * 3 + s].started = true;
      mark(static_cast<int>(order[0] * 3 + s));
    }
  int next_report = opt.progress_percent;
  for (;;) {
    while (!dirty_.empty()) {
      int c = dirty_.front();
      dirty_.pop_front();
      in_dirty_[c] = 0;
      advance(c);
    }
    if (pending_.empty() && active_.empty()) break;
    fluid_step();
    if (opt.progress_percent > 0 && total_events > 0) {
      int pct =
          static_cast<int>(100.0 * static_cast<double>(timed_) / static_cast<double>(total_events));
      if (pct >= next_report) {
        fmt::print(stderr, "timing: {}% of the instructions started ({:.1f} us simulated)\n", pct,
                   now_ / (tg_.clock_ghz * 1e3));
        next_report = pct + opt.progress_percent;
      }
    }
  }
  for (size_t c = 0; c < n; ++c) {
    const CoreSim& cs = cores_[c];
    if (cs.done) continue;
    const int ci = static_cast<int>(c);
    std::string what = cs.started ? "never started" : "";
    if (cs.started) {
      if (has(ci, cs.next)) {
        const auto& e = event(ci, cs.next);
        what =
            cs.queue_full >= 0
                ? fmt::format(
                      "scalar unit blocked at {} at {}: the {} queue is full ({} instructions)",
                      e.name, e.loc.str(), pipe_name(static_cast<Pipe>(cs.queue_full)),
                      c_.pipe_queue_depth)
                : fmt::format("scalar unit blocked at {} (id {}) at {}", e.name, e.id, e.loc.str());
      }
      for (int p = 0; p < kP && what.empty(); ++p)
        if (!cs.pipes[p].q.empty()) {
          const auto& e = event(ci, cs.pipes[p].q.front().ev);
          what = fmt::format("pipe {} blocked at {} (id {}) at {}", pipe_name(static_cast<Pipe>(p)),
                             e.name, e.id, e.loc.str());
        }
    }
    throw Error(
        fmt::format("timing model of {}: deadlock, {} {}", prof_.kernel, core_name(ci), what));
  }
  // Per-core summaries; busy time is the union of instruction spans per pipe (busy_end).
  for (size_t c = 0; c < n; ++c) {
    auto& cp = prof_.cores[c];
    cp.slot = static_cast<int>(c % 3);
    cp.block = static_cast<int64_t>(c / 3);
    cp.phys = tr_ ? tr_->cores[c].phys : phys_of(cp.block);
    cp.name = core_name(static_cast<int>(c));
    cp.start = cores_[c].start;
    cp.end = cores_[c].end;
    cp.instructions = count_[c];
    cp.issue = std::move(issue_[c]);
    prof_.total_cycles = std::max(prof_.total_cycles, cp.end);
    prof_.events += count_[c];
    for (int p = 0; p < kP; ++p) {
      const BusyState& b = busy_[c][p];
      TL_ASSERT(b.open.empty(), "core {} pipe {}: an instruction never ended", c, p);
      if (b.e > b.s) cp.busy[p] += b.e - b.s;
    }
    cp.busy[static_cast<int>(Pipe::S)] += cores_[c].alu;  // the scalar unit's arithmetic
  }
  prof_.total_us = prof_.us(prof_.total_cycles);
  prof_.launch_overhead_us = c_.launch_overhead_us;
  return std::move(prof_);
}

}  // namespace

Profile simulate_timing(const Trace& trace, const Target& target, const TimingOptions& opt) {
  Model m(&trace, nullptr, target);
  return m.run(opt);
}

Profile simulate_timing_streamed(const StreamedLaunch& in, const Target& target,
                                 const TimingOptions& opt) {
  Model m(nullptr, &in, target);
  return m.run(opt);
}

}  // namespace tl::npu
