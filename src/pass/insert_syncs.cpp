// insert_syncs (tl/pass.h): the synchronisation of a developer kernel, written by the compiler.
// Each T::Scope without synchronisation of its own becomes a tree of blocks (the scope body,
// loop bodies, if branches) whose statements issue instructions (pipe + conservative byte
// ranges per memory, from the planned addresses, so plan_memory's reuse counts). An abstract
// walk keeps every access that some pipe has not yet seen complete (all of them, not only the
// latest per buffer) with the pipes that know it is done and the flags in flight that carry it,
// iterates loops to a fixpoint and joins if branches (pending: union; knowledge: intersection).
// When an access conflicts with a pending one its pipe does not know about, the rule table
// (tl/sync_rules.h, shared with the hazard checker) says what orders them: pipe_barrier for a
// pipe that overlaps itself, otherwise a set_flag/wait_flag pair placed in the nearest block
// that holds both ends (set right after the source statement, wait right before the
// destination), or around a loop for a dependence over its back edge (pre-set before the loop,
// wait/set in the body, drain after it: balanced for any trip count). Placements are planned,
// the walk reruns until it finds nothing unordered, and event ids are coloured by live interval
// per pipe pair within the target's budget (a pair that runs out is coarsened to set+wait next
// to the destination; failing that, an error lists the live flags).
#include <algorithm>
#include <climits>
#include <map>
#include <set>
#include <tuple>

#include "developer.h"
#include "tl/arith.h"
#include "tl/ir_functor.h"
#include "tl/ir_ops.h"
#include "tl/op.h"
#include "tl/ops.h"
#include "tl/pass.h"
#include "tl/printer.h"
#include "tl/storage.h"
#include "tl/sync_rules.h"

namespace tl {
namespace {

constexpr uint8_t kAllPipes = 0x7f;  // S V M MTE1 MTE2 MTE3 FIX: known to all means done
uint8_t bit(Pipe p) { return static_cast<uint8_t>(1u << static_cast<unsigned>(p)); }

/// Bytes of one memory an access may touch: on-chip, a byte interval of the planned
/// addresses; GM, a tensor and a byte interval within it (the whole tensor unless the region
/// is constant).
struct Region {
  MemScope scope = MemScope::GM;
  const BufferNode* tensor = nullptr;
  int64_t lo = 0, hi = INT64_MAX;
  /// GM only: the region as written when its bounds are not constants but use only variables
  /// that hold one value in the whole scope (cid, vid, dynamic sizes, lets outside loops), so
  /// any two accesses compare exactly (arith::regions_overlap, both at the same values): a
  /// workspace slot [cid, 1] against slot [cid, 0], row tiles cid * 64 and cid * 64 + 32.
  std::shared_ptr<const BufferRegion> invariant;
  /// GM only: a dimension that starts at c * v + (something invariant in v's loop), v the
  /// innermost loop's variable, with an extent of at most `extent` (the row tiles of an
  /// unrolled loop: 8 * t + 28 * cid + 2 * vid and 8 * t + 28 * cid + 2 * vid + 4).
  struct Strided {
    const VarNode* var;
    size_t dim;
    int64_t c, extent;
    Expr min;
  };
  std::shared_ptr<const Strided> strided;
};
/// Two strided accesses of one execution of their loop, in any iterations i and j: their starts
/// differ by c (i - j) + delta, delta = the difference of the starts as written; the regions
/// meet only if some c k + delta lies in (-e, e), e the larger extent, which no k allows when
/// delta mod |c| is in [e, |c| - e].
bool strided_apart(const Region::Strided& a, const Region::Strided& b, bool same_statement) {
  if (a.var != b.var || a.dim != b.dim || a.c != b.c) return false;
  const int64_t abs_c = a.c < 0 ? -a.c : a.c;
  // One statement meets itself only in another iteration: k != 0.
  if (same_statement && a.min.same_as(b.min)) return std::max(a.extent, b.extent) <= abs_c;
  auto delta = arith::constant_difference(a.min, b.min);
  if (!delta) return false;
  const int64_t c = a.c < 0 ? -a.c : a.c, e = std::max(a.extent, b.extent);
  const int64_t r = ((*delta % c) + c) % c;
  return r >= e && r <= c - e;
}
/// `same_execution`: both accesses belong to one execution of the loops around them (not to an
/// earlier execution of an inner loop, whose variables had other values).
bool conflict(const Region& a, const Region& b, bool same_execution, bool same_statement) {
  if (a.scope != b.scope) return false;
  if (a.scope == MemScope::GM && a.tensor && b.tensor && a.tensor != b.tensor) return false;
  if (a.invariant && b.invariant && a.invariant->ranges.size() == b.invariant->ranges.size())
    return arith::regions_overlap(*a.invariant, *b.invariant) != arith::Overlap::No;
  if (same_execution && a.strided && b.strided && strided_apart(*a.strided, *b.strided, same_statement)) return false;
  return a.lo < b.hi && b.lo < a.hi;
}

struct Acc {
  int node;
  Pipe pipe;
  bool write;
  Region region;
  /// Set when executions in different iterations of the innermost loop around the statement
  /// touch disjoint elements (some dimension starts at c * var + invariant with extent <=
  /// |c|): the instruction of the statement and the region as written. Two accesses of one
  /// statement with the same key never meet across iterations.
  std::string iteration_key;
};

/// One instruction of a statement. Publish is a set_cross_flag: the other core reads what this
/// core wrote to GM (and may overwrite what it read), so every pending GM access of another pipe
/// must be done before it fires; its own pipe is drained by the set itself.
struct Instr {
  enum Kind : uint8_t { Op, BarrierAll, Publish } kind = Op;
  Pipe pipe = Pipe::S;
  std::vector<int> accs;
  // An Mmad that may accumulate into a tile of fewer than 10 fractals: ordered after the
  // previous Mmad into that tile by pipe_barrier(M) (mmad_needs_m_barrier).
  bool small_mmad = false;
};

struct Block {
  std::vector<int> nodes;
  int owner = -1;  // the For/If node whose body or branch this is; -1: the scope body
  bool loop_body = false;
};
struct Node {
  Stmt s;
  int blk = -1, pos = 0;
  std::vector<int> blocks;    // For: body; If: then, else
  std::vector<Instr> instrs;  // issued by the statement itself (a loop's bounds: before its body)
  int start = 0, end = 0;     // pre-order clock, for the live intervals of flags
};

/// A planned set_flag/wait_flag pair. Same: set after statement set_pos, wait before wait_pos,
/// both in `blk`. Carried: the dependence crosses the back edge of the loop whose body is
/// `blk`; pre-set before the loop, set after set_pos, wait before wait_pos, drain after the
/// loop. Adjacent: set and wait right before wait_pos (a set drains its whole pipe).
struct Flag {
  enum Kind : uint8_t { Same, Carried, Adjacent } kind;
  Pipe p, q;
  int blk, set_pos, wait_pos;
  int round;
  bool off = false;  // pruned: implied by the other syncs
  int id = -1;
  int lo = 0, hi = 0;  // live interval on the pre-order clock
  auto key() const { return std::make_tuple(kind, p, q, blk, set_pos, wait_pos); }
};
struct Planned {
  enum Kind : uint8_t { Set, Wait, Barrier } kind;
  int flag = -1;
  Pipe pipe = Pipe::S;
  bool off = false;  // a pruned barrier
};

/// A pending access: the pipes that know it is done, the flags in flight that carry it.
/// Rec::known bit (above the pipes'): an M access a pipe_barrier(M) has since ordered, as the
/// PIPE_M rule of small Mmads needs (the M pipe's in-order guarantee is not enough there).
constexpr uint8_t kMBarriered = 0x80;

struct Rec {
  uint8_t known = 0;
  std::vector<int> carried;  // sorted flag indices
  bool operator==(const Rec&) const = default;
};
using State = std::map<int, Rec>;  // by access index

State join(const State& a, const State& b) {
  State out = a;
  for (const auto& [k, r] : b) {
    auto [it, fresh] = out.emplace(k, r);
    if (fresh) continue;
    it->second.known &= r.known;
    std::vector<int> both;
    std::set_intersection(it->second.carried.begin(), it->second.carried.end(), r.carried.begin(), r.carried.end(),
                          std::back_inserter(both));
    it->second.carried = std::move(both);
  }
  return out;
}

class Inserter {
 public:
  Inserter(const Stmt& body, const Target& t, bool minimise) : t_(t), minimise_(minimise) {
    // Variables that change inside the scope: loop variables and what lets inside loops bind.
    std::function<void(const Stmt&, bool)> bound = [&](const Stmt& s, bool in_loop) {
      if (!s.defined()) return;
      if (auto* q = s.as<SeqNode>()) {
        for (const Stmt& x : q->stmts) bound(x, in_loop);
      } else if (auto* f = s.as<ForNode>()) {
        varying_.insert(f->var.node());
        bound(f->body, true);
      } else if (auto* n = s.as<IfNode>()) {
        bound(n->then_case, in_loop);
        bound(n->else_case, in_loop);
      } else if (auto* l = s.as<LetNode>(); l && in_loop) {
        varying_.insert(l->var.node());
      }
    };
    bound(body, false);
    body_ = build_block(body, -1, false);
  }

  /// The scope body with its syncs; undefined when it needs none.
  Stmt run() {
    for (;;) {
      reset();
      for (round_ = 0;; ++round_) {
        TL_ASSERT(round_ < 10000, "insert_syncs: the analysis does not converge");
        changed_ = false;
        State st;
        run_block(body_, st);
        if (!changed_) break;
      }
      if (minimise_) prune();
      if (colour()) break;
    }
    bool any = std::any_of(flags_.begin(), flags_.end(), [](const Flag& f) { return !f.off; });
    for (const auto& [at, list] : plan_)
      for (const Planned& p : list) any |= p.kind == Planned::Barrier && !p.off;
    return any ? rebuild_block(body_) : Stmt();
  }

 private:
  const Target& t_;
  const bool minimise_;  // drop the syncs the others imply (prune)
  std::set<const VarNode*> varying_;  // variables that change inside the scope
  std::vector<Node> nodes_;
  std::vector<Block> blocks_;
  std::vector<Acc> accs_;
  int body_ = 0;
  int clock_ = 0;
  /// While building: the loops around the statement being built, innermost last, each with
  /// the variables bound inside its body so far (they may change from one iteration to the
  /// next).
  struct LoopCtx {
    const VarNode* var;
    std::set<const VarNode*> varying;
  };
  std::vector<LoopCtx> loops_;
  std::vector<Flag> flags_;
  std::map<std::tuple<int, int, bool>, std::vector<Planned>> plan_;  // (block, position, after)
  std::set<std::pair<Pipe, Pipe>> coarse_;
  int round_ = 0;
  bool changed_ = false;
  bool checking_ = false;  // prune(): only find out whether something is unordered
  bool unordered_ = false;

  /// A pending access by its key: an access index, or (>= accs_.size()) a shadow of one: the
  /// instances of an access from earlier executions of its innermost loop, kept apart from
  /// the current execution's so that "an earlier iteration" means "of this execution".
  const Acc& acc(int key) const { return accs_[static_cast<size_t>(key) % accs_.size()]; }
  void shadow_loop(int loop, State& st) const {
    State moved;
    for (auto it = st.begin(); it != st.end();) {
      if (it->first < static_cast<int>(accs_.size()) && inside(acc(it->first).node, loop)) {
        int key = it->first + static_cast<int>(accs_.size());
        moved = join(moved, State{{key, it->second}});
        it = st.erase(it);
      } else {
        ++it;
      }
    }
    for (const auto& [k, r] : moved) st = join(st, State{{k, r}});
  }
  bool inside(int node, int loop) const {
    for (int x = node; x >= 0; x = blocks_[nodes_[x].blk].owner)
      if (blocks_[nodes_[x].blk].owner == loop) return true;
    return false;
  }

  void reset() {
    flags_.clear();
    plan_.clear();
  }

  /// Syncs are planned greedily, one need at a time, so a barrier or flag planned early may be
  /// implied by flags planned later (one set orders all earlier work of its pipe, and flags
  /// carry what their pipe knew). Drop each one whose absence leaves nothing unordered, the
  /// last planned first.
  bool still_ordered() {
    checking_ = true;
    unordered_ = false;
    State st;
    run_block(body_, st);
    checking_ = false;
    return !unordered_;
  }
  void prune() {
    std::vector<Planned*> barriers;
    for (auto& [at, list] : plan_)
      for (Planned& p : list)
        if (p.kind == Planned::Barrier) barriers.push_back(&p);
    for (Planned* b : barriers) {
      b->off = true;
      if (!still_ordered()) b->off = false;
    }
    for (size_t i = flags_.size(); i-- > 0;) {
      flags_[i].off = true;
      if (!still_ordered()) flags_[i].off = false;
    }
  }

  // ---- the block tree -----------------------------------------------------------------------

  int build_block(const Stmt& s, int owner, bool loop) {
    int b = static_cast<int>(blocks_.size());
    blocks_.push_back({{}, owner, loop});
    std::vector<Stmt> stmts;
    if (auto* q = s.as<SeqNode>()) stmts = q->stmts;
    else if (s.defined()) stmts.push_back(s);
    for (size_t i = 0; i < stmts.size(); ++i) {
      int n = build_node(stmts[i], b, static_cast<int>(i));
      blocks_[b].nodes.push_back(n);
    }
    return b;
  }

  int build_node(const Stmt& s, int blk, int pos) {
    int n = static_cast<int>(nodes_.size());
    nodes_.push_back({});
    nodes_[n].s = s;
    nodes_[n].blk = blk;
    nodes_[n].pos = pos;
    nodes_[n].start = clock_++;
    std::vector<Instr> instrs;
    switch (s.kind()) {
      case StmtKind::For: {
        auto* f = s.as<ForNode>();
        scalar(instrs, n, {&f->min, &f->extent});
        for (auto& l : loops_) l.varying.insert(f->var.node());
        loops_.push_back({f->var.node(), {}});
        int b = build_block(f->body, n, true);
        loops_.pop_back();
        nodes_[n].blocks = {b};
        break;
      }
      case StmtKind::If: {
        auto* f = s.as<IfNode>();
        scalar(instrs, n, {&f->cond});
        std::vector<int> bs{build_block(f->then_case, n, false)};
        if (f->else_case.defined()) bs.push_back(build_block(f->else_case, n, false));
        nodes_[n].blocks = bs;
        break;
      }
      case StmtKind::Let:
        scalar(instrs, n, {&s.as<LetNode>()->value});
        for (auto& l : loops_) l.varying.insert(s.as<LetNode>()->var.node());
        break;
      case StmtKind::Store: {
        auto* st = s.as<StoreNode>();
        Instr in{Instr::Op, Pipe::S, {}};
        loads(st->value, n, Pipe::S, in.accs);
        for (const auto& i : st->indices) loads(i, n, Pipe::S, in.accs);
        if (st->buffer->scope != MemScope::Var) {
          std::vector<Range> r;
          for (const auto& i : st->indices) r.push_back({i, Expr(1)});
          add_acc(in.accs, n, Pipe::S, true, region_of(st->buffer, r), iteration_key({st->buffer, r}, "store"));
        }
        instrs.push_back(std::move(in));
        break;
      }
      case StmtKind::TileOp: tile_op(*s.as<TileOpNode>(), n, instrs); break;
      case StmtKind::Sync: {
        auto* y = s.as<SyncNode>();
        if (y->sync_kind == SyncKind::SetCrossFlag) instrs.push_back({Instr::Publish, y->src, {}});
        else if (y->sync_kind == SyncKind::SyncAll) instrs.push_back({Instr::BarrierAll, Pipe::ALL, {}});
        else
          TL_ASSERT(y->sync_kind == SyncKind::WaitCrossFlag, "insert_syncs: a scope with {} was selected",
                    sync_name(y->sync_kind));
        break;
      }
      case StmtKind::Seq:
      case StmtKind::Scope:
      case StmtKind::Kernel: TL_ASSERT(false, "insert_syncs: a nested {} inside a scope", static_cast<int>(s.kind()));
      default: break;
    }
    nodes_[n].instrs = std::move(instrs);
    nodes_[n].end = clock_++;
    return n;
  }

  void add_acc(std::vector<int>& out, int node, Pipe p, bool write, Region r, std::string key = {}) {
    out.push_back(static_cast<int>(accs_.size()));
    accs_.push_back({node, p, write, r, std::move(key)});
  }
  /// The Acc::iteration_key of instruction `instr` of a statement touching `region`.
  std::string iteration_key(const BufferRegion& region, const std::string& instr) const {
    return iterations_disjoint(region.ranges) ? instr + " " + print(region) : std::string();
  }

  /// Does `e` avoid the loop variable, every variable in `varying` and memory?
  static bool invariant(const Expr& e, const VarNode* v, const std::set<const VarNode*>& varying) {
    struct V : IRVisitor {
      const VarNode* v;
      const std::set<const VarNode*>& varying;
      bool ok = true;
      V(const VarNode* x, const std::set<const VarNode*>& s) : v(x), varying(s) {}
      void visit_(const VarNode* n) override { ok &= n != v && !varying.count(n); }
      void visit_(const LoadNode* n) override {
        ok = false;
        IRVisitor::visit_(n);
      }
    } vis(v, varying);
    vis.visit(e);
    return vis.ok;
  }
  /// c when `e` is c * v + (an expression invariant in the loop), else nullopt.
  static std::optional<int64_t> coefficient(const Expr& e, const VarNode* v, const std::set<const VarNode*>& varying) {
    if (auto* b = e.as<BinaryNode>()) {
      if (b->op == BinOp::Add || b->op == BinOp::Sub) {
        auto x = coefficient(b->a, v, varying), y = coefficient(b->b, v, varying);
        if (!x || !y) return std::nullopt;
        return b->op == BinOp::Add ? *x + *y : *x - *y;
      }
      if (b->op == BinOp::Mul) {
        if (auto k = as_const_int(b->b)) {
          auto x = coefficient(b->a, v, varying);
          return x ? std::optional<int64_t>(*x * *k) : std::nullopt;
        }
        if (auto k = as_const_int(b->a)) {
          auto x = coefficient(b->b, v, varying);
          return x ? std::optional<int64_t>(*x * *k) : std::nullopt;
        }
      }
    }
    if (e.as<VarNode>() == v) return 1;
    return invariant(e, v, varying) ? std::optional<int64_t>(0) : std::nullopt;
  }
  /// Do two iterations of the innermost loop touch disjoint elements through `ranges`? True
  /// when some dimension starts at c * var + invariant and has a constant extent <= |c|.
  bool iterations_disjoint(const std::vector<Range>& ranges) const {
    if (loops_.empty()) return false;
    const LoopCtx& l = loops_.back();
    for (const auto& r : ranges) {
      if (!r.extent.defined()) continue;
      int64_t e = as_const_int(r.extent).value_or(0);
      int64_t c = coefficient(r.min, l.var, l.varying).value_or(0);
      if (e >= 1 && c != 0 && e <= (c < 0 ? -c : c)) return true;
    }
    return false;
  }

  /// True when `e` reads no memory and no variable that changes inside the scope.
  bool scope_invariant(const Expr& e) const {
    bool ok = true;
    pre_order_visit(LetNode::make(Var("_"), e), [](const Stmt&) {}, [&](const Expr& x) {
      if (auto* v = x.as<VarNode>()) ok = ok && !varying_.count(v);
      if (x.as<LoadNode>()) ok = false;
    });
    return ok;
  }

  Region region_of(const Buffer& b, const std::vector<Range>& ranges) const {
    Region g = constant_region_of(b, ranges);
    if (b->scope != MemScope::GM || ranges.size() != b->ndim()) return g;
    bool constant = true, invariant = ranges.size() == b->ndim();
    for (const Range& r : ranges) {
      constant = constant && as_const_int(r.min) && r.extent.defined() && as_const_int(r.extent);
      invariant = invariant && r.extent.defined() && scope_invariant(r.min) && scope_invariant(r.extent);
    }
    if (!constant && invariant) g.invariant = std::make_shared<const BufferRegion>(BufferRegion{b, ranges});
    if (!g.invariant && !loops_.empty()) {
      const LoopCtx& l = loops_.back();
      for (size_t d = 0; d < ranges.size() && !g.strided; ++d) {
        if (!ranges[d].extent.defined()) continue;
        // The largest extent (a clipped tail's min(tile, rest) is at most the tile).
        const arith::Interval ext = arith::bound(ranges[d].extent);
        const int64_t e = ext.hi < INT64_MAX ? std::max<int64_t>(ext.hi, 1) : 0;
        const int64_t c = coefficient(ranges[d].min, l.var, l.varying).value_or(0);
        if (e >= 1 && c != 0 && e <= (c < 0 ? -c : c))
          g.strided = std::make_shared<const Region::Strided>(Region::Strided{l.var, d, c, e, ranges[d].min});
      }
    }
    return g;
  }

  static Region constant_region_of(const Buffer& b, const std::vector<Range>& ranges) {
    Region g;
    g.scope = b->scope;
    if (b->scope == MemScope::GM) g.tensor = b.get();
    else if (b->address < 0) return g;  // unplanned: conflicts with the whole memory
    const int64_t base = b->scope == MemScope::GM ? 0 : b->address;
    std::vector<int64_t> shape;
    for (const auto& e : b->shape) {
      auto v = as_const_int(e);
      if (!v || *v <= 0) {
        g.lo = base;
        return g;
      }
      shape.push_back(*v);
    }
    int64_t bytes = storage_bytes(b->scope, b->dtype, shape);
    g.lo = base;
    g.hi = bytes > INT64_MAX - base ? INT64_MAX : base + bytes;
    // A constant region narrows to the bytes between its first and last element: every
    // layout (row-major UB and GM, the fractal NZ/ZZ/ZN of L1 and L0) is non-decreasing in
    // each index (storage_element_offset), so a sub-tile's bytes lie between those two. The
    // slots lower_cube_ops stacks in an L0 tile are row blocks: disjoint byte ranges.
    if (!b->strides.empty() || ranges.size() != shape.size()) return g;
    std::vector<int64_t> first, last;
    for (size_t d = 0; d < shape.size(); ++d) {
      auto s = as_const_int(ranges[d].min);
      auto e = ranges[d].extent.defined() ? as_const_int(ranges[d].extent) : std::nullopt;
      if (!s || !e || *s < 0 || *e <= 0 || *s + *e > shape[d]) return g;
      first.push_back(*s);
      last.push_back(*s + *e - 1);
    }
    int64_t es = dtype_bytes(b->dtype);
    g.lo = base + storage_element_offset(b->scope, b->dtype, shape, first) * es;
    g.hi = base + (storage_element_offset(b->scope, b->dtype, shape, last) + 1) * es;
    return g;
  }

  /// The memory loads inside `e`, as reads on pipe `p`.
  void loads(const Expr& e, int node, Pipe p, std::vector<int>& out) {
    if (!e.defined()) return;
    struct V : IRVisitor {
      Inserter& self;
      int node;
      Pipe p;
      std::vector<int>& out;
      V(Inserter& s, int n, Pipe pp, std::vector<int>& o) : self(s), node(n), p(pp), out(o) {}
      void visit_(const LoadNode* l) override {
        IRVisitor::visit_(l);
        if (l->buffer->scope == MemScope::Var) return;
        std::vector<Range> r;
        for (const auto& i : l->indices) r.push_back({i, Expr(1)});
        self.add_acc(out, node, p, false, self.region_of(l->buffer, r),
                     self.iteration_key({l->buffer, r}, fmt::format("load on {}", pipe_name(p))));
      }
    } v(*this, node, p, out);
    v.visit(e);
  }
  void scalar(std::vector<Instr>& instrs, int node, std::initializer_list<const Expr*> es) {
    Instr in{Instr::Op, Pipe::S, {}};
    for (const Expr* e : es) loads(*e, node, Pipe::S, in.accs);
    if (!in.accs.empty()) instrs.push_back(std::move(in));
  }

  /// A tile op's instructions as its expansion (OpDef::expansion) lists them, with the bytes
  /// the tracer records; loads inside region bounds are read by the scalar unit first.
  void tile_op(const TileOpNode& n, int node, std::vector<Instr>& instrs) {
    const OpDef& op = *n.op;
    Instr bounds{Instr::Op, Pipe::S, {}};
    for (const auto& a : n.args)
      if (a.is_region())
        for (const auto& r : a.region.ranges) {
          loads(r.min, node, Pipe::S, bounds.accs);
          loads(r.extent, node, Pipe::S, bounds.accs);
        }
    if (!bounds.accs.empty()) instrs.push_back(std::move(bounds));
    for (const InstrSpec& spec : op.expansion) {
      if (spec.kind == InstrSpec::Kind::BarrierAll) {
        instrs.push_back({Instr::BarrierAll, Pipe::ALL, {}});
        continue;
      }
      Instr in{Instr::Op, instr_pipe(n, spec, t_), {}};
      if (&op == &ops::mma()) {
        const TileArg* init = op_operand(n, "init");
        const TileArg* c = op_operand(n, "C");
        auto always_init = init ? as_const_int(init->scalar) : std::nullopt;
        if (!(always_init && *always_init != 0) && c && c->is_region() && c->region.ranges.size() >= 2) {
          auto m = as_const_int(c->region.ranges[c->region.ranges.size() - 2].extent);
          auto nn = as_const_int(c->region.ranges.back().extent);
          in.small_mmad = !m || !nn || mmad_needs_m_barrier(*m, *nn);  // unknown size: assume small
        }
      }
      for (const auto& tc : spec.touches) {
        if (tc.operand < 0) {
          Region r;
          r.scope = tc.scratch;
          if (tc.access != Access::Write) add_acc(in.accs, node, in.pipe, false, r);
          if (tc.access != Access::Read) add_acc(in.accs, node, in.pipe, true, r);
          continue;
        }
        size_t hi = op.operands[tc.operand].variadic ? n.args.size()
                                                       : std::min(n.args.size(), static_cast<size_t>(tc.operand) + 1);
        for (size_t i = static_cast<size_t>(tc.operand); i < hi; ++i) {
          const TileArg& a = n.args[i];
          if (!a.is_region()) {
            loads(a.scalar, node, in.pipe, in.accs);  // the tracer records them on the op's pipe
            continue;
          }
          Region r = region_of(a.region.buffer, a.region.ranges);
          std::string key = iteration_key(a.region, fmt::format("instruction {}", &spec - op.expansion.data()));
          if (tc.access != Access::Write) add_acc(in.accs, node, in.pipe, false, r, key);
          if (tc.access != Access::Read) add_acc(in.accs, node, in.pipe, true, r, key);
        }
      }
      instrs.push_back(std::move(in));
    }
  }

  // ---- the abstract walk --------------------------------------------------------------------

  void run_block(int b, State& st) {
    for (size_t i = 0; i < blocks_[b].nodes.size(); ++i) {
      if (checking_ && unordered_) return;  // prune(): the answer is known
      apply(b, static_cast<int>(i), false, st);
      run_node(blocks_[b].nodes[i], st);
      apply(b, static_cast<int>(i), true, st);
    }
  }

  void run_node(int n, State& st) {
    for (const Instr& in : nodes_[n].instrs) exec(n, in, st);
    const Stmt& s = nodes_[n].s;
    if (s.kind() == StmtKind::For) {
      // Iterate the body to a fixpoint: its entry state joins the state before the loop and
      // the state at the end of the body (the back edge).
      shadow_loop(n, st);
      State entry = st, in = st, out;
      for (int it = 0;; ++it) {
        out = in;
        run_block(nodes_[n].blocks[0], out);
        if (checking_ && unordered_) break;
        State next = join(entry, out);
        if (next == in) break;
        if (it > 64) {  // let the next round finish it (the plan keeps growing until it holds)
          changed_ = true;
          break;
        }
        in = std::move(next);
      }
      auto ext = as_const_int(s.as<ForNode>()->extent);
      st = ext && *ext >= 1 ? out : join(entry, out);  // zero iterations: the state before it
    } else if (s.kind() == StmtKind::If) {
      State other = st;
      run_block(nodes_[n].blocks[0], st);
      if (nodes_[n].blocks.size() > 1) run_block(nodes_[n].blocks[1], other);
      st = join(st, other);
    }
  }

  void apply(int b, int pos, bool after, State& st) {
    auto it = plan_.find({b, pos, after});
    if (it == plan_.end()) return;
    for (const Planned& p : it->second)
      if (!(p.off || (p.flag >= 0 && flags_[p.flag].off))) effect(p, st);
  }

  void effect(const Planned& p, State& st) {
    if (p.kind == Planned::Barrier) {
      for (auto& [k, r] : st)
        if (acc(k).pipe == p.pipe) r.known |= bit(p.pipe) | (p.pipe == Pipe::M ? kMBarriered : 0);
      return;
    }
    const Flag& f = flags_[p.flag];
    for (auto it = st.begin(); it != st.end();) {
      Rec& r = it->second;
      auto c = std::lower_bound(r.carried.begin(), r.carried.end(), p.flag);
      bool has = c != r.carried.end() && *c == p.flag;
      if (p.kind == Planned::Set) {
        // set_flag fires once every earlier instruction of its pipe is done, and carries what
        // that pipe knew.
        if (!has && (acc(it->first).pipe == f.p || (r.known & bit(f.p)))) r.carried.insert(c, p.flag);
      } else if (has) {
        r.carried.erase(c);
        r.known |= bit(f.q);
      }
      it = (r.known & kAllPipes) == kAllPipes ? st.erase(it) : std::next(it);
    }
  }

  void exec(int n, const Instr& in, State& st) {
    if (in.kind == Instr::BarrierAll) {
      st.clear();
      return;
    }
    const Pipe q = in.pipe;
    std::map<Pipe, std::vector<int>> needs;  // by source pipe
    for (const auto& [k, r] : st) {
      const Acc& a = acc(k);
      const bool m_rule = in.small_mmad && a.pipe == Pipe::M && a.write && a.region.scope == MemScope::L0C &&
                          !(r.known & kMBarriered);
      if ((r.known & bit(q)) && !m_rule) continue;
      bool hit = false;
      if (in.kind == Instr::Publish) {
        hit = a.region.scope == MemScope::GM && a.pipe != q;
      } else {
        for (int x : in.accs) {
          // The same access of an earlier iteration of this execution of its loop (shadows
          // hold earlier executions' instances).
          const Acc& b = accs_[x];
          if (k < static_cast<int>(accs_.size()) && a.node == b.node && !b.iteration_key.empty() &&
              a.iteration_key == b.iteration_key)
            continue;
          if ((a.write || accs_[x].write) &&
              conflict(a.region, accs_[x].region, k < static_cast<int>(accs_.size()), a.node == accs_[x].node)) {
            hit = true;
            break;
          }
        }
      }
      if (hit) needs[a.pipe].push_back(k);
    }
    for (const auto& [p, recs] : needs) order(n, p, q, recs, st);
    // Issue: an in-order pipe knows its own instruction is done before its next one starts;
    // the scalar unit's instruction happens before everything issued after it.
    const uint8_t fresh = pipe_orders_later_issue(q) ? kAllPipes : pipe_in_order(q) ? bit(q) : 0;
    if (fresh != kAllPipes)
      for (int x : in.accs) {
        auto [it, added] = st.emplace(x, Rec{fresh, {}});
        if (!added) it->second = Rec{static_cast<uint8_t>(it->second.known & fresh), {}};
      }
    if (pipe_orders_later_issue(q))
      for (auto it = st.begin(); it != st.end();) it = (it->second.known & bit(q)) ? st.erase(it) : std::next(it);
  }

  /// Plans what orders the pending accesses `recs` (all on pipe p) before instruction `in` of
  /// node `n` on pipe q, and applies its effect to the state.
  void order(int n, Pipe p, Pipe q, const std::vector<int>& recs, State& st) {
    if (checking_) {
      unordered_ = true;
      for (int r : recs) st[r].known |= bit(q) | (p == Pipe::M && q == Pipe::M ? kMBarriered : 0);
      return;
    }
    // M after M is in order except for the PIPE_M rule of small Mmads: a barrier.
    switch (p == Pipe::M && q == Pipe::M ? Ordering::PipeBarrier : ordering_needed(p, q)) {
      case Ordering::Nothing: TL_ASSERT(false, "insert_syncs: {} -> {} needs no order but was unordered", pipe_name(p), pipe_name(q));
      case Ordering::PipeBarrier: {
        // Before the destination's statement in the innermost enclosing block that holds a
        // source: a source outside it ran before the block was entered, so a barrier in
        // front of a loop orders it before every iteration at once.
        int x = n;
        while (blocks_[nodes_[x].blk].owner >= 0 &&
               std::none_of(recs.begin(), recs.end(), [&](int r) { return pos_in(acc(r).node, nodes_[x].blk) >= 0; }))
          x = blocks_[nodes_[x].blk].owner;
        auto& at = plan_[{nodes_[x].blk, nodes_[x].pos, false}];
        bool have = std::any_of(at.begin(), at.end(),
                                [&](const Planned& x) { return x.kind == Planned::Barrier && x.pipe == q; });
        if (!have) {
          at.push_back({Planned::Barrier, -1, q});
          changed_ = true;
        }
        effect({Planned::Barrier, -1, q}, st);
        return;
      }
      case Ordering::Flag: break;
    }
    if (coarse_.count({p, q}) || !t_.hard_event_ok(p, q)) {
      adjacent(n, p, q, recs, st);
      return;
    }
    // The nearest enclosing block that holds a source before the destination (same
    // iteration), or a loop body that holds a source after it (over the back edge).
    int x = n;
    while (x >= 0) {
      int blk = nodes_[x].blk, k = nodes_[x].pos;
      int before = -1, any = -1;
      for (int r : recs) {
        int pos = pos_in(acc(r).node, blk);
        if (pos < 0) continue;
        if (pos < k) before = std::max(before, pos);
        any = std::max(any, pos);
      }
      if (before >= 0) {
        add_flag({Flag::Same, p, q, blk, before, k, round_}, n, recs, st);
        return;
      }
      if (blocks_[blk].loop_body && any >= 0) {
        add_flag({Flag::Carried, p, q, blk, any, k, round_}, n, recs, st);
        return;
      }
      x = blocks_[blk].owner;
    }
    adjacent(n, p, q, recs, st);
  }

  int pos_in(int node, int blk) const {
    for (int x = node; x >= 0; x = blocks_[nodes_[x].blk].owner)
      if (nodes_[x].blk == blk) return nodes_[x].pos;
    return -1;
  }

  /// set_flag + wait_flag right before the destination: always orders every earlier access of
  /// p. A pair without a hardware event goes through a pipe that has one both ways.
  void adjacent(int n, Pipe p, Pipe q, const std::vector<int>& recs, State& st) {
    int blk = nodes_[n].blk, k = nodes_[n].pos;
    if (t_.hard_event_ok(p, q)) {
      add_flag({Flag::Adjacent, p, q, blk, k, k, round_}, n, recs, st, true);
      return;
    }
    for (Pipe r : {Pipe::S, Pipe::V, Pipe::M, Pipe::MTE1, Pipe::MTE2, Pipe::MTE3, Pipe::FIX})
      if (r != p && r != q && t_.hard_event_ok(p, r) && t_.hard_event_ok(r, q)) {
        add_flag({Flag::Adjacent, p, r, blk, k, k, round_}, n, recs, st, true);
        add_flag({Flag::Adjacent, r, q, blk, k, k, round_}, n, recs, st, true);
        return;
      }
    throw Error(nodes_[n].s->loc, fmt::format("insert_syncs: no hardware event orders pipe {} before pipe {} on {}, "
                                              "not even through a third pipe",
                                              pipe_name(p), pipe_name(q), t_.name));
  }

  void add_flag(Flag f, int n, const std::vector<int>& recs, State& st, bool is_fallback = false) {
    auto same = std::find_if(flags_.begin(), flags_.end(), [&](const Flag& g) { return g.key() == f.key(); });
    if (same != flags_.end()) {
      // Planned in an earlier round, so the walk already saw it and it did not order these
      // accesses (its set came before a source it was meant to follow): fall back.
      if (same->round < round_) {
        TL_ASSERT(!is_fallback, "insert_syncs: set+wait of {} -> {} right before the destination did not order it",
                  pipe_name(f.p), pipe_name(f.q));
        adjacent(n, f.p, f.q, recs, st);
        return;
      }
    } else {
      int id = static_cast<int>(flags_.size());
      flags_.push_back(f);
      changed_ = true;
      auto at = [&](int blk, int pos, bool after) -> std::vector<Planned>& { return plan_[{blk, pos, after}]; };
      switch (f.kind) {
        case Flag::Same:
          at(f.blk, f.set_pos, true).push_back({Planned::Set, id});
          at(f.blk, f.wait_pos, false).push_back({Planned::Wait, id});
          break;
        case Flag::Carried: {
          const Node& loop = nodes_[blocks_[f.blk].owner];
          at(loop.blk, loop.pos, false).push_back({Planned::Set, id});
          at(f.blk, f.set_pos, true).push_back({Planned::Set, id});
          at(f.blk, f.wait_pos, false).push_back({Planned::Wait, id});
          at(loop.blk, loop.pos, true).push_back({Planned::Wait, id});
          break;
        }
        case Flag::Adjacent:
          at(f.blk, f.wait_pos, false).push_back({Planned::Set, id});
          at(f.blk, f.wait_pos, false).push_back({Planned::Wait, id});
          break;
      }
    }
    // This round's walk has passed the set already: assume the plan holds (the next round
    // checks it).
    for (int r : recs)
      if (auto it = st.find(r); it != st.end()) it->second.known |= bit(f.q);
  }

  // ---- event ids --------------------------------------------------------------------------

  /// Colours flag ids per pipe pair by live interval. False (and the pair coarsened) when a
  /// pair runs out; throws when a coarsened pair still does.
  bool colour() {
    std::vector<int> ids;
    for (int i = 0; i < t_.num_event_ids; ++i)
      if (std::find(t_.reserved_event_ids.begin(), t_.reserved_event_ids.end(), i) == t_.reserved_event_ids.end())
        ids.push_back(i);
    std::map<std::pair<Pipe, Pipe>, std::vector<int>> by_pair;
    for (size_t i = 0; i < flags_.size(); ++i) {
      Flag& f = flags_[i];
      if (f.off) continue;
      const Block& b = blocks_[f.blk];
      switch (f.kind) {
        case Flag::Same:
          f.lo = nodes_[b.nodes[f.set_pos]].end;
          f.hi = nodes_[b.nodes[f.wait_pos]].start;
          break;
        case Flag::Carried: {
          const Node& loop = nodes_[b.owner];
          f.lo = loop.start;
          f.hi = loop.end;
          break;
        }
        case Flag::Adjacent: f.lo = f.hi = nodes_[b.nodes[f.wait_pos]].start; break;
      }
      by_pair[{f.p, f.q}].push_back(static_cast<int>(i));
    }
    for (auto& [pair, fs] : by_pair) {
      std::sort(fs.begin(), fs.end(), [&](int a, int b) { return flags_[a].lo < flags_[b].lo; });
      std::vector<int> busy_until(ids.size(), INT_MIN);  // per id: the end of its last interval
      std::vector<int> holder(ids.size(), -1);
      for (int i : fs) {
        Flag& f = flags_[i];
        size_t c = 0;
        while (c < ids.size() && busy_until[c] >= f.lo) ++c;
        if (c == ids.size()) {
          if (!coarse_.count(pair)) {
            coarse_.insert(pair);
            return false;
          }
          std::string live;
          for (size_t j = 0; j < ids.size(); ++j)
            live += fmt::format("\n  set_flag(\"{}\", \"{}\", {}) live from {}", pipe_name(pair.first),
                                pipe_name(pair.second), ids[j], describe(flags_[holder[j]]));
          throw Error(nodes_[blocks_[f.blk].nodes[f.wait_pos]].s->loc,
                      fmt::format("insert_syncs: more than {} {} -> {} flags are live at once on {} (event ids {}); "
                                  "the live flags:{}",
                                  ids.size(), pipe_name(pair.first), pipe_name(pair.second), t_.name,
                                  fmt::join(ids, ", "), live));
        }
        busy_until[c] = f.hi;
        holder[c] = i;
        f.id = ids[c];
      }
    }
    return true;
  }

  std::string describe(const Flag& f) const {
    const Block& b = blocks_[f.blk];
    return fmt::format("{} to {}", nodes_[b.nodes[f.set_pos]].s->loc.str(), nodes_[b.nodes[f.wait_pos]].s->loc.str());
  }

  // ---- output -----------------------------------------------------------------------------

  Stmt sync_stmt(const Planned& p, const SourceLoc& loc) const {
    if (p.kind == Planned::Barrier)
      return SyncNode::make(SyncKind::PipeBarrier, p.pipe, Pipe::S, Expr(), 0, loc, SyncOrigin::Auto);
    const Flag& f = flags_[p.flag];
    return SyncNode::make(p.kind == Planned::Set ? SyncKind::SetFlag : SyncKind::WaitFlag, f.p, f.q, Expr(f.id), 0,
                          loc, SyncOrigin::Auto);
  }

  Stmt rebuild_block(int b) const {
    std::vector<Stmt> out;
    const Block& blk = blocks_[b];
    for (size_t i = 0; i < blk.nodes.size(); ++i) {
      const Node& nd = nodes_[blk.nodes[i]];
      auto emit = [&](bool after) {
        auto it = plan_.find({b, static_cast<int>(i), after});
        if (it != plan_.end())
          for (const Planned& p : it->second)
            if (!(p.off || (p.flag >= 0 && flags_[p.flag].off))) out.push_back(sync_stmt(p, nd.s->loc));
      };
      emit(false);
      out.push_back(rebuild_node(blk.nodes[i]));
      emit(true);
    }
    return SeqNode::make(std::move(out));
  }

  Stmt rebuild_node(int n) const {
    const Node& nd = nodes_[n];
    if (auto* f = nd.s.as<ForNode>())
      return ForNode::make(f->var, f->min, f->extent, f->for_kind, f->num_stages, rebuild_block(nd.blocks[0]), f->loc);
    if (auto* f = nd.s.as<IfNode>())
      return IfNode::make(f->cond, rebuild_block(nd.blocks[0]),
                          nd.blocks.size() > 1 ? rebuild_block(nd.blocks[1]) : Stmt(), f->loc);
    return nd.s;
  }
};

/// A scope that synchronises itself (any user sync, or intra-core syncs from an earlier run)
/// is left as written; cross-core syncs the compiler wrote are kept and respected.
bool has_own_syncs(const Stmt& body) {
  bool found = false;
  pre_order_visit(body, [&](const Stmt& s) {
    auto* y = s.as<SyncNode>();
    if (!y) return;
    bool intra = y->sync_kind == SyncKind::SetFlag || y->sync_kind == SyncKind::WaitFlag ||
                 y->sync_kind == SyncKind::PipeBarrier || y->sync_kind == SyncKind::BarrierAll;
    found |= y->origin == SyncOrigin::User || intra;
  });
  return found;
}

struct ScopeRewriter : IRMutator {
  const Target& t;
  const bool minimise;
  ScopeRewriter(const Target& tg, bool m) : t(tg), minimise(m) {}
  Stmt mutate_(const ScopeNode* n, const Stmt& self) override {
    if (has_own_syncs(n->body)) return self;
    // The scalar unit's GM accesses get their data-cache maintenance first (src/pass/insert_dcci.cpp),
    // so that the walk orders each dcci after the DMA writes it must follow.
    Stmt with_dcci = dev::with_dcci(n->body, t);
    Stmt body = Inserter(with_dcci, t, minimise).run();
    if (body.defined()) return ScopeNode::make(n->core, body, n->loc);
    return with_dcci.same_as(n->body) ? self : ScopeNode::make(n->core, with_dcci, n->loc);
  }
};

}  // namespace

PrimFunc insert_syncs(const PrimFunc& f, const Target& target, bool minimise) {
  Stmt body = ScopeRewriter(target, minimise).mutate(f->body);
  return body.same_as(f->body) ? f : with_body(f, body);
}

}  // namespace tl
