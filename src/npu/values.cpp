// Element access by dtype, on top of the numerics library.
#include "values.h"

#include <cmath>

#include "tl/npu/numerics.h"

namespace tl::npu {

double load_value(DType t, const uint8_t* p) { return to_double(t, p); }

void store_value(DType t, uint8_t* p, double v) {
  if (is_int(t) && std::isfinite(v) && v == std::trunc(v) && std::fabs(v) < 9.2e18) {
    int64_t w = wrap_int(t, static_cast<int64_t>(v));
    std::memcpy(p, &w, dtype_bytes(t));  // little-endian: the low bytes are the wrapped value
    return;
  }
  from_double(t, v, p);
}

double round_value(DType t, double v) {
  if (t == DType::Float64) return v;
  if (!is_float(t)) return v;
  alignas(8) uint8_t buf[8];
  from_double(t, v, buf);
  return to_double(t, buf);
}

int64_t wrap_int(DType t, int64_t v) {
  int bits = dtype_bits(t);
  if (is_bool(t)) return v != 0;
  if (bits >= 64) return v;
  uint64_t mask = (uint64_t{1} << bits) - 1;
  uint64_t u = static_cast<uint64_t>(v) & mask;
  if (is_signed_int(t) && (u >> (bits - 1))) u |= ~mask;
  return static_cast<int64_t>(u);
}

}  // namespace tl::npu
