// Internal to the IR text parser (src/ir/parser*.cpp), not a public header: the tokens, the
// lexer's entry point and the recursive-descent Parser class that the parser's files share.
// The parser is split along its stages: parser_lexer.cpp (text -> tokens), parser.cpp (the
// function header, literals and the entry points tl::parse / tl::is_ir_name),
// parser_stmt.cpp (statements and tile-op operands) and parser_expr.cpp (expressions with
// Python precedence). parser.cpp's top comment describes the format and the limits.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tl/ir.h"
#include "tl/op.h"
#include "tl/parser.h"

namespace tl {
namespace parser_detail {

/// Deepest nesting of blocks and of parser recursion: the IR's limit (tl/ir.h), so that every
/// nest the IR can hold parses back and nothing deeper does.
constexpr int kMaxDepth = kMaxNestingDepth;

[[noreturn]] inline void fail_at(std::string_view file, int line, int col, const std::string& msg) {
  throw Error(fmt::format("{}:{}:{}: {}", file, line, col, msg));
}

/// A printable, bounded rendering of arbitrary input text for error messages.
std::string excerpt(std::string_view s);

enum class Tok : uint8_t { Name, Int, Float, String, Punct, Newline, Indent, Dedent, End };

struct Token {
  Tok kind = Tok::End;
  std::string text;  // Name and Punct: the spelling; String: the unescaped value; numbers: spelling
  int line = 1, col = 1;
  uint64_t int_value = 0;  // Int
  double float_value = 0;  // Float
  SourceLoc loc;           // Newline: the `# @file:line` comment of the line it ends
};

std::string describe(const Token& t);

inline bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
inline bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
inline bool is_name_char(char c) {
  return is_name_start(c) || is_digit(c);
}

/// The tokens of `text` (parser_lexer.cpp); a tl::Error at the first bad character.
std::vector<Token> lex(std::string_view text, std::string_view file);

/// A parsed expression. (The IR nodes track their own depth and size: tl/ir.h.)
struct Ex {
  Expr e;
};

bool is_reserved(std::string_view n);

/// The most negative and most positive value of integer dtype `t` as a sign and a magnitude.
struct IntRange {
  uint64_t neg_max, pos_max;  // the range is [-neg_max, pos_max]
};
IntRange int_range(DType t);
std::string range_str(DType t);

class Parser {
 public:
  Parser(std::vector<Token> toks, std::string_view file) : toks_(std::move(toks)), file_(file) {}
  PrimFunc function();
  /// The origins the allocations take, in text order (tl/parser.h); null: none.
  void set_origins(const std::vector<std::string>* origins) { origins_ = origins; }

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
        p_.error_at(at,
                    fmt::format("expression nested too deeply (more than {} levels)", kMaxDepth));
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

  // ---- Literals and the function header (parser.cpp) ---------------------------------

  int64_t signed_int(const Token& t, bool neg) const;
  int64_t int_literal(const Token& t, bool neg, DType dt) const;
  int64_t negated(const Token& at, int64_t v, DType t) const;
  int64_t int_in_range(std::string_view what, int64_t lo, int64_t hi);
  double float_call();
  DType dtype_string();
  Pipe pipe_string();
  /// `l2_cache="normal"` or `l2_cache="disable"` (the keyword already read).
  L2CacheMode l2_cache_arg();
  AttrValue attr_value();
  Var dynamic_decl();
  std::vector<Param> params();
  Buffer tensor_type(const std::string& name);
  std::vector<Expr> tuple();
  std::vector<Expr> shape_tuple();

  // ---- Statements (parser_stmt.cpp) ------------------------------------------------------

  Stmt block(const Binds& binds);
  SourceLoc header_end();
  Stmt statement();
  Stmt for_stmt();
  Stmt if_stmt();
  Stmt with_stmt();
  Stmt kernel_stmt();
  Stmt scope_stmt();
  Stmt assign_stmt();
  Stmt alloc_stmt(const std::string& name);
  Stmt view_stmt(const std::string& name);
  Stmt store_stmt();
  Stmt call_stmt();
  Stmt sync_stmt(SyncKind k);
  Stmt tile_op_stmt(const OpDef& op, const Token& at);
  TileArg operand();
  bool subscript_has_slice(size_t i) const;
  BufferRegion region(const Buffer& b);
  Range slice(const Expr& lo, const Expr& hi, const Token& at) const;

  // ---- Expressions (parser_expr.cpp) -----------------------------------------------------

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
  Ex left_assoc(Level sub, std::initializer_list<std::pair<std::string_view, BinOp>> ops);
  Ex expr();
  Ex and_expr();
  Ex not_expr();
  std::optional<BinOp> comparison_op() const;
  Ex comparison();
  Ex bit_or();
  Ex bit_xor();
  Ex bit_and();
  Ex shift();
  Ex arith();
  Ex term();
  Ex unary();
  Ex primary();
  Ex name_ref();
  std::vector<Ex> index_list();
  std::vector<Ex> call_args(size_t n, const Token& fn);
  Ex t_call();
  Ex typed_literal(DType t);

  std::vector<Token> toks_;
  std::string_view file_;
  size_t pos_ = 0;
  int nesting_ = 0;  // parser recursion in expressions
  int blocks_ = 0;   // open indented blocks
  std::vector<std::unordered_map<std::string, Binding>> scopes_;
  const std::vector<std::string>* origins_ = nullptr;
  size_t origins_taken_ = 0;
  /// The next allocation's origin (empty without origins; an error past their end).
  std::string take_origin(const Token& at);
};

}  // namespace parser_detail
}  // namespace tl
