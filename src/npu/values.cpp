// Element access by dtype, on top of the numerics library.
#include "values.h"

#include <cmath>

#include "tl/npu/numerics.h"

namespace tl::npu {

double load_value(DType t, const uint8_t* p) {
  return to_double(t, p);
}

void store_value(DType t, uint8_t* p, double v) {
  if (is_int(t) && std::isfinite(v) && v == std::trunc(v) && std::fabs(v) < 9.2e18) {
    int64_t w = wrap_int(t, static_cast<int64_t>(v));
    std::memcpy(p, &w, dtype_bytes(t));  // little-endian: the low bytes are the wrapped value
    return;
  }
  from_double(t, v, p);
}

}  // namespace tl::npu
