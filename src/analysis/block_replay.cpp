// block_replay (tl/replay.h): unrolls one block's three cores into instruction streams, with
// conservative byte ranges per op, and replays them with the hazard checker's rules.
//
// Address arithmetic is kept as linear forms over the values a block cannot know at compile
// time (cid, dynamic sizes, lets of them): two GM regions whose first elements differ only in
// their constants compare exactly, as the same block evaluates both; anything else (a bound of
// a loop the streams do not unroll, a product of two unknowns) makes the region the whole
// buffer. On-chip regions narrow to the bytes between their first and last element, as
// insert_syncs narrows them (every layout is non-decreasing in each index, tl/storage.h).
#include "tl/replay.h"

#include <deque>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "tl/access.h"
#include "tl/arith.h"
#include "tl/ir_functor.h"
#include "tl/ir_ops.h"
#include "tl/linear.h"
#include "tl/op.h"
#include "tl/ops.h"
#include "tl/printer.h"
#include "tl/storage.h"
#include "tl/sync_rules.h"

namespace tl::replay {
namespace {

constexpr int kClock = 3 * kPipes;          // (core, pipe) timelines of one block
constexpr size_t kMaxEvents = 400000;       // per core: beyond it, no streams
constexpr size_t kMaxBlockEvents = 500000;  // all blocks, when each is unrolled: beyond it, none

using Clock = std::array<uint32_t, kClock>;
void join(Clock& a, const Clock& b) {
  for (int i = 0; i < kClock; ++i) a[i] = std::max(a[i], b[i]);
}

int pipe_index(Pipe p) {
  return static_cast<int>(p);
}

Event event(Event::Kind kind, int pipe, int dst = 0, int id = 0) {
  Event e;
  e.kind = kind;
  e.pipe = pipe;
  e.dst = dst;
  e.id = id;
  return e;
}

/// c + sum(coef * atom): an address the block computes from values unknown at compile time
/// (tl/linear.h). A few terms inline (no allocation: the unroller builds one per bound of every
/// region of every unrolled op); more make it overflow, which callers take as unknown.
using Linear = arith::LinearForm<4>;

/// What the three cores' unrollers share, so that their atoms and bases mean the same.
struct Interner {
  std::map<std::string, int64_t>
      keyed_atoms;    // a let value of kernel-invariant values, by its text
  int64_t fresh = 0;  // atoms of other lets: one per binding
  std::map<std::vector<Linear::Term>, int> bases;
  int base_of(const Linear& l) {
    return bases.try_emplace(l.terms(), static_cast<int>(bases.size())).first->second;
  }
};

/// Unrolls a scope body for one core into its stream; nullopt when a trip count or a condition
/// that matters is not a constant, or the stream grows too long.
class Unroller {
 public:
  Unroller(const Target& t, const std::vector<Channel>& channels, const KernelNode& k, int core,
           bool accesses, Interner& in, std::optional<int64_t> cid)
      : target_(t), channels_(channels), core_(core), accesses_(accesses), in_(in) {
    if (k.vid.defined()) bind(k.vid, core == 2 ? 1 : 0);
    if (cid && k.cid.defined()) bind(k.cid, *cid);
  }

  std::optional<std::vector<Event>> run(const Stmt& body) {
    walk(body);
    if (failed_) return std::nullopt;
    return std::move(out_);
  }

 private:
  // By kind, not by dynamic_cast: the walk visits every statement of every unrolled iteration.
  void walk(const Stmt& s) {
    if (failed_ || !s.defined()) return;
    if (out_.size() > kMaxEvents) return fail();
    switch (s.kind()) {
      case StmtKind::Seq:
        for (const Stmt& x : static_cast<const SeqNode*>(s.get())->stmts) walk(x);
        return;
      case StmtKind::Let:
        return let(*static_cast<const LetNode*>(s.get()));
      case StmtKind::For:
        return loop(*static_cast<const ForNode*>(s.get()));
      case StmtKind::If:
        return branch(s, *static_cast<const IfNode*>(s.get()));
      case StmtKind::Sync:
        return sync(*static_cast<const SyncNode*>(s.get()));
      case StmtKind::TileOp:
        return tile_op(*static_cast<const TileOpNode*>(s.get()));
      case StmtKind::Scope:
        return walk(static_cast<const ScopeNode*>(s.get())->body);
      default:
        return;
    }
  }

  void branch(const Stmt& s, const IfNode& n) {
    if (!matters(n.then_case) && !matters(n.else_case) && !accesses_) return ops_of(s);
    auto c = value(n.cond);
    if (!c) {
      if (matters(n.then_case) || matters(n.else_case)) return fail();
      if (!accesses_) return ops_of(s);
      walk(n.then_case);  // both branches' ops: more accesses, never more order
      walk(n.else_case);
      return;
    }
    walk(*c ? n.then_case : n.else_case);
  }

  void let(const LetNode& l) {
    if (auto x = linear(l.value)) {
      lin_[l.var.node()] = *x;
      if (x->is_constant())
        env_[l.var.node()] = arith::make_int(l.var.dtype(), x->constant());
      else
        env_.erase(l.var.node());
      return;
    }
    Expr v = simplify(arith::substitute(l.value, env_));
    if (auto c = as_const_int(v)) return bind(l.var, *c);
    env_.erase(l.var.node());
    // An atom of its own: keyed by its text when it only reads values fixed for the whole
    // kernel (the same in every core: `bx = cid % 8`), else fresh for this binding.
    bool invariant = true;
    pre_order_visit(
        LetNode::make(Var("_"), v), [](const Stmt&) {},
        [&](const Expr& e) {
          if (auto* var = e.as<VarNode>(); var && (lin_.count(var) || unknown_.count(var)))
            invariant = false;
          if (e.as<LoadNode>()) invariant = false;
        });
    int64_t atom =
        invariant ? in_.keyed_atoms
                        .try_emplace(print(v), -2 - static_cast<int64_t>(in_.keyed_atoms.size()))
                        .first->second
                  : (int64_t{1} << 62) + in_.fresh++;
    lin_[l.var.node()] = Linear::atom(atom);
  }

  void loop(const ForNode& f) {
    auto mn = value(f.min), ext = value(f.extent);
    if (!matters(f.body)) {
      if (!accesses_) return;
      // No sync inside: its ops once, its variable unknown (their regions the whole buffer).
      // Taking them when the loop runs no trip only adds accesses.
      if (mn && ext && *ext >= 1 && *ext <= 64) return unroll(f, *mn, *ext);
      unknown_.insert(f.var.node());
      walk(f.body);
      unknown_.erase(f.var.node());
      return;
    }
    if (!mn || !ext) return fail();
    unroll(f, *mn, *ext);
  }

  void bind(const Var& v, int64_t value) {
    env_[v.node()] = arith::make_int(v.dtype(), value);
    lin_[v.node()] = Linear::constant_of(value);
  }

  void unroll(const ForNode& f, int64_t mn, int64_t ext) {
    for (int64_t i = 0; i < ext && !failed_; ++i) {
      bind(f.var, mn + i);
      walk(f.body);
    }
    env_.erase(f.var.node());
    lin_.erase(f.var.node());
  }

  /// Whether `s` holds a sync or a channel copy: its control flow then shapes the protocol.
  bool matters(const Stmt& s) {
    if (!s.defined()) return false;
    if (auto it = matters_.find(s.get()); it != matters_.end()) return it->second;
    bool hit = false;
    pre_order_visit(s, [&](const Stmt& x) {
      if (x.as<SyncNode>()) hit = true;
      if (auto* op = x.as<TileOpNode>(); op && channel_of(*op).first >= 0) hit = true;
    });
    return matters_[s.get()] = hit;
  }

  /// The ops of a statement that holds no sync and no channel copy, taken as executed: an op
  /// only adds what its pipe knows to its own timeline, never order between other
  /// instructions (ops on S, which would, fail the streams when accesses are recorded).
  void ops_of(const Stmt& s) {
    pre_order_visit(s, [&](const Stmt& x) {
      if (auto* op = x.as<TileOpNode>()) tile_op(*op);
    });
  }

  std::optional<int64_t> value(const Expr& e) const {
    if (auto x = linear(e); x && x->is_constant()) return x->constant();
    return as_const_int(simplify(arith::substitute(e, env_)));
  }
  void fail() { failed_ = true; }

  std::optional<Linear> linear(const Expr& e) const {
    return arith::decompose<4>(e, [&](const Expr& x) -> std::optional<Linear> {
      auto* v = x.as<VarNode>();
      if (!v) return std::nullopt;
      if (auto it = lin_.find(v); it != lin_.end()) return it->second;
      if (unknown_.count(v) || !is_int(v->dtype)) return std::nullopt;
      return Linear::atom(
          static_cast<int64_t>(reinterpret_cast<uintptr_t>(v) >> 1));  // cid, a size
    });
  }

  std::pair<int, bool> channel_of(const TileOpNode& op) const {
    if (channels_.empty() || op.op != &ops::copy() || op.args.size() != 2) return {-1, false};
    for (size_t c = 0; c < channels_.size(); ++c)
      for (int which : {0, 1})
        if (op.args[which].is_region() && op.args[which].region.buffer.get() == channels_[c].ws)
          return {static_cast<int>(c), which == 1};
    return {-1, false};
  }

  uint64_t memory_key(MemScope s) const {
    return static_cast<uint64_t>(s) * 4 + static_cast<uint64_t>(core_);
  }

  /// The bytes `r` may touch.
  Span span_of(const BufferRegion& r, bool write) const {
    const Buffer& b = r.buffer;
    Span sp;
    sp.write = write;
    // GM by tensor name (a pass may rebuild a tensor's node; a clash of hashes only adds
    // conflicts), on-chip by memory: every buffer of it shares the planned addresses.
    sp.mem = b->scope == MemScope::GM ? (std::hash<std::string>()(b->name) | (uint64_t{1} << 63))
                                      : memory_key(b->scope);
    sp.base = -1;
    std::vector<int64_t> shape;
    for (const Expr& e : b->shape) {
      auto v = as_const_int(e);
      if (!v || *v <= 0) return sp;
      shape.push_back(*v);
    }
    const int64_t es = dtype_bytes(b->dtype);
    std::vector<Linear> first, last;
    first.reserve(shape.size());
    last.reserve(shape.size());
    bool known = r.ranges.size() == shape.size();
    for (size_t d = 0; known && d < r.ranges.size(); ++d) {
      auto mn = linear(r.ranges[d].min);
      auto ext = r.ranges[d].extent.defined() ? linear(r.ranges[d].extent)
                                              : std::optional<Linear>(Linear::constant_of(1));
      known = mn && ext && ext->is_constant() && ext->constant() >= 1;
      if (!known) break;
      first.push_back(*mn);
      last.push_back(Linear(*mn).add(Linear::constant_of(ext->constant() - 1), 1));
    }
    if (b->scope != MemScope::GM) {
      if (b->address < 0) return sp;  // unplanned: the whole memory
      sp.base = 0;
      sp.lo = b->address;
      sp.hi = b->address + storage_bytes(b->scope, b->dtype, shape);
      if (!known || !b->strides.empty()) return sp;
      std::vector<int64_t> f, l;
      for (size_t d = 0; d < shape.size(); ++d) {
        if (!first[d].is_constant() || first[d].constant() < 0 || last[d].constant() >= shape[d])
          return sp;
        f.push_back(first[d].constant());
        l.push_back(last[d].constant());
      }
      auto [lo, hi] = analysis::bytes_between(b->scope, b->dtype, shape, f, l);
      sp.lo = b->address + lo;
      sp.hi = b->address + hi;
      return sp;
    }
    // GM: row-major (or the buffer's constant strides), first to last element.
    std::vector<int64_t> strides(shape.size(), 1);
    for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
    if (!b->strides.empty()) {
      for (size_t d = 0; d < shape.size(); ++d) {
        auto s = as_const_int(b->strides[d]);
        if (!s || *s < 0) return sp;
        strides[d] = *s;
      }
    }
    if (!known) return sp;
    Linear lo, hi;
    for (size_t d = 0; d < shape.size(); ++d) {
      lo.add(first[d], strides[d]);
      hi.add(last[d], strides[d]);
    }
    if (lo.overflow() || hi.overflow() || !lo.same_terms(hi)) return sp;
    sp.base = in_.base_of(lo);
    sp.lo = lo.constant() * es;
    sp.hi = (hi.constant() + 1) * es;
    return sp;
  }

  /// The instructions of `op` and what each touches (tl/access.h), looked up once per op: a
  /// copy's pipe is its path's.
  const std::vector<analysis::Instr>& instrs_of(const TileOpNode& op) {
    auto [it, fresh] = instrs_.try_emplace(&op);
    if (fresh) it->second = analysis::instructions(op, target_);
    return it->second;
  }

  void tile_op(const TileOpNode& op) {
    auto [channel, push] = channel_of(op);
    for (const analysis::Instr& in : instrs_of(op)) {
      if (in.barrier_all) {
        out_.push_back(event(Event::Barrier, kPipes));
        continue;
      }
      Event e = event(Event::Op, pipe_index(in.pipe));
      if (e.pipe >= kPipes || (accesses_ && e.pipe == pipe_index(Pipe::S))) return fail();
      e.channel = channel;
      e.push = push;
      if (push) e.first = as_const_int(op.args[1].region.ranges.back().min) == 0;
      if (accesses_) spans(op, in, e.spans);
      out_.push_back(std::move(e));
    }
  }

  void spans(const TileOpNode& n, const analysis::Instr& in, std::vector<Span>& out) const {
    for (const analysis::Use& u : in.uses) {
      if (u.kind == analysis::Use::Scratch) {  // from offset 0: the whole memory, conservatively
        Span s;
        s.mem = memory_key(u.scratch);
        s.base = -1;
        if (u.read) out.push_back(s);
        if (u.write) out.push_back((s.write = true, s));
        continue;
      }
      if (u.kind == analysis::Use::Scalar) continue;  // no memory (unroll_block checked)
      const BufferRegion& r = n.args[static_cast<size_t>(u.arg)].region;
      if (u.read) out.push_back(span_of(r, false));
      if (u.write) out.push_back(span_of(r, true));
    }
  }

  void sync(const SyncNode& y) {
    auto id = y.event_id.defined() ? value(y.event_id) : std::optional<int64_t>(0);
    if (!id) return fail();
    const int p = pipe_index(y.src), q = pipe_index(y.dst), i = static_cast<int>(*id);
    switch (y.sync_kind) {
      case SyncKind::SetFlag:
      case SyncKind::WaitFlag:
        out_.push_back(event(y.sync_kind == SyncKind::SetFlag ? Event::Set : Event::Wait, p, q, i));
        break;
      case SyncKind::PipeBarrier:
        out_.push_back(event(Event::Barrier, p >= kPipes ? kPipes : p));
        break;
      case SyncKind::BarrierAll:
        out_.push_back(event(Event::Barrier, kPipes));
        break;
      case SyncKind::SetCrossFlag:
        if (y.mode != 2) return fail();
        out_.push_back(event(Event::SetCross, p, 0, i));
        break;
      case SyncKind::WaitCrossFlag:
        out_.push_back(event(Event::WaitCross, 0, 0, i));
        break;
      case SyncKind::SyncAll:
        return fail();
    }
    out_.back().sync = &y;
  }

  const Target& target_;
  const std::vector<Channel>& channels_;
  const int core_;
  const bool accesses_;
  Interner& in_;
  arith::VarMap env_;                                  // constants: trip counts, conditions, ids
  std::unordered_map<const VarNode*, Linear> lin_;     // addresses
  std::unordered_set<const VarNode*> unknown_;         // variables of loops taken once
  std::unordered_map<const StmtNode*, bool> matters_;  // matters(), by statement
  std::unordered_map<const TileOpNode*, std::vector<analysis::Instr>> instrs_;  // instrs_of()
  std::vector<Event> out_;
  bool failed_ = false;
};

/// Whether the scalar unit reads or writes memory anywhere in `body` (a store, or a load in any
/// expression): the streams leave scalar instructions out, so no access of theirs is checked.
bool memory_on_s(const Stmt& body) {
  if (!body.defined()) return false;
  bool hit = false;
  pre_order_visit(
      body,
      [&](const Stmt& x) {
        if (auto* st = x.as<StoreNode>(); st && st->buffer->scope != MemScope::Var) hit = true;
      },
      [&](const Expr& e) {
        if (auto* l = e.as<LoadNode>(); l && l->buffer->scope != MemScope::Var) hit = true;
      });
  return hit;
}

bool overlap(const Span& a, const Span& b) {
  if (a.mem != b.mem) return false;
  if (a.base < 0 || b.base < 0 || a.base != b.base) return true;
  return a.lo < b.hi && b.lo < a.hi;
}
bool covers(const Span& a, const Span& b) {
  return a.mem == b.mem && a.base >= 0 && a.base == b.base && a.lo <= b.lo && b.hi <= a.hi;
}

/// An access not yet replaced by a covering one ordered after it (the hazard checker's shadow).
struct Rec {
  Span span;
  int core, timeline;
  uint32_t clock;
  size_t event;
};

class Replayer {
 public:
  Replayer(const Streams& streams, const std::vector<Channel>& channels, const Query& q)
      : streams_(streams), channels_(channels), q_(q) {
    for (int c = 0; c < 3; ++c)
      for (const Event& e : streams_[c]) {
        if (e.channel >= 0 && !e.push) consumers_.insert({c, e.channel});
        for (const Span& a : e.spans)
          if (a.write) written_.insert(a.mem);
      }
  }

  bool run() {
    // Run each core until it blocks on a cross-core wait; round-robin until all finish.
    for (bool progress = true; progress && ok_;) {
      progress = false;
      for (int c = 0; c < 3 && ok_; ++c) {
        Core& s = cores_[c];
        while (ok_ && s.pc < streams_[c].size()) {
          if (!step(c, streams_[c][s.pc])) break;
          ++s.pc;
          progress = true;
        }
      }
    }
    for (int c = 0; c < 3; ++c)
      if (cores_[c].pc < streams_[c].size()) return false;  // a deadlock
    if (q_.balanced)
      for (const Core& c : cores_)
        for (const auto& [flag, sets] : c.flags)
          if (!sets.empty()) return false;  // a set no wait consumes: the next kernel would see it
    return ok_;
  }

 private:
  struct Core {
    size_t pc = 0;
    std::array<uint32_t, kPipes> issued{};
    std::array<Clock, kPipes> know{};
    std::map<std::tuple<int, int, int>, std::deque<std::pair<Clock, const SyncNode*>>> flags;
    std::map<int, std::vector<std::pair<int, uint32_t>>> pops;  // channel -> (pipe, count) per tile
    std::map<int, int> pushes;                                  // channel -> tiles pushed
  };

  Clock drained(int c, int p) const {
    Clock k{};
    if (p >= kPipes) {
      for (int x = 0; x < kPipes; ++x) {
        join(k, cores_[c].know[x]);
        k[c * kPipes + x] = std::max(k[c * kPipes + x], cores_[c].issued[x]);
      }
      return k;
    }
    k = cores_[c].know[p];
    k[c * kPipes + p] = std::max(k[c * kPipes + p], cores_[c].issued[p]);
    return k;
  }
  void join_all(int c, const Clock& k) {
    for (auto& x : cores_[c].know) join(x, k);
  }
  bool dropped(const Event& e) const {
    if (e.kind == Event::SetCross || e.kind == Event::WaitCross) return e.id == q_.dropped_cross;
    if (e.kind == Event::Set || e.kind == Event::Wait) return q_.dropped.count(e.sync) > 0;
    return false;
  }

  /// Executes `e` on core `c`; false when it blocks (a cross-core wait with no set yet).
  bool step(int c, const Event& e) {
    Core& s = cores_[c];
    if (dropped(e)) return true;
    switch (e.kind) {
      case Event::WaitCross:
        if (c == 0) {
          auto &a = cross_[{3, e.id}], &b = cross_[{4, e.id}];
          if (a.empty() || b.empty()) return false;
          join_all(c, a.front());
          join_all(c, b.front());
          a.pop_front();
          b.pop_front();
        } else {
          auto& q = cross_[{c, e.id}];
          if (q.empty()) return false;
          join_all(c, q.front());
          q.pop_front();
        }
        return true;
      case Event::SetCross: {
        Clock k = drained(c, e.pipe);
        if (c == 0) {
          cross_[{1, e.id}].push_back(k);
          cross_[{2, e.id}].push_back(k);
        } else {
          cross_[{2 + c, e.id}].push_back(k);
        }
        return true;
      }
      case Event::Set:
        s.flags[{e.pipe, e.dst, e.id}].push_back({drained(c, e.pipe), e.sync});
        return true;
      case Event::Wait: {
        auto& q = s.flags[{e.pipe, e.dst, e.id}];
        if (q.empty()) return ok_ = false;  // a wait no set raises: it would hang
        if (e.dst >= kPipes)
          join_all(c, q.front().first);
        else
          join(s.know[e.dst], q.front().first);
        if (q_.matches) q_.matches->push_back({q.front().second, e.sync});
        q.pop_front();
        return true;
      }
      case Event::Barrier:
        if (e.pipe >= kPipes)
          join_all(c, drained(c, kPipes));
        else
          join(s.know[e.pipe], drained(c, e.pipe));
        return true;
      case Event::Op:
        op(c, e);
        return true;
    }
    return true;
  }

  void op(int c, const Event& e) {
    Core& s = cores_[c];
    const Clock start = s.know[e.pipe];
    const uint32_t count = ++s.issued[e.pipe];
    if (q_.accesses) access(c, e, start, count);
    if (pipe_in_order(static_cast<Pipe>(e.pipe))) s.know[e.pipe][c * kPipes + e.pipe] = count;
    if (pipe_orders_later_issue(static_cast<Pipe>(e.pipe))) join_all(c, Clock(s.know[e.pipe]));
    if (e.channel >= 0 && !e.push) s.pops[e.channel].push_back({e.pipe, count});
    if (e.channel == q_.slot_channel && e.push && e.first) {
      const int n = s.pushes[e.channel]++;
      const int prev = n - channels_[e.channel].slots;
      if (prev >= 0)
        for (int o = 0; o < 3; ++o) {
          if (o == c || !consumers_.count({o, e.channel})) continue;
          const auto& pops = cores_[o].pops[e.channel];
          if (static_cast<int>(pops.size()) <= prev ||
              start[o * kPipes + pops[prev].first] < pops[prev].second)
            ok_ = false;
        }
    }
  }

  /// Every access of `e` ordered after the conflicting ones recorded; then recorded itself,
  /// replacing those it covers and is ordered after (as the hazard checker's shadow does).
  void access(int c, const Event& e, const Clock& start, uint32_t count) {
    const size_t event = cores_[c].pc;
    for (const Span& a : e.spans) {
      if (!written_.count(a.mem)) continue;  // read-only memory (the inputs): nothing conflicts
      for (const Rec& r : shadow_[a.mem])
        if ((r.span.write || a.write) && overlap(r.span, a) && start[r.timeline] < r.clock &&
            !(r.core == c && r.event == event))
          ok_ = false;
    }
    for (const Span& a : e.spans) {
      if (!written_.count(a.mem)) continue;
      auto& recs = shadow_[a.mem];
      std::erase_if(recs, [&](const Rec& r) {
        const bool same = r.core == c && r.event == event;
        return (a.write || !r.span.write) && covers(a, r.span) &&
               (same || start[r.timeline] >= r.clock);
      });
      recs.push_back({a, c, c * kPipes + e.pipe, count, event});
    }
  }

  const Streams& streams_;
  const std::vector<Channel>& channels_;
  const Query& q_;
  std::array<Core, 3> cores_{};
  std::map<std::pair<int, int>, std::deque<Clock>> cross_;  // (to: 1, 2 AIVs; 3, 4 from AIVs, id)
  std::set<std::pair<int, int>> consumers_;                 // (core, channel) pairs that read it
  std::unordered_map<uint64_t, std::vector<Rec>> shadow_;
  std::unordered_set<uint64_t> written_;  // memories some op writes
  bool ok_ = true;
};

}  // namespace

std::optional<Streams> unroll_block(const KernelNode& k, const Stmt& cube, const Stmt& vector,
                                    const Target& t, const std::vector<Channel>& channels,
                                    bool accesses, std::optional<int64_t> cid) {
  if (accesses && (memory_on_s(cube) || memory_on_s(vector))) return std::nullopt;
  Interner in;
  Streams out;
  for (int core = 0; core < 3; ++core) {
    const Stmt& body = core == 0 ? cube : vector;
    if (!body.defined()) continue;
    auto stream = Unroller(t, channels, k, core, accesses, in, cid).run(body);
    if (!stream) return std::nullopt;
    out[core] = std::move(*stream);
  }
  return out;
}

std::vector<Streams> unroll_blocks(const KernelNode& k, const Stmt& cube, const Stmt& vector,
                                   const Target& t, const std::vector<Channel>& channels,
                                   bool accesses, int64_t max_blocks, bool each_block) {
  if (!each_block)
    if (auto all = unroll_block(k, cube, vector, t, channels, accesses)) return {std::move(*all)};
  auto n = as_const_int(k.num_blocks);
  if (!n || *n > max_blocks) return {};
  std::vector<Streams> out;
  size_t events = 0;
  for (int64_t b = 0; b < *n; ++b) {
    auto one = unroll_block(k, cube, vector, t, channels, accesses, b);
    if (!one) return {};
    for (const auto& stream : *one) events += stream.size();
    if (events > kMaxBlockEvents) return {};
    out.push_back(std::move(*one));
  }
  return out;
}

bool replay(const Streams& streams, const std::vector<Channel>& channels, const Query& q) {
  return Replayer(streams, channels, q).run();
}

Prover::Prover(const KernelNode& k, const Stmt bodies[2], const Target& t, int64_t max_blocks,
               size_t budget)
    : k_(k), t_(t), max_blocks_(max_blocks), budget_(budget) {
  std::tie(clean_, per_replay_) = run(bodies);
  // With cid unknown, a tail's clipped regions are whole buffers, which the ranges may not tell
  // apart: then block by block, where every address is a constant.
  if (!clean_) {
    each_block_ = true;
    std::tie(clean_, per_replay_) = run(bodies);
  }
}

bool Prover::holds(const Stmt bodies[2]) {
  if (!clean_ || (spent_ += per_replay_) > budget_) return false;
  return run(bodies).first;
}

std::pair<bool, size_t> Prover::run(const Stmt bodies[2]) {
  std::vector<Streams> blocks =
      unroll_blocks(k_, bodies[0], bodies[1], t_, {}, true, max_blocks_, each_block_);
  Query q;
  q.accesses = q.balanced = true;
  size_t events = 0;
  for (const Streams& b : blocks)
    for (const auto& stream : b) events += stream.size();
  const bool ok =
      !blocks.empty() &&
      std::all_of(blocks.begin(), blocks.end(), [&](const Streams& b) { return replay(b, {}, q); });
  return {ok, events};
}

}  // namespace tl::replay
