// Reductions (T.reduce_sum/max/min over one dimension) and the sort family (sort to
// (value, index) pairs, 2-4 way merge_sort, topk, init_sort_buf), all on the V pipe.
// A (value, index) entry is two lanes of the op's dtype, the index lane holding the source
// position as a float (TileLang-Ascend's T.tile.sort/topk; src/npu/exec_reduce_sort.cpp says
// why). merge_sort and init_sort_buf take float32 only: MrgSort's entries are 8 bytes whatever
// the score's type (AscendC MrgSort page, atlasascendc_api_07_0232), so 4-byte float16 pairs
// would be misread (the chip reads twice each queue's bytes).
#include "op_families.h"
#include "op_rules.h"

#include <cmath>

namespace tl::ops {
void register_reduce_sort_ops(OpList& ops) {
  // The reductions and MrgSort take no overlap between destination and sources at all
  // (ASCENDC_API.md "general constraints"); the other sorts may run in place.
  const std::pair<const char*, double> reductions[] = {
      {"sum", 0.0}, {"max", -INFINITY}, {"min", INFINITY}};
  for (const auto& [r, identity] : reductions) {
    ops.push_back(vector_op(std::string("reduce_") + r, {in("src"), out("dst")},
                            fmt::format("dst = {} of src over dimension `dim` (clear: overwrite, "
                                        "else combine with dst)",
                                        r),
                            {{"dim", int64_t{-1}, {}}, {"clear", true, {}}}, rules::rule_reduce,
                            only_dtypes(kFloat), CostClass::VecReduce, RowMap::Reduce,
                            Overlap::None));
    ops.back().identity = identity;
    ops.back().binop = std::nullopt;  // combines a row, not element with element
    ops.back().granular_count = false;
    ops.back().flushes_subnormals = false;
  }
  ops.push_back(vector_op(
      "sort", {out("dst"), in("src"), scalar("actual_num")},
      "dst = (value, index) pairs of src sorted descending (index lanes: the position as a float); "
      "ties: smaller index",
      {}, rules::rule_sort, only_dtypes(kFloat), CostClass::VecSort, RowMap::Whole,
      Overlap::SameRegion));
  ops.back() = no_element_math(ops.back());
  ops.back().identity = -INFINITY;  // a -inf entry sorts last
  ops.push_back(
      vector_op("merge_sort",
                {out("dst"), in("src0"), in("src1"), optional(in("src2")), optional(in("src3"))},
                "merge 2-4 descending (value, index) queues into dst", {}, rules::rule_merge_sort,
                only_dtypes({DType::Float32}), CostClass::VecSort, RowMap::Whole, Overlap::None));
  ops.back() = no_element_math(ops.back());
  ops.push_back(vector_op("topk", {out("dst"), in("src"), scalar("k"), scalar("actual_num")},
                          "dst = the k largest (value, index) pairs of src, descending", {},
                          rules::rule_topk, only_dtypes(kFloat), CostClass::VecSort, RowMap::Whole,
                          Overlap::SameRegion));
  ops.back() = no_element_math(ops.back());
  ops.back().identity = -INFINITY;  // a -inf entry is never among the k largest
  // A fill of (value, index) pairs (Duplicate): the simple vector class, not a sort.
  ops.push_back(vector_op("init_sort_buf", {out("dst"), scalar("num"), optional(scalar("value"))},
                          "fill a (value, index) buffer with num entries of (-inf or value, -1)",
                          {}, rules::rule_fill_like, only_dtypes({DType::Float32}),
                          CostClass::VecSimple, RowMap::Whole, Overlap::SameRegion));
  ops.back() = no_element_math(ops.back());
}

}  // namespace tl::ops
