// The simplify pass: constant folding and trivial identities on integer expressions. Every
// rewrite keeps the IR semantics of tl/ir.h exactly: integer results wrap to the node's
// dtype (folded here the way the virtual NPU evaluates them), floordiv/floormod round toward
// negative infinity, division by zero and failing loads stay in the program for run time,
// and float arithmetic is left alone (its rounding is per dtype and per operation).
#include <algorithm>
#include <functional>
#include <limits>

#include "tl/ir_functor.h"
#include "tl/pass.h"

namespace tl {
namespace {

bool int_like(DType t) { return is_int(t) || is_bool(t); }

/// `v` wrapped to the width of `t` (two's complement; bool is 0/1).
int64_t wrap(DType t, int64_t v) {
  if (is_bool(t)) return v != 0;
  int bits = dtype_bits(t);
  if (bits >= 64) return v;
  uint64_t mask = (uint64_t{1} << bits) - 1;
  uint64_t u = static_cast<uint64_t>(v) & mask;
  if (is_signed_int(t) && (u >> (bits - 1))) u |= ~mask;
  return static_cast<int64_t>(u);
}

int64_t floordiv_i(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

std::optional<int64_t> const_of(const Expr& e) {
  if (!e.defined() || !int_like(e.dtype())) return std::nullopt;
  return as_const_int(e);
}

Expr int_imm(DType t, int64_t v) { return is_bool(t) ? Expr::make_bool(v != 0) : IntImmNode::make(t, wrap(t, v)); }

/// True when evaluating `e` can never fail at run time (no loads, calls or divisions by a
/// non-constant or zero divisor), so dropping it is not a change of behaviour.
bool cannot_fail(const Expr& e) {
  bool ok = true;
  std::function<void(const Expr&)> walk = [&](const Expr& x) {
    if (!ok || !x.defined()) return;
    switch (x.kind()) {
      case ExprKind::IntImm: case ExprKind::FloatImm: case ExprKind::Var: return;
      case ExprKind::Binary: {
        auto* n = x.as<BinaryNode>();
        bool div = n->op == BinOp::Div || n->op == BinOp::FloorDiv || n->op == BinOp::FloorMod ||
                   n->op == BinOp::TruncDiv || n->op == BinOp::TruncMod;
        if (div && !is_float(x.dtype())) {
          auto d = const_of(n->b);
          if (!d || *d == 0) ok = false;
        }
        walk(n->a);
        walk(n->b);
        return;
      }
      case ExprKind::Not: return walk(x.as<NotNode>()->a);
      case ExprKind::Select: {
        auto* n = x.as<SelectNode>();
        walk(n->cond);
        walk(n->t);
        walk(n->f);
        return;
      }
      case ExprKind::Cast: return walk(x.as<CastNode>()->value);
      default: ok = false;  // loads (bounds), calls, strings
    }
  };
  walk(e);
  return ok;
}

/// Folds `a op b` for integer immediates exactly as the IR semantics evaluate it.
std::optional<Expr> fold_consts(BinOp op, DType t, int64_t x, int64_t y) {
  auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
  int64_t r = 0;
  switch (op) {
    case BinOp::Add: r = static_cast<int64_t>(u(x) + u(y)); break;
    case BinOp::Sub: r = static_cast<int64_t>(u(x) - u(y)); break;
    case BinOp::Mul: r = static_cast<int64_t>(u(x) * u(y)); break;
    case BinOp::Div: case BinOp::TruncDiv: case BinOp::TruncMod: case BinOp::FloorDiv: case BinOp::FloorMod:
      if (y == 0) return std::nullopt;                                      // a run-time error
      if (y == -1 && x == std::numeric_limits<int64_t>::min()) return std::nullopt;  // host UB
      if (op == BinOp::FloorDiv) r = floordiv_i(x, y);
      else if (op == BinOp::FloorMod) r = x - floordiv_i(x, y) * y;
      else if (op == BinOp::TruncMod) r = x % y;
      else r = x / y;
      break;
    case BinOp::Min: r = std::min(x, y); break;
    case BinOp::Max: r = std::max(x, y); break;
    case BinOp::EQ: return Expr::make_bool(x == y);
    case BinOp::NE: return Expr::make_bool(x != y);
    case BinOp::LT: return Expr::make_bool(x < y);
    case BinOp::LE: return Expr::make_bool(x <= y);
    case BinOp::GT: return Expr::make_bool(x > y);
    case BinOp::GE: return Expr::make_bool(x >= y);
    case BinOp::And: return Expr::make_bool(x != 0 && y != 0);
    case BinOp::Or: return Expr::make_bool(x != 0 || y != 0);
    case BinOp::BitAnd: r = x & y; break;
    case BinOp::BitOr: r = x | y; break;
    case BinOp::BitXor: r = x ^ y; break;
    case BinOp::Shl: r = static_cast<int64_t>(u(x) << (y & 63)); break;
    case BinOp::Shr: r = x >> (y & 63); break;
  }
  return int_imm(t, r);
}

/// `a op b`, or nothing when the rebuilt node would not have dtype `t`.
std::optional<Expr> make_as(BinOp op, Expr a, Expr b, DType t) {
  Expr e = BinaryNode::make(op, std::move(a), std::move(b));
  if (e.dtype() != t) return std::nullopt;
  return e;
}

/// `x + k` written the readable way (`x - 3` rather than `x + -3`), in dtype t.
std::optional<Expr> add_const(const Expr& x, int64_t k, DType t) {
  k = wrap(t, k);
  if (k == 0) return x;
  if (k < 0 && k != std::numeric_limits<int64_t>::min()) return make_as(BinOp::Sub, x, int_imm(t, -k), t);
  return make_as(BinOp::Add, x, int_imm(t, k), t);
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
    if (auto c = const_of(a)) return Expr::make_bool(*c == 0);
    return a.same_as(n->a) ? self : NotNode::make(a);
  }

  Expr mutate_(const SelectNode* n, const Expr& self) override {
    Expr c = mutate(n->cond), t = mutate(n->t), f = mutate(n->f);
    // Both branches are evaluated (ir.h), so the dropped one must not be able to fail.
    if (auto k = const_of(c)) {
      const Expr& keep = *k ? t : f;
      const Expr& drop = *k ? f : t;
      if (keep.dtype() == n->dtype && cannot_fail(drop)) return keep;
    }
    if (c.same_as(n->cond) && t.same_as(n->t) && f.same_as(n->f)) return self;
    return SelectNode::make(c, t, f);
  }

  Expr mutate_(const CastNode* n, const Expr& self) override {
    Expr v = mutate(n->value);
    if (auto k = const_of(v); k && int_like(n->dtype)) return int_imm(n->dtype, *k);
    if (v.dtype() == n->dtype && int_like(n->dtype)) return v;  // a cast to its own dtype
    return v.same_as(n->value) ? self : CastNode::make(n->dtype, v);
  }

 private:
  static std::optional<Expr> rewrite(BinOp op, const Expr& a, const Expr& b, DType t) {
    if (!int_like(a.dtype()) || !int_like(b.dtype()) || !int_like(t)) return std::nullopt;
    auto x = const_of(a), y = const_of(b);
    if (x && y) return fold_consts(op, t, *x, *y);

    // Constants to the right of commutative operators: `4 + i` -> `i + 4`, then the rules
    // below see one shape only.
    // Logic with one constant side: `True and c` -> c; `False and c` -> False when c cannot
    // fail (both sides are always evaluated, ir.h).
    if ((op == BinOp::And || op == BinOp::Or) && (x || y) && is_bool(t)) {
      int64_t k = x ? *x : *y;
      const Expr& other = x ? b : a;
      bool absorbing = (op == BinOp::And) == (k == 0);  // False for and, True for or
      if (!absorbing && is_bool(other.dtype())) return other;
      if (absorbing && cannot_fail(other)) return Expr::make_bool(k != 0);
      return std::nullopt;
    }
    if (!is_int(t)) return std::nullopt;  // bool arithmetic does not wrap modulo 2^n
    bool commutative = op == BinOp::Add || op == BinOp::Mul || op == BinOp::Min || op == BinOp::Max ||
                       op == BinOp::BitAnd || op == BinOp::BitOr || op == BinOp::BitXor;
    if (x && !y && commutative) {
      if (auto r = rewrite(op, b, a, t)) return r;
      return make_as(op, b, a, t);
    }
    if (!y) return std::nullopt;
    int64_t c = *y;
    bool same_t = a.dtype() == t;

    // Identities.
    if (same_t && c == 0 && (op == BinOp::Add || op == BinOp::Sub)) return a;
    if (same_t && c == 1 && (op == BinOp::Mul || op == BinOp::FloorDiv || op == BinOp::TruncDiv || op == BinOp::Div))
      return a;
    if (c == 0 && op == BinOp::Mul && cannot_fail(a)) return int_imm(t, 0);
    if (c == 1 && (op == BinOp::FloorMod || op == BinOp::TruncMod) && cannot_fail(a)) return int_imm(t, 0);

    // Nested constants: (x + c1) + c2 -> x + (c1 + c2), (x * c1) * c2 -> x * (c1 * c2). Exact
    // in wrapping arithmetic when every node has dtype t.
    auto* inner = a.as<BinaryNode>();
    if (!same_t || !inner || inner->a.dtype() != t) return std::nullopt;
    auto c1 = const_of(inner->b);
    if (!c1) return std::nullopt;
    if ((op == BinOp::Add || op == BinOp::Sub) && (inner->op == BinOp::Add || inner->op == BinOp::Sub)) {
      auto uk = [](int64_t v) { return static_cast<uint64_t>(v); };
      uint64_t k = inner->op == BinOp::Add ? uk(*c1) : 0 - uk(*c1);
      k = op == BinOp::Add ? k + uk(c) : k - uk(c);
      return add_const(inner->a, static_cast<int64_t>(k), t);
    }
    if (op == BinOp::Mul && inner->op == BinOp::Mul) {
      int64_t k = wrap(t, static_cast<int64_t>(static_cast<uint64_t>(*c1) * static_cast<uint64_t>(c)));
      if (k == 1) return inner->a;
      return make_as(BinOp::Mul, inner->a, int_imm(t, k), t);
    }
    return std::nullopt;
  }
};

}  // namespace

Expr simplify(const Expr& e) { return Simplifier().mutate(e); }

PrimFunc simplify(const PrimFunc& f) {
  Stmt body = Simplifier().mutate(f->body);
  return body.same_as(f->body) ? f : with_body(f, body);
}

}  // namespace tl
