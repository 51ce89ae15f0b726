// Errors of tl-ascend. Two kinds, never mixed:
//  - user errors (tl::Error): something the kernel author or caller did wrong. The message
//    names the argument/op, what was expected and what came, and the DSL source location.
//  - internal invariants (TL_ASSERT): a bug in tl-ascend itself; aborts with file, line,
//    condition and context. Tests of user errors fail if an internal assert fires.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace tl {

/// Where a DSL statement was written (file relative to the repository root, 1-based line).
struct SourceLoc {
  std::string file;
  int line = 0;
  bool known() const { return line > 0; }
  std::string str() const { return known() ? fmt::format("{}:{}", file, line) : "<unknown>"; }
};

/// A user error: bad kernel, bad IR text, bad argument.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
  Error(const SourceLoc& loc, const std::string& msg)
      : std::runtime_error(loc.known() ? loc.str() + ": " + msg : msg), loc_(loc) {}
  const SourceLoc& loc() const { return loc_; }

 private:
  SourceLoc loc_;
};

[[noreturn]] void internal_error(const char* file, int line, const char* cond, const std::string& msg);

template <typename... Args>
[[noreturn]] void user_error(const SourceLoc& loc, fmt::format_string<Args...> f, Args&&... args) {
  throw Error(loc, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace tl

/// Internal invariant: a failure is a tl-ascend bug, not a user error.
#define TL_ASSERT(cond, ...)                                                           \
  do {                                                                                 \
    if (!(cond)) ::tl::internal_error(__FILE__, __LINE__, #cond, fmt::format(__VA_ARGS__)); \
  } while (0)
