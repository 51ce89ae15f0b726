// Internal: the op-specific verifier rules; src/op/*.cpp names the one an op obeys in OpDef::verify
// (an OpRule) and run_op_rule (rule_table.cpp) runs it. Each
// reports through the VerifyContext and never throws. The generic rules (operand memories of
// vector ops, copy paths, core scopes, UB alignment, region bounds) run for every op before
// these, in verify_ops.cpp; an op's rule only runs when its operands are well formed.
#pragma once

#include "tl/op.h"
#include "tl/verifier.h"

namespace tl::rules {

// Data movement and cube (rules_move_cube.cpp).
void rule_copy(const TileOpNode& n, VerifyContext& ctx);        // dtypes/fixpipe, shapes, options
void rule_atomic_add(const TileOpNode& n, VerifyContext& ctx);  // GM dst, atomic dtypes, shapes
void rule_dcci(const TileOpNode& n, VerifyContext& ctx);        // a GM region
void rule_gemm_v0(const TileOpNode& n, VerifyContext& ctx);     // L1 x L1 -> L0C, M/N/K, fractals
void rule_mma(const TileOpNode& n, VerifyContext& ctx);         // L0A x L0B -> L0C, M/N/K, fractals
void rule_init_const(const TileOpNode& n, VerifyContext& ctx);  // a whole L1 / L0A / L0B tile
void rule_dump_tensor(const TileOpNode& n, VerifyContext& ctx);  // printable memories

// Vector (rules_vector.cpp).
void rule_elementwise(const TileOpNode& n, VerifyContext& ctx);  // same dtype (table), same shape
void rule_fill_like(const TileOpNode& n, VerifyContext& ctx);    // dst dtype (table)
void rule_axpy(const TileOpNode& n, VerifyContext& ctx);
void rule_cast(const TileOpNode& n, VerifyContext& ctx);
void rule_compare(const TileOpNode& n, VerifyContext& ctx);
void rule_select(const TileOpNode& n, VerifyContext& ctx);
void rule_gather(const TileOpNode& n, VerifyContext& ctx);
void rule_gather_mask(const TileOpNode& n, VerifyContext& ctx);
void rule_broadcast(const TileOpNode& n, VerifyContext& ctx);
void rule_row_expand(const TileOpNode& n, VerifyContext& ctx);
void rule_transpose(const TileOpNode& n, VerifyContext& ctx);

// Reductions and sorting (rules_vector.cpp).
void rule_reduce(const TileOpNode& n, VerifyContext& ctx);
void rule_sort(const TileOpNode& n, VerifyContext& ctx);
void rule_merge_sort(const TileOpNode& n, VerifyContext& ctx);
void rule_topk(const TileOpNode& n, VerifyContext& ctx);

/// Runs the rule `n`'s op names in OpDef::verify (nothing for OpRule::None).
void run_op_rule(const TileOpNode& n, VerifyContext& ctx);

}  // namespace tl::rules
