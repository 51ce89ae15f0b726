// The IR text parser's expressions: Python precedence from `or` down to primaries, names,
// subscripts, `T.` calls and typed literals; every node is made raw (no folding), and the
// IR's nesting limits surface as errors at the token. See parser.cpp's top comment.
#include "parser_impl.h"

#include <cmath>
#include <limits>

#include "tl/ir_equal.h"
#include "tl/ir_ops.h"

namespace tl {
namespace parser_detail {

/// One left-associative precedence level: `sub (op sub)*`.
Ex Parser::left_assoc(Level sub, std::initializer_list<std::pair<std::string_view, BinOp>> ops) {
  Ex a = (this->*sub)();
  for (;;) {
    const std::pair<std::string_view, BinOp>* match = nullptr;
    for (const auto& o : ops)
      if (is(o.first)) match = &o;
    if (!match) return a;
    const Token& at = next();
    Ex b = (this->*sub)();
    a = binary(match->second, a, b, at);
  }
}

Ex Parser::expr() {
  Nest guard(*this, peek());
  return left_assoc(&Parser::and_expr, {{"or", BinOp::Or}});
}
Ex Parser::and_expr() {
  return left_assoc(&Parser::not_expr, {{"and", BinOp::And}});
}
Ex Parser::not_expr() {
  if (!is("not")) return comparison();
  const Token& at = next();
  Nest guard(*this, at);
  Ex a = not_expr();
  return node(at, [&] { return NotNode::make(a.e); });
}
std::optional<BinOp> Parser::comparison_op() const {
  static constexpr std::pair<std::string_view, BinOp> kOps[] = {
      {"==", BinOp::EQ}, {"!=", BinOp::NE}, {"<", BinOp::LT},
      {"<=", BinOp::LE}, {">", BinOp::GT},  {">=", BinOp::GE}};
  if (peek().kind != Tok::Punct) return std::nullopt;
  for (const auto& [s, op] : kOps)
    if (peek().text == s) return op;
  return std::nullopt;
}
/// Comparisons do not chain (the printer parenthesises instead).
Ex Parser::comparison() {
  Ex a = bit_or();
  auto op = comparison_op();
  if (!op) return a;
  const Token& at = next();
  Ex b = bit_or();
  if (comparison_op()) expected("no second comparison (comparisons do not chain; add parentheses)");
  return binary(*op, a, b, at);
}
Ex Parser::bit_or() {
  return left_assoc(&Parser::bit_xor, {{"|", BinOp::BitOr}});
}
Ex Parser::bit_xor() {
  return left_assoc(&Parser::bit_and, {{"^", BinOp::BitXor}});
}
Ex Parser::bit_and() {
  return left_assoc(&Parser::shift, {{"&", BinOp::BitAnd}});
}
Ex Parser::shift() {
  return left_assoc(&Parser::arith, {{"<<", BinOp::Shl}, {">>", BinOp::Shr}});
}
Ex Parser::arith() {
  return left_assoc(&Parser::term, {{"+", BinOp::Add}, {"-", BinOp::Sub}});
}
Ex Parser::term() {
  return left_assoc(
      &Parser::unary,
      {{"*", BinOp::Mul}, {"/", BinOp::Div}, {"//", BinOp::FloorDiv}, {"%", BinOp::FloorMod}});
}

/// Unary minus folds into int/float literals; otherwise it is `x * -1` for a float x (an
/// exact sign flip) and `0 - x` for an integer x, in x's dtype.
Ex Parser::unary() {
  if (is("+")) {
    Nest guard(*this, next());
    return unary();
  }
  if (!is("-")) return primary();
  const Token& at = next();
  Nest guard(*this, at);
  if (peek().kind == Tok::Int)
    return {IntImmNode::make(DType::Int32, int_literal(next(), true, DType::Int32))};
  Ex a = unary();
  if (auto* i = a.e.as<IntImmNode>(); i && is_int(i->dtype))
    return {IntImmNode::make(i->dtype, negated(at, i->value, i->dtype))};
  if (auto* f = a.e.as<FloatImmNode>()) return {FloatImmNode::make(f->dtype, -f->value)};
  DType t = a.e.dtype();
  // A float is negated as the DSL's `-x` is (ir_ops.cpp): `x * -1`, an exact sign flip.
  if (is_float(t)) return binary(BinOp::Mul, a, Ex{FloatImmNode::make(t, -1.0)}, at);
  return binary(BinOp::Sub, Ex{IntImmNode::make(t, 0)}, a, at);
}

Ex Parser::primary() {
  const Token& t = peek();
  switch (t.kind) {
    case Tok::Int:
      next();
      return {IntImmNode::make(DType::Int32, int_literal(t, false, DType::Int32))};
    case Tok::Float:
      next();
      return {FloatImmNode::make(DType::Float32, t.float_value)};
    case Tok::String:
      next();
      return {StringImmNode::make(t.text)};
    case Tok::Punct:
      if (is("(")) {
        next();
        Ex e = expr();
        expect(")");
        return e;
      }
      break;
    case Tok::Name:
      if (is("True") || is("False")) {
        next();
        return {IntImmNode::make(DType::Bool, t.text == "True" ? 1 : 0)};
      }
      if (is("float") && is("(", 1)) return {FloatImmNode::make(DType::Float32, float_call())};
      if (is("T") && is(".", 1)) return t_call();
      if (!is_reserved(t.text)) return name_ref();
      break;
    default:
      break;
  }
  expected("an expression");
}

/// A variable, or an element load `A[i, j]`.
Ex Parser::name_ref() {
  const Token& t = next();
  const Binding* b = lookup(t.text);
  if (!b) error_at(t, fmt::format("undefined name '{}'", excerpt(t.text)));
  if (b->var.defined()) return {b->var};
  if (!is("["))
    error_at(t, fmt::format("expected a scalar expression, got buffer '{}' (write '{}[...]' for "
                            "an element)",
                            excerpt(t.text), excerpt(t.text)));
  std::vector<Ex> idx = index_list();
  std::vector<Expr> es;
  for (auto& x : idx) es.push_back(std::move(x.e));
  return node(t, [&] { return LoadNode::make(b->buf, std::move(es)); });
}

/// `[e, e, ...]` (possibly empty).
std::vector<Ex> Parser::index_list() {
  expect("[");
  std::vector<Ex> xs;
  while (!is("]")) {
    xs.push_back(expr());
    if (!accept(",")) break;
  }
  expect("]");
  return xs;
}

/// `(e, e, ...)` with exactly n arguments.
std::vector<Ex> Parser::call_args(size_t n, const Token& fn) {
  expect("(");
  std::vector<Ex> xs;
  while (!is(")")) {
    xs.push_back(expr());
    if (!accept(",")) break;
  }
  expect(")");
  if (xs.size() != n)
    error_at(fn, fmt::format("expected {} argument{} for T.{}, got {}", n, n == 1 ? "" : "s",
                             excerpt(fn.text), xs.size()));
  return xs;
}

/// `T.<something>(...)` in an expression: typed literal, min/max/truncdiv/truncmod,
/// if_then_else, cast, or a scalar intrinsic.
Ex Parser::t_call() {
  expect("T");
  expect(".");
  const Token& fn = peek();
  if (fn.kind != Tok::Name) expected("a function name after 'T.'");
  next();
  const std::string& n = fn.text;
  if (auto dt = parse_dtype(n)) return typed_literal(*dt);
  static constexpr std::pair<std::string_view, BinOp> kBinary[] = {{"min", BinOp::Min},
                                                                   {"max", BinOp::Max},
                                                                   {"truncdiv", BinOp::TruncDiv},
                                                                   {"truncmod", BinOp::TruncMod}};
  for (const auto& [name, op] : kBinary) {
    if (n == name) {
      auto a = call_args(2, fn);
      return binary(op, a[0], a[1], fn);
    }
  }
  if (n == "if_then_else") {
    auto a = call_args(3, fn);
    return node(fn, [&] { return SelectNode::make(a[0].e, a[1].e, a[2].e); });
  }
  if (n == "cast") {
    expect("(");
    Ex v = expr();
    expect(",");
    DType t = dtype_string();
    accept(",");
    expect(")");
    return node(fn, [&] { return CastNode::make(t, v.e); });
  }
  if (const IntrinsicDef* def = find_intrinsic(n)) {
    auto a = call_args(static_cast<size_t>(def->arity), fn);
    std::vector<Expr> es;
    for (auto& x : a) es.push_back(x.e);
    DType t = es[0].dtype();  // before es is moved from
    return node(fn, [&] { return CallNode::make(t, n, std::move(es)); });
  }
  error_at(fn, fmt::format("unknown function 'T.{}'", excerpt(n)));
}

/// `T.int64(5)`, `T.float16(-1.5)`, `T.float16(float("inf"))`, `T.bool(True)`.
Ex Parser::typed_literal(DType t) {
  expect("(");
  Expr e;
  if (is_bool(t)) {
    if (is("True") || is("False"))
      e = IntImmNode::make(t, next().text == "True" ? 1 : 0);
    else
      expected("True or False");
  } else {
    bool neg = accept("-");
    const Token& v = peek();
    if (is_int(t)) {
      if (v.kind != Tok::Int) expected(fmt::format("an integer literal for T.{}", dtype_name(t)));
      e = IntImmNode::make(t, int_literal(next(), neg, t));
    } else {
      double x = 0;
      if (v.kind == Tok::Int)
        x = static_cast<double>(next().int_value);
      else if (v.kind == Tok::Float)
        x = next().float_value;
      else if (is("float"))
        x = float_call();
      else
        expected(fmt::format("a number for T.{}", dtype_name(t)));
      e = FloatImmNode::make(t, neg ? -x : x);
    }
  }
  expect(")");
  return {e};
}

}  // namespace parser_detail
}  // namespace tl
