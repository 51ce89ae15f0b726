// The AscendC CPU model's ArithProgression ("ArithProgression" API page, hiascend.com
// atlasascendc_api_07_0856): dst[i] = firstValue + i * diffValue for i < count, as the virtual
// NPU's tile.arith_progression over the count elements (its values rounded once; the emitter
// emits the call only where every value is an exact integer of the dtype, where the API's
// step-by-step sums give the same: src/ascendc/emit_progression.cpp). The page's rules are
// errors here: count > 0, diffValue >= 0, a dtype of half/float/int16_t/int32_t.
#include <fmt/format.h>

#include "internal.h"

namespace ascendc_cpu {

void vec_arith_progression(const Where& w, const LocalRef& dst, double first, double diff,
                           int64_t count) {
  if (count <= 0) fail(w, fmt::format("count {} (the API takes count > 0)", count));
  if (diff < 0) fail(w, fmt::format("diffValue {} (the API takes diffValue >= 0)", diff));
  if (dst.dtype != DType::Float32 && dst.dtype != DType::Float16 && dst.dtype != DType::Int32 &&
      dst.dtype != DType::Int16)
    fail(w, fmt::format("{} (the API takes half, float, int16_t, int32_t)",
                        tl::dtype_name(dst.dtype)));
  exec_op(
      w, "tile.arith_progression",
      {flat(w, dst, count, "dst"), scalar_expr(dst.dtype, first), scalar_expr(dst.dtype, diff)});
}

}  // namespace ascendc_cpu
