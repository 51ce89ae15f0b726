// pipeline_loops (lowered developer kernels, after vectorize_parallel; tl/pass.h): turns every
// `T.Pipelined(n, num_stages=S)` loop into a serial schedule in which copies and compute of
// neighbouring iterations overlap (docs/developer_mode.md section 2, the pass table):
//   - versioning: a buffer that each iteration writes before it reads it (privatisable) and
//     that two pipes touch gets S copies, "slots"; iteration t uses slot (t - min) mod S. A
//     buffer only one pipe touches (a vector scratch, a loop-carried accumulator) keeps one
//     copy: versioning it buys no overlap and costs memory (tilelang-ascend versions every
//     scratch buffer, and its auto-pipelined FlashAttention overflows UB). A channel's GM
//     workspace gets S slots on both cores, and insert_channel_syncs one credit per slot.
//   - cross-core skew: on a core that pushes into a channel before it first pops from one (the
//     cube of FlashAttention: S = QK^T out, then P in), the part before the first pop runs one
//     iteration ahead (A(t+1) before B(t)), so the cube computes the next scores while the
//     vector unit works on this tile's softmax. Only when no resource the two parts share is
//     written by either (slots apart). `T.Pipelined(..., skew=d)` (1 <= d < S) runs it d
//     iterations ahead (A(t+d) before B(t)): iterations t .. t+d are in flight, each in its
//     own slot, so a core whose in-order queues put A(t+1)'s loads behind B(t)'s wait for the
//     other core gets them issued a step earlier (docs/ops.md, FlashAttention's step cycle).
//   - the schedule is unrolled S times so that every slot is a constant: each slot is a buffer
//     of its own, which the unchanged insert_syncs orders like any other (a flag per slot, pre-set
//     before the loop, waited and set in the body, drained after it). A remainder of up to S-1
//     guarded steps, a prologue and an epilogue make it correct for any trip count >= 0, symbolic
//     ones and a nonzero loop start included; with constant trip counts the guards fold away.
// Why unroll instead of `k % S` slot expressions: the sync analysis then never has to reason
// about iteration distances modulo S; the price is S copies of the body in the IR.
// num_stages = 1 is a serial loop. A Pipelined loop inside another on one core is an error.
#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "developer.h"
#include "liveness.h"
#include "tl/arith.h"
#include "tl/ir_functor.h"
#include "tl/ir_ops.h"
#include "tl/op.h"
#include "tl/ops.h"
#include "tl/pass.h"
#include "tl/printer.h"
#include "tl/storage.h"
#include "tl/target.h"

namespace tl {
namespace {

using dev::stmts_of;
using dev::Touch;
using dev::touches_of;

/// A channel's workspace (BufferNode::channel_slots: legalize_copies' annotation).
bool is_workspace(const BufferNode* b) {
  return b->channel_slots > 0;
}

/// The copy into (which = 1) or out of (which = 0) a GM workspace that `s` is, if it is one.
const BufferNode* channel_copy(const Stmt& s, int which,
                               const std::set<const BufferNode*>& workspaces) {
  auto* op = s.as<TileOpNode>();
  if (!op || op->op != &ops::copy() || op->args.size() != 2 || !op->args[which].is_region())
    return nullptr;
  const BufferNode* b = op->args[which].region.buffer.get();
  return workspaces.count(b) ? b : nullptr;
}

/// Replaces versioned buffers by one slot's buffers, and a versioned workspace's slot start.
class SlotRewriter : public IRMutator {
 public:
  SlotRewriter(const std::unordered_map<const BufferNode*, std::vector<Buffer>>& slots, int slot)
      : slots_(slots), slot_(slot) {}
  using IRMutator::mutate;

  Buffer mutate_buffer(const Buffer& b) override {
    auto it = slots_.find(b.get());
    return it == slots_.end() ? b : it->second[static_cast<size_t>(slot_)];
  }
  BufferRegion mutate_region(const BufferRegion& r) override {
    BufferRegion out = IRMutator::mutate_region(r);
    if (auto it = slots_.find(r.buffer.get()); it != slots_.end() && is_workspace(r.buffer.get()))
      out.ranges[1].min = Expr(slot_);
    return out;
  }

 private:
  const std::unordered_map<const BufferNode*, std::vector<Buffer>>& slots_;
  int slot_;
};

class PipelineLoops {
 public:
  PipelineLoops(const PrimFunc& f, const Target& t, bool overlap)
      : f_(f), target_(t), overlap_(overlap), taken_(arith::names_in(f)) {
    // Loop numbers of the slots (BufferNode::slot) after any the function has already.
    pre_order_visit(f->body, [&](const Stmt& x) {
      if (auto* a = x.as<AllocateNode>(); a && a->buffer->slot.defined())
        next_loop_ = std::max(next_loop_, a->buffer->slot.loop + 1);
    });
  }

  PrimFunc run() {
    const KernelNode* k = dev::find_kernel(f_);
    if (!k) return f_;
    std::vector<Stmt> top = stmts_of(k->body);
    bool any = false;
    for (const Stmt& s : top)
      pre_order_visit(s, [&](const Stmt& x) {
        if (auto* l = x.as<ForNode>(); l && l->for_kind == ForKind::Pipelined) any = true;
      });
    if (!any) return f_;
    for (const Stmt& s : top)
      if (auto* a = s.as<AllocateNode>(); a && !a->is_view() && is_workspace(a->buffer.get()))
        workspaces_.insert(a->buffer.get());
    if (overlap_) plan_workspaces(top);
    std::vector<Stmt> out;
    for (const Stmt& s : top) {
      if (auto* a = s.as<AllocateNode>(); a && slots_.count(a->buffer.get())) {
        out.push_back(AllocateNode::make(slots_.at(a->buffer.get())[0], a->loc));
        continue;
      }
      if (auto* scope = s.as<ScopeNode>()) {
        scope_ = scope;
        out.push_back(
            ScopeNode::make(scope->core, drop_replaced(rewrite(scope->body, false)), s->loc));
        continue;
      }
      out.push_back(s);
    }
    return dev::with_kernel_body(f_, std::move(out));
  }

 private:
  /// A workspace gets slots when every copy of it is a top-level statement of the body of a
  /// T.Pipelined loop with num_stages >= 2, all with one num_stages (the loop split_cube_vector
  /// projected on both cores): then each side's copies run once per iteration, in the same
  /// iteration order, and slot (t - min) mod S names the same tile on both.
  void plan_workspaces(const std::vector<Stmt>& top) {
    std::map<const BufferNode*, int> stages;  // -1: not versionable
    std::function<void(const Stmt&)> walk = [&](const Stmt& s) {
      if (!s.defined()) return;
      if (auto* q = s.as<SeqNode>()) {
        for (const Stmt& x : q->stmts) walk(x);
      } else if (auto* l = s.as<ForNode>()) {
        if (l->for_kind == ForKind::Pipelined && l->num_stages >= 2) {
          for (const Stmt& x : stmts_of(l->body)) {
            for (int which : {0, 1})
              if (const BufferNode* ws = channel_copy(x, which, workspaces_)) {
                auto [it, fresh] = stages.try_emplace(ws, l->num_stages);
                if (!fresh && it->second != l->num_stages) it->second = -1;
              }
            if (!channel_copy(x, 0, workspaces_) && !channel_copy(x, 1, workspaces_)) walk(x);
          }
        } else {
          walk(l->body);
        }
      } else if (auto* n = s.as<IfNode>()) {
        walk(n->then_case);
        walk(n->else_case);
      } else if (auto* sc = s.as<ScopeNode>()) {
        walk(sc->body);
      } else {
        // A copy anywhere else (nested in the loop body, or in no pipelined loop): one slot.
        for (int which : {0, 1})
          if (const BufferNode* ws = channel_copy(s, which, workspaces_)) stages[ws] = -1;
      }
    };
    for (const Stmt& s : top) walk(s);
    for (const auto& [ws, S] : stages)
      if (S >= 2)
        make_slots(
            ws, S,
            fmt::format("{} slots of the channel workspace '{}' (T.Pipelined)", S, ws->name));
  }

  /// `loop`: the number of the T.Pipelined loop the slots are for (BufferNode::slot of the
  /// on-chip ones; a workspace's slots are its channel_slots).
  void make_slots(const BufferNode* b, int S, const std::string& origin, int loop = -1) {
    std::vector<Buffer> v;
    if (is_workspace(b)) {
      std::vector<Expr> shape = b->shape;
      shape[1] = Expr(S);
      v.push_back(BufferNode::make(
          b->name, b->dtype, shape, b->scope, {}, b->address, b->loc,
          b->origin.empty() ? origin : b->origin + ", " + std::to_string(S) + " slots", S,
          b->l2_cache));
      v.resize(static_cast<size_t>(S), v[0]);
    } else {
      for (int i = 0; i < S; ++i) {
        std::string name = fresh_name(fmt::format("{}_{}", b->name, i));
        v.push_back(BufferNode::make(
            name, b->dtype, b->shape, b->scope, b->strides, -1, b->loc,
            fmt::format("slot {} of {} of '{}' ({})", i, S, b->name, origin), 0,
            L2CacheMode::Normal, PipelineSlot{.loop = loop, .index = i, .count = S}));
      }
    }
    slots_[b] = std::move(v);
  }

  std::string fresh_name(std::string base) {
    std::string name = base;
    for (int i = 1; taken_.count(name); ++i) name = fmt::format("{}_{}", base, i);
    taken_.insert(name);
    return name;
  }

  /// Rewrites the Pipelined loops in `s`; `inside` is true within one (nesting is an error).
  Stmt rewrite(const Stmt& s, bool inside) {
    if (!s.defined()) return s;
    if (auto* q = s.as<SeqNode>()) {
      std::vector<Stmt> out;
      for (const Stmt& x : q->stmts) out.push_back(rewrite(x, inside));
      return SeqNode::make(std::move(out), s->loc);
    }
    if (auto* l = s.as<ForNode>()) {
      if (l->for_kind == ForKind::Pipelined) {
        if (inside)
          user_error(
              l->loc,
              "T.Pipelined inside another T.Pipelined loop on the {} core: pipeline one of the two "
              "(the outer loop's stages already overlap the inner loop's iterations); make the "
              "other "
              "T.serial",
              core_name(scope_->core));
        Stmt body = rewrite(l->body, true);
        return pipeline(*l, body);
      }
      return ForNode::make(l->var, l->min, l->extent, l->for_kind, l->num_stages, l->skew,
                           rewrite(l->body, inside), l->loc);
    }
    if (auto* n = s.as<IfNode>())
      return IfNode::make(n->cond, rewrite(n->then_case, inside), rewrite(n->else_case, inside),
                          n->loc);
    return s;
  }

  /// The scope without the declarations of buffers whose slots replaced them.
  Stmt drop_replaced(const Stmt& s) const {
    if (!s.defined()) return s;
    if (auto* a = s.as<AllocateNode>();
        a && slots_.count(a->buffer.get()) && !is_workspace(a->buffer.get()))
      return Stmt();
    if (auto* q = s.as<SeqNode>()) {
      std::vector<Stmt> out;
      for (const Stmt& x : q->stmts) out.push_back(drop_replaced(x));
      return SeqNode::make(std::move(out), s->loc);
    }
    if (auto* l = s.as<ForNode>())
      return ForNode::make(l->var, l->min, l->extent, l->for_kind, l->num_stages, l->skew,
                           drop_replaced(l->body), l->loc);
    if (auto* n = s.as<IfNode>())
      return IfNode::make(n->cond, drop_replaced(n->then_case), drop_replaced(n->else_case),
                          n->loc);
    return s;
  }

  static std::string_view core_name(CoreKind k) { return k == CoreKind::Cube ? "cube" : "vector"; }

  /// Whether the scope touches `b` anywhere but inside `loop`'s body.
  bool touched_outside(const BufferNode* b, const ForNode& loop) const {
    bool found = false;
    auto look = [&](const Stmt& s) {
      for (const Touch& t : touches_of(s, target_)) found = found || t.buffer == b;
    };
    auto look_expr = [&](const Expr& e) { look(LetNode::make(Var("_"), e)); };
    std::function<void(const Stmt&)> walk = [&](const Stmt& s) {
      if (!s.defined() || found) return;
      if (s.get() == &loop) {
        look_expr(loop.min);
        look_expr(loop.extent);
      } else if (auto* q = s.as<SeqNode>()) {
        for (const Stmt& x : q->stmts) walk(x);
      } else if (auto* l = s.as<ForNode>()) {
        look_expr(l->min);
        look_expr(l->extent);
        walk(l->body);
      } else if (auto* n = s.as<IfNode>()) {
        look_expr(n->cond);
        walk(n->then_case);
        walk(n->else_case);
      } else {
        look(s);
      }
    };
    walk(scope_->body);
    return found;
  }

  Stmt pipeline(const ForNode& loop, const Stmt& body_in) {
    const int S = loop.num_stages;
    if (S <= 1 || !overlap_)
      return ForNode::make(loop.var, loop.min, loop.extent, ForKind::Serial, 0, body_in, loop.loc);
    if (loop.skew < 1 || (loop.skew > 1 && loop.skew >= S))
      user_error(loop.loc,
                 "T.Pipelined(num_stages={}, skew={}): skew must be >= 1 and below num_stages "
                 "(iterations t .. t + skew are in flight at once, each in its own slot)",
                 S, loop.skew);
    std::vector<Stmt> body = stmts_of(body_in);
    // Top-level declarations move before the loop: each slot must keep its bytes for the whole
    // loop (declared inside, plan_memory would let the slots of one iteration share them).
    std::vector<Stmt> hoisted, rest;
    for (const Stmt& s : body) {
      auto* a = s.as<AllocateNode>();
      (a && !a->is_view() ? hoisted : rest).push_back(s);
    }
    body = std::move(rest);
    // Buffers to version: declared in the body, or declared outside and touched only here;
    // privatisable; touched by two pipes. Largest first out while the scope would overflow.
    // In order of first touch: the slots' declarations (and so their addresses) must not follow
    // the buffers' heap addresses, which differ between builds of the compiler.
    std::map<const BufferNode*, std::set<Pipe>> pipes;
    std::vector<const BufferNode*> touched;
    for (const Stmt& s : body)
      for (const Touch& t : touches_of(s, target_))
        if (t.buffer->scope != MemScope::GM) {
          if (!pipes.count(t.buffer)) touched.push_back(t.buffer);
          pipes[t.buffer].insert(t.pipe);
        }
    std::set<const BufferNode*> in_body;
    for (const Stmt& h : hoisted) in_body.insert(h.as<AllocateNode>()->buffer.get());
    std::vector<const BufferNode*> versioned;
    for (const BufferNode* b : touched) {
      const std::set<Pipe>& ps = pipes.at(b);
      if (ps.size() < 2 || !dev::privatisable(b, body, target_)) continue;
      if (!in_body.count(b) && touched_outside(b, loop)) continue;
      versioned.push_back(b);
    }
    fit_capacity(versioned, S, loop, in_body);
    const std::string where = fmt::format("T.Pipelined at {}, {} stages", loop.loc.str(), S);
    const int number = next_loop_++;
    for (const BufferNode* b : versioned) make_slots(b, S, where, number);
    std::vector<const BufferNode*> extra;
    size_t split = skew_point(body, versioned, in_body, loop, extra);
    if (split > 0 && !extra.empty()) {
      // The skew needs these slots too; without room for all of them, no skew.
      std::vector<const BufferNode*> all = versioned, kept;
      all.insert(all.end(), extra.begin(), extra.end());
      kept = all;
      fit_capacity(kept, S, loop, in_body);
      if (kept.size() == all.size()) {
        for (const BufferNode* b : extra) make_slots(b, S, where, number);
        versioned = std::move(all);
      } else {
        split = 0;
      }
    }
    // Nothing to overlap (no slots fit, no channel has slots, no skew): the serial loop as
    // written, rather than an unrolled copy of it that buys nothing.
    bool channel_slots = false;
    for (const Stmt& s : body)
      for (int which : {0, 1})
        if (const BufferNode* ws = channel_copy(s, which, workspaces_))
          channel_slots = channel_slots || slots_.count(ws);
    if (versioned.empty() && split == 0 && !channel_slots)
      return ForNode::make(loop.var, loop.min, loop.extent, ForKind::Serial, 0, body_in, loop.loc);
    // The declarations: the hoisted ones (slots for the versioned), and here too the slots of
    // buffers declared before the loop (drop_replaced removes their own declaration).
    std::vector<Stmt> out;
    for (const Stmt& h : hoisted) {
      const Buffer& b = h.as<AllocateNode>()->buffer;
      if (auto it = slots_.find(b.get()); it != slots_.end()) {
        for (const Buffer& s : it->second) out.push_back(AllocateNode::make(s, h->loc));
      } else {
        out.push_back(h);
      }
    }
    for (const BufferNode* b : versioned)
      if (!in_body.count(b))
        for (const Buffer& s : slots_.at(b)) out.push_back(AllocateNode::make(s, loop.loc));

    std::vector<std::vector<Stmt>> stages;
    if (split > 0) {
      stages.emplace_back(body.begin(), body.begin() + static_cast<std::ptrdiff_t>(split));
      stages.emplace_back(body.begin() + static_cast<std::ptrdiff_t>(split), body.end());
    } else {
      stages.push_back(body);
    }
    schedule(loop, stages, S, split > 0 ? loop.skew : 1, out);
    return SeqNode::make(std::move(out), loop.loc);
  }

  /// Drops versioning, largest buffer first, while a memory of the scope would overflow: the
  /// peak, over the loop's statements, of the bytes live there (plan_memory's live ranges), with
  /// each versioned buffer counted once per slot and every declaration hoisted out of the body
  /// live for the whole loop.
  void fit_capacity(std::vector<const BufferNode*>& versioned, int S, const ForNode& loop,
                    const std::set<const BufferNode*>& in_body) const {
    Liveness lv;
    lv.visit(scope_->body);
    lv.finish();
    const auto [lo, hi] = lv.loop_range.at(&loop);
    auto bytes = [&](const BufferLife& b) {
      const int64_t a = planning_alignment(target_, b.buffer->scope);
      return (b.bytes + a - 1) / a * a;
    };
    auto overflow = [&](const std::set<const BufferNode*>& vs) -> std::optional<MemScope> {
      for (int64_t p = lo; p <= hi; ++p) {
        std::map<MemScope, int64_t> live;
        for (const BufferLife& b : lv.buffers) {
          const BufferNode* n = b.buffer.get();
          if (in_body.count(n) || vs.count(n) || (b.first <= p && p <= b.last))
            live[n->scope] += bytes(b) * (vs.count(n) ? S : 1);
        }
        for (const auto& [scope, total] : live)
          if (total > target_.cap(scope)) return scope;
      }
      return std::nullopt;
    };
    std::map<const BufferNode*, int64_t> size;
    for (const BufferLife& b : lv.buffers) size[b.buffer.get()] = bytes(b);
    std::stable_sort(versioned.begin(), versioned.end(),
                     [&](auto* a, auto* b) { return size[a] > size[b]; });
    std::set<const BufferNode*> vs(versioned.begin(), versioned.end());
    while (auto scope = overflow(vs)) {
      auto it = std::find_if(versioned.begin(), versioned.end(),
                             [&](auto* b) { return vs.count(b) && b->scope == *scope; });
      if (it == versioned.end()) break;  // over without slots: plan_memory reports it
      vs.erase(*it);
    }
    std::erase_if(versioned, [&](auto* b) { return !vs.count(b); });
  }

  /// Where the body splits into a part that runs one iteration ahead and the rest (0: no
  /// skew): at the first pop from a channel with slots that comes after a push into one, when
  /// no scalar declaration sits before it and every resource the two parts share and either
  /// writes has slots (iteration t+1's differs from t's) or can get them (`extra`: privatisable
  /// buffers, such as the softmax statistics the vector unit computes before its push and uses
  /// after its pop).
  size_t skew_point(const std::vector<Stmt>& body, const std::vector<const BufferNode*>& versioned,
                    const std::set<const BufferNode*>& in_body, const ForNode& loop,
                    std::vector<const BufferNode*>& extra) const {
    std::set<const BufferNode*> with_slots;  // channel workspaces
    for (const auto& [b, v] : slots_)
      if (is_workspace(b)) with_slots.insert(b);
    std::set<const BufferNode*> sloted(versioned.begin(), versioned.end());
    sloted.insert(with_slots.begin(), with_slots.end());
    size_t split = 0;
    bool pushed = false;
    for (size_t i = 0; i < body.size() && split == 0; ++i) {
      if (body[i].as<LetNode>()) return 0;
      if (channel_copy(body[i], 0, with_slots) && pushed) split = i;
      if (channel_copy(body[i], 1, with_slots)) pushed = true;
    }
    if (split == 0) return 0;
    std::map<const BufferNode*, std::pair<bool, bool>> a, b;  // read, write
    std::vector<const BufferNode*> first_part;                // a's keys in order of first touch
    for (size_t i = 0; i < body.size(); ++i)
      for (const Touch& t : touches_of(body[i], target_)) {
        if (sloted.count(t.buffer)) continue;
        if (i < split && !a.count(t.buffer)) first_part.push_back(t.buffer);
        auto& rw = (i < split ? a : b)[t.buffer];
        rw.first = rw.first || t.read;
        rw.second = rw.second || t.write;
      }
    // In order of first touch, not of the map's keys: `extra` orders the slots' declarations
    // and names, which must not follow the buffers' heap addresses (they differ between runs).
    for (const BufferNode* buf : first_part) {
      const auto& rw = a.at(buf);
      auto it = b.find(buf);
      if (it == b.end() || (!rw.second && !it->second.second)) continue;
      const bool local =
          in_body.count(buf) || (buf->scope != MemScope::GM && !touched_outside(buf, loop));
      if (!local || !dev::privatisable(buf, body, target_)) return 0;
      extra.push_back(buf);
    }
    return split;
  }

  /// Stage p of iteration t runs at step t + p d (d: the skew depth, 1 unless the loop asks for
  /// more, 1 <= d < S); a step runs its stages newest iteration first. Steps are unrolled S at a
  /// time so that every slot is a constant (iteration t's slot is t mod S in both stages).
  void schedule(const ForNode& loop, const std::vector<std::vector<Stmt>>& stages, int S, int d,
                std::vector<Stmt>& out) {
    const int P = static_cast<int>(stages.size());
    const int lag = P == 2 ? d : 0;  // steps from an iteration's first stage to its last
    const Expr n = loop.extent;
    // One step: stage p of iteration `first - p d` (an expression) in slot (slot0 - p d) mod S.
    auto step = [&](const Expr& first, int slot0, std::vector<Stmt>& into) {
      for (int p = 0; p < P; ++p) {
        const int slot = ((slot0 - p * d) % S + S) % S;
        Expr iter = simplify(loop.min + first - Expr(p * d));
        into.push_back(instance(loop, stages[static_cast<size_t>(p)], iter, slot));
      }
    };
    auto guarded = [&](const Expr& cond, std::vector<Stmt> then, std::vector<Stmt>& into) {
      Expr c = simplify(cond);
      if (auto v = as_const_int(c)) {
        if (*v) into.insert(into.end(), then.begin(), then.end());
        return;
      }
      into.push_back(IfNode::make(c, SeqNode::make(std::move(then), loop.loc), Stmt(), loop.loc));
    };
    // Prologue: the first stage of iterations 0 .. d-1 alone (P = 2).
    for (int i = 0; i < lag; ++i) {
      std::vector<Stmt> pro{
          instance(loop, stages[0], i == 0 ? loop.min : loop.min + Expr(i), i % S)};
      guarded(n >= Expr(i + 1), std::move(pro), out);
    }
    // Steady steps lag .. n-1, S per iteration of the new loop, then the remainder.
    const Expr steady = simplify(max(n - Expr(lag), Expr(0)));
    const Expr trips = simplify(steady / Expr(S));
    // One trip is written out: a loop of one iteration would make insert_syncs order its body
    // over a back edge that never runs (flags no execution needs).
    auto t = as_const_int(trips);
    if (t && *t == 1) {
      for (int i = 0; i < S; ++i) step(Expr(lag + i), lag + i, out);
    } else if (!t || *t > 0) {
      Var j(fresh_name(loop.var.name() + "_o"));
      std::vector<Stmt> unrolled;
      for (int i = 0; i < S; ++i) step(Expr(lag) + Expr(j) * Expr(S) + Expr(i), lag + i, unrolled);
      out.push_back(ForNode::make(j, Expr(0), trips, ForKind::Serial, 0,
                                  SeqNode::make(std::move(unrolled), loop.loc), loop.loc));
    }
    for (int i = 0; i + 1 < S; ++i) {
      std::vector<Stmt> rem;
      step(Expr(lag) + trips * Expr(S) + Expr(i), lag + i, rem);
      guarded(Expr(i) < steady % Expr(S), std::move(rem), out);
    }
    // Epilogue: the second stage of the last d iterations (n-d+e, e < d, those >= 0), each in
    // its slot, oldest first (P = 2).
    for (int e = 0; e < lag; ++e)
      for (int i = 0; i < S; ++i) {
        const Expr back(lag - e);
        std::vector<Stmt> epi{instance(loop, stages[1], loop.min + n - back, i)};
        guarded(n >= back && (n - back) % Expr(S) == Expr(i), std::move(epi), out);
      }
  }

  /// The statements of one stage for one iteration: the loop variable replaced, the slot's
  /// buffers in, and fresh binders for what the statements declare.
  Stmt instance(const ForNode& loop, const std::vector<Stmt>& stmts, const Expr& iter, int slot) {
    SlotRewriter slots(slots_, slot);
    Stmt s = slots.mutate(SeqNode::make(stmts, loop.body->loc));
    s = arith::substitute(s, arith::VarMap{{loop.var.node(), iter}});
    return arith::clone_fresh(s, taken_);
  }

  const PrimFunc& f_;
  const Target& target_;
  const bool overlap_;
  std::unordered_set<std::string> taken_;
  int next_loop_ = 0;  // the number the next T.Pipelined loop's slots get (BufferNode::slot)
  std::set<const BufferNode*> workspaces_;
  std::unordered_map<const BufferNode*, std::vector<Buffer>> slots_;
  const ScopeNode* scope_ = nullptr;
};

}  // namespace

PrimFunc pipeline_loops(const PrimFunc& f, const Target& target, bool overlap) {
  if (dev::developer_threads(f) == 0) {
    // An expert kernel (TileLang-Ascend's T.Pipelined inside a T.Scope): its buffers, addresses
    // and syncs are the author's, so no slots and no overlap; the serial loop computes what
    // the author wrote (docs/python.md, "Automation inside expert scopes").
    struct Serialiser : IRMutator {
      Stmt mutate_(const ForNode* l, const Stmt& self) override {
        Stmt body = mutate(l->body);
        if (l->for_kind != ForKind::Pipelined)
          return body.same_as(l->body) ? self
                                       : ForNode::make(l->var, l->min, l->extent, l->for_kind,
                                                       l->num_stages, l->skew, body, l->loc);
        return ForNode::make(l->var, l->min, l->extent, ForKind::Serial, 0, body, l->loc);
      }
    } serialiser;
    Stmt body = serialiser.mutate(f->body);
    return body.same_as(f->body) ? f : with_body(f, body);
  }
  return PipelineLoops(f, target, overlap).run();
}

}  // namespace tl
