// A test's environment variable for one scope: set (or unset) on construction, the previous
// value (or its absence) restored on destruction. Tests that exercise TL_* / OPS_TILELANG_*
// variables share this one definition instead of each keeping a copy.
#pragma once

#include <stdlib.h>

#include <optional>
#include <string>

namespace tltest {

class ScopedEnv {
 public:
  /// `value` null unsets the variable for the scope.
  ScopedEnv(std::string name, const char* value) : name_(std::move(name)) {
    if (const char* old = std::getenv(name_.c_str())) old_ = old;
    if (value)
      ::setenv(name_.c_str(), value, 1);
    else
      ::unsetenv(name_.c_str());
  }
  ScopedEnv(std::string name, const std::optional<std::string>& value)
      : ScopedEnv(std::move(name), value ? value->c_str() : nullptr) {}
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_.c_str(), old_->c_str(), 1);
    else
      ::unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

}  // namespace tltest
