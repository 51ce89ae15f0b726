// The IR text parser: reads the text format that printer.cpp prints (the grammar is documented
// in printer.h) back into a PrimFunc, so that print(parse(print(f))) == print(f) and
// parse(print(f)) is structurally equal to f.
//
// Two stages, both in this file:
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
#include "tl/parser.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <unordered_map>

#include "tl/ir_equal.h"
#include "tl/ir_ops.h"
#include "tl/op.h"

namespace tl {
namespace {

/// Deepest nesting of blocks and of parser recursion: the IR's limit (tl/ir.h), so that every
/// nest the IR can hold parses back and nothing deeper does.
constexpr int kMaxDepth = kMaxNestingDepth;

[[noreturn]] void fail_at(std::string_view file, int line, int col, const std::string& msg) {
  throw Error(fmt::format("{}:{}:{}: {}", file, line, col, msg));
}

/// A printable, bounded rendering of arbitrary input text for error messages.
std::string excerpt(std::string_view s) {
  constexpr size_t kMax = 40;
  std::string out;
  for (size_t i = 0; i < s.size() && i < kMax; ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    out += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
  }
  if (s.size() > kMax) out += "...";
  return out;
}

// =============================================================================================
// Lexer

enum class Tok : uint8_t { Name, Int, Float, String, Punct, Newline, Indent, Dedent, End };

struct Token {
  Tok kind = Tok::End;
  std::string text;  // Name and Punct: the spelling; String: the unescaped value; numbers: spelling
  int line = 1, col = 1;
  uint64_t int_value = 0;  // Int
  double float_value = 0;  // Float
  SourceLoc loc;           // Newline: the `# @file:line` comment of the line it ends
};

std::string describe(const Token& t) {
  switch (t.kind) {
    case Tok::Name:
    case Tok::Punct: return fmt::format("'{}'", excerpt(t.text));
    case Tok::Int:
    case Tok::Float: return fmt::format("number {}", excerpt(t.text));
    case Tok::String: return fmt::format("string \"{}\"", excerpt(t.text));
    case Tok::Newline: return "end of line";
    case Tok::Indent: return "an indented block";
    case Tok::Dedent: return "end of block";
    case Tok::End: return "end of input";
  }
  return "?";
}

bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

class Lexer {
 public:
  Lexer(std::string_view src, std::string_view file) : src_(src), file_(file) {}

  std::vector<Token> run() {
    while (pos_ < src_.size()) {
      check_line();
      if (line_start_) {
        line_start_ = false;
        if (brackets_ == 0) indentation();
        continue;
      }
      char c = src_[pos_];
      if (c == '\n') newline();
      else if (c == ' ' || c == '\t' || c == '\r' || c == '\f') ++pos_;
      else if (c == '#') comment();
      else if (is_name_start(c)) name();
      else if (is_digit(c) || (c == '.' && pos_ + 1 < src_.size() && is_digit(src_[pos_ + 1]))) number();
      else if (c == '"' || c == '\'') string();
      else punct();
    }
    check_line();
    if (line_has_tokens_) push(Tok::Newline, "", pending_loc_);
    while (indents_.size() > 1) {
      indents_.pop_back();
      push(Tok::Dedent, "");
    }
    push(Tok::End, "");
    return std::move(toks_);
  }

 private:
  int col() const { return static_cast<int>(pos_ - line_begin_) + 1; }
  [[noreturn]] void fail(const std::string& msg) { fail_at(file_, line_, col(), msg); }

  /// The current line is within kMaxIrLineBytes (checked before each token and at the end).
  void check_line() {
    if (pos_ - line_begin_ <= kMaxIrLineBytes) return;
    fail_at(file_, line_, 1, fmt::format("line longer than {} bytes (the IR text format's limit)", kMaxIrLineBytes));
  }
  /// A token of `n` bytes started at column tok_col_ is within `limit`.
  void check_token(size_t n, size_t limit, const char* what) {
    if (n <= limit) return;
    fail_at(file_, line_, tok_col_, fmt::format("{} longer than {} bytes (the IR text format's limit)", what, limit));
  }

  void push(Tok k, std::string text, SourceLoc loc = {}) {
    if (toks_.size() >= kMaxIrTokens)
      fail(fmt::format("more than {} tokens (the IR text format's limit)", kMaxIrTokens));
    Token t;
    t.kind = k;
    t.text = std::move(text);
    t.line = line_;
    t.col = tok_col_ > 0 ? tok_col_ : col();
    t.loc = std::move(loc);
    toks_.push_back(std::move(t));
    tok_col_ = 0;
    if (k != Tok::Newline && k != Tok::Indent && k != Tok::Dedent && k != Tok::End)
      line_has_tokens_ = true;
  }

  /// At the start of a logical line: skips blank and comment-only lines, otherwise emits
  /// INDENT or DEDENTs for the change of indentation.
  void indentation() {
    size_t p = pos_;
    bool tab = false;
    while (p < src_.size() && (src_[p] == ' ' || src_[p] == '\t' || src_[p] == '\r' || src_[p] == '\f')) {
      tab = tab || src_[p] == '\t';
      ++p;
    }
    if (p == src_.size() || src_[p] == '\n' || src_[p] == '#') {  // blank or comment-only line
      while (p < src_.size() && src_[p] != '\n') ++p;
      pos_ = p;
      return;
    }
    size_t width = p - pos_;
    if (tab) fail("expected spaces for indentation, got a tab");
    pos_ = p;
    if (width > indents_.back()) {
      indents_.push_back(width);
      push(Tok::Indent, "");
      return;
    }
    while (width < indents_.back()) {
      indents_.pop_back();
      push(Tok::Dedent, "");
    }
    if (width != indents_.back())
      fail(fmt::format("expected an indentation of {} spaces (as an enclosing block), got {}",
                       indents_.back(), width));
  }

  void newline() {
    if (brackets_ == 0) {
      if (line_has_tokens_) push(Tok::Newline, "", pending_loc_);
      line_has_tokens_ = false;
      pending_loc_ = {};
      line_start_ = true;
    }
    ++pos_;
    ++line_;
    line_begin_ = pos_;
  }

  /// `# @file:line` sets the location of this line's statement; other comments are skipped.
  void comment() {
    size_t end = src_.find('\n', pos_);
    if (end == std::string_view::npos) end = src_.size();
    std::string_view text = src_.substr(pos_ + 1, end - pos_ - 1);
    pos_ = end;
    while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
    while (!text.empty() && (text.back() == ' ' || text.back() == '\r')) text.remove_suffix(1);
    if (text.empty() || text.front() != '@') return;
    text.remove_prefix(1);
    std::string via;  // `# @k.cpp:40 via k.cpp:12`: a statement written in a helper
    if (size_t v = text.find(" via "); v != std::string_view::npos) {
      via = std::string(text.substr(v + 5));
      text = text.substr(0, v);
    }
    size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) return;
    std::string_view digits = text.substr(colon + 1);
    if (digits.empty() || digits.size() > 9) return;
    int line = 0;
    for (char c : digits) {
      if (!is_digit(c)) return;
      line = line * 10 + (c - '0');
    }
    if (line > 0) pending_loc_ = SourceLoc{std::string(text.substr(0, colon)), line, std::move(via)};
  }

  void name() {
    size_t b = pos_;
    while (pos_ < src_.size() && is_name_char(src_[pos_])) ++pos_;
    tok_col_ = static_cast<int>(b - line_begin_) + 1;
    check_token(pos_ - b, kMaxIrNameBytes, "name");
    push(Tok::Name, std::string(src_.substr(b, pos_ - b)));
  }

  void number() {
    size_t b = pos_;
    tok_col_ = col();
    bool is_float = false;
    auto digits = [&] {
      while (pos_ < src_.size() && is_digit(src_[pos_])) ++pos_;
    };
    digits();
    if (pos_ < src_.size() && src_[pos_] == '.') {
      is_float = true;
      ++pos_;
      digits();
    }
    if (pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
      is_float = true;
      ++pos_;
      if (pos_ < src_.size() && (src_[pos_] == '+' || src_[pos_] == '-')) ++pos_;
      if (pos_ >= src_.size() || !is_digit(src_[pos_]))
        fail(fmt::format("expected the digits of an exponent, got {}", next_char()));
      digits();
    }
    if (pos_ < src_.size() && (is_name_char(src_[pos_]) || src_[pos_] == '.'))
      fail(fmt::format("expected an operator or delimiter after a number, got {}", next_char()));
    std::string_view s = src_.substr(b, pos_ - b);
    check_token(s.size(), kMaxIrTokenBytes, "number");
    if (is_float) {
      double v = 0;
      auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (ec == std::errc::result_out_of_range) {  // subnormals are fine, overflow is not
        v = std::strtod(std::string(s).c_str(), nullptr);  // the C locale: '.' is the point
        ec = std::isfinite(v) ? std::errc() : std::errc::result_out_of_range;
      }
      if (ec != std::errc() || p != s.data() + s.size()) {
        pos_ = b;
        fail(fmt::format("expected a float literal in range, got {}", excerpt(s)));
      }
      push(Tok::Float, std::string(s));
      toks_.back().float_value = v;
    } else {
      uint64_t v = 0;
      auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (ec != std::errc() || p != s.data() + s.size()) {
        pos_ = b;
        fail(fmt::format("expected an integer literal below 2^64, got {}", excerpt(s)));
      }
      push(Tok::Int, std::string(s));
      toks_.back().int_value = v;
    }
  }

  std::string next_char() const {
    if (pos_ >= src_.size() || src_[pos_] == '\n') return "end of line";
    auto c = static_cast<unsigned char>(src_[pos_]);
    if (c >= 0x20 && c < 0x7f) return fmt::format("'{}'", static_cast<char>(c));
    return fmt::format("byte 0x{:02x}", c);
  }

  void string() {
    char q = src_[pos_];
    tok_col_ = col();
    ++pos_;
    std::string value;
    for (;;) {
      if (pos_ >= src_.size() || src_[pos_] == '\n')
        fail(fmt::format("expected the closing {} of the string, got end of line", q));
      char c = src_[pos_];
      if (c == q) break;
      check_token(value.size() + 2, kMaxIrTokenBytes, "string literal");  // with its quotes
      if (c != '\\') {
        value += c;
        ++pos_;
        continue;
      }
      ++pos_;
      char e = pos_ < src_.size() ? src_[pos_] : '\n';
      switch (e) {
        case 'n': value += '\n'; break;
        case 't': value += '\t'; break;
        case 'r': value += '\r'; break;
        case '0': value += '\0'; break;
        case '\\': case '"': case '\'': value += e; break;
        case 'x': {
          auto hex = [&](size_t i) -> int {
            if (i >= src_.size()) return -1;
            char h = src_[i];
            if (is_digit(h)) return h - '0';
            if (h >= 'a' && h <= 'f') return h - 'a' + 10;
            if (h >= 'A' && h <= 'F') return h - 'A' + 10;
            return -1;
          };
          int hi = hex(pos_ + 1), lo = hex(pos_ + 2);
          if (hi < 0 || lo < 0) fail("expected two hex digits after \\x in a string, got something else");
          value += static_cast<char>(hi * 16 + lo);
          pos_ += 2;
          break;
        }
        default:
          fail(fmt::format("expected an escape (\\n \\t \\r \\0 \\\\ \\\" \\' \\xNN), got \\ followed by {}",
                           next_char()));
      }
      ++pos_;
    }
    ++pos_;  // closing quote
    push(Tok::String, std::move(value));
  }

  void punct() {
    static constexpr std::string_view kTwo[] = {"//", "==", "!=", "<=", ">=", "<<", ">>"};
    static constexpr std::string_view kOne = "()[]{},:.=+-*/%&|^<>@~";
    tok_col_ = col();
    std::string_view rest = src_.substr(pos_);
    for (auto t : kTwo) {
      if (rest.starts_with(t)) {
        pos_ += 2;
        push(Tok::Punct, std::string(t));
        return;
      }
    }
    char c = src_[pos_];
    if (kOne.find(c) == std::string_view::npos)
      fail(fmt::format("expected a name, number, string or operator, got {}", next_char()));
    ++pos_;
    if (c == '(' || c == '[' || c == '{') ++brackets_;
    if ((c == ')' || c == ']' || c == '}') && brackets_ > 0) --brackets_;
    push(Tok::Punct, std::string(1, c));
  }

  std::string_view src_;
  std::string_view file_;
  size_t pos_ = 0;
  size_t line_begin_ = 0;
  int line_ = 1;
  int tok_col_ = 0;  // column of the token being lexed (0: the current column)
  bool line_start_ = true;
  bool line_has_tokens_ = false;
  int brackets_ = 0;
  std::vector<size_t> indents_ = {0};
  SourceLoc pending_loc_;
  std::vector<Token> toks_;
};

// =============================================================================================
// Parser

/// A parsed expression. (The IR nodes track their own depth and size: tl/ir.h.)
struct Ex {
  Expr e;
};

bool is_reserved(std::string_view n) {
  static constexpr std::string_view kWords[] = {
      "T",   "True", "False", "None", "and", "or", "not",  "if",    "else", "elif",  "for",
      "in",  "with", "as",    "def",  "pass", "float", "while", "return", "lambda", "import", "from"};
  for (auto w : kWords)
    if (n == w) return true;
  return false;
}

/// The most negative and most positive value of integer dtype `t` as a sign and a magnitude.
struct IntRange {
  uint64_t neg_max, pos_max;  // the range is [-neg_max, pos_max]
};
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

class Parser {
 public:
  Parser(std::vector<Token> toks, std::string_view file) : toks_(std::move(toks)), file_(file) {}

  PrimFunc function() {
    scopes_.emplace_back();
    std::vector<Var> dynamics;
    while (peek().kind == Tok::Name && is("=", 1)) dynamics.push_back(dynamic_decl());
    if (!is("@")) expected("'@T.prim_func'");
    next();
    expect("T");
    expect(".");
    expect("prim_func");
    end_of_line();
    expect("def");
    std::string name = expect_name("a function name");
    std::vector<Param> ps = params();
    expect(":");
    SourceLoc loc = end_of_line();
    Stmt body = block({});
    if (peek().kind != Tok::End) expected("end of input (one function per text)");
    return make_prim_func(std::move(name), std::move(dynamics), std::move(ps), std::move(body),
                          std::move(loc));
  }

 private:
  struct Binding {
    Var var;     // a scalar: parameter, dynamic symbol, loop variable, cid/vid, Let
    Buffer buf;  // a buffer: tensor parameter or Allocate
  };
  using Binds = std::vector<std::pair<std::string, Binding>>;

  /// Counts one level of parser recursion for its lifetime.
  class Nest {
   public:
    Nest(Parser& p, const Token& at) : p_(p) {
      if (p_.nesting_ >= kMaxDepth)
        p_.error_at(at, fmt::format("expression nested too deeply (more than {} levels)", kMaxDepth));
      ++p_.nesting_;
    }
    ~Nest() { --p_.nesting_; }
    Nest(const Nest&) = delete;
    Nest& operator=(const Nest&) = delete;

   private:
    Parser& p_;
  };

  // ---- Tokens -----------------------------------------------------------------------------

  const Token& peek(size_t k = 0) const { return toks_[std::min(pos_ + k, toks_.size() - 1)]; }
  const Token& next() {
    const Token& t = toks_[pos_];
    if (pos_ + 1 < toks_.size()) ++pos_;
    return t;
  }
  /// True if the token k ahead is the punctuation or name `s`.
  bool is(std::string_view s, size_t k = 0) const {
    const Token& t = peek(k);
    return (t.kind == Tok::Punct || t.kind == Tok::Name) && t.text == s;
  }
  bool accept(std::string_view s) {
    if (!is(s)) return false;
    next();
    return true;
  }
  const Token& expect(std::string_view s) {
    if (!is(s)) expected(fmt::format("'{}'", s));
    return next();
  }
  [[noreturn]] void error_at(const Token& t, const std::string& msg) const {
    fail_at(file_, t.line, t.col, msg);
  }
  [[noreturn]] void expected(const std::string& what) const {
    error_at(peek(), fmt::format("expected {}, got {}", what, describe(peek())));
  }
  /// A name that can be bound (is_ir_name: not a keyword).
  std::string expect_name(std::string_view what) {
    if (peek().kind != Tok::Name || !is_ir_name(peek().text)) expected(std::string(what));
    return next().text;
  }
  std::string expect_string(std::string_view what) {
    if (peek().kind != Tok::String) expected(std::string(what));
    return next().text;
  }
  /// The end of a statement line; returns the line's `# @file:line` location.
  SourceLoc end_of_line() {
    if (peek().kind != Tok::Newline) expected("end of line");
    return next().loc;
  }

  // ---- Scopes -----------------------------------------------------------------------------

  const Binding* lookup(const std::string& name) const {
    for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s)
      if (auto it = s->find(name); it != s->end()) return &it->second;
    return nullptr;
  }
  void bind(const std::string& name, Binding b) { scopes_.back()[name] = std::move(b); }
  Buffer buffer_named(const Token& t) const {
    const Binding* b = lookup(t.text);
    if (!b) error_at(t, fmt::format("undefined name '{}'", excerpt(t.text)));
    if (!b->buf.defined())
      error_at(t, fmt::format("expected a buffer, got scalar variable '{}'", excerpt(t.text)));
    return b->buf;
  }

  // ---- Literals ---------------------------------------------------------------------------

  /// An integer literal token as a signed value (negated if `neg`).
  int64_t signed_int(const Token& t, bool neg) const {
    constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    if (t.int_value > kMax + (neg ? 1 : 0))
      error_at(t, fmt::format("expected an integer literal in the int64 range, got {}{}",
                              neg ? "-" : "", excerpt(t.text)));
    if (neg) return t.int_value == kMax + 1 ? std::numeric_limits<int64_t>::min()
                                            : -static_cast<int64_t>(t.int_value);
    return static_cast<int64_t>(t.int_value);
  }
  /// An integer literal token (negated if `neg`) as the held value of an immediate of dtype `t`
  /// (tl/ir.h: uint64 values of 2^63 and above are held as their two's complement); an error
  /// naming the literal, the dtype and its range when it does not fit.
  int64_t int_literal(const Token& t, bool neg, DType dt) const {
    IntRange r = int_range(dt);
    const uint64_t m = t.int_value;
    if (m > (neg ? r.neg_max : r.pos_max))
      error_at(t, fmt::format("integer literal {}{} is out of range for {}: expected a value in {}", neg ? "-" : "",
                              excerpt(t.text), dtype_name(dt), range_str(dt)));
    return neg ? static_cast<int64_t>(0 - m) : static_cast<int64_t>(m);  // two's complement, as held
  }
  /// `-v` for the held value `v` of an immediate of dtype `t`; an error when it does not fit `t`.
  int64_t negated(const Token& at, int64_t v, DType t) const {
    IntRange r = int_range(t);
    const bool unsigned_t = is_unsigned_int(t) || is_bool(t);
    const uint64_t mag = unsigned_t || v >= 0 ? static_cast<uint64_t>(v) : 0 - static_cast<uint64_t>(v);
    const bool fits = mag == 0 || (!unsigned_t && (v > 0 ? mag <= r.neg_max : mag <= r.pos_max));
    if (!fits)
      error_at(at, fmt::format("-({}) is out of range for {}: expected a value in {}",
                               unsigned_t ? fmt::format("{}", mag) : fmt::format("{}", v), dtype_name(t),
                               range_str(t)));
    return static_cast<int64_t>(0 - static_cast<uint64_t>(v));
  }
  /// `[-]INT` within [lo, hi].
  int64_t int_in_range(std::string_view what, int64_t lo, int64_t hi) {
    const Token& at = peek();
    bool neg = accept("-");
    if (peek().kind != Tok::Int) expected(fmt::format("an integer {}", what));
    int64_t v = signed_int(next(), neg);
    if (v < lo || v > hi)
      error_at(at, fmt::format("expected {} in [{}, {}], got {}", what, lo, hi, v));
    return v;
  }
  /// `float("inf")`, `float("-inf")` or `float("nan")`.
  double float_call() {
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
  DType dtype_string() {
    if (peek().kind == Tok::String) {
      if (auto t = parse_dtype(peek().text)) {
        next();
        return *t;
      }
    }
    expected("a dtype string such as \"float16\"");
  }
  Pipe pipe_string() {
    if (peek().kind == Tok::String) {
      if (auto p = parse_pipe(peek().text)) {
        next();
        return *p;
      }
    }
    expected("a pipe (\"S\", \"V\", \"M\", \"MTE1\", \"MTE2\", \"MTE3\", \"FIX\" or \"ALL\")");
  }
  /// The value of a tile-op attribute: True/False, [-]int, [-]float, float("..."), "string".
  AttrValue attr_value() {
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
  Var dynamic_decl() {
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

  /// `(A: T.Tensor((M, 128), "float16"[, strides=(..)]), eps: T.float32, ...)`
  std::vector<Param> params() {
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

  Buffer tensor_type(const std::string& name) {
    expect("(");
    std::vector<Expr> shape = tuple();
    expect(",");
    DType t = dtype_string();
    std::vector<Expr> strides;
    if (accept(",") && !is(")")) {
      expect("strides");
      expect("=");
      const Token& at = peek();
      strides = tuple();
      if (strides.size() != shape.size())
        error_at(at, fmt::format("expected {} strides (one per dimension), got {}", shape.size(),
                                 strides.size()));
      accept(",");
    }
    expect(")");
    return BufferNode::make(name, t, std::move(shape), MemScope::GM, std::move(strides));
  }

  /// `(e, e, ...)`, `(e,)` or `()`.
  std::vector<Expr> tuple() {
    expect("(");
    std::vector<Expr> xs;
    while (!is(")")) {
      xs.push_back(expr().e);
      if (!accept(",")) break;
    }
    expect(")");
    return xs;
  }

  // ---- Statements -----------------------------------------------------------------------------

  /// An indented block: its own scope, with `binds` (loop variable, cid/vid) bound first.
  Stmt block(const Binds& binds) {
    const Token& at = peek();
    if (at.kind != Tok::Indent) expected("an indented block");
    if (blocks_ >= kMaxDepth)
      error_at(at, fmt::format("blocks nested too deeply (more than {} levels)", kMaxDepth));
    next();
    ++blocks_;
    scopes_.emplace_back();
    for (const auto& [n, b] : binds) bind(n, b);
    std::vector<Stmt> stmts;
    while (peek().kind != Tok::Dedent && peek().kind != Tok::End) {
      Stmt s = statement();
      if (s.defined()) stmts.push_back(std::move(s));
    }
    if (peek().kind != Tok::Dedent) expected("end of block");
    next();
    scopes_.pop_back();
    --blocks_;
    return SeqNode::make(std::move(stmts));
  }

  /// `:` NEWLINE after a compound statement's header; returns the header's location.
  SourceLoc header_end() {
    expect(":");
    return end_of_line();
  }

  /// One statement, or an undefined Stmt for `pass`.
  Stmt statement() {
    if (peek().kind == Tok::Name) {
      if (is("for")) return for_stmt();
      if (is("if")) return if_stmt();
      if (is("with")) return with_stmt();
      if (is("pass")) {
        next();
        end_of_line();
        return {};
      }
      if (is("T") && is(".", 1)) return call_stmt();
      if (is("=", 1)) return assign_stmt();
      if (is("[", 1)) return store_stmt();
    }
    expected("a statement");
  }

  /// `for v in T.serial(n[, min=m]):`, T.unroll, T.Parallel, `T.Pipelined(n, num_stages=s)`
  Stmt for_stmt() {
    expect("for");
    std::string v = expect_name("a loop variable name");
    expect("in");
    expect("T");
    expect(".");
    std::optional<ForKind> kind;
    for (auto k : {ForKind::Serial, ForKind::Parallel, ForKind::Pipelined, ForKind::Unrolled})
      if (is(for_kind_name(k))) kind = k;
    if (!kind) expected("a loop kind ('serial', 'unroll', 'Parallel' or 'Pipelined')");
    next();
    expect("(");
    Expr extent = expr().e;
    Expr min = IntImmNode::make(DType::Int32, 0);
    int stages = 0;
    bool have_min = false, have_stages = false;
    bool pipelined = *kind == ForKind::Pipelined;
    while (accept(",") && !is(")")) {
      if (pipelined && !have_stages && accept("num_stages")) {
        expect("=");
        stages = static_cast<int>(int_in_range("number of stages", 1, std::numeric_limits<int>::max()));
        have_stages = true;
      } else if (!have_min && accept("min")) {
        expect("=");
        min = expr().e;
        have_min = true;
      } else {
        expected(pipelined ? "'num_stages=' or 'min='" : "'min='");
      }
    }
    if (pipelined && !have_stages) expected("'num_stages=' (T.Pipelined needs it)");
    expect(")");
    SourceLoc loc = header_end();
    Var var(v, DType::Int32);
    Stmt body = block({{v, {var, {}}}});
    return ForNode::make(var, std::move(min), std::move(extent), *kind, stages, std::move(body),
                         std::move(loc));
  }

  /// `if cond:` block [`else:` block]
  Stmt if_stmt() {
    expect("if");
    Expr cond = expr().e;
    SourceLoc loc = header_end();
    Stmt then_case = block({});
    Stmt else_case;
    if (accept("else")) {
      header_end();
      else_case = block({});
    }
    return IfNode::make(std::move(cond), std::move(then_case), std::move(else_case), std::move(loc));
  }

  /// `with T.Kernel(n, is_npu=True) as (cid, vid):` or `with T.Scope("Cube"):`
  Stmt with_stmt() {
    expect("with");
    expect("T");
    expect(".");
    if (accept("Kernel")) return kernel_stmt();
    if (accept("Scope")) return scope_stmt();
    expected("'Kernel' or 'Scope'");
  }

  /// Expert: `with T.Kernel(n, is_npu=True) as (cid, vid):`; developer:
  /// `with T.Kernel(n, threads=T) as cid:`.
  Stmt kernel_stmt() {
    expect("(");
    Expr n = expr().e;
    int threads = 0;
    while (accept(",") && !is(")")) {
      if (accept("is_npu")) {
        expect("=");
        expect("True");
      } else if (accept("threads")) {
        expect("=");
        threads = static_cast<int>(int_in_range("threads (vector cores per cube core)", 1, 2));
      } else {
        expected("'is_npu=True' or 'threads=N'");
      }
    }
    expect(")");
    expect("as");
    bool paren = accept("(");
    std::string cid = expect_name("the block index name");
    std::string vid;
    if (paren || threads == 0) {
      expect(",");
      vid = expect_name("the vector core index name");
      if (paren) expect(")");
      if (threads != 0) expected("'as cid' (a developer kernel with threads= binds no vector core index)");
    }
    SourceLoc loc = header_end();
    Var c(cid), v;
    Binds names = {{cid, {c, {}}}};
    if (!vid.empty()) {
      v = Var(vid);
      names.push_back({vid, {v, {}}});
    }
    Stmt body = block(std::move(names));
    return KernelNode::make(std::move(n), c, v, std::move(body), std::move(loc), threads);
  }

  Stmt scope_stmt() {
    expect("(");
    std::optional<CoreKind> core;
    if (peek().kind == Tok::String) core = parse_core(peek().text);
    if (!core) expected("\"Cube\" or \"Vector\"");
    next();
    expect(")");
    SourceLoc loc = header_end();
    Stmt body = block({});
    return ScopeNode::make(*core, std::move(body), std::move(loc));
  }

  /// `name = T.alloc_*(...)` (Allocate) or `name = expr` (Let; may shadow an outer name).
  Stmt assign_stmt() {
    std::string name = expect_name("a new name");
    expect("=");
    if (is("T") && is(".", 1) && peek(2).kind == Tok::Name && peek(2).text.starts_with("alloc_"))
      return alloc_stmt(name);
    if (is("T") && is(".", 1) && is("view", 2) && is("(", 3)) return view_stmt(name);
    Expr value = expr().e;
    SourceLoc loc = end_of_line();
    Var var(name, value.dtype());
    bind(name, {var, {}});
    return LetNode::make(var, std::move(value), std::move(loc));
  }

  /// `name = T.alloc_L1((shape), "dtype"[, address=N])`, ..., `name = T.alloc_var("dtype")`,
  /// `name = T.alloc_workspace((shape), "dtype")` (GM scratch the launcher allocates)
  Stmt alloc_stmt(const std::string& name) {
    expect("T");
    expect(".");
    const Token& kt = next();
    const std::string_view kind = std::string_view(kt.text).substr(6);
    auto scope = kind == "workspace" ? std::optional<MemScope>(MemScope::GM) : parse_scope(kind);
    if (!scope || (*scope == MemScope::GM && kind != "workspace"))
      error_at(kt, fmt::format("expected an allocation (alloc_L1, alloc_L0A, alloc_L0B, alloc_L0C, "
                               "alloc_ub, alloc_shared, alloc_fragment, alloc_var or alloc_workspace), got 'T.{}'",
                               excerpt(kt.text)));
    expect("(");
    std::vector<Expr> shape;
    if (*scope == MemScope::Var) {
      shape.push_back(IntImmNode::make(DType::Int32, 1));
    } else {
      shape = tuple();
      expect(",");
    }
    DType t = dtype_string();
    int64_t address = -1;
    if (accept(",") && !is(")")) {
      expect("address");
      expect("=");
      address = int_in_range("address", 0, std::numeric_limits<int64_t>::max());
      accept(",");
    }
    expect(")");
    SourceLoc loc = end_of_line();
    Buffer b = BufferNode::make(name, t, std::move(shape), *scope, {}, address, loc);
    bind(name, {{}, b});
    return AllocateNode::make(b, std::move(loc));
  }

  /// `name = T.view(base, "dtype")`: base's bytes as another dtype of the same width. The view
  /// has the base's scope, shape and address; the verifier checks the dtype width.
  Stmt view_stmt(const std::string& name) {
    expect("T");
    expect(".");
    expect("view");
    expect("(");
    if (peek().kind != Tok::Name) expected("the name of the buffer to view");
    Buffer base = buffer_named(next());
    expect(",");
    DType t = dtype_string();
    accept(",");
    expect(")");
    SourceLoc loc = end_of_line();
    Buffer b = BufferNode::make(name, t, base->shape, base->scope, base->strides, base->address, loc);
    bind(name, {{}, b});
    return AllocateNode::make_view(b, base, std::move(loc));
  }

  /// `buf[i, j] = value`
  Stmt store_stmt() {
    Buffer b = buffer_named(next());
    std::vector<Expr> idx;
    for (auto& x : index_list()) idx.push_back(std::move(x.e));
    expect("=");
    Expr value = expr().e;
    SourceLoc loc = end_of_line();
    return StoreNode::make(std::move(b), std::move(idx), std::move(value), std::move(loc));
  }

  /// `T.<sync>(...)` or `T.<tile op>(...)`; op names may be dotted (`T.tile.add`).
  Stmt call_stmt() {
    expect("T");
    expect(".");
    const Token& at = peek();
    if (at.kind != Tok::Name) expected("a tile primitive or synchronization name");
    std::string name = next().text;
    while (accept(".")) {
      if (peek().kind != Tok::Name) expected("a name after '.'");
      name += "." + next().text;
    }
    for (int k = 0; k <= static_cast<int>(SyncKind::SyncAll); ++k)
      if (name == sync_name(static_cast<SyncKind>(k))) return sync_stmt(static_cast<SyncKind>(k));
    const OpDef* op = find_op(name);
    if (!op) error_at(at, fmt::format("unknown tile primitive 'T.{}'", excerpt(name)));
    return tile_op_stmt(*op, at);
  }

  Stmt sync_stmt(SyncKind k) {
    expect("(");
    Pipe src = Pipe::S, dst = Pipe::S;
    Expr id;
    int mode = 0;
    switch (k) {
      case SyncKind::SetFlag:
      case SyncKind::WaitFlag:
        src = pipe_string();
        expect(",");
        dst = pipe_string();
        expect(",");
        id = expr().e;
        break;
      case SyncKind::PipeBarrier: src = pipe_string(); break;
      case SyncKind::BarrierAll:
      case SyncKind::SyncAll: src = Pipe::ALL; break;
      case SyncKind::SetCrossFlag:
        src = pipe_string();
        expect(",");
        id = expr().e;
        mode = 2;
        if (is(",") && is("mode", 1)) {
          expect(",");
          expect("mode");
          expect("=");
          mode = static_cast<int>(int_in_range("mode", 0, 2));
        }
        break;
      case SyncKind::WaitCrossFlag: id = expr().e; break;
    }
    // The trailing `auto=True` of a synchronisation insert_syncs wrote (SyncOrigin::Auto).
    SyncOrigin origin = SyncOrigin::User;
    bool no_args = k == SyncKind::BarrierAll || k == SyncKind::SyncAll;
    if ((no_args && is("auto")) || (!no_args && accept(",") && !is(")"))) {
      expect("auto");
      expect("=");
      if (!accept("False")) {
        expect("True");
        origin = SyncOrigin::Auto;
      }
    }
    expect(")");
    SourceLoc loc = end_of_line();
    return SyncNode::make(k, src, dst, std::move(id), mode, std::move(loc), origin);
  }

  /// Operands positionally, then attributes as `key=value`; checked by make_tile_op.
  Stmt tile_op_stmt(const OpDef& op, const Token& at) {
    expect("(");
    std::vector<TileArg> args;
    std::vector<Attr> attrs;
    while (!is(")")) {
      if (peek().kind == Tok::Name && is("=", 1)) {
        const Token& key = next();
        next();
        for (const auto& a : attrs)
          if (a.key == key.text) error_at(key, fmt::format("duplicate attribute '{}'", excerpt(key.text)));
        attrs.push_back({key.text, attr_value()});
      } else if (!attrs.empty()) {
        expected("an attribute 'name=value' (operands come before attributes)");
      } else {
        args.push_back(operand());
      }
      if (!accept(",")) break;
    }
    expect(")");
    SourceLoc loc = end_of_line();
    Stmt s;
    try {
      s = make_tile_op(op.name, std::move(args), std::move(attrs), SourceLoc{});
    } catch (const Error& e) {
      error_at(at, e.what());
    }
    auto* n = s.as<TileOpNode>();
    return TileOpNode::make(n->op, n->args, n->attrs, std::move(loc));
  }

  /// A tile-op operand: a bare buffer (its full region), a region `A[lo:hi, ...]`, or a scalar
  /// expression (which includes element loads `A[i, j]`).
  TileArg operand() {
    const Token& t = peek();
    if (t.kind == Tok::Name) {
      const Binding* b = lookup(t.text);
      if (b && b->buf.defined()) {
        if (is(",", 1) || is(")", 1)) {
          next();
          return BufferRegion::full(b->buf);
        }
        if (is("[", 1) && subscript_has_slice(pos_ + 1)) return region(b->buf);
      }
    }
    return expr().e;
  }

  /// Whether the subscript opened at token `i` has a `:` at its own bracket level.
  bool subscript_has_slice(size_t i) const {
    int depth = 0;
    for (size_t j = i + 1; j < toks_.size(); ++j) {
      const Token& t = toks_[j];
      if (t.kind != Tok::Punct) {
        if (t.kind == Tok::Newline || t.kind == Tok::End) return false;
        continue;
      }
      if (t.text == "(" || t.text == "[" || t.text == "{") ++depth;
      else if (t.text == ")" || t.text == "]" || t.text == "}") {
        if (depth == 0) return false;
        --depth;
      } else if (t.text == ":" && depth == 0) {
        return true;
      }
    }
    return false;
  }

  BufferRegion region(const Buffer& b) {
    next();  // the buffer name
    expect("[");
    BufferRegion r{b, {}};
    do {
      const Token& at = peek();
      Expr lo = expr().e;
      expect(":");
      Expr hi = expr().e;
      r.ranges.push_back(slice(lo, hi, at));
    } while (accept(","));
    expect("]");
    if (!is(",") && !is(")")) expected("',' or ')' after a buffer region");
    return r;
  }

  /// The inverse of the printer's slice(): `0:e`, `lo:hi` literals, `lo:lo + e`, else hi - lo.
  Range slice(const Expr& lo, const Expr& hi, const Token& at) const {
    auto* l = lo.as<IntImmNode>();
    auto* h = hi.as<IntImmNode>();
    bool l32 = l && l->dtype == DType::Int32, h32 = h && h->dtype == DType::Int32;
    if (l32 && l->value == 0) return {lo, hi};
    if (l32 && h32) {
      const int64_t ext = h->value - l->value;  // both int32: no overflow
      if (ext < std::numeric_limits<int32_t>::min() || ext > std::numeric_limits<int32_t>::max())
        error_at(at, fmt::format("expected a slice whose extent fits in int32, got {}:{} (extent {})", l->value,
                                 h->value, ext));
      return {lo, IntImmNode::make(DType::Int32, ext)};
    }
    if (auto* add = hi.as<BinaryNode>(); add && add->op == BinOp::Add && structural_equal(add->a, lo))
      return {lo, add->b};
    return {lo, node(at, [&] { return BinaryNode::make(BinOp::Sub, hi, lo); }).e};
  }

  // ---- Expressions ----------------------------------------------------------------------------

  /// The node `make` returns; beyond the IR's nesting limits (tl/ir.h) an error at `at`.
  template <typename F>
  Ex node(const Token& at, F&& make) const {
    try {
      return {make()};
    } catch (const Error& e) {  // InternalError is no tl::Error: a bug propagates unchanged
      error_at(at, e.what());
    }
  }
  Ex binary(BinOp op, const Ex& a, const Ex& b, const Token& at) const {
    return node(at, [&] { return BinaryNode::make(op, a.e, b.e); });
  }

  using Level = Ex (Parser::*)();
  /// One left-associative precedence level: `sub (op sub)*`.
  Ex left_assoc(Level sub, std::initializer_list<std::pair<std::string_view, BinOp>> ops) {
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

  Ex expr() {
    Nest guard(*this, peek());
    return left_assoc(&Parser::and_expr, {{"or", BinOp::Or}});
  }
  Ex and_expr() { return left_assoc(&Parser::not_expr, {{"and", BinOp::And}}); }
  Ex not_expr() {
    if (!is("not")) return comparison();
    const Token& at = next();
    Nest guard(*this, at);
    Ex a = not_expr();
    return node(at, [&] { return NotNode::make(a.e); });
  }
  std::optional<BinOp> comparison_op() const {
    static constexpr std::pair<std::string_view, BinOp> kOps[] = {
        {"==", BinOp::EQ}, {"!=", BinOp::NE}, {"<", BinOp::LT},
        {"<=", BinOp::LE}, {">", BinOp::GT},  {">=", BinOp::GE}};
    if (peek().kind != Tok::Punct) return std::nullopt;
    for (const auto& [s, op] : kOps)
      if (peek().text == s) return op;
    return std::nullopt;
  }
  /// Comparisons do not chain (the printer parenthesises instead).
  Ex comparison() {
    Ex a = bit_or();
    auto op = comparison_op();
    if (!op) return a;
    const Token& at = next();
    Ex b = bit_or();
    if (comparison_op()) expected("no second comparison (comparisons do not chain; add parentheses)");
    return binary(*op, a, b, at);
  }
  Ex bit_or() { return left_assoc(&Parser::bit_xor, {{"|", BinOp::BitOr}}); }
  Ex bit_xor() { return left_assoc(&Parser::bit_and, {{"^", BinOp::BitXor}}); }
  Ex bit_and() { return left_assoc(&Parser::shift, {{"&", BinOp::BitAnd}}); }
  Ex shift() { return left_assoc(&Parser::arith, {{"<<", BinOp::Shl}, {">>", BinOp::Shr}}); }
  Ex arith() { return left_assoc(&Parser::term, {{"+", BinOp::Add}, {"-", BinOp::Sub}}); }
  Ex term() {
    return left_assoc(&Parser::unary, {{"*", BinOp::Mul}, {"/", BinOp::Div},
                                       {"//", BinOp::FloorDiv}, {"%", BinOp::FloorMod}});
  }

  /// Unary minus folds into int/float literals; otherwise it is `x * -1` for a float x (an
  /// exact sign flip) and `0 - x` for an integer x, in x's dtype.
  Ex unary() {
    if (is("+")) {
      Nest guard(*this, next());
      return unary();
    }
    if (!is("-")) return primary();
    const Token& at = next();
    Nest guard(*this, at);
    if (peek().kind == Tok::Int) return {IntImmNode::make(DType::Int32, int_literal(next(), true, DType::Int32))};
    Ex a = unary();
    if (auto* i = a.e.as<IntImmNode>(); i && is_int(i->dtype))
      return {IntImmNode::make(i->dtype, negated(at, i->value, i->dtype))};
    if (auto* f = a.e.as<FloatImmNode>()) return {FloatImmNode::make(f->dtype, -f->value)};
    DType t = a.e.dtype();
    // A float is negated as the DSL's `-x` is (ir_ops.cpp): `x * -1`, an exact sign flip.
    if (is_float(t)) return binary(BinOp::Mul, a, Ex{FloatImmNode::make(t, -1.0)}, at);
    return binary(BinOp::Sub, Ex{IntImmNode::make(t, 0)}, a, at);
  }

  Ex primary() {
    const Token& t = peek();
    switch (t.kind) {
      case Tok::Int: next(); return {IntImmNode::make(DType::Int32, int_literal(t, false, DType::Int32))};
      case Tok::Float: next(); return {FloatImmNode::make(DType::Float32, t.float_value)};
      case Tok::String: next(); return {StringImmNode::make(t.text)};
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
      default: break;
    }
    expected("an expression");
  }

  /// A variable, or an element load `A[i, j]`.
  Ex name_ref() {
    const Token& t = next();
    const Binding* b = lookup(t.text);
    if (!b) error_at(t, fmt::format("undefined name '{}'", excerpt(t.text)));
    if (b->var.defined()) return {b->var};
    if (!is("["))
      error_at(t, fmt::format("expected a scalar expression, got buffer '{}' (write '{}[...]' for "
                              "an element)", excerpt(t.text), excerpt(t.text)));
    std::vector<Ex> idx = index_list();
    std::vector<Expr> es;
    for (auto& x : idx) es.push_back(std::move(x.e));
    return node(t, [&] { return LoadNode::make(b->buf, std::move(es)); });
  }

  /// `[e, e, ...]` (possibly empty).
  std::vector<Ex> index_list() {
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
  std::vector<Ex> call_args(size_t n, const Token& fn) {
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
  Ex t_call() {
    expect("T");
    expect(".");
    const Token& fn = peek();
    if (fn.kind != Tok::Name) expected("a function name after 'T.'");
    next();
    const std::string& n = fn.text;
    if (auto dt = parse_dtype(n)) return typed_literal(*dt);
    static constexpr std::pair<std::string_view, BinOp> kBinary[] = {
        {"min", BinOp::Min}, {"max", BinOp::Max}, {"truncdiv", BinOp::TruncDiv},
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
    if (int arity = intrinsic_arity(n); arity > 0) {
      auto a = call_args(static_cast<size_t>(arity), fn);
      std::vector<Expr> es;
      for (auto& x : a) es.push_back(x.e);
      DType t = es[0].dtype();  // before es is moved from
      return node(fn, [&] { return CallNode::make(t, n, std::move(es)); });
    }
    error_at(fn, fmt::format("unknown function 'T.{}'", excerpt(n)));
  }

  /// `T.int64(5)`, `T.float16(-1.5)`, `T.float16(float("inf"))`, `T.bool(True)`.
  Ex typed_literal(DType t) {
    expect("(");
    Expr e;
    if (is_bool(t)) {
      if (is("True") || is("False")) e = IntImmNode::make(t, next().text == "True" ? 1 : 0);
      else expected("True or False");
    } else {
      bool neg = accept("-");
      const Token& v = peek();
      if (is_int(t)) {
        if (v.kind != Tok::Int) expected(fmt::format("an integer literal for T.{}", dtype_name(t)));
        e = IntImmNode::make(t, int_literal(next(), neg, t));
      } else {
        double x = 0;
        if (v.kind == Tok::Int) x = static_cast<double>(next().int_value);
        else if (v.kind == Tok::Float) x = next().float_value;
        else if (is("float")) x = float_call();
        else expected(fmt::format("a number for T.{}", dtype_name(t)));
        e = FloatImmNode::make(t, neg ? -x : x);
      }
    }
    expect(")");
    return {e};
  }

  std::vector<Token> toks_;
  std::string_view file_;
  size_t pos_ = 0;
  int nesting_ = 0;  // parser recursion in expressions
  int blocks_ = 0;   // open indented blocks
  std::vector<std::unordered_map<std::string, Binding>> scopes_;
};

}  // namespace

PrimFunc parse(std::string_view text, std::string_view filename) {
  if (text.size() > kMaxIrTextBytes)
    fail_at(filename, 1, 1, fmt::format("input of {} bytes is longer than {} bytes (the IR text format's limit)",
                                        text.size(), kMaxIrTextBytes));
  Parser p(Lexer(text, filename).run(), filename);
  return p.function();
}

}  // namespace tl

namespace tl {

bool is_ir_name(std::string_view s) {
  if (s.empty() || s.size() > kMaxIrNameBytes || !is_name_start(s[0])) return false;
  for (char c : s)
    if (!is_name_char(c)) return false;
  return !is_reserved(s);
}

}  // namespace tl
