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
// Rounding a double to a dtype and wrapping an integer to one are arith::round_float and
// arith::wrap (tl/arith.h), shared with the compiler's constant folding.

}  // namespace tl::npu
