// The unroller's integer evaluation (block_replay_eval.h): see there.
#include "block_replay_eval.h"

#include "tl/ir_ops.h"

namespace tl::replay::eval {

std::optional<int64_t> folded(const Expr& e, const arith::VarMap& env, bool strict) {
  auto int_like = [&](DType t) { return is_int(t) || (!strict && is_bool(t)); };
  if (!int_like(e.dtype())) return std::nullopt;
  switch (e.kind()) {
    case ExprKind::IntImm:
      return arith::wrap(e.dtype(), static_cast<const IntImmNode*>(e.get())->value);
    case ExprKind::Var: {
      auto it = env.find(static_cast<const VarNode*>(e.get()));
      if (it == env.end()) return std::nullopt;
      return folded(it->second, env, strict);
    }
    case ExprKind::Binary: {
      auto* n = static_cast<const BinaryNode*>(e.get());
      if (!int_like(n->a.dtype()) || !int_like(n->b.dtype())) return std::nullopt;
      auto x = folded(n->a, env, strict);
      if (!x) return std::nullopt;
      auto y = folded(n->b, env, strict);
      if (!y) return std::nullopt;
      int64_t exact;
      if (strict && ((n->op == BinOp::Add && __builtin_add_overflow(*x, *y, &exact)) ||
                     (n->op == BinOp::Sub && __builtin_sub_overflow(*x, *y, &exact)) ||
                     (n->op == BinOp::Mul && __builtin_mul_overflow(*x, *y, &exact))))
        return std::nullopt;
      return arith::int_binary(n->op, arith::binary_dtype(n->op, n->a.dtype(), n->b.dtype()), *x,
                               *y);
    }
    case ExprKind::Not: {
      if (strict) return std::nullopt;
      auto x = folded(static_cast<const NotNode*>(e.get())->a, env, strict);
      if (!x) return std::nullopt;
      return *x == 0 ? 1 : 0;
    }
    case ExprKind::Cast: {
      auto* n = static_cast<const CastNode*>(e.get());
      if (!int_like(n->value.dtype())) return std::nullopt;
      auto x = folded(n->value, env, strict);
      if (!x) return std::nullopt;
      return arith::cast_value(n->dtype, arith::Value::of_int(*x)).i;
    }
    default:
      return std::nullopt;
  }
}

}  // namespace tl::replay::eval
