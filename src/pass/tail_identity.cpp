// Neutral fills for mask_tails (the identities are OpDef::identity) (src/pass/tail_identity.h).
#include "tail_identity.h"

#include <cmath>
#include <map>

#include "tl/arith.h"
#include "tl/ir_equal.h"
#include "tl/ir_ops.h"

namespace tl::dev {

Expr constant_of(DType t, double v) {
  if (is_float(t)) return std::isinf(v) ? (v > 0 ? inf(t) : neg_inf(t)) : imm(t, v);
  arith::Interval r = arith::Interval::of_dtype(t);
  if (std::isinf(v)) return arith::make_int(t, v > 0 ? r.hi : r.lo);
  return arith::make_int(t, static_cast<int64_t>(v));
}

namespace {

/// What an expression is known to be where the stale loads read the fill: the accumulator's
/// old element, a known constant, or anything (a finite value the fill says nothing about).
struct Abstract {
  enum Kind { Acc, Known, Any } kind = Any;
  double v = 0;
  static Abstract acc() { return {Acc, 0}; }
  static Abstract known(double x) { return {Known, x}; }
  static Abstract any() { return {Any, 0}; }
  bool is(double x) const { return kind == Known && v == x; }
};

struct Evaluator {
  const StoreNode& st;
  const std::function<bool(const BufferNode*)>& stale;
  const std::function<const BufferNode*(const BufferNode*)>& key;
  double fill;

  Abstract eval(const Expr& e) const {
    if (auto c = as_const_int(e)) return Abstract::known(static_cast<double>(*c));
    if (const auto* f = e.as<FloatImmNode>()) return Abstract::known(f->value);
    if (const auto* l = e.as<LoadNode>()) return load(*l);
    if (const auto* c = e.as<CastNode>()) {
      Abstract a = eval(c->value);
      if (a.kind == Abstract::Known && (is_float(c->dtype) || std::isfinite(a.v))) return a;
      if (a.kind == Abstract::Acc && c->dtype == st.buffer->dtype) return a;
      return Abstract::any();
    }
    if (const auto* s = e.as<SelectNode>()) {
      Abstract c = eval(s->cond), t = eval(s->t), f = eval(s->f);
      if (c.kind == Abstract::Known) return c.v != 0 ? t : f;
      if (t.kind == f.kind &&
          (t.kind == Abstract::Acc || (t.kind == Abstract::Known && t.v == f.v)))
        return t;
      return Abstract::any();
    }
    if (const auto* b = e.as<BinaryNode>()) return binary(b->op, eval(b->a), eval(b->b));
    if (const auto* c = e.as<CallNode>()) return call(*c);
    return Abstract::any();
  }

  Abstract load(const LoadNode& l) const {
    if (key(l.buffer.get()) == key(st.buffer.get())) {
      bool same = l.indices.size() == st.indices.size();
      for (size_t d = 0; same && d < l.indices.size(); ++d)
        same = structural_equal(l.indices[d], st.indices[d]);
      return same ? Abstract::acc() : Abstract::any();
    }
    if (!stale(l.buffer.get())) return Abstract::any();
    // An integer tile cannot hold an infinity (constant_of gives its range's end instead).
    if (!is_float(l.buffer->dtype) && std::isinf(fill)) return Abstract::any();
    return Abstract::known(fill);
  }

  static Abstract binary(BinOp op, Abstract a, Abstract b) {
    using K = Abstract;
    if (a.kind == K::Known && b.kind == K::Known) {
      switch (op) {
        case BinOp::Add:
          return K::known(a.v + b.v);
        case BinOp::Sub:
          return K::known(a.v - b.v);
        case BinOp::Mul:
          return K::known(a.v * b.v);
        case BinOp::Div:
          return K::known(a.v / b.v);
        case BinOp::Min:
          return K::known(std::fmin(a.v, b.v));
        case BinOp::Max:
          return K::known(std::fmax(a.v, b.v));
        default:
          return K::any();
      }
    }
    // The accumulator combined with the op's identity is the accumulator.
    if (a.kind == K::Acc || b.kind == K::Acc) {
      const Abstract& other = a.kind == K::Acc ? b : a;
      const bool acc_left = a.kind == K::Acc;
      switch (op) {
        case BinOp::Add:
          return other.is(0) ? K::acc() : K::any();
        case BinOp::Sub:
          return acc_left && other.is(0) ? K::acc() : K::any();
        case BinOp::Mul:
          return other.is(1) ? K::acc() : K::any();
        case BinOp::Div:
          return acc_left && other.is(1) ? K::acc() : K::any();
        case BinOp::Max:
          return other.is(-INFINITY) ? K::acc() : K::any();
        case BinOp::Min:
          return other.is(INFINITY) ? K::acc() : K::any();
        default:
          return K::any();
      }
    }
    // A known value against a finite unknown one.
    const bool left = a.kind == K::Known;
    const Abstract& k = left ? a : b;
    if (k.kind != K::Known) return K::any();
    switch (op) {
      case BinOp::Add:
        return std::isinf(k.v) ? k : K::any();
      case BinOp::Sub:
        if (!std::isinf(k.v)) return K::any();
        return left ? k : K::known(-k.v);
      case BinOp::Mul:
        return k.is(0) ? K::known(0) : K::any();
      case BinOp::Div:
        return !left && std::isinf(k.v) ? K::known(0) : K::any();
      case BinOp::Max:
        return k.is(INFINITY) ? k : K::any();
      case BinOp::Min:
        return k.is(-INFINITY) ? k : K::any();
      default:
        return K::any();
    }
  }

  Abstract call(const CallNode& c) const {
    std::vector<double> args;
    for (const Expr& a : c.args) {
      Abstract x = eval(a);
      if (x.kind != Abstract::Known) return Abstract::any();
      args.push_back(x.v);
    }
    // The intrinsic's value in double, from the one table (include/tl/intrinsics.def), as the
    // other Known values are (unrounded; the identities tested for are exact in every dtype).
    const IntrinsicDef* def = find_intrinsic(c.name);
    if (!def || static_cast<int>(args.size()) != def->arity) return Abstract::any();
    return Abstract::known(def->eval(args[0], def->arity > 1 ? args[1] : 0));
  }
};

}  // namespace

std::optional<double> neutral_fill(const StoreNode& st,
                                   const std::function<bool(const BufferNode*)>& stale,
                                   const std::function<const BufferNode*(const BufferNode*)>& key) {
  for (double v : {0.0, -double(INFINITY), double(INFINITY), 1.0}) {
    Evaluator ev{st, stale, key, v};
    if (ev.eval(st.value).kind == Abstract::Acc) return v;
  }
  return std::nullopt;
}

}  // namespace tl::dev
