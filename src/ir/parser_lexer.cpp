// The IR text parser's lexer: a Python-style tokenizer of the text format (names, numbers,
// strings, punctuation, NEWLINE / INDENT / DEDENT from the indentation). See parser.cpp's top
// comment for the format and limits; parser_impl.h for how the parser's files fit together.
#include "parser_impl.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace tl {
namespace parser_detail {

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

std::string describe(const Token& t) {
  switch (t.kind) {
    case Tok::Name:
    case Tok::Punct:
      return fmt::format("'{}'", excerpt(t.text));
    case Tok::Int:
    case Tok::Float:
      return fmt::format("number {}", excerpt(t.text));
    case Tok::String:
      return fmt::format("string \"{}\"", excerpt(t.text));
    case Tok::Newline:
      return "end of line";
    case Tok::Indent:
      return "an indented block";
    case Tok::Dedent:
      return "end of block";
    case Tok::End:
      return "end of input";
  }
  return "?";
}

namespace {

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
      if (c == '\n')
        newline();
      else if (c == ' ' || c == '\t' || c == '\r' || c == '\f')
        ++pos_;
      else if (c == '#')
        comment();
      else if (is_name_start(c))
        name();
      else if (is_digit(c) || (c == '.' && pos_ + 1 < src_.size() && is_digit(src_[pos_ + 1])))
        number();
      else if (c == '"' || c == '\'')
        string();
      else
        punct();
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
    fail_at(file_, line_, 1,
            fmt::format("line longer than {} bytes (the IR text format's limit)", kMaxIrLineBytes));
  }
  /// A token of `n` bytes started at column tok_col_ is within `limit`.
  void check_token(size_t n, size_t limit, const char* what) {
    if (n <= limit) return;
    fail_at(file_, line_, tok_col_,
            fmt::format("{} longer than {} bytes (the IR text format's limit)", what, limit));
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
    while (p < src_.size() &&
           (src_[p] == ' ' || src_[p] == '\t' || src_[p] == '\r' || src_[p] == '\f')) {
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
    if (line > 0)
      pending_loc_ = SourceLoc{std::string(text.substr(0, colon)), line, std::move(via)};
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
      if (ec == std::errc::result_out_of_range) {          // subnormals are fine, overflow is not
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
        case 'n':
          value += '\n';
          break;
        case 't':
          value += '\t';
          break;
        case 'r':
          value += '\r';
          break;
        case '0':
          value += '\0';
          break;
        case '\\':
        case '"':
        case '\'':
          value += e;
          break;
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
          if (hi < 0 || lo < 0)
            fail("expected two hex digits after \\x in a string, got something else");
          value += static_cast<char>(hi * 16 + lo);
          pos_ += 2;
          break;
        }
        default:
          fail(fmt::format(
              "expected an escape (\\n \\t \\r \\0 \\\\ \\\" \\' \\xNN), got \\ followed by {}",
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

}  // namespace

std::vector<Token> lex(std::string_view text, std::string_view file) {
  return Lexer(text, file).run();
}

}  // namespace parser_detail
}  // namespace tl
