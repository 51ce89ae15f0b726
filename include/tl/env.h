// The environment variables of tl-ascend: one registry (src/support/env.cpp) of every TL_* knob
// read anywhere, listed in docs/compiler.md. Part of the support module (docs/architecture.md):
// the compiler, the virtual NPU and the runtime all read it, so it sits below them all.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tl {

/// One registered environment variable of tl-ascend (TileLang's env.py): every TL_* knob
/// read anywhere is listed here and in docs/compiler.md.
struct EnvVar {
  std::string_view name;
  std::string_view default_value;
  std::string_view help;
};
const std::vector<EnvVar>& env_registry();
/// The value of registered variable `name` ("" when unset). Reading an unregistered name is
/// an internal error, so the registry cannot fall behind the code.
std::string env_value(std::string_view name);

}  // namespace tl
