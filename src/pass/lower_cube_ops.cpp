// lower_cube_ops: turns the developer T::gemm into what the cube executes (docs/developer_mode.md):
// L1 -> L0A / L0B loads (MTE1, transposed for transpose_A / transpose_B) into two slots and one
// Mmad per K chunk (M), never gemm_v0 and its three PIPE_ALL barriers. It also folds a T::clear
// of an accumulator into the gemm that follows it: `clear(c); for k ...: gemm(a, b, c)` becomes
// `init = (k == 0)` on the first gemm into c, since the cube has no instruction that writes L0C
// but the Mmad. Runs after infer_scopes (the operands are physical) and before plan_memory (it
// creates the L0A / L0B buffers).
//
// Sizes are planned for the whole kernel, not gemm by gemm, because the gemms of one loop body
// are live together once pipeline_loops overlaps iterations (FlashAttention's Q K^T and P V):
//   - K chunks. Each gemm's chunk is the largest multiple of the fractal K whose slots fit L0A
//     and L0B; while the gemms' L0A (L0B) slots together exceed the memory, the largest gets a
//     smaller chunk. Two slots let the load of chunk c + 1 overlap the Mmad of chunk c once
//     insert_syncs has ordered them by slot; a fragment operand already in L0A / L0B is used
//     directly.
//   - N split. When the kernel's accumulators do not fit L0C together (FlashAttention at D = 512:
//     a 64 x 512 fp32 P V is all of L0C), an accumulator that one gemm writes from scratch
//     (init) and one whole copy then drains (to GM, or to the vector unit through a channel) is
//     computed in column chunks in two L0C slots, each drained as soon as it is done: the Mmads
//     of chunk n + 1 overlap the fixpipe of chunk n, and the accumulator never exists whole.
//     The drain's destination gets the chunks' columns; legalize_copies makes the parts of a
//     crossing one channel.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "developer.h"
#include "tl/ir_functor.h"
#include "tl/ir_ops.h"
#include "tl/op.h"
#include "tl/ops.h"
#include "tl/pass.h"

namespace tl {
namespace {

bool touches(const Stmt& s, const BufferNode* b) {
  bool hit = false;
  pre_order_visit(
      s,
      [&](const Stmt& x) {
        if (auto* t = x.as<TileOpNode>())
          for (const auto& a : t->args)
            if (a.is_region() && a.region.buffer.get() == b) hit = true;
        if (auto* st = x.as<StoreNode>(); st && st->buffer.get() == b) hit = true;
      },
      [&](const Expr& e) {
        if (auto* l = e.as<LoadNode>(); l && l->buffer.get() == b) hit = true;
      });
  return hit;
}

std::vector<int64_t> const_extents(const BufferRegion& r, const TileOpNode& g,
                                   const char* operand) {
  std::vector<int64_t> out;
  for (const Expr& e : region_extents(r)) {
    auto v = as_const_int(e);
    if (!v)
      user_error(g.loc,
                 "T.gemm: operand '{}' ({}) has a region extent that is not a constant; the cube "
                 "lowering needs constant tile shapes (M, N and K of a gemm are compile-time)",
                 operand, r.buffer->name);
    out.push_back(*v);
  }
  return out;
}

/// An int32 immediate (tile sizes and offsets are small; int64 would print as T.int64(...)).
Expr ci(int64_t v) {
  TL_ASSERT(v >= INT32_MIN && v <= INT32_MAX, "lower_cube_ops: tile size or offset {} beyond int32",
            v);
  return Expr(static_cast<int>(v));
}

/// The rows x cols view of an extents list (leading dimensions folded into rows).
std::pair<int64_t, int64_t> matrix(const std::vector<int64_t>& e) {
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < e.size(); ++i) rows *= e[i];
  return {rows, e.empty() ? 1 : e.back()};
}

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

/// Whether region `r` is all of its buffer.
bool whole(const BufferRegion& r) {
  if (r.ranges.empty()) return true;
  if (r.ranges.size() != r.buffer->shape.size()) return false;
  for (size_t d = 0; d < r.ranges.size(); ++d)
    if (as_const_int(r.ranges[d].min) != 0 || !as_const_int(r.ranges[d].extent) ||
        as_const_int(r.ranges[d].extent) != as_const_int(r.buffer->shape[d]))
      return false;
  return true;
}

// ---- clear folding ---------------------------------------------------------------------------

/// `clear(c); ... gemm(a, b, c)` -> the gemm's init; a clear that no gemm follows is an error.
class ClearFolding : public IRMutator {
 protected:
  Stmt mutate_(const SeqNode* n, const Stmt& self) override {
    std::vector<Stmt> out;
    bool changed = false;
    const auto& ss = n->stmts;
    for (size_t i = 0; i < ss.size(); ++i) {
      if (auto clear = as_accumulator_clear(ss[i])) {
        // Fold into the first later statement that touches the accumulator.
        const BufferNode* c = clear->args[0].region.buffer.get();
        size_t j = i + 1;
        while (j < ss.size() && !touches(ss[j], c)) ++j;
        if (j == ss.size())
          user_error(
              clear->loc,
              "T.clear of the accumulator '{}' is not followed by a T.gemm into it in the same "
              "block; the cube clears L0C only as part of a gemm (its init)",
              c->name);
        std::vector<Stmt> rest(ss.begin() + static_cast<long>(i) + 1, ss.end());
        rest[j - i - 1] = with_init(rest[j - i - 1], c, Expr(true), clear->loc);
        out.push_back(mutate(SeqNode::make(std::move(rest), n->loc)));
        return SeqNode::make(std::move(out), n->loc);
      }
      Stmt m = mutate(ss[i]);
      changed = changed || !m.same_as(ss[i]);
      out.push_back(m);
    }
    return changed ? SeqNode::make(std::move(out), n->loc) : self;
  }

  Stmt mutate_(const TileOpNode* n, const Stmt& self) override {
    if (n->op == &ops::tile::fill() && as_accumulator_clear(self))
      user_error(
          n->loc,
          "T.clear of the accumulator '{}' must be directly followed (in its block) by the T.gemm "
          "that accumulates into it",
          n->args[0].region.buffer->name);
    return IRMutator::mutate_(n, self);
  }

 private:
  /// `s` as a clear of an L0C accumulator (tile.fill with 0), else nullptr.
  const TileOpNode* as_accumulator_clear(const Stmt& s) const {
    auto* t = s.as<TileOpNode>();
    if (!t || t->op != &ops::tile::fill() || !t->args[0].is_region()) return nullptr;
    if (t->args[0].region.buffer->scope != MemScope::L0C) return nullptr;
    auto zero = t->args.size() > 1 && t->args[1].is_scalar() ? t->args[1].scalar : Expr();
    bool is_zero =
        zero.defined() && ((zero.as<IntImmNode>() && zero.as<IntImmNode>()->value == 0) ||
                           (zero.as<FloatImmNode>() && zero.as<FloatImmNode>()->value == 0.0));
    if (!is_zero)
      user_error(
          t->loc,
          "T.fill of the accumulator '{}' with a value other than 0: the cube writes L0C only "
          "through Mmad, so an accumulator can be cleared (T.clear) but not filled",
          t->args[0].region.buffer->name);
    return t;
  }

  /// `s` (the first statement touching accumulator `c` after its clear) with `cond` or-ed into
  /// the init of the gemm that first writes c.
  Stmt with_init(const Stmt& s, const BufferNode* c, Expr cond, const SourceLoc& clear_loc) {
    if (auto* t = s.as<TileOpNode>();
        t && t->op == &ops::gemm() && t->args[2].region.buffer.get() == c) {
      std::vector<TileArg> args = t->args;
      Expr old = args.size() > 3 && args[3].is_scalar() ? args[3].scalar : Expr(false);
      Expr init = as_const_int(old) == 0 ? cond : (old || cond);
      if (args.size() > 3)
        args[3] = init;
      else
        args.push_back(init);
      return TileOpNode::make(t->op, std::move(args), t->attrs, t->loc);
    }
    if (auto* f = s.as<ForNode>()) {
      Expr first = f->var == f->min;
      Stmt body = first_touch_with_init(
          f->body, c, as_const_int(cond) == 1 ? first : (cond && first), clear_loc);
      return ForNode::make(f->var, f->min, f->extent, f->for_kind, f->num_stages, f->skew, body,
                           f->loc);
    }
    if (s.as<SeqNode>()) return first_touch_with_init(s, c, cond, clear_loc);
    user_error(
        clear_loc,
        "T.clear of the accumulator '{}': the first statement after it that uses '{}' is {}, "
        "expected the T.gemm into it (possibly inside loops)",
        c->name, c->name, dev::describe(s));
  }
  Stmt first_touch_with_init(const Stmt& body, const BufferNode* c, Expr cond,
                             const SourceLoc& clear_loc) {
    std::vector<Stmt> ss;
    if (auto* seq = body.as<SeqNode>())
      ss = seq->stmts;
    else
      ss = {body};
    for (auto& s : ss)
      if (touches(s, c)) {
        s = with_init(s, c, cond, clear_loc);
        return SeqNode::make(std::move(ss), body->loc);
      }
    TL_ASSERT(false, "first_touch_with_init: no statement touches '{}'", c->name);
  }
};

// ---- planning --------------------------------------------------------------------------------

/// A gemm's sizes, checked (user errors name the operand).
struct GemmShape {
  int64_t M = 0, N = 0, K = 0, es = 0;
  DType dt{};
  bool ta = false, tb = false, a_in_l0 = false, b_in_l0 = false;
  Expr init;
};

GemmShape shape_of(const TileOpNode& g) {
  const BufferRegion &A = g.args[0].region, &B = g.args[1].region, &C = g.args[2].region;
  GemmShape s;
  s.ta = g.attr_bool("transpose_A");
  s.tb = g.attr_bool("transpose_B");
  s.init = g.args.size() > 3 && g.args[3].is_scalar() ? g.args[3].scalar : Expr(false);
  for (const auto& [r, name] : {std::pair{&A, "A"}, {&B, "B"}, {&C, "C"}}) {
    size_t rank = r->ranges.empty() ? r->buffer->ndim() : r->ranges.size();
    if (rank != 2)
      user_error(g.loc, "T.gemm: operand '{}' ({}) is a {}-D region; gemm multiplies 2-D tiles",
                 name, r->buffer->name, rank);
  }
  auto [ar, ac] = matrix(const_extents(A, g, "A"));
  auto [br, bc] = matrix(const_extents(B, g, "B"));
  auto [cr, cc] = matrix(const_extents(C, g, "C"));
  s.M = s.ta ? ac : ar;
  s.K = s.ta ? ar : ac;
  s.N = s.tb ? br : bc;
  if (s.M <= 0 || s.N <= 0 || s.K <= 0)
    user_error(g.loc, "T.gemm: M = {}, N = {}, K = {}; expected positive sizes", s.M, s.N, s.K);
  if ((s.tb ? bc : br) != s.K)
    user_error(g.loc, "T.gemm: A is {} x {} and B is {} x {}{}: their K dimensions disagree", s.M,
               s.K, br, bc, s.tb ? " (transposed)" : "");
  if (cr != s.M || cc != s.N)
    user_error(g.loc, "T.gemm: A x B is {} x {} but the accumulator C ('{}') is {} x {}", s.M, s.N,
               C.buffer->name, cr, cc);
  if (A.buffer->dtype != B.buffer->dtype)
    user_error(g.loc, "T.gemm: A is {} and B is {}; the cube multiplies operands of one dtype",
               dtype_name(A.buffer->dtype), dtype_name(B.buffer->dtype));
  s.dt = A.buffer->dtype;
  s.es = dtype_bytes(s.dt);
  s.a_in_l0 = A.buffer->scope == MemScope::L0A;
  s.b_in_l0 = B.buffer->scope == MemScope::L0B;
  return s;
}

/// How one gemm is lowered: its K chunk, and its N chunk when the accumulator is split.
struct GemmPlan {
  GemmShape s;
  const TileOpNode* gemm = nullptr;
  const TileOpNode* drain =
      nullptr;         // the one whole copy out of the accumulator, when it may be split
  int stages = 1;      // num_stages of the innermost T.Pipelined loop around the gemm
  int64_t kc = 0;      // K chunk
  int64_t bn = 0;      // N chunk of a split accumulator; 0: not split
  int part_slots = 1;  // L0C slots of the chunks of a split accumulator

  int64_t n_chunk() const { return bn ? bn : s.N; }
  int64_t k_chunks() const { return ceil_div(s.K, kc); }
  int64_t n_chunks() const { return ceil_div(s.N, n_chunk()); }
  /// A is loaded once when it is one K chunk (reused by every N chunk), else per (N, K) chunk.
  int a_slots() const { return k_chunks() > 1 ? 2 : 1; }
  int b_slots() const { return k_chunks() * n_chunks() > 1 ? 2 : 1; }
  int64_t l0a_bytes() const { return s.a_in_l0 ? 0 : a_slots() * s.M * kc * s.es; }
  int64_t l0b_bytes() const { return s.b_in_l0 ? 0 : b_slots() * kc * n_chunk() * s.es; }
};

/// Collects every gemm (in program order) and the L0C accumulators, and finds the drains of
/// accumulators that may be split.
class GemmCollector {
 public:
  void run(const Stmt& body) {
    walk(body, 1);
    // An accumulator may be split only when its gemm and its drain are its only uses.
    for (auto& p : plans) {
      if (!p.drain) continue;
      const BufferNode* c = p.gemm->args[2].region.buffer.get();
      int uses = 0;
      pre_order_visit(body, [&](const Stmt& x) {
        const bool leaf = !(x.as<SeqNode>() || x.as<ForNode>() || x.as<IfNode>() ||
                            x.as<ScopeNode>() || x.as<KernelNode>());
        if (leaf && touches(x, c)) ++uses;
      });
      if (uses != 2) p.drain = nullptr;
    }
  }

  std::vector<GemmPlan> plans;
  std::vector<const BufferNode*> accumulators;  // L0C buffers, in declaration order

 private:
  void walk(const Stmt& s, int stages) {
    if (!s.defined()) return;
    if (auto* q = s.as<SeqNode>()) {
      for (size_t i = 0; i < q->stmts.size(); ++i) {
        const Stmt& x = q->stmts[i];
        if (auto* g = x.as<TileOpNode>(); g && g->op == &ops::gemm()) {
          GemmPlan p{shape_of(*g), g};
          p.stages = stages;
          p.drain = drain_of(q->stmts, i);
          plans.push_back(p);
          continue;
        }
        walk(x, stages);
      }
    } else if (auto* f = s.as<ForNode>()) {
      walk(f->body, f->for_kind == ForKind::Pipelined ? std::max(1, f->num_stages) : stages);
    } else if (auto* n = s.as<IfNode>()) {
      walk(n->then_case, stages);
      walk(n->else_case, stages);
    } else if (auto* k = s.as<KernelNode>()) {
      walk(k->body, stages);
    } else if (auto* sc = s.as<ScopeNode>()) {
      walk(sc->body, stages);
    } else if (auto* a = s.as<AllocateNode>();
               a && !a->is_view() && a->buffer->scope == MemScope::L0C) {
      accumulators.push_back(a->buffer.get());
    } else if (auto* g = s.as<TileOpNode>(); g && g->op == &ops::gemm()) {
      GemmPlan p{shape_of(*g), g};
      p.stages = stages;
      plans.push_back(p);
    }
  }

  /// The whole copy out of the accumulator of the gemm ss[i], when that gemm writes all of it
  /// from scratch (init) and the copy is the next statement of the block touching it, with
  /// nothing in between touching its destination: the copy may then move up to the gemm.
  static const TileOpNode* drain_of(const std::vector<Stmt>& ss, size_t i) {
    const auto& g = *ss[i].as<TileOpNode>();
    const BufferRegion& C = g.args[2].region;
    if (g.args.size() < 4 || !g.args[3].is_scalar() || as_const_int(g.args[3].scalar) != 1 ||
        !whole(C))
      return nullptr;
    size_t j = i + 1;
    while (j < ss.size() && !touches(ss[j], C.buffer.get())) ++j;
    if (j == ss.size()) return nullptr;
    auto* c = ss[j].as<TileOpNode>();
    if (!c || c->op != &ops::copy() || c->args.size() != 2 || !c->args[0].is_region() ||
        !c->args[1].is_region() || c->args[0].region.buffer.get() != C.buffer.get() ||
        !whole(c->args[0].region))
      return nullptr;
    const BufferNode* dst = c->args[1].region.buffer.get();
    if (dst == C.buffer.get() || region_extents(c->args[1].region).empty()) return nullptr;
    // Nor may it pass a let (its region may name the variable) or the declaration of its
    // destination.
    for (size_t k = i + 1; k < j; ++k) {
      if (touches(ss[k], dst) || ss[k].as<LetNode>()) return nullptr;
      if (auto* a = ss[k].as<AllocateNode>(); a && a->buffer.get() == dst) return nullptr;
    }
    return c;
  }
};

/// The largest multiple of `step` in [step, limit] that divides n, when there is one at least
/// half of the largest multiple of `step` <= limit; else that largest multiple.
int64_t chunk_of(int64_t n, int64_t limit, int64_t step) {
  const int64_t most = limit / step * step;
  for (int64_t c = most; c >= step && c * 2 >= most; c -= step)
    if (n % c == 0) return c;
  return most;
}

/// Plans every gemm of the kernel (header comment, "Sizes").
class GemmPlanner {
 public:
  explicit GemmPlanner(const Target& t) : target_(t) {}

  void plan(std::vector<GemmPlan>& plans, const std::vector<const BufferNode*>& accumulators) {
    split_accumulators(plans, accumulators);
    for (auto& p : plans) p.kc = largest_chunk(p);
    share(plans, MemScope::L0A, [](const GemmPlan& p) { return p.l0a_bytes(); });
    share(plans, MemScope::L0B, [](const GemmPlan& p) { return p.l0b_bytes(); });
  }

 private:
  int64_t k_step(const GemmPlan& p) const {
    return std::max<int64_t>(16, target_.fractal_row_bytes / p.s.es);
  }

  bool fits(const GemmPlan& p) const {
    // In double: M, N, K of a malformed kernel may be huge.
    const double a =
        2.0 * static_cast<double>(p.s.M) * static_cast<double>(p.kc) * static_cast<double>(p.s.es);
    const double b = 2.0 * static_cast<double>(p.kc) * static_cast<double>(p.n_chunk()) *
                     static_cast<double>(p.s.es);
    return (p.s.a_in_l0 || a <= static_cast<double>(target_.cap(MemScope::L0A))) &&
           (p.s.b_in_l0 || b <= static_cast<double>(target_.cap(MemScope::L0B)));
  }

  /// The largest K chunk (a multiple of the fractal K) whose two slots fit L0A and L0B.
  int64_t largest_chunk(GemmPlan p) const {
    const TileOpNode& g = *p.gemm;
    if (p.s.a_in_l0 || p.s.b_in_l0) return p.s.K;  // an operand already in L0 is multiplied whole
    const int64_t step = k_step(p);
    p.kc = std::max<int64_t>(step, p.s.K / step * step);
    while (p.kc > step && !fits(p)) p.kc -= step;
    p.kc = std::min(p.kc, p.s.K);
    if (!fits(p))
      user_error(g.loc,
                 "T.gemm: an M x K chunk of {} x {} and a K x N chunk of {} x {} ({}) do not fit "
                 "L0A ({} B) "
                 "and L0B ({} B) twice; use smaller tiles",
                 p.s.M, p.kc, p.kc, p.n_chunk(), dtype_name(p.s.dt), target_.cap(MemScope::L0A),
                 target_.cap(MemScope::L0B));
    return p.kc;
  }

  /// While the gemms' slots in `scope` exceed it, the largest gets the next smaller K chunk
  /// (a divisor of K where one is near: 512 goes from 256 to 128, not to 224 + 224 + 64).
  template <class Bytes>
  void share(std::vector<GemmPlan>& plans, MemScope scope, Bytes bytes) {
    auto total = [&] {
      int64_t t = 0;
      for (const auto& p : plans) t += bytes(p);
      return t;
    };
    while (total() > target_.cap(scope)) {
      GemmPlan* largest = nullptr;
      for (auto& p : plans)
        if (!p.s.a_in_l0 && !p.s.b_in_l0 && p.kc > k_step(p) &&
            (!largest || bytes(p) > bytes(*largest)))
          largest = &p;
      if (!largest) return;  // plan_memory reports what does not fit
      largest->kc = chunk_of(largest->s.K, largest->kc - k_step(*largest), k_step(*largest));
    }
  }

  /// Splits accumulators into column chunks while the kernel's accumulators exceed L0C.
  void split_accumulators(std::vector<GemmPlan>& plans,
                          const std::vector<const BufferNode*>& accumulators) {
    std::unordered_map<const BufferNode*, int> stages;
    for (const auto& p : plans) {
      int& st = stages[p.gemm->args[2].region.buffer.get()];
      st = std::max(st, p.stages);
    }
    auto bytes = [](const BufferNode* b) {
      int64_t n = dtype_bytes(b->dtype);
      for (const Expr& e : b->shape) n *= as_const_int(e).value_or(0);
      return n;
    };
    std::unordered_map<const BufferNode*, int64_t>
        footprint;  // one copy each; a split one its chunks
    for (const BufferNode* b : accumulators) footprint[b] = bytes(b);
    auto total = [&] {
      int64_t t = 0;
      for (const auto& [b, n] : footprint) t += n;
      return t;
    };
    const int64_t cap = target_.cap(MemScope::L0C);
    std::vector<GemmPlan*> candidates;
    for (auto& p : plans)
      if (p.drain) candidates.push_back(&p);
    std::stable_sort(candidates.begin(), candidates.end(), [&](GemmPlan* a, GemmPlan* b) {
      return bytes(a->gemm->args[2].region.buffer.get()) >
             bytes(b->gemm->args[2].region.buffer.get());
    });
    for (GemmPlan* p : candidates) {
      if (total() <= cap) break;
      const BufferNode* c = p->gemm->args[2].region.buffer.get();
      // The others with the slots pipeline_loops would like to give them, else one copy each.
      int64_t others_slotted = 0, others = 0;
      for (const auto& [b, n] : footprint)
        if (b != c) {
          others += n;
          others_slotted += n * (stages.count(b) ? stages.at(b) : 1);
        }
      const int64_t row = p->s.M * dtype_bytes(c->dtype);
      for (int64_t room : {cap - others_slotted, cap - others})
        for (int slots : {2, 1}) {
          if (p->bn) break;
          const int64_t limit = room / (slots * row);
          if (limit < 16 || limit >= p->s.N) continue;
          p->bn = chunk_of(p->s.N, limit, 16);
          p->part_slots = ceil_div(p->s.N, p->bn) > 1 ? slots : 1;
          footprint[c] = p->part_slots * row * p->bn;
        }
    }
  }

  const Target& target_;
};

// ---- expansion -------------------------------------------------------------------------------

class CubeLowering : public IRMutator {
 public:
  explicit CubeLowering(const std::vector<GemmPlan>& plans) {
    for (const auto& p : plans) {
      plan_of_[p.gemm] = &p;
      if (p.bn) {
        drains_.insert(p.drain);
        split_.insert(p.gemm->args[2].region.buffer.get());
      }
    }
  }

 protected:
  Stmt mutate_(const SeqNode* n, const Stmt& self) override {
    std::vector<Stmt> out;
    bool changed = false;
    for (const Stmt& s : n->stmts) {
      // The drain of a split accumulator moved into its gemm; its declaration goes.
      if (auto* t = s.as<TileOpNode>(); t && drains_.count(t)) {
        changed = true;
        continue;
      }
      if (auto* a = s.as<AllocateNode>(); a && split_.count(a->buffer.get())) {
        changed = true;
        continue;
      }
      Stmt m = mutate(s);
      changed = changed || !m.same_as(s);
      out.push_back(m);
    }
    return changed ? SeqNode::make(std::move(out), n->loc) : self;
  }

  Stmt mutate_(const TileOpNode* n, const Stmt& self) override {
    if (n->op != &ops::gemm()) return IRMutator::mutate_(n, self);
    auto it = plan_of_.find(n);
    TL_ASSERT(it != plan_of_.end(), "lower_cube_ops: gemm at {} was not planned", n->loc.str());
    return expand(*n, *it->second);
  }

 private:
  /// gemm -> per (N, K) chunk: load the A and B chunks into their L0A / L0B slots, then mma;
  /// a split accumulator's chunk is drained after its last K chunk.
  Stmt expand(const TileOpNode& g, const GemmPlan& p) {
    const BufferRegion &A = g.args[0].region, &B = g.args[1].region, &C = g.args[2].region;
    const GemmShape& s = p.s;
    const int64_t kchunks = p.k_chunks(), nchunks = p.n_chunks(), bn = p.n_chunk();
    constexpr int64_t kMaxChunks = 256;  // each chunk is two loads and an mma, written out
    if (kchunks * nchunks > kMaxChunks)
      user_error(
          g.loc,
          "T.gemm: K = {} needs {} chunks of {} in L0A/L0B, more than {}; loop over K panels "
          "around the gemm instead (as gemm_dev does)",
          s.K, kchunks * nchunks, p.kc, kMaxChunks);

    std::vector<Stmt> out;
    Buffer a0, b0, part;
    if (!s.a_in_l0) {
      a0 = BufferNode::make(A.buffer->name + "_l0a", s.dt, {ci(p.a_slots() * s.M), ci(p.kc)},
                            MemScope::L0A, {}, -1, g.loc,
                            fmt::format("L0A slots of '{}'", A.buffer->name));
      out.push_back(AllocateNode::make(a0, g.loc));
    }
    if (!s.b_in_l0) {
      b0 = BufferNode::make(B.buffer->name + "_l0b", s.dt, {ci(p.b_slots() * p.kc), ci(bn)},
                            MemScope::L0B, {}, -1, g.loc,
                            fmt::format("L0B slots of '{}'", B.buffer->name));
      out.push_back(AllocateNode::make(b0, g.loc));
    }
    if (p.bn) {
      part = BufferNode::make(
          C.buffer->name + "_part", C.buffer->dtype, {ci(p.part_slots * s.M), ci(bn)},
          MemScope::L0C, {}, -1, g.loc,
          fmt::format("column chunks of '{}' ({} of {}; it does not fit L0C whole)", C.buffer->name,
                      bn, s.N));
      out.push_back(AllocateNode::make(part, g.loc));
    }
    int64_t b_load = 0;  // B chunks loaded so far: their slots alternate
    for (int64_t nc = 0; nc < nchunks; ++nc) {
      const int64_t n0 = nc * bn, nl = std::min(bn, s.N - n0);
      const int64_t pslot = nc % p.part_slots;
      TileArg c_op = C;
      if (p.bn) c_op = part.region({ci(pslot * s.M), ci(0)}, {ci(s.M), ci(nl)});
      const BufferRegion b_cols = p.bn ? sub(B, s.tb ? 0 : 1, n0, nl) : B;
      for (int64_t kci = 0; kci < kchunks; ++kci) {
        const int64_t k0 = kci * p.kc, kl = std::min(p.kc, s.K - k0);
        TileArg a_op = A, b_op = B;
        if (!s.a_in_l0) {
          const int64_t slot = kci % p.a_slots();
          BufferRegion dst = a0.region({ci(slot * s.M), ci(0)}, {ci(s.M), ci(kl)});
          if (kchunks > 1 || nc == 0)  // one K chunk: loaded once for every N chunk
            out.push_back(make_tile_op(ops::copy(), {sub(A, s.ta ? 0 : 1, k0, kl), dst},
                                       {{"transpose", s.ta}}, g.loc));
          a_op = dst;
        }
        if (!s.b_in_l0) {
          const int64_t slot = b_load++ % p.b_slots();
          BufferRegion dst = b0.region({ci(slot * p.kc), ci(0)}, {ci(kl), ci(nl)});
          out.push_back(make_tile_op(ops::copy(), {sub(b_cols, s.tb ? 1 : 0, k0, kl), dst},
                                     {{"transpose", s.tb}}, g.loc));
          b_op = dst;
        } else if (p.bn) {
          b_op = b_cols;
        }
        Expr chunk_init = kci == 0 ? s.init : Expr(false);
        out.push_back(make_tile_op(ops::mma(), {a_op, b_op, c_op, chunk_init}, {}, g.loc));
      }
      if (p.bn) {
        const TileOpNode& d = *p.drain;
        const BufferRegion dst = sub(full(d.args[1].region), 1, n0, nl);
        out.push_back(TileOpNode::make(d.op, {c_op, dst}, d.attrs, d.loc));
      }
    }
    return SeqNode::make(std::move(out), g.loc);
  }

  /// `r` with explicit ranges.
  static BufferRegion full(const BufferRegion& r) {
    BufferRegion out = r;
    if (out.ranges.empty())
      for (const Expr& s : r.buffer->shape) out.ranges.push_back({Expr(0), s});
    return out;
  }

  /// Region `r` restricted to [k0, k0 + kl) along its rows (dim 0 of a 2-D view) or columns
  /// (its last dimension).
  static BufferRegion sub(const BufferRegion& r, int along, int64_t k0, int64_t kl) {
    BufferRegion out = full(r);
    const size_t d = along == 1 ? out.ranges.size() - 1 : 0;
    TL_ASSERT(out.ranges.size() == 2 || along == 1,
              "gemm operand '{}' of rank {} chunked along rows", r.buffer->name, out.ranges.size());
    out.ranges[d] = {out.ranges[d].min + ci(k0), ci(kl)};
    return out;
  }

  std::unordered_map<const TileOpNode*, const GemmPlan*> plan_of_;
  std::unordered_set<const TileOpNode*> drains_;
  std::unordered_set<const BufferNode*> split_;
};

}  // namespace

PrimFunc lower_cube_ops(const PrimFunc& f, const Target& target) {
  if (!dev::is_developer(f)) return f;
  Stmt body = ClearFolding().mutate(f->body);
  GemmCollector gemms;
  gemms.run(body);
  GemmPlanner(target).plan(gemms.plans, gemms.accumulators);
  body = CubeLowering(gemms.plans).mutate(body);
  return body.same_as(f->body) ? f : with_body(f, body);
}

}  // namespace tl
