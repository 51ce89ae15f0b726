// Internal: small helpers shared by the verifier's rule files (regions, extents, formatting).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tl/op.h"
#include "tl/target.h"
#include "tl/verifier.h"

namespace tl::rules {

/// The value of `e` if it is an integer constant once folded the way the simplify pass folds
/// it. Every constant the verifier judges goes through this, so `255 - 45` as an event id is
/// judged as the 210 simplify will make of it (a check on the literal form alone let it pass).
std::optional<int64_t> const_int(const Expr& e);

/// "T.copy", "T.tile.add", ...
std::string op_title(const TileOpNode& n);

/// The region of operand `name`, or nullptr when it is omitted or a scalar.
const BufferRegion* region_of(const TileOpNode& n, std::string_view name);
/// Every region operand of `n` with its operand name, in operand order.
std::vector<std::pair<std::string, const BufferRegion*>> regions_of(const TileOpNode& n);

/// The region's extents with leading constant-1 extents dropped (at least one kept).
std::vector<Expr> squeezed_extents(const BufferRegion& r);
/// The region's extents with every constant-1 extent dropped, leading or interior or trailing
/// (at least one kept): what copies and elementwise ops compare, since they move elements in
/// row-major order and a unit dimension does not change that order (TileLang-Ascend's
/// `buf[i, :, :]` against a 2-D tile, a [n] tile against a [n, 1] one).
std::vector<Expr> unit_free_extents(const BufferRegion& r);
/// "[64, 7]".
std::string fmt_extents(const std::vector<Expr>& xs);
/// False only when the two extent lists provably differ (rank, or a pair of unequal constants).
bool extents_may_equal(const std::vector<Expr>& a, const std::vector<Expr>& b);
/// `a * b` and `a + b`, or nullopt when the exact result does not fit in int64. Every size,
/// byte count and address the rules compute goes through these: a shape or an address near
/// 2^63 must never wrap around to a small number that passes a check.
std::optional<int64_t> checked_mul(int64_t a, int64_t b);
std::optional<int64_t> checked_add(int64_t a, int64_t b);
/// Number of elements of the region, if constant (and representable in int64).
std::optional<int64_t> region_elems(const BufferRegion& r);
std::optional<int64_t> region_bytes(const BufferRegion& r);
/// Constant buffer size in bytes (nullopt when symbolic or beyond int64).
std::optional<int64_t> buffer_bytes(const Buffer& b);

std::string dtype_str(DType t);
std::string dtype_list(const std::vector<DType>& ts);
std::string scope_str(MemScope s);

/// Checks that operand `name` (if a region) has a dtype the target allows for the op
/// [vector-dtype]. Returns false if it reported.
bool check_vector_dtype(const TileOpNode& n, VerifyContext& ctx, std::string_view name);
/// Checks that operand `name` (if a region) has dtype `want` [operand-dtype-mismatch].
bool check_same_dtype(const TileOpNode& n, VerifyContext& ctx, std::string_view ref,
                      std::string_view name);
/// Checks that operand `name` (if a region) has the same extents as operand `ref` [shape-mismatch].
bool check_same_shape(const TileOpNode& n, VerifyContext& ctx, std::string_view ref,
                      std::string_view name);

// Entry points of the rule files, called by the walk in verifier.cpp.
/// Operand arity/kinds/ranks; false when the op is too malformed for further rules.
bool check_operands_wellformed(const TileOpNode& n, VerifyContext& ctx);
/// Generic rules of every tile op (memories, core scope, bounds, UB alignment), then the rule
/// op->verify names.
void check_tile_op(const TileOpNode& n, VerifyContext& ctx);
/// Flags, barriers and cross-core flags (verify_sync.cpp).
void check_sync(const SyncNode& n, VerifyContext& ctx);
/// A buffer declaration: memory kind, capacity, address (verify_ops.cpp).
void check_allocate(const AllocateNode& n, VerifyContext& ctx);
/// A GM tensor parameter: constant dimensions >= 0 and a byte size within int64.
void check_tensor_param(const Buffer& b, const SourceLoc& loc, VerifyContext& ctx);
/// "T.alloc_ub", "T.alloc_L1", ...
std::string alloc_title(MemScope s);

}  // namespace tl::rules
