// Helpers shared by the per-primitive vector op tests (vector_ops_test.cpp: elementwise ops;
// vector_ops_shape_test.cpp: fills, gathers, broadcasts, transposes and reductions): the dtypes
// A2 allows for an op, random inputs in a range every dtype holds, and the NaN-propagating
// max / min references.
#pragma once

#include <algorithm>
#include <cmath>

#include "npu/op_harness.h"
#include "tl/op.h"

namespace tl::optest {

/// The dtypes A2 allows for `op` (its definition's list).
inline const std::vector<DType>& legal(const char* op) {
  return *find_op(op)->dtypes.on(default_target());
}

inline Tensor input(Device& dev, const std::vector<int64_t>& shape, DType t, uint64_t seed,
                    double lo = -4, double hi = 4) {
  if (!is_float(t)) {
    if (is_unsigned_int(t))
      return uniform(dev, shape, t, seed, 0, dtype_bytes(t) == 1 ? 250 : 60000);
    return uniform(dev, shape, t, seed, dtype_bytes(t) == 1 ? -120 : -300,
                   dtype_bytes(t) == 1 ? 120 : 300);
  }
  return uniform(dev, shape, t, seed, lo, hi);
}

/// max / min as the vector unit computes them: NaN if either operand is NaN.
inline float fmax_nan(float a, float b) {
  return (a != a || b != b) ? NAN : std::max(a, b);
}
inline float fmin_nan(float a, float b) {
  return (a != a || b != b) ? NAN : std::min(a, b);
}

}  // namespace tl::optest
