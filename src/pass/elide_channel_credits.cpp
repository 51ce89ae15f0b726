// elide_channel_credits (lowered developer kernels, after insert_channel_syncs, with
// minimise_syncs): drops the credits of a channel whose slot reuse the other flags already
// order. insert_channel_syncs gives every channel inside a loop a credit: the consumer raises it
// after each copy out of a slot, the producer waits for it before overwriting the slot. In a
// round trip the credit is often implied. FlashAttention's cube pops P of tile t before it
// pushes S and PV of tile t + 2, and its vector unit pops S and PV of tile t before it pushes P
// of tile t + 2, so each data flag of one direction carries the other direction's reads.
//
// The pass proves it per channel, on the kernel as it will run, rather than by a pattern: it
// unrolls one block's three cores (the AIC, AIV 0, AIV 1) into their instruction streams and
// replays them with the hazard checker's rules (tl/sync_rules.h; src/npu/hazard.cpp): a vector
// clock per pipe of what that pipe knows is complete, set_flag carrying what its pipe knew once
// its earlier instructions are done, wait_flag and wait_cross_flag joining it in, mode-2 cross
// flags pairing the AIC's k-th set with each AIV's k-th wait and both AIVs' k-th sets with the
// AIC's k-th wait. With one channel's credit left out, every overwrite of a slot (the n-th push)
// must still start knowing that every consumer finished the read of the n - slots-th tile, and
// the replay must not deadlock; then its credit syncs go, pre-sets and drains included.
//
// Only where that replay is the whole truth: every loop trip count and every condition around a
// sync or a channel copy must be a constant once vid is fixed (no cid, no dynamic size), and the
// streams must stay small. Otherwise every credit stays. Scalar instructions are left out of the
// streams: they only add order, so the proof is conservative. The hazard-checked tests
// (HazardMutation.DeveloperKernelsHaveNoRedundantSync) delete every remaining sync one by one.
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "developer.h"
#include "tl/arith.h"
#include "tl/ir_functor.h"
#include "tl/ir_ops.h"
#include "tl/op.h"
#include "tl/pass.h"
#include "tl/sync_rules.h"

namespace tl {
namespace {

constexpr int kPipes = 7;                 // S V M MTE1 MTE2 MTE3 FIX
constexpr int kClock = 3 * kPipes;        // (core, pipe) timelines of one block
constexpr size_t kMaxEvents = 400000;     // per core: beyond it, keep every credit

using Clock = std::array<uint32_t, kClock>;
void join(Clock& a, const Clock& b) {
  for (int i = 0; i < kClock; ++i) a[i] = std::max(a[i], b[i]);
}

/// One instruction of a core's stream.
struct Event {
  enum Kind : uint8_t { Op, Set, Wait, Barrier, SetCross, WaitCross } kind;
  int pipe = 0, dst = 0, id = 0;
  int channel = -1;     // a channel copy: its channel
  bool push = false;    // ... into the workspace (else out of it)
  bool first = false;   // a push: the first (or only) column part of its slot
};

/// A channel: its workspace, slots, and the credit id (the cross flag raised after a pop).
struct Channel {
  const BufferNode* ws = nullptr;
  int slots = 1;
  int credit = -1;
};

int pipe_index(Pipe p) { return static_cast<int>(p); }

/// Unrolls a scope body for one core into its stream; nullopt when a trip count or a condition
/// that matters is not a constant, or the stream grows too long.
class Unroller {
 public:
  Unroller(const Target& t, const std::vector<Channel>& channels, const KernelNode& k, int vid)
      : target_(t), channels_(channels) {
    if (k.vid.defined()) env_[k.vid.node()] = arith::make_int(k.vid.dtype(), vid);
  }

  std::optional<std::vector<Event>> run(const Stmt& body) {
    walk(body);
    if (failed_) return std::nullopt;
    return std::move(out_);
  }

 private:
  void walk(const Stmt& s) {
    if (failed_ || !s.defined()) return;
    if (out_.size() > kMaxEvents) {
      failed_ = true;
      return;
    }
    if (auto* q = s.as<SeqNode>()) {
      for (const Stmt& x : q->stmts) walk(x);
    } else if (auto* l = s.as<LetNode>()) {
      Expr v = simplify(arith::substitute(l->value, env_));
      if (as_const_int(v)) env_[l->var.node()] = v;
      else env_.erase(l->var.node());
    } else if (auto* f = s.as<ForNode>()) {
      if (!matters(f->body)) return;
      auto mn = value(f->min), ext = value(f->extent);
      if (!mn || !ext) return fail();
      for (int64_t i = 0; i < *ext && !failed_; ++i) {
        env_[f->var.node()] = arith::make_int(f->var.dtype(), *mn + i);
        walk(f->body);
      }
      env_.erase(f->var.node());
    } else if (auto* n = s.as<IfNode>()) {
      if (!matters(n->then_case) && !matters(n->else_case)) return ops_of(s);
      auto c = value(n->cond);
      if (!c) return fail();
      walk(*c ? n->then_case : n->else_case);
    } else if (auto* y = s.as<SyncNode>()) {
      sync(*y);
    } else if (auto* op = s.as<TileOpNode>()) {
      tile_op(*op);
    }
  }

  /// Whether `s` holds a sync or a channel copy: its control flow then shapes the protocol.
  bool matters(const Stmt& s) const {
    bool hit = false;
    pre_order_visit(s, [&](const Stmt& x) {
      if (x.as<SyncNode>()) hit = true;
      if (auto* op = x.as<TileOpNode>(); op && channel_of(*op).first >= 0) hit = true;
    });
    return hit;
  }

  /// The ops of a statement that holds no sync and no channel copy, taken as executed: an op
  /// only adds what its pipe knows to its own timeline, never order between other instructions,
  /// so a skipped one changes nothing the proof uses but the counts of its pipe, which only
  /// need to be consistent within this stream.
  void ops_of(const Stmt& s) {
    pre_order_visit(s, [&](const Stmt& x) {
      if (auto* op = x.as<TileOpNode>()) tile_op(*op);
    });
  }

  std::optional<int64_t> value(const Expr& e) const { return as_const_int(simplify(arith::substitute(e, env_))); }
  void fail() { failed_ = true; }

  std::pair<int, bool> channel_of(const TileOpNode& op) const {
    if (op.op->name != "copy" || op.args.size() != 2) return {-1, false};
    for (size_t c = 0; c < channels_.size(); ++c)
      for (int which : {0, 1})
        if (op.args[which].is_region() && op.args[which].region.buffer.get() == channels_[c].ws)
          return {static_cast<int>(c), which == 1};
    return {-1, false};
  }

  void tile_op(const TileOpNode& op) {
    auto [channel, push] = channel_of(op);
    for (const InstrSpec& spec : op.op->expansion) {
      if (spec.kind == InstrSpec::Kind::BarrierAll) {
        out_.push_back({Event::Barrier, kPipes});
        continue;
      }
      Event e{Event::Op, pipe_index(instr_pipe(op, spec, target_))};
      if (e.pipe >= kPipes) return fail();
      e.channel = channel;
      e.push = push;
      if (push) e.first = as_const_int(op.args[1].region.ranges.back().min) == 0;
      out_.push_back(e);
    }
  }

  void sync(const SyncNode& y) {
    auto id = y.event_id.defined() ? value(y.event_id) : std::optional<int64_t>(0);
    if (!id) return fail();
    const int p = pipe_index(y.src), q = pipe_index(y.dst), i = static_cast<int>(*id);
    switch (y.sync_kind) {
      case SyncKind::SetFlag: out_.push_back({Event::Set, p, q, i}); break;
      case SyncKind::WaitFlag: out_.push_back({Event::Wait, p, q, i}); break;
      case SyncKind::PipeBarrier: out_.push_back({Event::Barrier, p >= kPipes ? kPipes : p}); break;
      case SyncKind::BarrierAll: out_.push_back({Event::Barrier, kPipes}); break;
      case SyncKind::SetCrossFlag:
        if (y.mode != 2) return fail();
        out_.push_back({Event::SetCross, p, 0, i});
        break;
      case SyncKind::WaitCrossFlag: out_.push_back({Event::WaitCross, 0, 0, i}); break;
      case SyncKind::SyncAll: return fail();
    }
  }

  const Target& target_;
  const std::vector<Channel>& channels_;
  arith::VarMap env_;
  std::vector<Event> out_;
  bool failed_ = false;
};

/// Replays one block's three streams (0: AIC, 1: AIV 0, 2: AIV 1) without channel `checked`'s
/// credit and answers whether every push of it still starts after the consumers' reads of its
/// slot's previous tile (and nothing deadlocks).
class Replay {
 public:
  Replay(const std::vector<std::vector<Event>>& streams, const std::vector<Channel>& channels)
      : streams_(streams), channels_(channels) {
    for (int c = 0; c < 3; ++c)
      for (const Event& e : streams_[c])
        if (e.channel >= 0 && !e.push) consumers_.insert({c, e.channel});
  }

  bool slot_reuse_ordered(int checked) {
    struct Core {
      size_t pc = 0;
      std::array<uint32_t, kPipes> issued{};
      std::array<Clock, kPipes> know{};
      std::map<std::tuple<int, int, int>, std::deque<Clock>> flags;
      std::map<int, std::vector<std::pair<int, uint32_t>>> pops;  // channel -> (pipe, count) per tile
      std::map<int, int> pushes;                                  // channel -> tiles pushed
    };
    std::array<Core, 3> cores{};
    std::map<std::pair<int, int>, std::deque<Clock>> cross;  // (to: 1, 2 AIVs; 3, 4 from AIVs, id)
    auto drained = [&](int c, int p) {
      Clock k;
      if (p >= kPipes) {
        k.fill(0);
        for (int x = 0; x < kPipes; ++x) {
          join(k, cores[c].know[x]);
          k[c * kPipes + x] = std::max(k[c * kPipes + x], cores[c].issued[x]);
        }
        return k;
      }
      k = cores[c].know[p];
      k[c * kPipes + p] = std::max(k[c * kPipes + p], cores[c].issued[p]);
      return k;
    };
    auto join_all = [&](int c, const Clock& k) {
      for (auto& x : cores[c].know) join(x, k);
    };
    const int skip_id = channels_[checked].credit;
    bool ok = true;
    // Run each core until it blocks on a cross-core wait; round-robin until all finish.
    for (bool progress = true; progress;) {
      progress = false;
      for (int c = 0; c < 3; ++c) {
        Core& s = cores[c];
        const auto& ev = streams_[c];
        while (s.pc < ev.size()) {
          const Event& e = ev[s.pc];
          if ((e.kind == Event::SetCross || e.kind == Event::WaitCross) && e.id == skip_id) {
            ++s.pc;
            continue;
          }
          if (e.kind == Event::WaitCross) {
            if (c == 0) {
              auto &a = cross[{3, e.id}], &b = cross[{4, e.id}];
              if (a.empty() || b.empty()) break;
              join_all(c, a.front());
              join_all(c, b.front());
              a.pop_front();
              b.pop_front();
            } else {
              auto& q = cross[{c, e.id}];
              if (q.empty()) break;
              join_all(c, q.front());
              q.pop_front();
            }
          } else if (e.kind == Event::SetCross) {
            Clock k = drained(c, e.pipe);
            if (c == 0) {
              cross[{1, e.id}].push_back(k);
              cross[{2, e.id}].push_back(k);
            } else {
              cross[{2 + c, e.id}].push_back(k);
            }
          } else if (e.kind == Event::Set) {
            s.flags[{e.pipe, e.dst, e.id}].push_back(drained(c, e.pipe));
          } else if (e.kind == Event::Wait) {
            auto& q = s.flags[{e.pipe, e.dst, e.id}];
            if (q.empty()) return false;  // not the kernel as insert_syncs wrote it
            if (e.dst >= kPipes) join_all(c, q.front());
            else join(s.know[e.dst], q.front());
            q.pop_front();
          } else if (e.kind == Event::Barrier) {
            if (e.pipe >= kPipes) join_all(c, drained(c, kPipes));
            else join(s.know[e.pipe], drained(c, e.pipe));
          } else {
            const Clock start = s.know[e.pipe];
            const uint32_t count = ++s.issued[e.pipe];
            if (pipe_in_order(static_cast<Pipe>(e.pipe))) s.know[e.pipe][c * kPipes + e.pipe] = count;
            if (pipe_orders_later_issue(static_cast<Pipe>(e.pipe))) join_all(c, Clock(s.know[e.pipe]));
            if (e.channel >= 0 && !e.push) s.pops[e.channel].push_back({e.pipe, count});
            if (e.channel == checked && e.push && e.first) {
              const int n = s.pushes[e.channel]++;
              const int prev = n - channels_[e.channel].slots;
              if (prev >= 0)
                for (int o = 0; o < 3; ++o) {
                  if (o == c || !consumes(o, e.channel)) continue;
                  const auto& pops = cores[o].pops[e.channel];
                  if (static_cast<int>(pops.size()) <= prev ||
                      start[o * kPipes + pops[prev].first] < pops[prev].second)
                    ok = false;
                }
            }
          }
          ++s.pc;
          progress = true;
        }
      }
    }
    for (int c = 0; c < 3; ++c)
      if (cores[c].pc < streams_[c].size()) return false;  // a deadlock without the credit
    return ok;
  }

 private:
  bool consumes(int core, int channel) const { return consumers_.count({core, channel}) > 0; }

  const std::vector<std::vector<Event>>& streams_;
  const std::vector<Channel>& channels_;
  std::set<std::pair<int, int>> consumers_;  // (core, channel) pairs that read the channel
};

/// The channels and their credits: a credit is the cross flag raised right after a copy out of
/// the channel's workspace (the one after a copy into it is its data flag; an id seen in both
/// places is not taken for a credit).
std::vector<Channel> channels_of(const KernelNode& k) {
  std::vector<Channel> out;
  for (const Stmt& s : dev::stmts_of(k.body))
    if (auto* a = s.as<AllocateNode>(); a && !a->is_view() && a->buffer->scope == MemScope::GM && a->buffer->ndim() >= 2) {
      auto slots = as_const_int(a->buffer->shape[1]);
      out.push_back({a->buffer.get(), slots ? static_cast<int>(*slots) : 0});
    }
  std::set<int64_t> data_ids;
  std::function<void(const Stmt&)> walk = [&](const Stmt& s) {
    if (!s.defined()) return;
    if (auto* q = s.as<SeqNode>()) {
      for (size_t i = 0; i + 1 < q->stmts.size(); ++i) {
        auto* op = q->stmts[i].as<TileOpNode>();
        auto* y = q->stmts[i + 1].as<SyncNode>();
        if (!op || !y || y->sync_kind != SyncKind::SetCrossFlag || op->op->name != "copy" || op->args.size() != 2 ||
            !op->args[0].is_region() || !op->args[1].is_region())
          continue;
        auto id = as_const_int(y->event_id);
        if (!id) continue;
        for (Channel& c : out) {
          if (op->args[0].region.buffer.get() == c.ws) c.credit = static_cast<int>(*id);
          if (op->args[1].region.buffer.get() == c.ws) data_ids.insert(*id);
        }
      }
      for (const Stmt& x : q->stmts) walk(x);
    } else if (auto* f = s.as<ForNode>()) {
      walk(f->body);
    } else if (auto* n = s.as<IfNode>()) {
      walk(n->then_case);
      walk(n->else_case);
    } else if (auto* sc = s.as<ScopeNode>()) {
      walk(sc->body);
    }
  };
  walk(k.body);
  for (Channel& c : out)
    if (data_ids.count(c.credit)) c.credit = -1;
  return out;
}

/// `s` without the cross-core sets and waits of flag `id`.
Stmt without_cross_flag(const Stmt& s, int id) {
  struct Drop : IRMutator {
    int id;
    Stmt mutate_(const SeqNode* n, const Stmt& self) override {
      std::vector<Stmt> out;
      bool changed = false;
      for (const Stmt& x : n->stmts) {
        if (auto* y = x.as<SyncNode>();
            y && (y->sync_kind == SyncKind::SetCrossFlag || y->sync_kind == SyncKind::WaitCrossFlag) &&
            as_const_int(y->event_id) == id) {
          changed = true;
          continue;
        }
        Stmt m = mutate(x);
        changed = changed || !m.same_as(x);
        out.push_back(m);
      }
      return changed ? SeqNode::make(std::move(out), n->loc) : self;
    }
  } drop;
  drop.id = id;
  return drop.mutate(s);
}

}  // namespace

PrimFunc elide_channel_credits(const PrimFunc& f, const Target& target) {
  const KernelNode* k = dev::find_kernel(f);
  if (!k || !k->vid.defined()) return f;
  std::vector<Channel> channels = channels_of(*k);
  bool any = false;
  for (const Channel& c : channels) any = any || (c.credit >= 0 && c.slots >= 1);
  if (!any) return f;
  Stmt cube, vector;
  for (const Stmt& s : dev::stmts_of(k->body))
    if (auto* sc = s.as<ScopeNode>()) (sc->core == CoreKind::Cube ? cube : vector) = sc->body;
  if (!cube.defined() || !vector.defined()) return f;
  Stmt body = k->body;
  for (size_t c = 0; c < channels.size(); ++c) {
    if (channels[c].credit < 0 || channels[c].slots < 1) continue;
    std::vector<std::vector<Event>> streams;
    for (int core = 0; core < 3; ++core) {
      Unroller u(target, channels, *k, core == 2 ? 1 : 0);
      auto stream = u.run(core == 0 ? cube : vector);
      if (!stream) return body.same_as(k->body) ? f : dev::with_kernel_body(f, dev::stmts_of(body));
      streams.push_back(std::move(*stream));
    }
    if (!Replay(streams, channels).slot_reuse_ordered(static_cast<int>(c))) continue;
    const int id = channels[c].credit;
    body = without_cross_flag(body, id);
    cube = without_cross_flag(cube, id);
    vector = without_cross_flag(vector, id);
    channels[c].credit = -1;
  }
  return body.same_as(k->body) ? f : dev::with_kernel_body(f, dev::stmts_of(body));
}

}  // namespace tl
