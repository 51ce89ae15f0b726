// The caller's source position as DSL calls capture it (a defaulted `TL_LOC` parameter): what
// std::source_location gives, with a fallback for standard libraries that lack it. Its own
// header because both the IR (element references, tl/ir.h) and the DSL (tl/lang.h) take it.
#pragma once

#include <source_location>

namespace tl {
#if defined(__cpp_lib_source_location)
using Loc = std::source_location;
#else
/// What std::source_location gives, for compilers whose standard library lacks it (clang 14
/// with libstdc++, which the fuzz preset uses): the same builtins it is made of.
struct Loc {
  static constexpr Loc current(const char* file = __builtin_FILE(),
                               unsigned line = __builtin_LINE()) noexcept {
    return Loc{file, line};
  }
  constexpr const char* file_name() const noexcept { return file_; }
  constexpr unsigned line() const noexcept { return line_; }
  const char* file_;
  unsigned line_;
};
#endif
#define TL_LOC const ::tl::Loc& loc = ::tl::Loc::current()

}  // namespace tl
