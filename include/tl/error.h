// Errors of tl-ascend. Two kinds, never mixed:
//  - user errors (tl::Error): something the kernel author or caller did wrong. The message
//    names the argument/op, what was expected and what came, and the DSL source location.
//  - internal errors (tl::InternalError, raised by TL_ASSERT): a bug in tl-ascend itself. The
//    message gives file, line, the failed condition and context. They are thrown, not
//    aborted on, so that a process hosting the library (a Python interpreter) survives
//    them; InternalError is deliberately not a tl::Error, so code (and every test) that
//    catches user errors lets an internal error through. An InternalError raised on one of
//    the virtual NPU's core threads reaches the caller of launch like any other exception.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace tl {

/// Where a DSL statement was written (file relative to the repository root, 1-based line). A
/// statement written inside a kernel helper (one that declares a T::HelperCall) is located at
/// the kernel line that called the helper; `via` then lists the helper lines down to the
/// statement ("k.cpp:120", or "k.cpp:150, k.cpp:120" for a helper calling a helper).
struct SourceLoc {
  SourceLoc() = default;
  SourceLoc(std::string f, int l, std::string v = {})
      : file(std::move(f)), line(l), via(std::move(v)) {}
  std::string file;
  int line = 0;
  std::string via;
  bool known() const { return line > 0; }
  std::string str() const {
    if (!known()) return "<unknown>";
    return via.empty() ? fmt::format("{}:{}", file, line)
                       : fmt::format("{}:{} (in a helper at {})", file, line, via);
  }
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

/// A broken internal invariant (TL_ASSERT): a bug in tl-ascend, never the caller's fault.
/// what() is "tl-ascend internal error at FILE:LINE: assertion `COND` failed: CONTEXT".
class InternalError : public std::logic_error {
 public:
  InternalError(std::string file, int line, std::string condition, std::string context);
  const std::string& file() const { return file_; }
  int line() const { return line_; }
  const std::string& condition() const { return condition_; }
  const std::string& context() const { return context_; }

 private:
  std::string file_;
  int line_;
  std::string condition_, context_;
};

/// Throws InternalError (what TL_ASSERT calls when its condition is false).
[[noreturn]] void internal_error(const char* file, int line, const char* cond,
                                 const std::string& msg);

template <typename... Args>
[[noreturn]] void user_error(const SourceLoc& loc, fmt::format_string<Args...> f, Args&&... args) {
  throw Error(loc, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace tl

/// Internal invariant: a failure is a tl-ascend bug, not a user error; throws tl::InternalError.
/// Do not use it where an exception cannot leave (destructors, noexcept functions).
#define TL_ASSERT(cond, ...)                                                                \
  do {                                                                                      \
    if (!(cond)) ::tl::internal_error(__FILE__, __LINE__, #cond, fmt::format(__VA_ARGS__)); \
  } while (0)
