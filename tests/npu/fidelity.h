// Helpers shared by the virtual NPU fidelity tests (fidelity_test.cpp: semantics and reports,
// fidelity_timing_test.cpp: the timing model's costs): launching an IR text for its error, and
// the one-AIV kernel that runs a single vector op from fp32 X to fp32 Y.
#pragma once

#include <string>
#include <vector>

#include "common/error_of.h"
#include "tl/parser.h"
#include "tl/pass.h"
#include "tl/runtime.h"

namespace tl::fidelity {

/// The message of compiling `text` and launching it on `dev` with `args` ("" when it runs).
inline std::string launch_error(const std::string& text, Device& dev, const std::vector<Arg>& args,
                                LaunchOptions opt = {.threads = 1}) {
  return tltest::error_if_any([&] { compile(parse(text)).launch(dev, args, opt); });
}

/// A one-AIV kernel: fp32 X (x_len) to UB x, `call` (on x and y), UB y (y_len) to fp32 Y.
inline std::string x_to_y_kernel(int64_t x_len, int64_t y_len, const std::string& call) {
  return fmt::format(R"(@T.prim_func
def f(X: T.Tensor(({0},), "float32"), Y: T.Tensor(({1},), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            x = T.alloc_ub(({0},), "float32")
            y = T.alloc_ub(({1},), "float32")
            if vid == 0:
                T.copy(X, x)
                T.barrier_all()
                {2}
                T.barrier_all()
                T.copy(y, Y)
)",
                     x_len, y_len, call);
}

}  // namespace tl::fidelity
