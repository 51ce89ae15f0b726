// Internal: reading and writing one element of any dtype as a double, the way the virtual
// NPU's scalar unit and the slow paths of the op semantics see memory.
#pragma once

#include <cstdint>

#include "tl/arith.h"
#include "tl/dtype.h"

namespace tl::npu {

/// The value of the element at `p`.
double load_value(DType t, const uint8_t* p);
/// Stores `v` at `p`: floats round to nearest-even (overflow to inf), integers wrap to the
/// dtype's width (the caller has already rounded), bools store v != 0.
void store_value(DType t, uint8_t* p, double v);
/// `v` as it would be after storing into a `t` element and reading it back. The one rule of
/// the IR (tl/arith.h), shared with the compiler's constant folding.
inline double round_value(DType t, double v) {
  return arith::round_float(t, v);
}
/// Wraps an integer to the width and signedness of integer dtype `t` (arith::wrap).
inline int64_t wrap_int(DType t, int64_t v) {
  return arith::wrap(t, v);
}

}  // namespace tl::npu
