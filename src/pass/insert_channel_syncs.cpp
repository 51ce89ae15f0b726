// insert_channel_syncs (lowered developer kernels, after insert_syncs): orders the two halves of
// every channel legalize_copies made, a GM workspace one core writes and the other reads
// (docs/developer_mode.md, "Data that crosses cores"):
//   - data: the producer raises a mode-2 cross-core flag right after its copy into the workspace
//     (on that copy's pipe, so the flag fires when the data is in GM; a slot written in column
//     parts, a split accumulator's chunks, flags after its last part); the consumer waits for it
//     right before its copy out (CrossCoreWaitFlag blocks every pipe of the waiting core on A2,
//     so nothing after it runs early);
//   - credits, for a channel inside a loop: the next iteration's producer copy must not overwrite
//     a slot before the consumer has read it. The consumer raises a credit after its copy, the
//     producer waits for one before its copy; the consumer pre-sets one credit per slot of the
//     workspace ([num_blocks, slots, ...]: one, or one per stage of a T.Pipelined loop) at the
//     start of its scope and the producer drains as many at the end of its scope, so the counts
//     balance for any trip count, 0 included, and the producer runs at most `slots` copies ahead
//     (both sides walk the slots in the same order, so a mode-2 counter suffices).
//
// A mode-2 flag set by the AIC counts for both AIVs of its group, and an AIC wait completes only
// once both AIVs have set. Where the vector work runs on AIV 0 (`if vid == 0`: threads = 1, or
// split_aiv's fallback) AIV 1 runs the flag protocol alone: the `else` branch of that `if` is the
// vector side's cross-core flags with the loops, ifs and lets around them. Where split_aiv gave
// each AIV half of every tile, both run the whole protocol on their halves.
//
// Cross-core flag ids are given in declaration order, a data id per channel and a credit id per
// channel inside a loop, 0 to 10 (11-14 belong to sync_all).
#include <algorithm>
#include <functional>
#include <optional>
#include <set>
#include <unordered_map>

#include "developer.h"
#include "split_hybrid.h"
#include "tl/ir_functor.h"
#include "tl/op.h"
#include "tl/ops.h"
#include "tl/pass.h"
#include "tl/target.h"

namespace tl {
namespace {

constexpr int kMaxChannelFlags = 11;  // cross-core ids 0-10; sync_all uses 11-14

using dev::stmts_of;

/// The copy reading (`which` = 0) or writing (1) workspace `ws` that `s` is, if it is one.
const TileOpNode* copy_of(const Stmt& s, const BufferNode* ws, int which) {
  auto* op = s.as<TileOpNode>();
  if (op && op->op == &ops::copy() && op->args.size() == 2 && op->args[which].is_region() &&
      op->args[which].region.buffer.get() == ws)
    return op;
  return nullptr;
}

struct Channel {
  const BufferNode* ws;
  int data = -1, credit = -1;  // cross-core flag ids; credit only for a channel inside a loop
  int slots = 1;               // the workspace's dimension 1 (legalize_copies, pipeline_loops)
  bool whole = false;          // every copy a whole slot (a hybrid kernel's parameter channel)
};

Stmt cross_set(Pipe pipe, int id, const SourceLoc& loc) {
  return SyncNode::make(SyncKind::SetCrossFlag, pipe, Pipe::S, Expr(id), 2, loc, SyncOrigin::Auto);
}
Stmt cross_wait(int id, const SourceLoc& loc) {
  return SyncNode::make(SyncKind::WaitCrossFlag, Pipe::S, Pipe::S, Expr(id), 0, loc,
                        SyncOrigin::Auto);
}

class ChannelSyncs {
 public:
  /// `shared`: per channel, the loop variables around its copies in both scopes (hybrid
  /// channels only; see role()).
  ChannelSyncs(const Target& t, const std::vector<Channel>& channels,
               std::vector<std::set<const VarNode*>> shared)
      : target_(t), channels_(channels), shared_(std::move(shared)) {
    grouped_.assign(channels_.size(), false);
  }

  /// The kernel's vid (a channel copy under a guard on it is split_aiv's turns).
  void set_vid(const Var& vid) { vid_ = vid; }

  /// A scope body with the flags around every channel copy; then the consumer's pre-set
  /// credits first and the producer's drains last.
  Stmt rewrite_scope(const Stmt& body, const SourceLoc& loc) {
    consumer_.assign(channels_.size(), std::nullopt);
    producer_.assign(channels_.size(), std::nullopt);
    std::vector<Stmt> out = rewrite(stmts_of(body));
    std::vector<Stmt> pre, post;
    for (size_t i = 0; i < channels_.size(); ++i) {
      const Channel& c = channels_[i];
      if (c.credit < 0) continue;
      for (int slot = 0; slot < c.slots; ++slot) {
        if (consumer_[i])
          pre.push_back(cross_set(consumer_[i]->first, c.credit, consumer_[i]->second));
        if (producer_[i]) post.push_back(cross_wait(c.credit, *producer_[i]));
      }
    }
    out.insert(out.begin(), pre.begin(), pre.end());
    out.insert(out.end(), post.begin(), post.end());
    return SeqNode::make(std::move(out), loc);
  }

 private:
  std::vector<Stmt> rewrite(const std::vector<Stmt>& body) {
    std::vector<Stmt> out;
    for (const Stmt& s : body) {
      // A channel copy under a guard of its own (split_aiv's turns, `if (t - min) % 2 == vid:
      // copy`): both AIVs run its flags, outside the guard, so that the cube's mode-2 counts
      // match whichever AIV made the copy.
      if (const Stmt inner = guarded_channel_copy(s); inner.defined()) {
        flag_copy(s, inner, out);
        continue;
      }
      std::vector<size_t> groups;  // the hybrid channels whose copies loop `s` groups
      if (s.as<ForNode>())
        for (size_t i = 0; i < channels_.size(); ++i)
          if (role(s, i, 0) || role(s, i, 1)) groups.push_back(i);
      if (auto* f = s.as<ForNode>(); f && groups.empty()) {
        Stmt inner = SeqNode::make(rewrite(stmts_of(f->body)), f->body->loc);
        out.push_back(ForNode::make(f->var, f->min, f->extent, f->for_kind, f->num_stages, f->skew,
                                    inner, f->loc));
        continue;
      }
      if (auto* n = s.as<IfNode>()) {
        Stmt t = SeqNode::make(rewrite(stmts_of(n->then_case)), n->loc);
        Stmt e = n->else_case.defined() ? SeqNode::make(rewrite(stmts_of(n->else_case)), n->loc)
                                        : Stmt();
        out.push_back(IfNode::make(n->cond, t, e, n->loc));
        continue;
      }
      for (size_t i = 0; i < channels_.size(); ++i)
        if (role(s, i, 0)) out.push_back(cross_wait(channels_[i].data, s->loc));
      for (size_t i = 0; i < channels_.size(); ++i)
        if (const TileOpNode* op = role(s, i, 1);
            op && channels_[i].credit >= 0 && (channels_[i].whole || first_part(*op)))
          out.push_back(cross_wait(channels_[i].credit, s->loc));
      if (auto* f = s.as<ForNode>()) {
        // A group: its copies of the grouped channels get no flags of their own.
        for (size_t i : groups) grouped_[i] = true;
        Stmt inner = SeqNode::make(rewrite(stmts_of(f->body)), f->body->loc);
        for (size_t i : groups) grouped_[i] = false;
        out.push_back(ForNode::make(f->var, f->min, f->extent, f->for_kind, f->num_stages, f->skew,
                                    inner, f->loc));
      } else {
        out.push_back(s);
      }
      for (size_t i = 0; i < channels_.size(); ++i) {
        const Channel& c = channels_[i];
        if (const TileOpNode* op = role(s, i, 1); op && (c.whole || last_part(*op))) {
          const Pipe pipe = op->op->pipe(*op, target_);
          out.push_back(cross_set(pipe, c.data, s->loc));
          if (!producer_[i]) producer_[i] = s->loc;
        }
        if (const TileOpNode* op = role(s, i, 0); op && c.credit >= 0) {
          const Pipe pipe = op->op->pipe(*op, target_);
          out.push_back(cross_set(pipe, c.credit, s->loc));
          if (!consumer_[i]) consumer_[i] = std::pair{pipe, s->loc};
        }
      }
    }
    return out;
  }

  /// The developer channel copy `s` guards, if `s` is an `if` on vid without an else around one
  /// such copy and intra-core syncs (a hybrid kernel's guards are the author's, paired by
  /// hybrid::mark_channels).
  Stmt guarded_channel_copy(const Stmt& s) const {
    auto* n = s.as<IfNode>();
    if (!n || n->else_case.defined() || !vid_.defined()) return Stmt();
    // Only split_aiv's turns: a guard on vid, which only the vector side has. A guard both
    // sides share (`if k > 0`) keeps the flags inside, on both sides alike.
    bool reads_vid = false;
    pre_order_visit(
        LetNode::make(Var("cond", n->cond.dtype()), n->cond, n->loc), [](const Stmt&) {},
        [&](const Expr& e) { reads_vid = reads_vid || e.get() == vid_.node(); });
    if (!reads_vid) return Stmt();
    // The copy, and the intra-core syncs insert_syncs put beside it inside the guard.
    Stmt copy;
    for (const Stmt& x : stmts_of(n->then_case)) {
      if (x.as<SyncNode>()) continue;
      if (copy.defined()) return Stmt();
      copy = x;
    }
    if (!copy.defined()) return Stmt();
    for (size_t i = 0; i < channels_.size(); ++i)
      if (!grouped_[i] && !channels_[i].whole &&
          (copy_of(copy, channels_[i].ws, 0) || copy_of(copy, channels_[i].ws, 1)))
        return copy;
    return Stmt();
  }

  /// `s` (a guard around the channel copy `copy`) with the copy's flags around it.
  void flag_copy(const Stmt& s, const Stmt& copy, std::vector<Stmt>& out) {
    for (size_t i = 0; i < channels_.size(); ++i)
      if (role(copy, i, 0)) out.push_back(cross_wait(channels_[i].data, s->loc));
    for (size_t i = 0; i < channels_.size(); ++i)
      if (const TileOpNode* op = role(copy, i, 1);
          op && channels_[i].credit >= 0 && (channels_[i].whole || first_part(*op)))
        out.push_back(cross_wait(channels_[i].credit, s->loc));
    out.push_back(s);
    for (size_t i = 0; i < channels_.size(); ++i) {
      const Channel& c = channels_[i];
      if (const TileOpNode* op = role(copy, i, 1); op && (c.whole || last_part(*op))) {
        out.push_back(cross_set(op->op->pipe(*op, target_), c.data, s->loc));
        if (!producer_[i]) producer_[i] = s->loc;
      }
      if (const TileOpNode* op = role(copy, i, 0); op && c.credit >= 0) {
        const Pipe pipe = op->op->pipe(*op, target_);
        out.push_back(cross_set(pipe, c.credit, s->loc));
        if (!consumer_[i]) consumer_[i] = std::pair{pipe, s->loc};
      }
    }
  }

  /// The copy reading (`which` = 0) or writing (1) channel `i`'s workspace that `s` is; or, for
  /// a hybrid channel, the first such copy in a loop `s` that runs around its copies in one
  /// scope only (a loop the other scope does not share: hybrid::mark_channels checked that
  /// each side has one such group per iteration of the shared loops). The group is then the
  /// write or the read: flagged after it, waited before it, as one copy is.
  const TileOpNode* role(const Stmt& s, size_t i, int which) const {
    const Channel& c = channels_[i];
    if (grouped_[i]) return nullptr;
    auto* f = s.as<ForNode>();
    if (!f) return copy_of(s, c.ws, which);
    if (!c.whole || shared_[i].count(f->var.node())) return nullptr;
    const TileOpNode* found = nullptr;
    pre_order_visit(s, [&](const Stmt& x) {
      if (!found) found = copy_of(x, c.ws, which);
    });
    return found;
  }

  // A producer may fill a slot in column parts, in order (lower_cube_ops drains a split
  // accumulator chunk by chunk): the credit is awaited before the first part and the data flag
  // raised after the last, on the parts' one pipe. A whole copy is both.
  static bool first_part(const TileOpNode& op) {
    return as_const_int(op.args[1].region.ranges.back().min) == 0;
  }
  static bool last_part(const TileOpNode& op) {
    const BufferRegion& r = op.args[1].region;
    auto mn = as_const_int(r.ranges.back().min), ext = as_const_int(r.ranges.back().extent);
    return mn && ext && *mn + *ext == as_const_int(r.buffer->shape.back());
  }

  const Target& target_;
  const std::vector<Channel>& channels_;
  std::vector<std::set<const VarNode*>> shared_;
  std::vector<bool> grouped_;  // per channel: inside a group loop being rewritten
  Var vid_;                    // the kernel's vid: a guard on it is split_aiv's turns
  // Per channel, in the scope being rewritten: the first consuming copy (its pipe and line: the
  // credits' pre-sets) and the first producing copy (its line: the drains).
  std::vector<std::optional<std::pair<Pipe, SourceLoc>>> consumer_;
  std::vector<std::optional<SourceLoc>> producer_;
};

/// AIV 1's part: the cross-core flags of the vector side with the loops, ifs and lets around
/// them (undefined when nothing is left).
Stmt flag_protocol(const Stmt& s) {
  if (!s.defined()) return s;
  if (auto* q = s.as<SeqNode>()) {
    std::vector<Stmt> out;
    bool any_flag = false;
    for (const Stmt& x : q->stmts) {
      Stmt p = flag_protocol(x);
      if (!p.defined()) continue;
      any_flag = any_flag || !p.as<LetNode>();
      out.push_back(p);
    }
    return any_flag ? SeqNode::make(std::move(out), s->loc) : Stmt();
  }
  if (auto* f = s.as<ForNode>()) {
    Stmt body = flag_protocol(f->body);
    return body.defined() ? ForNode::make(f->var, f->min, f->extent, f->for_kind, f->num_stages,
                                          f->skew, body, f->loc)
                          : Stmt();
  }
  if (auto* n = s.as<IfNode>()) {
    Stmt t = flag_protocol(n->then_case), e = flag_protocol(n->else_case);
    if (!t.defined() && !e.defined()) return Stmt();
    return IfNode::make(n->cond, t.defined() ? t : SeqNode::make({}, n->loc), e, n->loc);
  }
  if (s.as<LetNode>()) return s;
  if (auto* y = s.as<SyncNode>();
      y && (y->sync_kind == SyncKind::SetCrossFlag || y->sync_kind == SyncKind::WaitCrossFlag))
    return s;
  return Stmt();
}

/// The variables of the loops around the copies of `ws` in `scope_body`.
void loops_around(const Stmt& s, const BufferNode* ws, std::vector<const VarNode*>& loops,
                  std::set<const VarNode*>& out) {
  if (!s.defined()) return;
  if (auto* q = s.as<SeqNode>()) {
    for (const Stmt& x : q->stmts) loops_around(x, ws, loops, out);
  } else if (auto* f = s.as<ForNode>()) {
    loops.push_back(f->var.node());
    loops_around(f->body, ws, loops, out);
    loops.pop_back();
  } else if (auto* n = s.as<IfNode>()) {
    loops_around(n->then_case, ws, loops, out);
    loops_around(n->else_case, ws, loops, out);
  } else if (copy_of(s, ws, 0) || copy_of(s, ws, 1)) {
    out.insert(loops.begin(), loops.end());
  }
}

/// The loops around the first copy of `ws` in `s`, outermost first (empty: none); `found` says
/// whether there is one.
void loop_nest(const Stmt& s, const BufferNode* ws, std::vector<const ForNode*>& loops,
               bool& found) {
  if (!s.defined() || found) return;
  if (auto* q = s.as<SeqNode>()) {
    for (const Stmt& x : q->stmts) loop_nest(x, ws, loops, found);
  } else if (auto* f = s.as<ForNode>()) {
    loops.push_back(f);
    loop_nest(f->body, ws, loops, found);
    if (!found) loops.pop_back();
  } else if (auto* n = s.as<IfNode>()) {
    loop_nest(n->then_case, ws, loops, found);
    loop_nest(n->else_case, ws, loops, found);
  } else if (copy_of(s, ws, 0) || copy_of(s, ws, 1)) {
    found = true;
  }
}

bool inside_loop(const Stmt& scope_body, const BufferNode* ws) {
  bool found = false;
  std::function<void(const Stmt&, bool)> walk = [&](const Stmt& s, bool in_loop) {
    if (!s.defined() || found) return;
    if (auto* q = s.as<SeqNode>()) {
      for (const Stmt& x : q->stmts) walk(x, in_loop);
    } else if (auto* f = s.as<ForNode>()) {
      walk(f->body, true);
    } else if (auto* n = s.as<IfNode>()) {
      walk(n->then_case, in_loop);
      walk(n->else_case, in_loop);
    } else if (in_loop && (copy_of(s, ws, 0) || copy_of(s, ws, 1))) {
      found = true;
    }
  };
  walk(scope_body, false);
  return found;
}

}  // namespace

PrimFunc insert_channel_syncs(const PrimFunc& f, const Target& target) {
  const KernelNode* k = dev::find_kernel(f);
  if (!k) return f;
  // Idempotent: a kernel with cross-core flags already has its protocol (this pass writes every
  // cross-core flag of a developer kernel; the verifier keeps the author's out).
  bool synced = false;
  pre_order_visit(k->body, [&](const Stmt& s) {
    if (auto* y = s.as<SyncNode>())
      synced = synced || y->sync_kind == SyncKind::SetCrossFlag ||
               y->sync_kind == SyncKind::WaitCrossFlag;
  });
  if (synced) return f;
  std::vector<Stmt> top = stmts_of(k->body);
  // The workspaces (GM buffers declared in the kernel), in declaration order, and their ids;
  // then a hybrid kernel's parameters combine_cv made channels (hybrid::mark_channels: one
  // whole write and one whole read per iteration, of any shape).
  std::vector<std::pair<const BufferNode*, SourceLoc>> annotated;
  for (const Stmt& s : top)
    if (auto* a = s.as<AllocateNode>(); a && !a->is_view() && a->buffer->channel_slots > 0)
      annotated.push_back({a->buffer.get(), a->loc});
  for (const Param& p : f->params)
    if (p.is_tensor() && p.tensor->channel_slots > 0)
      annotated.push_back({p.tensor.get(), p.tensor->loc});
  std::vector<Channel> channels;
  int next_id = 0;
  for (const auto& [ws, loc] : annotated) {
    // A channel by its annotation (BufferNode::channel_slots), whose shape must agree.
    Channel c{ws};
    c.whole = std::any_of(f->params.begin(), f->params.end(),
                          [&](const Param& p) { return p.tensor.get() == ws; });
    const auto slots = ws->ndim() >= 2 ? as_const_int(ws->shape[1]) : std::nullopt;
    TL_ASSERT(c.whole || (slots && *slots == ws->channel_slots && *slots <= 8),
              "insert_channel_syncs: channel workspace '{}' of {} is not [num_blocks, "
              "channel_slots = {}, ...] with 1-8 slots (legalize_copies' form)",
              ws->name, f->name, ws->channel_slots);
    c.slots = ws->channel_slots;
    bool looped = false;
    for (const Stmt& x : top)
      if (auto* scope = x.as<ScopeNode>()) looped = looped || inside_loop(scope->body, c.ws);
    const int need = looped ? 2 : 1;
    if (next_id + need > kMaxChannelFlags)
      user_error(loc,
                 "kernel {}: the cross-core channels need more than {} cross-core flags (ids "
                 "0-{}; 11-14 "
                 "belong to sync_all): use fewer tiles that cross cores",
                 f->name, kMaxChannelFlags, kMaxChannelFlags - 1);
    c.data = next_id++;
    if (looped) c.credit = next_id++;
    channels.push_back(c);
  }
  if (channels.empty()) return f;
  // Per hybrid channel, the loops around its copies in both scopes.
  std::vector<std::set<const VarNode*>> shared(channels.size());
  for (size_t i = 0; i < channels.size(); ++i) {
    if (!channels[i].whole) continue;
    std::set<const VarNode*> per[2];
    for (const Stmt& x : top)
      if (auto* scope = x.as<ScopeNode>()) {
        std::vector<const VarNode*> loops;
        loops_around(scope->body, channels[i].ws, loops, per[scope->core == CoreKind::Cube]);
      }
    for (const VarNode* v : per[0])
      if (per[1].count(v)) shared[i].insert(v);
    // Separate cube and vector loops of equal trip count pair per iteration, past the loops
    // both scopes share (hybrid::paired_loops, as mark_channels checked them): their copies are
    // flagged one by one, as in a shared loop.
    std::vector<const ForNode*> nest[2];
    for (const Stmt& x : top)
      if (auto* scope = x.as<ScopeNode>()) {
        bool found = false;
        loop_nest(scope->body, channels[i].ws, nest[scope->core == CoreKind::Cube], found);
      }
    for (auto& n : nest)
      n.erase(n.begin(), std::find_if(n.begin(), n.end(), [&](const ForNode* l) {
                return !shared[i].count(l->var.node());
              }));
    const size_t paired = hybrid::paired_loops(nest[0], nest[1], channels[i].ws);
    for (auto& n : nest)
      for (size_t d = 0; d < paired; ++d) shared[i].insert(n[d]->var.node());
  }
  ChannelSyncs syncs(target, channels, std::move(shared));
  syncs.set_vid(k->vid);
  std::vector<Stmt> out;
  for (const Stmt& s : top) {
    auto* scope = s.as<ScopeNode>();
    if (!scope) {
      out.push_back(s);
      continue;
    }
    if (scope->core == CoreKind::Cube) {
      out.push_back(
          ScopeNode::make(CoreKind::Cube, syncs.rewrite_scope(scope->body, s->loc), s->loc));
      continue;
    }
    // The Vector scope: `if vid == 0: work` (split_cube_vector) gets AIV 1's flag protocol; work
    // split_aiv gave both AIVs has each run the whole protocol on its half of every tile.
    const IfNode* on_aiv0 = dev::aiv0_branch(*scope, *k);
    if (!on_aiv0) {
      out.push_back(
          ScopeNode::make(CoreKind::Vector, syncs.rewrite_scope(scope->body, s->loc), s->loc));
      continue;
    }
    TL_ASSERT(!on_aiv0->else_case.defined(),
              "insert_channel_syncs: the Vector scope of {} is `if vid == 0` with an else (not "
              "split_cube_vector's form)",
              f->name);
    Stmt work = syncs.rewrite_scope(on_aiv0->then_case, on_aiv0->loc);
    out.push_back(ScopeNode::make(
        CoreKind::Vector, IfNode::make(on_aiv0->cond, work, flag_protocol(work), on_aiv0->loc),
        s->loc));
  }
  return dev::with_kernel_body(f, std::move(out));
}

}  // namespace tl
