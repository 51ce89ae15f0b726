// Internal-error reporting: prints the broken invariant with context and aborts.
#include "tl/error.h"

#include <cstdio>
#include <cstdlib>

namespace tl {
void internal_error(const char* file, int line, const char* cond, const std::string& msg) {
  std::fprintf(stderr, "tl-ascend internal error at %s:%d: assertion `%s` failed: %s\n", file, line,
               cond, msg.c_str());
  std::abort();
}
}  // namespace tl
