// One FlashAttention test case (shape, dtype, layout, causal) and its ctest name, shared by the
// forward and backward grids (flash_attention_test.cpp, flash_attention_bwd_test.cpp).
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "tl/dtype.h"

namespace fa_case {

struct Case {
  int64_t B, S, H, D;
  tl::DType dt;
  bool bshd, causal;
};

inline std::string name(const Case& c) {
  return fmt::format("B{}_S{}_H{}_D{}_{}_{}{}", c.B, c.S, c.H, c.D, tl::dtype_name(c.dt),
                     c.bshd ? "BSHD" : "BHSD", c.causal ? "_causal" : "");
}

// A parameter's ctest name must not depend on struct padding bytes (see rms_norm_test.cpp).
inline void PrintTo(const Case& c, std::ostream* os) {
  *os << name(c);
}

/// q, k, v, o's shape in the case's layout.
inline std::vector<int64_t> shape_of(const Case& c) {
  return c.bshd ? std::vector<int64_t>{c.B, c.S, c.H, c.D}
                : std::vector<int64_t>{c.B, c.H, c.S, c.D};
}

}  // namespace fa_case
