// The scalar semantics of the IR (tl/ir.h) and the one evaluator built on them: integer
// operators in wrapping 64-bit arithmetic without host UB, float operators rounded to the
// node's dtype, casts, intrinsics. The DSL's folding, simplify, the launcher and the virtual
// NPU's scalar unit all evaluate through here, so a constant folded at compile time is the
// value the kernel computes at run time. The evaluator is the virtual NPU's hot path for
// control flow and addresses: nodes are downcast by kind, not by RTTI.
#include <algorithm>
#include <cmath>
#include <limits>

#include "tl/arith.h"
#include "tl/ir_ops.h"
#include "tl/npu/numerics.h"
#include "tl/printer.h"

namespace tl::arith {

namespace {
/// Float to integer as a cast does it: toward zero, NaN to 0, saturating near +-2^63 (the
/// clamp keeps the conversion defined; 9.2e18 is just inside int64).
int64_t trunc_to_int(double d) {
  d = std::trunc(d);
  if (std::isnan(d)) d = 0;
  return static_cast<int64_t>(std::clamp(d, -9.2e18, 9.2e18));
}
uint64_t bits(int64_t v) {
  return static_cast<uint64_t>(v);
}

template <typename N>
const N* node(const Expr& e) {
  return static_cast<const N*>(e.get());
}
}  // namespace

int64_t Value::as_int() const {
  return is_float ? trunc_to_int(f) : i;
}

double round_float(DType t, double v) {
  if (!is_float(t) || t == DType::Float64) return v;
  alignas(8) uint8_t buf[8];
  npu::from_double(t, v, buf);
  return npu::to_double(t, buf);
}

int64_t dtype_min(DType t) {
  if (is_bool(t) || is_unsigned_int(t))
    return t == DType::UInt64 ? std::numeric_limits<int64_t>::min() : 0;
  if (!is_int(t) || dtype_bits(t) >= 64) return std::numeric_limits<int64_t>::min();
  return -(int64_t{1} << (dtype_bits(t) - 1));
}
int64_t dtype_max(DType t) {
  if (is_bool(t)) return 1;
  if (!is_int(t) || dtype_bits(t) >= 64) return std::numeric_limits<int64_t>::max();
  return is_unsigned_int(t) ? (int64_t{1} << dtype_bits(t)) - 1
                            : (int64_t{1} << (dtype_bits(t) - 1)) - 1;
}

std::optional<int64_t> int_binary(BinOp op, DType t, int64_t x, int64_t y) {
  int64_t r = 0;
  switch (op) {
    case BinOp::Add:
      r = static_cast<int64_t>(bits(x) + bits(y));
      break;
    case BinOp::Sub:
      r = static_cast<int64_t>(bits(x) - bits(y));
      break;
    case BinOp::Mul:
      r = static_cast<int64_t>(bits(x) * bits(y));
      break;
    case BinOp::Div:
    case BinOp::TruncDiv:
    case BinOp::FloorDiv:
      if (y == 0) return std::nullopt;
      if (y == -1) {  // x / -1 is -x, which wraps for INT64_MIN (where C++ division is UB)
        r = static_cast<int64_t>(0 - bits(x));
      } else {
        r = x / y;
        if (op == BinOp::FloorDiv && x % y != 0 && ((x < 0) != (y < 0))) --r;
      }
      break;
    case BinOp::TruncMod:
    case BinOp::FloorMod:
      if (y == 0) return std::nullopt;
      if (y == -1) return 0;  // INT64_MIN % -1 is UB in C++; every x % -1 is 0
      r = x % y;
      if (op == BinOp::FloorMod && r != 0 && ((r < 0) != (y < 0)))
        r += y;  // opposite signs: no overflow
      break;
    case BinOp::Min:
      r = std::min(x, y);
      break;
    case BinOp::Max:
      r = std::max(x, y);
      break;
    case BinOp::EQ:
      return x == y;
    case BinOp::NE:
      return x != y;
    case BinOp::LT:
      return x < y;
    case BinOp::LE:
      return x <= y;
    case BinOp::GT:
      return x > y;
    case BinOp::GE:
      return x >= y;
    case BinOp::And:
      return x != 0 && y != 0;
    case BinOp::Or:
      return x != 0 || y != 0;
    case BinOp::BitAnd:
      r = x & y;
      break;
    case BinOp::BitOr:
      r = x | y;
      break;
    case BinOp::BitXor:
      r = x ^ y;
      break;
    case BinOp::Shl:
      r = static_cast<int64_t>(bits(x) << (y & 63));
      break;
    case BinOp::Shr:
      r = x >> (y & 63);
      break;
  }
  return wrap(t, r);
}

std::optional<Value> float_binary(BinOp op, DType t, double x, double y) {
  double r = 0;
  switch (op) {
    case BinOp::Add:
      r = x + y;
      break;
    case BinOp::Sub:
      r = x - y;
      break;
    case BinOp::Mul:
      r = x * y;
      break;
    case BinOp::Div:
    case BinOp::TruncDiv:
      r = x / y;
      break;
    case BinOp::FloorDiv:
      r = std::floor(x / y);
      break;
    case BinOp::FloorMod:
      r = x - std::floor(x / y) * y;
      break;
    case BinOp::TruncMod:
      r = std::fmod(x, y);
      break;
    case BinOp::Min:
      r = std::min(x, y);
      break;
    case BinOp::Max:
      r = std::max(x, y);
      break;
    case BinOp::EQ:
      return Value::of_int(x == y);
    case BinOp::NE:
      return Value::of_int(x != y);
    case BinOp::LT:
      return Value::of_int(x < y);
    case BinOp::LE:
      return Value::of_int(x <= y);
    case BinOp::GT:
      return Value::of_int(x > y);
    case BinOp::GE:
      return Value::of_int(x >= y);
    case BinOp::And:
      return Value::of_int(x != 0 && y != 0);
    case BinOp::Or:
      return Value::of_int(x != 0 || y != 0);
    default:
      return std::nullopt;  // bitwise operators and shifts
  }
  return Value::of_float(round_float(t, r));
}

Value cast_value(DType t, const Value& v) {
  if (is_float(t)) return Value::of_float(round_float(t, v.as_double()));
  if (is_bool(t)) return Value::of_int(v.as_double() != 0);
  return Value::of_int(wrap(t, v.is_float ? trunc_to_int(v.f) : v.i));
}

std::optional<Value> intrinsic(const std::string& name, DType t, double x, double y) {
  const IntrinsicDef* d = find_intrinsic(name);
  if (!d) return std::nullopt;
  const double r = d->eval(x, y);
  if (!is_float(t)) return Value::of_int(wrap(t, trunc_to_int(r)));
  return Value::of_float(round_float(t, r));
}

// ---------------------------------------------------------------------------------------------
// The evaluator

void Evaluator::fail(const std::string& msg) const {
  throw Error(msg);
}
void Evaluator::raise(const std::string& msg) const {
  fail(msg);
  throw Error(msg);  // an override of fail returned
}
Value Evaluator::var(const VarNode& v) {
  raise(fmt::format("unbound variable {}", v.name));
}
Value Evaluator::load(const LoadNode& n) {
  raise(fmt::format("cannot read buffer {} here", n.buffer->name));
}

Value Evaluator::eval(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::IntImm: {
      const int64_t v = node<IntImmNode>(e)->value;
      if (e.dtype() == DType::Int64) return Value::of_int(v);  // wrap's identity, inline
      return Value::of_int(wrap(e.dtype(), v));
    }
    case ExprKind::FloatImm:
      return Value::of_float(round_float(e.dtype(), node<FloatImmNode>(e)->value));
    case ExprKind::StringImm:
      raise("a string literal is not a scalar value");
    case ExprKind::Var:
      return var(*node<VarNode>(e));
    case ExprKind::Binary: {
      auto* n = node<BinaryNode>(e);
      Value a = eval(n->a), b = eval(n->b);
      // Address arithmetic, the virtual NPU's most frequent case, inline: an add, subtract or
      // multiply of int32/int64 operands into an int32/int64 result, what int_binary computes
      // for them (wrapping 64-bit arithmetic, then wrap to the result's width).
      const DType t = e.dtype(), ta = n->a.dtype(), tb = n->b.dtype();
      if ((t == DType::Int64 || t == DType::Int32) && (ta == DType::Int64 || ta == DType::Int32) &&
          (tb == DType::Int64 || tb == DType::Int32) && !a.is_float && !b.is_float &&
          (n->op == BinOp::Add || n->op == BinOp::Sub || n->op == BinOp::Mul)) {
        const uint64_t x = bits(a.i), y = bits(b.i);
        const uint64_t r = n->op == BinOp::Add ? x + y : n->op == BinOp::Sub ? x - y : x * y;
        const auto v = static_cast<int64_t>(r);
        return Value::of_int(t == DType::Int32 ? static_cast<int64_t>(static_cast<int32_t>(v)) : v);
      }
      if (a.is_float || b.is_float || is_float(n->a.dtype()) || is_float(n->b.dtype())) {
        if (auto r = float_binary(n->op, e.dtype(), a.as_double(), b.as_double())) return *r;
        raise(
            fmt::format("bitwise operator {} on a float value in {}", binop_name(n->op), print(e)));
      }
      if (auto r = int_binary(n->op, e.dtype(), a.i, b.i)) return Value::of_int(*r);
      raise(fmt::format("division by zero in {}", print(e)));
    }
    case ExprKind::Not:
      return Value::of_int(eval(node<NotNode>(e)->a).as_double() == 0);
    case ExprKind::Select: {
      auto* n = node<SelectNode>(e);
      Value c = eval(n->cond), x = eval(n->t), y = eval(n->f);
      bool take_t = c.as_double() != 0;
      const Expr& branch = take_t ? n->t : n->f;
      const Value& v = take_t ? x : y;
      return branch.dtype() == e.dtype() ? v : cast_value(e.dtype(), v);
    }
    case ExprKind::Cast:
      return cast_value(e.dtype(), eval(node<CastNode>(e)->value));
    case ExprKind::Load:
      return load(*node<LoadNode>(e));
    case ExprKind::Call: {
      auto* n = node<CallNode>(e);
      const IntrinsicDef* def = find_intrinsic(n->name);
      if (!def) raise(fmt::format("unknown intrinsic T.{}", n->name));
      const int arity = def->arity;
      if (static_cast<int>(n->args.size()) != arity)
        raise(fmt::format("T.{} takes {} argument(s), got {}", n->name, arity, n->args.size()));
      double x = eval(n->args[0]).as_double();
      double y = arity > 1 ? eval(n->args[1]).as_double() : 0;
      return *intrinsic(n->name, e.dtype(), x, y);
    }
  }
  raise("unknown expression kind");
}

Value evaluate(const Expr& e, const std::unordered_map<const VarNode*, Value>& vars) {
  struct MapEvaluator final : Evaluator {
    const std::unordered_map<const VarNode*, Value>& vars;
    explicit MapEvaluator(const std::unordered_map<const VarNode*, Value>& v) : vars(v) {}
    Value var(const VarNode& v) override {
      auto it = vars.find(&v);
      if (it == vars.end()) raise(fmt::format("unbound variable {}", v.name));
      return it->second;
    }
  };
  return MapEvaluator(vars).eval(e);
}

}  // namespace tl::arith
