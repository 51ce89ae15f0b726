// The IR text parser: reads the text format that printer.cpp prints (the grammar is documented
// in printer.h) back into a PrimFunc, so that print(parse(print(f))) == print(f) and
// parse(print(f)) is structurally equal to f.
//
// Two stages, split over four files (parser_impl.h says which holds what):
//  - a Python-style lexer: names, numbers, strings and punctuation, plus NEWLINE / INDENT /
//    DEDENT tokens from the indentation (lines inside brackets are joined). A trailing
//    `# @file:line` comment is attached to the NEWLINE that ends its line and becomes the
//    SourceLoc of the statement written on that line; other comments are dropped.
//  - a recursive-descent parser: statements by their first tokens, expressions with Python
//    precedence, and a stack of scopes that resolves every name to its innermost binding.
//    Nodes are made with the raw constructors (no folding), so the IR is exactly what was
//    printed; tile ops go through the generic op registry (find_op / make_tile_op).
//
// Every failure is a tl::Error "FILE:LINE:COL: message", most of them "expected X, got Y".
// The parser must not crash, hang or abort on any input: input, line, token and name sizes
// are capped (tl/parser.h), recursion and block nesting at kMaxDepth, expression trees by the
// IR's own limits (its constructors throw, and the error gets the position here), and every
// value is checked before it reaches a node constructor that asserts.
#include "parser_impl.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "tl/arith.h"  // simplify: constant shapes
#include "tl/ir_equal.h"
#include "tl/ir_ops.h"

namespace tl {
namespace parser_detail {

bool is_reserved(std::string_view n) {
  static constexpr std::string_view kWords[] = {
      "T",     "True",  "False",  "None",   "and",    "or",  "not", "if",
      "else",  "elif",  "for",    "in",     "with",   "as",  "def", "pass",
      "float", "while", "return", "lambda", "import", "from"};
  for (auto w : kWords)
    if (n == w) return true;
  return false;
}

IntRange int_range(DType t) {
  if (is_bool(t)) return {0, 1};
  const int bits = dtype_bits(t);
  if (is_unsigned_int(t)) return {0, bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1};
  return {uint64_t{1} << (bits - 1), (uint64_t{1} << (bits - 1)) - 1};
}
std::string range_str(DType t) {
  IntRange r = int_range(t);
  return fmt::format("[{}{}, {}]", r.neg_max ? "-" : "", r.neg_max, r.pos_max);
}

PrimFunc Parser::function() {
  scopes_.emplace_back();
  std::vector<Var> dynamics;
  while (peek().kind == Tok::Name && is("=", 1)) dynamics.push_back(dynamic_decl());
  if (!is("@")) expected("'@T.prim_func'");
  next();
  expect("T");
  expect(".");
  expect("prim_func");
  // The function's annotations (PrimFuncNode): `@T.prim_func(lowered_from_developer=2)`.
  int lowered_from_developer = 0;
  if (accept("(")) {
    expect("lowered_from_developer");
    expect("=");
    lowered_from_developer = static_cast<int>(
        int_in_range("lowered_from_developer (the developer kernel's threads)", 1, 2));
    expect(")");
  }
  end_of_line();
  expect("def");
  std::string name = expect_name("a function name");
  std::vector<Param> ps = params();
  expect(":");
  SourceLoc loc = end_of_line();
  Stmt body = block({});
  if (peek().kind != Tok::End) expected("end of input (one function per text)");
  if (origins_ && origins_taken_ != origins_->size())
    error_at(peek(), fmt::format("{} allocation origins given for {} allocations", origins_->size(),
                                 origins_taken_));
  PrimFunc f = make_prim_func(std::move(name), std::move(dynamics), std::move(ps), std::move(body),
                              std::move(loc));
  if (lowered_from_developer) {
    auto g = std::make_shared<PrimFuncNode>(*f);
    g->lowered_from_developer = lowered_from_developer;
    return g;
  }
  return f;
}

// ---- Literals ---------------------------------------------------------------------------

/// An integer literal token as a signed value (negated if `neg`).
int64_t Parser::signed_int(const Token& t, bool neg) const {
  constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (t.int_value > kMax + (neg ? 1 : 0))
    error_at(t, fmt::format("expected an integer literal in the int64 range, got {}{}",
                            neg ? "-" : "", excerpt(t.text)));
  if (neg)
    return t.int_value == kMax + 1 ? std::numeric_limits<int64_t>::min()
                                   : -static_cast<int64_t>(t.int_value);
  return static_cast<int64_t>(t.int_value);
}
/// An integer literal token (negated if `neg`) as the held value of an immediate of dtype `t`
/// (tl/ir.h: uint64 values of 2^63 and above are held as their two's complement); an error
/// naming the literal, the dtype and its range when it does not fit.
int64_t Parser::int_literal(const Token& t, bool neg, DType dt) const {
  IntRange r = int_range(dt);
  const uint64_t m = t.int_value;
  if (m > (neg ? r.neg_max : r.pos_max))
    error_at(t, fmt::format("integer literal {}{} is out of range for {}: expected a value in {}",
                            neg ? "-" : "", excerpt(t.text), dtype_name(dt), range_str(dt)));
  return neg ? static_cast<int64_t>(0 - m) : static_cast<int64_t>(m);  // two's complement, as held
}
/// `-v` for the held value `v` of an immediate of dtype `t`; an error when it does not fit `t`.
int64_t Parser::negated(const Token& at, int64_t v, DType t) const {
  IntRange r = int_range(t);
  const bool unsigned_t = is_unsigned_int(t) || is_bool(t);
  const uint64_t mag =
      unsigned_t || v >= 0 ? static_cast<uint64_t>(v) : 0 - static_cast<uint64_t>(v);
  const bool fits = mag == 0 || (!unsigned_t && (v > 0 ? mag <= r.neg_max : mag <= r.pos_max));
  if (!fits)
    error_at(at, fmt::format("-({}) is out of range for {}: expected a value in {}",
                             unsigned_t ? fmt::format("{}", mag) : fmt::format("{}", v),
                             dtype_name(t), range_str(t)));
  return static_cast<int64_t>(0 - static_cast<uint64_t>(v));
}
/// `[-]INT` within [lo, hi].
int64_t Parser::int_in_range(std::string_view what, int64_t lo, int64_t hi) {
  const Token& at = peek();
  bool neg = accept("-");
  if (peek().kind != Tok::Int) expected(fmt::format("an integer {}", what));
  int64_t v = signed_int(next(), neg);
  if (v < lo || v > hi)
    error_at(at, fmt::format("expected {} in [{}, {}], got {}", what, lo, hi, v));
  return v;
}
/// `float("inf")`, `float("-inf")` or `float("nan")`.
double Parser::float_call() {
  expect("float");
  expect("(");
  const Token& st = peek();
  std::string s = expect_string("\"inf\", \"-inf\" or \"nan\"");
  expect(")");
  if (s == "inf" || s == "+inf") return std::numeric_limits<double>::infinity();
  if (s == "-inf") return -std::numeric_limits<double>::infinity();
  if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
  error_at(st, fmt::format("expected \"inf\", \"-inf\" or \"nan\", got \"{}\"", excerpt(s)));
}
DType Parser::dtype_string() {
  if (peek().kind == Tok::String) {
    if (auto t = parse_dtype(peek().text)) {
      next();
      return *t;
    }
  }
  expected("a dtype string such as \"float16\"");
}
Pipe Parser::pipe_string() {
  if (peek().kind == Tok::String) {
    if (auto p = parse_pipe(peek().text)) {
      next();
      return *p;
    }
  }
  expected("a pipe (\"S\", \"V\", \"M\", \"MTE1\", \"MTE2\", \"MTE3\", \"FIX\" or \"ALL\")");
}
L2CacheMode Parser::l2_cache_arg() {
  expect("=");
  if (peek().kind == Tok::String) {
    if (auto m = parse_l2_cache(peek().text)) {
      next();
      return *m;
    }
  }
  expected("an L2 cache mode (\"normal\" or \"disable\")");
}
/// The value of a tile-op attribute: True/False, [-]int, [-]float, float("..."), "string".
AttrValue Parser::attr_value() {
  if (accept("True")) return true;
  if (accept("False")) return false;
  if (peek().kind == Tok::String) return next().text;
  bool neg = accept("-");
  const Token& t = peek();
  if (t.kind == Tok::Int) return signed_int(next(), neg);
  if (t.kind == Tok::Float) {
    next();
    return neg ? -t.float_value : t.float_value;
  }
  if (is("float")) {
    double v = float_call();
    return neg ? -v : v;
  }
  expected("an attribute value (True, False, a number or a string)");
}

// ---- Function header ----------------------------------------------------------------------

/// `M = T.dynamic("M"[, "dtype"])`
Var Parser::dynamic_decl() {
  std::string name = expect_name("a dynamic symbol name");
  expect("=");
  expect("T");
  expect(".");
  expect("dynamic");
  expect("(");
  const Token& st = peek();
  std::string s = expect_string("the symbol's name as a string");
  if (s != name)
    error_at(st, fmt::format("expected \"{}\" (the name being assigned), got \"{}\"", excerpt(name),
                             excerpt(s)));
  DType t = DType::Int32;
  if (accept(",") && !is(")")) t = dtype_string();
  expect(")");
  end_of_line();
  Var v(name, t);
  bind(name, {v, {}});
  return v;
}

/// `(A: T.Tensor((M, 128), "float16"[, strides=(..)][, l2_cache="disable"]), eps: T.float32, ...)`
std::vector<Param> Parser::params() {
  std::vector<Param> ps;
  expect("(");
  while (!is(")")) {
    const Token& nt = peek();
    std::string name = expect_name("a parameter name");
    for (const auto& p : ps)
      if (p.name() == name) error_at(nt, fmt::format("duplicate parameter '{}'", name));
    expect(":");
    expect("T");
    expect(".");
    if (accept("Tensor")) {
      ps.push_back(Param{tensor_type(name), {}});
      bind(name, {{}, ps.back().tensor});
    } else if (peek().kind == Tok::Name && parse_dtype(peek().text)) {
      Var v(name, *parse_dtype(next().text));
      ps.push_back(Param{{}, v});
      bind(name, {v, {}});
    } else {
      expected("'Tensor' or a scalar dtype such as 'float32'");
    }
    if (!accept(",")) break;
  }
  expect(")");
  return ps;
}

Buffer Parser::tensor_type(const std::string& name) {
  expect("(");
  std::vector<Expr> shape = shape_tuple();
  expect(",");
  DType t = dtype_string();
  std::vector<Expr> strides;
  L2CacheMode l2 = L2CacheMode::Normal;
  if (accept(",") && !is(")")) {
    if (!accept("l2_cache")) {
      expect("strides");
      expect("=");
      const Token& at = peek();
      strides = tuple();
      if (strides.size() != shape.size())
        error_at(at, fmt::format("expected {} strides (one per dimension), got {}", shape.size(),
                                 strides.size()));
      if (accept(",") && !is(")")) {
        expect("l2_cache");
        l2 = l2_cache_arg();
      }
    } else {
      l2 = l2_cache_arg();
    }
    accept(",");
  }
  expect(")");
  return BufferNode::make(name, t, std::move(shape), MemScope::GM, std::move(strides), -1, {}, {},
                          0, l2);
}

std::string Parser::take_origin(const Token& at) {
  if (!origins_) return {};
  if (origins_taken_ >= origins_->size())
    error_at(at, fmt::format("more allocations than the {} origins given", origins_->size()));
  return (*origins_)[origins_taken_++];
}

/// A buffer's shape: a tuple whose integer-constant entries (`1 * 16`) fold to literals. Shapes
/// are the one place the parser folds: the rest of the compiler reads a static extent as a
/// literal (as_const_int), so an unfolded `1 * 16` would be taken for a dynamic size and the
/// verifier would report it as an overflow. Extents with a dynamic size stay as written.
std::vector<Expr> Parser::shape_tuple() {
  std::vector<Expr> xs = tuple();
  for (Expr& x : xs)
    if (!x.as<IntImmNode>() && is_int(x.dtype()))
      if (auto v = as_const_int(simplify(x))) x = IntImmNode::make(x.dtype(), *v);
  return xs;
}

/// `(e, e, ...)`, `(e,)` or `()`.
std::vector<Expr> Parser::tuple() {
  expect("(");
  std::vector<Expr> xs;
  while (!is(")")) {
    xs.push_back(expr().e);
    if (!accept(",")) break;
  }
  expect(")");
  return xs;
}

}  // namespace parser_detail

namespace {
PrimFunc parse_with(std::string_view text, std::string_view filename,
                    const std::vector<std::string>* alloc_origins) {
  if (text.size() > kMaxIrTextBytes)
    parser_detail::fail_at(
        filename, 1, 1,
        fmt::format("input of {} bytes is longer than {} bytes (the IR text format's limit)",
                    text.size(), kMaxIrTextBytes));
  parser_detail::Parser p(parser_detail::lex(text, filename), filename);
  p.set_origins(alloc_origins);
  return p.function();
}
}  // namespace

PrimFunc parse(std::string_view text, std::string_view filename) {
  return parse_with(text, filename, nullptr);
}

PrimFunc parse(std::string_view text, std::string_view filename,
               const std::vector<std::string>& alloc_origins) {
  return parse_with(text, filename, &alloc_origins);
}

bool is_ir_name(std::string_view s) {
  if (s.empty() || s.size() > kMaxIrNameBytes || !parser_detail::is_name_start(s[0])) return false;
  for (char c : s)
    if (!parser_detail::is_name_char(c)) return false;
  return !parser_detail::is_reserved(s);
}

}  // namespace tl
