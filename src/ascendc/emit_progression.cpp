// T.tile.arith_progression (dst[i] = first + i * diff, i < count) as AscendC's ArithProgression
// ("ArithProgression" API page, hiascend.com atlasascendc_api_07_0856: dst, firstValue,
// diffValue, count; half/float/int16_t/int32_t; diffValue >= 0, count > 0). The page's
// implementation builds the progression by additions (SetValue for the first 8 values, then
// Adds of the block), so its values are rounded once per step, while the virtual NPU rounds
// first + i * diff once (src/npu/exec_vector.cpp). The two agree whenever every value is an
// exact integer of the dtype: the emitter emits only then -- first and diff integers (bounded
// by the loop ranges the emitter knows), diff >= 0, and |first| + (count - 1) * diff within the
// dtype's exact integers (2^24 fp32, 2^11 fp16, the int range) -- and names the construct
// otherwise. The compiler's own uses (a loop variable's values for a mask or a causal test,
// src/pass/vectorize_parallel_*.cpp) are of that kind.
#include <cmath>

#include "emitter.h"
#include "tl/ir_ops.h"
#include "tl/ops.h"

namespace tl::ascendc {

bool Emitter::emit_progression(const TileOpNode& n) {
  if (n.op != &ops::tile::arith_progression()) return false;
  const SourceLoc& loc = n.loc;
  const std::string what = "T.tile.arith_progression";
  auto arg = [&](std::string_view name) -> const TileArg* {
    for (size_t i = 0; i < n.op->operands.size() && i < n.args.size(); ++i)
      if (n.op->operands[i].name == name) return &n.args[i];
    return nullptr;
  };
  Operand dst = operand(n, 0);
  const DType t = dst.buf->dtype;
  int64_t exact = 0;  // the largest magnitude every integer up to which the dtype holds
  switch (t) {
    case DType::Float32:
      exact = int64_t{1} << 24;
      break;
    case DType::Float16:
      exact = int64_t{1} << 11;
      break;
    case DType::Int32:
      exact = INT32_MAX;
      break;
    case DType::Int16:
      exact = INT16_MAX;
      break;
    default:
      unsupported(loc, fmt::format("{} of {} (ArithProgression takes half, float, int16, int32)",
                                   what, dtype_name(t)));
  }
  if (!dst.contiguous || !aligned(dst, dst.offset, 32))
    unsupported(loc, fmt::format("{} into '{}', not one 32-byte aligned run", what, dst.buf->name));
  const Expr first = arg("first")->scalar, diff = arg("diff")->scalar;
  const TileArg* count_arg = arg("count");
  const Expr count =
      count_arg && count_arg->scalar.defined() ? count_arg->scalar : dst.rows * dst.cols;
  // Integer bounds of a scalar: a float immediate must be an integer; an integer expression is
  // bounded over the loop ranges in scope.
  auto range = [&](const Expr& e, const char* name) -> std::pair<int64_t, int64_t> {
    if (auto* fl = e.as<FloatImmNode>()) {
      if (fl->value != std::floor(fl->value) || std::abs(fl->value) > 1e15)
        unsupported(loc, fmt::format("{} with a non-integer {} ({}: the API adds step by step, "
                                     "the VM rounds once)",
                                     what, name, fl->value));
      return {static_cast<int64_t>(fl->value), static_cast<int64_t>(fl->value)};
    }
    if (is_float(e.dtype()))
      unsupported(loc, fmt::format("{} with a computed float {}", what, name));
    const auto b = arith::bound(e, ivs_);
    if (b.lo <= INT32_MIN || b.hi >= INT32_MAX)
      unsupported(loc, fmt::format("{} with an unbounded {}", what, name));
    return {b.lo, b.hi};
  };
  const auto [f_lo, f_hi] = range(first, "first");
  const auto [d_lo, d_hi] = range(diff, "diff");
  const auto [c_lo, c_hi] = range(count, "count");
  if (d_lo < 0) unsupported(loc, what + " with a diff that may be negative (diffValue >= 0)");
  if (c_hi > const_product(dst.extents).value_or(INT64_MAX))
    unsupported(loc, what + " with a count that may exceed dst");
  const int64_t top =
      std::max(std::abs(f_lo), std::abs(f_hi)) + std::max<int64_t>(c_hi - 1, 0) * d_hi;
  if (top > exact)
    unsupported(loc, fmt::format("{} reaching {} (beyond the exact integers of {}: the API's "
                                 "step-by-step sums would round)",
                                 what, top, dtype_name(t)));
  // count > 0 on the page: a zero count (an empty clipped tile) skips the call.
  const std::string call =
      fmt::format("AscendC::ArithProgression<{}>({}, {}, {}, {});", ctype(t, loc), at(dst),
                  scalar(first, t, loc), scalar(diff, t, loc), expr(count, loc));
  if (c_lo > 0) {
    line(call, loc);
  } else {
    open(fmt::format("if ({} > 0)", expr(count, loc)), loc);
    line(call, loc);
    close();
  }
  return true;
}

}  // namespace tl::ascendc
