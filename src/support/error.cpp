// Internal-error reporting: TL_ASSERT's failure path. It throws rather than aborting because
// the library may live inside another process (a Python interpreter) that must survive a
// tl-ascend bug and report it.
#include "tl/error.h"

namespace tl {

InternalError::InternalError(std::string file, int line, std::string condition, std::string context)
    : std::logic_error(fmt::format("tl-ascend internal error at {}:{}: assertion `{}` failed: {}",
                                   file, line, condition, context)),
      file_(std::move(file)),
      line_(line),
      condition_(std::move(condition)),
      context_(std::move(context)) {}

void internal_error(const char* file, int line, const char* cond, const std::string& msg) {
  throw InternalError(file, line, cond, msg);
}

}  // namespace tl
