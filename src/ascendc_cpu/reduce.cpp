// The AscendC CPU model's row reductions in the forms the emitter writes (src/ascendc/
// emit_reduce.cpp, docs/ascendc.md "Reductions"): the level-2 count forms ReduceSum /
// ReduceMax / ReduceMin (dst, src, sharedTmpBuffer, count) with the documented minimum size of
// sharedTmpBuffer checked, and WholeReduceSum / WholeReduceMax / WholeReduceMin (one value per
// repeat). Each call becomes the virtual NPU's reduce op over the bytes it names, so its
// results are the VM's (src/npu/exec_reduce_sort.cpp). The parameters' meanings are the public
// AscendC API pages of the same names (asc-devkit docs/api/context/ReduceSum.md, ReduceMax.md,
// WholeReduceSum.md, WholeReduceMax.md).
#include <fmt/format.h>

#include <algorithm>

#include "internal.h"
#include "tl/op.h"

namespace ascendc_cpu {

int64_t reduce_tmp_elems(DType t, int64_t count, bool max_min) {
  // "ReduceSum" / "ReduceMax" pages, sharedTmpBuffer's minimum for the count form: the first
  // pass leaves one value (ReduceSum) or a value and an index (ReduceMax/Min, calIndex or not)
  // per 256-byte repeat, rounded up to whole 32-byte blocks. A partial last repeat counts as a
  // repeat (the pages' count / elementsPerRepeat, at least 1, rounded up here: never less).
  const int64_t es = tl::dtype_bytes(t), per_block = 32 / es, per_repeat = 256 / es;
  const int64_t repeats = std::max<int64_t>(1, (count + per_repeat - 1) / per_repeat);
  const int64_t first = max_min ? 2 * repeats : repeats;
  return (first + per_block - 1) / per_block * per_block;
}

void check_reduce_tmp(const Where& w, const LocalRef& tmp, int64_t count, bool max_min) {
  if (tmp.offset % 32 != 0)
    fail(w, fmt::format("sharedTmpBuffer at byte {} of {} is not 32-byte aligned", tmp.offset,
                        tl::scope_name(tmp.scope)));
  const int64_t need = reduce_tmp_elems(tmp.dtype, count, max_min);
  if (tmp.count < need)
    fail(w, fmt::format("sharedTmpBuffer holds {} elements; count {} needs at least {} (the "
                        "documented minimum)",
                        tmp.count, count, need));
}

void vec_whole_reduce(const Where& w, const char* op, const LocalRef& dst, const LocalRef& src,
                      int64_t mask, int64_t repeat, int64_t dst_rep_stride, int64_t src_blk_stride,
                      int64_t src_rep_stride) {
  const int64_t es = tl::dtype_bytes(src.dtype), per_block = 32 / es;
  if (repeat < 0 || repeat > 255) fail(w, fmt::format("repeatTime {} is outside [0, 255]", repeat));
  if (mask < 1 || mask > 256 / es)
    fail(w, fmt::format("mask {} is outside [1, {}] for {}", mask, 256 / es,
                        tl::dtype_name(src.dtype)));
  // A block stride other than 1 spreads a repeat's elements over blocks: not needed by the
  // emitter, so not modelled (an error rather than a guess).
  if (src_blk_stride != 1)
    fail(w, fmt::format("srcBlkStride {} (only 1 is modelled)", src_blk_stride));
  if (dst_rep_stride < 0 || src_rep_stride < 0)
    fail(w, fmt::format("negative stride (dstRepStride {}, srcRepStride {})", dst_rep_stride,
                        src_rep_stride));
  if (repeat == 0) return;
  tl::TileArg s = strided(w, src, {repeat, mask}, {src_rep_stride * per_block, 1}, "src");
  tl::TileArg d = strided(w, dst, {repeat}, {dst_rep_stride}, "dst");
  exec_op(w, op, {s, d}, {{"dim", int64_t{-1}}, {"clear", true}});
}

}  // namespace ascendc_cpu
