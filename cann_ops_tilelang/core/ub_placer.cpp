// The hand placement of UB buffers the library's resident kernels share (RMSNorm forward and
// backward, softmax's resident and streamed schedules): one definition of the in-order placer
// with a residue modulo 512 per buffer (include/cann_ops_tilelang/core.h, UbPlacer).
#include "cann_ops_tilelang/core.h"

namespace cann_ops_tilelang {

// Skip forward to the next byte at the asked residue modulo 512 (the bank groups repeat every
// 512 bytes: two sources 256 bytes apart do not conflict, docs/calibration.md), then take the
// size rounded up to whole 32-byte blocks (the vector unit's block).
int64_t UbPlacer::operator()(int64_t bytes, int64_t residue) {
  at += ((residue - at % 512) % 512 + 512) % 512;
  const int64_t a = at;
  at += (bytes + 31) / 32 * 32;
  return a;
}

}  // namespace cann_ops_tilelang
