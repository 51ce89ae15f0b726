// Internal: the names the op tables (src/op/ops_*.cpp) give their verifier rules. Each is the
// OpRule the op obeys; the rule itself lives in the verifier (src/verify/op_rules.h), which sits
// above the op module, so an op names its rule without linking to it (docs/architecture.md).
#pragma once

#include "tl/op.h"

namespace tl::ops::rules {

inline constexpr OpRule rule_copy = OpRule::Copy;
inline constexpr OpRule rule_atomic_add = OpRule::AtomicAdd;
inline constexpr OpRule rule_dcci = OpRule::Dcci;
inline constexpr OpRule rule_gemm_v0 = OpRule::GemmV0;
inline constexpr OpRule rule_mma = OpRule::Mma;
inline constexpr OpRule rule_init_const = OpRule::InitConst;
inline constexpr OpRule rule_dump_tensor = OpRule::DumpTensor;
inline constexpr OpRule rule_elementwise = OpRule::Elementwise;
inline constexpr OpRule rule_fill_like = OpRule::FillLike;
inline constexpr OpRule rule_axpy = OpRule::Axpy;
inline constexpr OpRule rule_cast = OpRule::Cast;
inline constexpr OpRule rule_compare = OpRule::Compare;
inline constexpr OpRule rule_select = OpRule::Select;
inline constexpr OpRule rule_gather = OpRule::Gather;
inline constexpr OpRule rule_gather_mask = OpRule::GatherMask;
inline constexpr OpRule rule_broadcast = OpRule::Broadcast;
inline constexpr OpRule rule_row_expand = OpRule::RowExpand;
inline constexpr OpRule rule_transpose = OpRule::Transpose;
inline constexpr OpRule rule_reduce = OpRule::Reduce;
inline constexpr OpRule rule_sort = OpRule::Sort;
inline constexpr OpRule rule_merge_sort = OpRule::MergeSort;
inline constexpr OpRule rule_topk = OpRule::Topk;

}  // namespace tl::ops::rules
