// The simplify pass: constant folding and trivial identities on integer expressions, and
// branches on a constant replaced by the branch that runs. Every
// rewrite keeps the IR semantics of tl/ir.h exactly: constants fold through tl/arith.h (the
// evaluator's own operator rules, so integer results wrap to the node's dtype exactly as the
// virtual NPU computes them), division by zero and failing loads stay in the program for run
// time, and float arithmetic is left alone (its rounding is per dtype and per operation).
#include <algorithm>
#include <limits>

#include "tl/arith.h"
#include "tl/ir_functor.h"

namespace tl {
namespace {

bool int_like(DType t) {
  return is_int(t) || is_bool(t);
}

std::optional<int64_t> const_of(const Expr& e) {
  if (!e.defined() || !int_like(e.dtype()) || e.kind() != ExprKind::IntImm) return std::nullopt;
  return arith::wrap(e.dtype(), e.as<IntImmNode>()->value);
}

/// `a op b`, or nothing when the rebuilt node would not have dtype `t`.
std::optional<Expr> make_as(BinOp op, Expr a, Expr b, DType t) {
  Expr e = BinaryNode::make(op, std::move(a), std::move(b));
  if (e.dtype() != t) return std::nullopt;
  return e;
}

/// `x + k` written the readable way (`x - 3` rather than `x + -3`), in dtype t.
std::optional<Expr> add_const(const Expr& x, int64_t k, DType t) {
  k = arith::wrap(t, k);
  if (k == 0) return x;
  if (k < 0 && k != std::numeric_limits<int64_t>::min())
    return make_as(BinOp::Sub, x, arith::make_int(t, -k), t);
  return make_as(BinOp::Add, x, arith::make_int(t, k), t);
}

class Simplifier : public IRMutator {
 protected:
  Expr mutate_(const BinaryNode* n, const Expr& self) override {
    Expr a = mutate(n->a), b = mutate(n->b);
    if (auto r = rewrite(n->op, a, b, n->dtype)) return *r;
    if (a.same_as(n->a) && b.same_as(n->b)) return self;
    return BinaryNode::make(n->op, a, b);
  }

  Expr mutate_(const NotNode* n, const Expr& self) override {
    Expr a = mutate(n->a);
    if (Expr k = arith::fold_not(a); k.defined()) return k;
    return a.same_as(n->a) ? self : NotNode::make(a);
  }

  Expr mutate_(const SelectNode* n, const Expr& self) override {
    Expr c = mutate(n->cond), t = mutate(n->t), f = mutate(n->f);
    // Both branches are evaluated (ir.h), so the dropped one must not be able to fail.
    if (auto k = const_of(c)) {
      const Expr& keep = *k ? t : f;
      const Expr& drop = *k ? f : t;
      if (keep.dtype() == n->dtype && !arith::can_fail(drop)) return keep;
    }
    if (c.same_as(n->cond) && t.same_as(n->t) && f.same_as(n->f)) return self;
    return SelectNode::make(c, t, f);
  }

  // A branch on a constant is the branch that runs (an if False without an else: nothing), so
  // later passes do not order the accesses of code that never runs (the zero-fill of a tail
  // tile in an iteration pipeline_loops proved whole). A branch that declares buffers stays
  // an if: spliced into the enclosing block they would live to its end.
  Stmt mutate_(const IfNode* n, const Stmt& self) override {
    Stmt s = IRMutator::mutate_(n, self);
    auto* m = s.as<IfNode>();
    auto c = m ? const_of(m->cond) : std::nullopt;
    if (!c) return s;
    const Stmt& taken = *c != 0 ? m->then_case : m->else_case;
    if (!taken.defined()) return SeqNode::make({}, m->loc);
    auto declares = [](const Stmt& x) {
      if (x.as<AllocateNode>()) return true;
      auto* q = x.as<SeqNode>();
      return q && std::any_of(q->stmts.begin(), q->stmts.end(),
                              [](const Stmt& y) { return y.as<AllocateNode>() != nullptr; });
    };
    return declares(taken) ? s : taken;
  }

  Expr mutate_(const CastNode* n, const Expr& self) override {
    Expr v = mutate(n->value);
    if (Expr k = arith::fold_cast(n->dtype, v); k.defined()) return k;
    if (v.dtype() == n->dtype && int_like(n->dtype)) return v;  // a cast to its own dtype
    return v.same_as(n->value) ? self : CastNode::make(n->dtype, v);
  }

 private:
  static std::optional<Expr> rewrite(BinOp op, const Expr& a, const Expr& b, DType t) {
    if (!int_like(a.dtype()) || !int_like(b.dtype()) || !int_like(t)) return std::nullopt;
    auto x = const_of(a), y = const_of(b);
    if (x && y) {  // a division by a constant zero does not fold: it fails at run time
      Expr k = arith::fold_binary(op, a, b);
      return k.defined() ? std::optional<Expr>(k) : std::nullopt;
    }

    // Constants to the right of commutative operators: `4 + i` -> `i + 4`, then the rules
    // below see one shape only.
    // Logic with one constant side: `True and c` -> c; `False and c` -> False when c cannot
    // fail (both sides are always evaluated, ir.h).
    if ((op == BinOp::And || op == BinOp::Or) && (x || y) && is_bool(t)) {
      int64_t k = x ? *x : *y;
      const Expr& other = x ? b : a;
      bool absorbing = (op == BinOp::And) == (k == 0);  // False for and, True for or
      if (!absorbing && is_bool(other.dtype())) return other;
      if (absorbing && !arith::can_fail(other)) return Expr::make_bool(k != 0);
      return std::nullopt;
    }
    if (!is_int(t)) return std::nullopt;  // bool arithmetic does not wrap modulo 2^n
    bool commutative = op == BinOp::Add || op == BinOp::Mul || op == BinOp::Min ||
                       op == BinOp::Max || op == BinOp::BitAnd || op == BinOp::BitOr ||
                       op == BinOp::BitXor;
    if (x && !y && commutative) {
      if (auto r = rewrite(op, b, a, t)) return r;
      return make_as(op, b, a, t);
    }
    if (!y) return std::nullopt;
    int64_t c = *y;
    bool same_t = a.dtype() == t;

    // Identities.
    if (same_t && c == 0 && (op == BinOp::Add || op == BinOp::Sub)) return a;
    if (same_t && c == 1 &&
        (op == BinOp::Mul || op == BinOp::FloorDiv || op == BinOp::TruncDiv || op == BinOp::Div))
      return a;
    if (c == 0 && op == BinOp::Mul && !arith::can_fail(a)) return arith::make_int(t, 0);
    if (c == 1 && (op == BinOp::FloorMod || op == BinOp::TruncMod) && !arith::can_fail(a))
      return arith::make_int(t, 0);

    // Nested constants: (x + c1) + c2 -> x + (c1 + c2), (x * c1) * c2 -> x * (c1 * c2). Exact
    // in wrapping arithmetic when every node has dtype t.
    auto* inner = a.as<BinaryNode>();
    if (!same_t || !inner || inner->a.dtype() != t) return std::nullopt;
    auto c1 = const_of(inner->b);
    if (!c1) return std::nullopt;
    if ((op == BinOp::Add || op == BinOp::Sub) &&
        (inner->op == BinOp::Add || inner->op == BinOp::Sub)) {
      auto uk = [](int64_t v) { return static_cast<uint64_t>(v); };
      uint64_t k = inner->op == BinOp::Add ? uk(*c1) : 0 - uk(*c1);
      k = op == BinOp::Add ? k + uk(c) : k - uk(c);
      return add_const(inner->a, static_cast<int64_t>(k), t);
    }
    if (op == BinOp::Mul && inner->op == BinOp::Mul) {
      int64_t k = *arith::int_binary(BinOp::Mul, t, *c1, c);
      if (k == 1) return inner->a;
      return make_as(BinOp::Mul, inner->a, arith::make_int(t, k), t);
    }
    return std::nullopt;
  }
};

}  // namespace

Expr simplify(const Expr& e) {
  return Simplifier().mutate(e);
}

PrimFunc simplify(const PrimFunc& f) {
  Stmt body = Simplifier().mutate(f->body);
  return body.same_as(f->body) ? f : with_body(f, body);
}

}  // namespace tl
