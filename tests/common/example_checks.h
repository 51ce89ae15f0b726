// Reference checks for registered kernels, keyed by kernel name: `tlc run` and the demo use
// them to check a launch on random inputs. The math lives in references.cpp (fp64).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tl/kernel_registry.h"
#include "tl/npu/npu.h"

namespace tl::ref {

/// nullopt: no reference registered for `kernel`. "": the outputs match. Otherwise a
/// description of the mismatches. `args` are the launch arguments in parameter order.
std::optional<std::string> check_kernel(const std::string& kernel, const KernelArgs& params,
                                        const std::vector<Arg>& args);

/// Random inputs for `f` as `tlc run` makes them (uniform in [-1, 1]; dynamic sizes 13; eps 1e-6).
std::vector<Arg> random_args(Device& dev, const PrimFunc& f);

}  // namespace tl::ref
