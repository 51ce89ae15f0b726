// insert_syncs' block tree: each T::Scope body becomes blocks (the body, loop bodies, if
// branches) of nodes, each node the instructions its statement issues with the bytes each
// touches (planned on-chip addresses; GM tensors with a linear or strided byte range), and which
// of them differ between loop iterations. See insert_syncs.cpp's top comment.
#include "insert_syncs_impl.h"

namespace tl {
namespace sync_detail {

int Inserter::build_block(const Stmt& s, int owner, bool loop) {
  int b = static_cast<int>(blocks_.size());
  blocks_.push_back({{}, owner, loop});
  std::vector<Stmt> stmts;
  if (auto* q = s.as<SeqNode>())
    stmts = q->stmts;
  else if (s.defined())
    stmts.push_back(s);
  for (size_t i = 0; i < stmts.size(); ++i) {
    int n = build_node(stmts[i], b, static_cast<int>(i));
    blocks_[b].nodes.push_back(n);
  }
  return b;
}

int Inserter::build_node(const Stmt& s, int blk, int pos) {
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
        add_acc(in.accs, n, Pipe::S, true, region_of(st->buffer, r),
                iteration_key({st->buffer, r}, "store"));
      }
      instrs.push_back(std::move(in));
      break;
    }
    case StmtKind::TileOp:
      tile_op(*s.as<TileOpNode>(), n, instrs);
      break;
    case StmtKind::Sync: {
      auto* y = s.as<SyncNode>();
      if (y->sync_kind == SyncKind::SetCrossFlag)
        instrs.push_back({Instr::Publish, y->src, {}});
      else if (y->sync_kind == SyncKind::SyncAll || y->sync_kind == SyncKind::BarrierAll)
        instrs.push_back({Instr::BarrierAll, Pipe::ALL, {}});
      else if (y->sync_kind == SyncKind::PipeBarrier)  // an author's
        instrs.push_back({Instr::PipeBarrier, y->src, {}});
      else if (y->sync_kind == SyncKind::SetFlag || y->sync_kind == SyncKind::WaitFlag) {
        // An author's flag with a run-time id: its pair is opaque (the walk trusts the author
        // there and never plans a flag on it), so the flag issues nothing the walk follows.
        auto cid = as_const_int(y->event_id);
        if (!cid || *cid < 0 || *cid >= kMaxAuthorEventId) {
          TL_ASSERT(opaque_.count({y->src, y->dst}),
                    "insert_syncs: an author's flag with a "
                    "run-time id on a pair not marked opaque");
          break;
        }
        const int64_t id = *cid;
        Instr in{
            y->sync_kind == SyncKind::SetFlag ? Instr::AuthorSet : Instr::AuthorWait, y->src, {}};
        in.dst = y->dst;
        in.key = author_key(y->src, y->dst, id);
        author_ids_[{y->src, y->dst}].insert(id);
        instrs.push_back(std::move(in));
      } else
        TL_ASSERT(y->sync_kind == SyncKind::WaitCrossFlag,
                  "insert_syncs: a scope with {} was selected", sync_name(y->sync_kind));
      break;
    }
    case StmtKind::Seq:
    case StmtKind::Scope:
    case StmtKind::Kernel:
      TL_ASSERT(false, "insert_syncs: a nested {} inside a scope", static_cast<int>(s.kind()));
    default:
      break;
  }
  nodes_[n].instrs = std::move(instrs);
  nodes_[n].end = clock_++;
  return n;
}

void Inserter::add_acc(std::vector<int>& out, int node, Pipe p, bool write, Region r,
                       std::string key) {
  out.push_back(static_cast<int>(accs_.size()));
  accs_.push_back({node, p, write, r, std::move(key)});
}
/// The Acc::iteration_key of instruction `instr` of a statement touching `region`.
std::string Inserter::iteration_key(const BufferRegion& region, const std::string& instr) const {
  return iterations_disjoint(region.ranges) ? instr + " " + print(region) : std::string();
}

/// Does `e` avoid the loop variable, every variable in `varying` and memory?
bool Inserter::invariant(const Expr& e, const VarNode* v, const std::set<const VarNode*>& varying) {
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
/// c when `e` is c * v + (an expression invariant in the loop), else nullopt: the linear form
/// (tl/linear.h) with v one atom and every invariant leaf another; casts are leaves.
std::optional<int64_t> Inserter::coefficient(const Expr& e, const VarNode* v,
                                             const std::set<const VarNode*>& varying) {
  constexpr int64_t kV = 1, kInvariant = 2;
  using L = arith::LinearForm<2>;
  auto f = arith::decompose<2>(
      e,
      [&](const Expr& x) -> std::optional<L> {
        if (x.as<VarNode>() == v) return L::atom(kV);
        if (invariant(x, v, varying)) return L::atom(kInvariant);
        return std::nullopt;
      },
      /*through_casts=*/false);
  if (!f) return std::nullopt;
  return arith::coefficient_of(*f, kV);
}
/// Do two iterations of the innermost loop touch disjoint elements through `ranges`? True
/// when some dimension starts at c * var + invariant and has a constant extent <= |c|.
bool Inserter::iterations_disjoint(const std::vector<Range>& ranges) const {
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
bool Inserter::scope_invariant(const Expr& e) const {
  bool ok = true;
  pre_order_visit(
      LetNode::make(Var("_"), e), [](const Stmt&) {},
      [&](const Expr& x) {
        if (auto* v = x.as<VarNode>()) ok = ok && !varying_.count(v);
        if (x.as<LoadNode>()) ok = false;
      });
  return ok;
}

Region Inserter::region_of(const Buffer& b, const std::vector<Range>& ranges) const {
  Region g = constant_region_of(b, ranges);
  if (b->scope != MemScope::GM || ranges.size() != b->ndim()) return g;
  bool constant = true, invariant = ranges.size() == b->ndim();
  for (const Range& r : ranges) {
    constant = constant && as_const_int(r.min) && r.extent.defined() && as_const_int(r.extent);
    invariant =
        invariant && r.extent.defined() && scope_invariant(r.min) && scope_invariant(r.extent);
  }
  if (!constant && invariant)
    g.invariant = std::make_shared<const BufferRegion>(BufferRegion{b, ranges});
  if (!g.invariant && !loops_.empty()) {
    const LoopCtx& l = loops_.back();
    for (size_t d = 0; d < ranges.size() && !g.strided; ++d) {
      if (!ranges[d].extent.defined()) continue;
      // The largest extent (a clipped tail's min(tile, rest) is at most the tile).
      const arith::Interval ext = arith::bound(ranges[d].extent);
      const int64_t e = ext.hi < INT64_MAX ? std::max<int64_t>(ext.hi, 1) : 0;
      const int64_t c = coefficient(ranges[d].min, l.var, l.varying).value_or(0);
      if (e >= 1 && c != 0 && e <= (c < 0 ? -c : c))
        g.strided =
            std::make_shared<const Region::Strided>(Region::Strided{l.var, d, c, e, ranges[d].min});
    }
  }
  return g;
}

Region Inserter::constant_region_of(const Buffer& b, const std::vector<Range>& ranges) {
  Region g;
  g.scope = b->scope;
  if (b->scope == MemScope::GM)
    g.tensor = b.get();
  else if (b->address < 0)
    return g;  // unplanned: conflicts with the whole memory
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
  // A constant region narrows to the bytes between its first and last element
  // (analysis::bytes_between). The slots lower_cube_ops stacks in an L0 tile are row blocks:
  // disjoint byte ranges.
  if (!b->strides.empty() || ranges.size() != shape.size()) return g;
  std::vector<int64_t> first, last;
  for (size_t d = 0; d < shape.size(); ++d) {
    auto s = as_const_int(ranges[d].min);
    auto e = ranges[d].extent.defined() ? as_const_int(ranges[d].extent) : std::nullopt;
    if (!s || !e || *s < 0 || *e <= 0 || *s + *e > shape[d]) return g;
    first.push_back(*s);
    last.push_back(*s + *e - 1);
  }
  auto [lo, hi] = analysis::bytes_between(b->scope, b->dtype, shape, first, last);
  g.lo = base + lo;
  g.hi = base + hi;
  return g;
}

/// The memory loads inside `e`, as reads on pipe `p`.
void Inserter::loads(const Expr& e, int node, Pipe p, std::vector<int>& out) {
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
void Inserter::scalar(std::vector<Instr>& instrs, int node, std::initializer_list<const Expr*> es) {
  Instr in{Instr::Op, Pipe::S, {}};
  for (const Expr* e : es) loads(*e, node, Pipe::S, in.accs);
  if (!in.accs.empty()) instrs.push_back(std::move(in));
}

/// A tile op's instructions as its expansion (OpDef::expansion) lists them, with the bytes
/// the tracer records; loads inside region bounds are read by the scalar unit first.
void Inserter::tile_op(const TileOpNode& n, int node, std::vector<Instr>& instrs) {
  const OpDef& op = *n.op;
  Instr bounds{Instr::Op, Pipe::S, {}};
  for (const auto& a : n.args)
    if (a.is_region())
      for (const auto& r : a.region.ranges) {
        loads(r.min, node, Pipe::S, bounds.accs);
        loads(r.extent, node, Pipe::S, bounds.accs);
      }
  if (!bounds.accs.empty()) instrs.push_back(std::move(bounds));
  for (const analysis::Instr& ai : analysis::instructions(n, t_)) {
    if (ai.barrier_all) {
      instrs.push_back({Instr::BarrierAll, Pipe::ALL, {}});
      continue;
    }
    Instr in{Instr::Op, ai.pipe, {}};
    if (&op == &ops::mma()) {
      const TileArg* init = op_operand(n, "init");
      const TileArg* c = op_operand(n, "C");
      auto always_init = init ? as_const_int(init->scalar) : std::nullopt;
      if (!(always_init && *always_init != 0) && c && c->is_region() &&
          c->region.ranges.size() >= 2) {
        auto m = as_const_int(c->region.ranges[c->region.ranges.size() - 2].extent);
        auto nn = as_const_int(c->region.ranges.back().extent);
        in.small_mmad = !m || !nn || mmad_needs_m_barrier(*m, *nn);  // unknown size: assume small
      }
    }
    for (const analysis::Use& u : ai.uses) {
      if (u.kind == analysis::Use::Scratch) {
        Region r;
        r.scope = u.scratch;
        if (u.read) add_acc(in.accs, node, in.pipe, false, r);
        if (u.write) add_acc(in.accs, node, in.pipe, true, r);
        continue;
      }
      const TileArg& a = n.args[static_cast<size_t>(u.arg)];
      if (u.kind == analysis::Use::Scalar) {
        loads(a.scalar, node, in.pipe, in.accs);  // the tracer records them on the op's pipe
        continue;
      }
      Region r = region_of(a.region.buffer, a.region.ranges);
      std::string key = iteration_key(a.region, fmt::format("instruction {}", ai.index));
      if (u.read) add_acc(in.accs, node, in.pipe, false, r, key);
      if (u.write) add_acc(in.accs, node, in.pipe, true, r, key);
    }
    instrs.push_back(std::move(in));
  }
}

}  // namespace sync_detail
}  // namespace tl
