// Default traversal of IRVisitor and copy-on-write rebuilding of IRMutator.
#include "tl/ir_functor.h"

namespace tl {

// ---------------------------------------------------------------------------------------------
// IRVisitor

void IRVisitor::visit(const Expr& e) {
  if (!e.defined()) return;
  switch (e.kind()) {
#define TL_CASE(K)  \
  case ExprKind::K: \
    return visit_(static_cast<const K##Node*>(e.get()));
    TL_EXPR_KINDS(TL_CASE)
#undef TL_CASE
  }
}
void IRVisitor::visit(const Stmt& s) {
  if (!s.defined()) return;
  switch (s.kind()) {
#define TL_CASE(K)  \
  case StmtKind::K: \
    return visit_(static_cast<const K##Node*>(s.get()));
    TL_STMT_KINDS(TL_CASE)
#undef TL_CASE
  }
}
void IRVisitor::visit_region(const BufferRegion& r) {
  visit_buffer(r.buffer);
  for (const auto& rg : r.ranges) {
    visit(rg.min);
    visit(rg.extent);
  }
}
void IRVisitor::visit_buffer(const Buffer&) {}

void IRVisitor::visit_(const IntImmNode*) {}
void IRVisitor::visit_(const FloatImmNode*) {}
void IRVisitor::visit_(const StringImmNode*) {}
void IRVisitor::visit_(const VarNode*) {}
void IRVisitor::visit_(const BinaryNode* n) {
  visit(n->a);
  visit(n->b);
}
void IRVisitor::visit_(const NotNode* n) {
  visit(n->a);
}
void IRVisitor::visit_(const SelectNode* n) {
  visit(n->cond);
  visit(n->t);
  visit(n->f);
}
void IRVisitor::visit_(const CastNode* n) {
  visit(n->value);
}
void IRVisitor::visit_(const LoadNode* n) {
  visit_buffer(n->buffer);
  for (const auto& i : n->indices) visit(i);
}
void IRVisitor::visit_(const CallNode* n) {
  for (const auto& a : n->args) visit(a);
}

void IRVisitor::visit_(const SeqNode* n) {
  for (const auto& s : n->stmts) visit(s);
}
void IRVisitor::visit_(const ForNode* n) {
  visit(n->min);
  visit(n->extent);
  visit(n->body);
}
void IRVisitor::visit_(const IfNode* n) {
  visit(n->cond);
  visit(n->then_case);
  visit(n->else_case);
}
void IRVisitor::visit_(const LetNode* n) {
  visit(n->value);
}
void IRVisitor::visit_(const AllocateNode* n) {
  if (n->view_of.defined()) visit_buffer(n->view_of);
  visit_buffer(n->buffer);
  for (const auto& s : n->buffer->shape) visit(s);
}
void IRVisitor::visit_(const StoreNode* n) {
  visit_buffer(n->buffer);
  for (const auto& i : n->indices) visit(i);
  visit(n->value);
}
void IRVisitor::visit_(const TileOpNode* n) {
  for (const auto& a : n->args) {
    if (a.is_region())
      visit_region(a.region);
    else
      visit(a.scalar);
  }
}
void IRVisitor::visit_(const SyncNode* n) {
  visit(n->event_id);
}
void IRVisitor::visit_(const ScopeNode* n) {
  visit(n->body);
}
void IRVisitor::visit_(const KernelNode* n) {
  visit(n->num_blocks);
  visit(n->body);
}

// ---------------------------------------------------------------------------------------------
// IRMutator

Expr IRMutator::mutate(const Expr& e) {
  if (!e.defined()) return e;
  switch (e.kind()) {
#define TL_CASE(K)  \
  case ExprKind::K: \
    return mutate_(static_cast<const K##Node*>(e.get()), e);
    TL_EXPR_KINDS(TL_CASE)
#undef TL_CASE
  }
  return e;
}
Stmt IRMutator::mutate(const Stmt& s) {
  if (!s.defined()) return s;
  switch (s.kind()) {
#define TL_CASE(K)  \
  case StmtKind::K: \
    return mutate_(static_cast<const K##Node*>(s.get()), s);
    TL_STMT_KINDS(TL_CASE)
#undef TL_CASE
  }
  return s;
}

namespace {
bool same(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (!a[i].same_as(b[i])) return false;
  return true;
}
}  // namespace

BufferRegion IRMutator::mutate_region(const BufferRegion& r) {
  BufferRegion out{mutate_buffer(r.buffer), {}};
  for (const auto& rg : r.ranges) out.ranges.push_back({mutate(rg.min), mutate(rg.extent)});
  return out;
}

Expr IRMutator::mutate_(const IntImmNode*, const Expr& self) {
  return self;
}
Expr IRMutator::mutate_(const FloatImmNode*, const Expr& self) {
  return self;
}
Expr IRMutator::mutate_(const StringImmNode*, const Expr& self) {
  return self;
}
Expr IRMutator::mutate_(const VarNode*, const Expr& self) {
  return self;
}
Expr IRMutator::mutate_(const BinaryNode* n, const Expr& self) {
  Expr a = mutate(n->a), b = mutate(n->b);
  if (a.same_as(n->a) && b.same_as(n->b)) return self;
  return BinaryNode::make(n->op, a, b);
}
Expr IRMutator::mutate_(const NotNode* n, const Expr& self) {
  Expr a = mutate(n->a);
  return a.same_as(n->a) ? self : NotNode::make(a);
}
Expr IRMutator::mutate_(const SelectNode* n, const Expr& self) {
  Expr c = mutate(n->cond), t = mutate(n->t), f = mutate(n->f);
  if (c.same_as(n->cond) && t.same_as(n->t) && f.same_as(n->f)) return self;
  return SelectNode::make(c, t, f);
}
Expr IRMutator::mutate_(const CastNode* n, const Expr& self) {
  Expr v = mutate(n->value);
  return v.same_as(n->value) ? self : CastNode::make(n->dtype, v);
}
Expr IRMutator::mutate_(const LoadNode* n, const Expr& self) {
  Buffer b = mutate_buffer(n->buffer);
  std::vector<Expr> idx;
  for (const auto& i : n->indices) idx.push_back(mutate(i));
  if (b.same_as(n->buffer) && same(idx, n->indices)) return self;
  return LoadNode::make(b, idx);
}
Expr IRMutator::mutate_(const CallNode* n, const Expr& self) {
  std::vector<Expr> args;
  for (const auto& a : n->args) args.push_back(mutate(a));
  if (same(args, n->args)) return self;
  return CallNode::make(n->dtype, n->name, args);
}

Stmt IRMutator::mutate_(const SeqNode* n, const Stmt& self) {
  std::vector<Stmt> out;
  bool changed = false;
  for (const auto& s : n->stmts) {
    Stmt m = mutate(s);
    changed |= !m.same_as(s);
    if (m.defined()) out.push_back(m);
  }
  return changed ? SeqNode::make(out, n->loc) : self;
}
Stmt IRMutator::mutate_(const ForNode* n, const Stmt& self) {
  Expr mn = mutate(n->min), ext = mutate(n->extent);
  Stmt body = mutate(n->body);
  if (mn.same_as(n->min) && ext.same_as(n->extent) && body.same_as(n->body)) return self;
  return ForNode::make(n->var, mn, ext, n->for_kind, n->num_stages, n->skew, body, n->loc);
}
Stmt IRMutator::mutate_(const IfNode* n, const Stmt& self) {
  Expr c = mutate(n->cond);
  Stmt t = mutate(n->then_case), e = mutate(n->else_case);
  if (c.same_as(n->cond) && t.same_as(n->then_case) && e.same_as(n->else_case)) return self;
  return IfNode::make(c, t, e, n->loc);
}
Stmt IRMutator::mutate_(const LetNode* n, const Stmt& self) {
  Expr v = mutate(n->value);
  return v.same_as(n->value) ? self : LetNode::make(n->var, v, n->loc);
}
Stmt IRMutator::mutate_(const AllocateNode* n, const Stmt& self) {
  Buffer base = n->view_of.defined() ? mutate_buffer(n->view_of) : Buffer();
  Buffer b = mutate_buffer(n->buffer);
  if (b.same_as(n->buffer) && base.same_as(n->view_of)) return self;
  return base.defined() ? AllocateNode::make_view(b, base, n->loc) : AllocateNode::make(b, n->loc);
}
Stmt IRMutator::mutate_(const StoreNode* n, const Stmt& self) {
  Buffer b = mutate_buffer(n->buffer);
  std::vector<Expr> idx;
  for (const auto& i : n->indices) idx.push_back(mutate(i));
  Expr v = mutate(n->value);
  if (b.same_as(n->buffer) && same(idx, n->indices) && v.same_as(n->value)) return self;
  return StoreNode::make(b, idx, v, n->loc);
}
Stmt IRMutator::mutate_(const TileOpNode* n, const Stmt& self) {
  std::vector<TileArg> args;
  bool changed = false;
  for (const auto& a : n->args) {
    if (a.is_region()) {
      BufferRegion r = mutate_region(a.region);
      changed |= !r.buffer.same_as(a.region.buffer);
      for (size_t i = 0; i < r.ranges.size(); ++i)
        changed |= !r.ranges[i].min.same_as(a.region.ranges[i].min) ||
                   !r.ranges[i].extent.same_as(a.region.ranges[i].extent);
      args.emplace_back(std::move(r));
    } else {
      Expr e = mutate(a.scalar);
      changed |= !e.same_as(a.scalar);
      args.emplace_back(std::move(e));
    }
  }
  return changed ? TileOpNode::make(n->op, args, n->attrs, n->loc) : self;
}
Stmt IRMutator::mutate_(const SyncNode* n, const Stmt& self) {
  Expr id = mutate(n->event_id);
  return id.same_as(n->event_id)
             ? self
             : SyncNode::make(n->sync_kind, n->src, n->dst, id, n->mode, n->loc, n->origin);
}
Stmt IRMutator::mutate_(const ScopeNode* n, const Stmt& self) {
  Stmt b = mutate(n->body);
  return b.same_as(n->body) ? self : ScopeNode::make(n->core, b, n->loc);
}
Stmt IRMutator::mutate_(const KernelNode* n, const Stmt& self) {
  Expr nb = mutate(n->num_blocks);
  Stmt b = mutate(n->body);
  if (nb.same_as(n->num_blocks) && b.same_as(n->body)) return self;
  return KernelNode::make(nb, n->cid, n->vid, b, n->loc, n->threads);
}

// ---------------------------------------------------------------------------------------------

namespace {
class LambdaVisitor : public IRVisitor {
 public:
  LambdaVisitor(const std::function<void(const Stmt&)>& s,
                const std::function<void(const Expr&)>& e)
      : on_stmt_(s), on_expr_(e) {}
  void visit(const Stmt& s) override {
    if (!s.defined()) return;
    if (on_stmt_) on_stmt_(s);
    IRVisitor::visit(s);
  }
  void visit(const Expr& e) override {
    if (!e.defined()) return;
    if (on_expr_) on_expr_(e);
    IRVisitor::visit(e);
  }

 private:
  const std::function<void(const Stmt&)>& on_stmt_;
  const std::function<void(const Expr&)>& on_expr_;
};
}  // namespace

void pre_order_visit(const Stmt& s, const std::function<void(const Stmt&)>& on_stmt,
                     const std::function<void(const Expr&)>& on_expr) {
  LambdaVisitor v(on_stmt, on_expr);
  v.visit(s);
}

PrimFunc with_body(const PrimFunc& f, Stmt body) {
  auto g = std::make_shared<PrimFuncNode>(*f);  // the annotations stay
  g->body = std::move(body);
  return g;
}

}  // namespace tl
