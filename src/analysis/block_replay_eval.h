// The unroller's evaluation of conditions, bounds and lets (block_replay.cpp): integer values
// computed from the IR without building any, as simplify would fold them. Kept apart from the
// walk so that each file stays one concept (the walk, the streams' folds, the values).
#pragma once

#include <cstdint>
#include <optional>

#include "tl/arith.h"
#include "tl/ir.h"

namespace tl::replay::eval {

/// The value of `e` when every leaf is an integer immediate or a variable `env` binds, computed
/// as simplify folds it with `env` substituted (arith::int_binary in each node's dtype, Not,
/// integer casts), and so as linear() does where it gives a constant (the same folders; it
/// gives none on an int64 overflow); nullopt otherwise. Without building IR: the unroller
/// evaluates every condition, bound and let of every unrolled iteration. `strict`: nullopt
/// also where linear() gives no constant (bool nodes, an int64 overflow), so that the result
/// is always linear()'s.
std::optional<int64_t> folded(const Expr& e, const arith::VarMap& env, bool strict);
/// folded(e, false), and also where an `and` / `or` has one side that decides it (False /
/// True) while its other side is not known: the guards guard_loop_credits writes (`k + 1 < n
/// or i + 1 < m and (i + 1) * 24 + cid < 512`) are decided by their first side in most
/// iterations, and linear() would otherwise bound every comparison over cid's range (a
/// substitute and an arith::bound each), the most of a Prover question on gemm_dev. The value
/// is the one value() gives without it: simplify folds `True or c` and `False and c` to the
/// constant when c cannot fail (src/arith/simplify.cpp; both sides of a logical operator are
/// always evaluated, ir.h), bottom-up as here, and linear(), tried before simplify, gives a
/// constant only where every block of the range takes that value. An undecided side that
/// can fail (a division by an unknown, a load) keeps value()'s own path.
/// An `and` / `or` is not folded whole first: where folded() gives its value, decided() gives
/// each side's (it extends folded()), which combine to the same; each side is evaluated once.
template <class CanFail>
std::optional<int64_t> decided(const Expr& e, const arith::VarMap& env, CanFail&& can_fail) {
  if (e.kind() != ExprKind::Binary || !is_bool(e.dtype())) return folded(e, env, false);
  auto* n = static_cast<const BinaryNode*>(e.get());
  if (n->op != BinOp::And && n->op != BinOp::Or) return folded(e, env, false);
  auto x = decided(n->a, env, can_fail), y = decided(n->b, env, can_fail);
  if (x && y)
    return arith::int_binary(n->op, arith::binary_dtype(n->op, n->a.dtype(), n->b.dtype()), *x, *y);
  const bool absorbing = n->op == BinOp::Or;  // the side's truth that decides the operator
  if (x && (*x != 0) == absorbing && !can_fail(n->b)) return absorbing ? 1 : 0;
  if (y && (*y != 0) == absorbing && !can_fail(n->a)) return absorbing ? 1 : 0;
  return std::nullopt;
}

}  // namespace tl::replay::eval
