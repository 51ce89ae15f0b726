// Internal: what a primitive's file in src/prims hands to the registries below it. A primitive is
// one file (docs/architecture.md, "The prims layer") holding its OpDef, its verifier rule, its
// virtual-NPU semantics and stale-data rule, and the definition of its C++ DSL call (declared in
// tl/lang.h); one namespace-scope Registrar object in that file registers the three parts
// during static initialisation:
//   const prims::Registrar registrar({.def = ..., .verify = rule, .semantics = {...}});
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "tl/npu/semantics.h"
#include "tl/op.h"
#include "tl/verifier.h"

namespace tl::prims {

struct Prim {
  /// The op definition; its `verify` is set to OpRule::Prim by the registrar.
  OpDef def;
  /// The op-specific verifier rule (required).
  OpRuleFn verify = nullptr;
  npu::PrimSemantics semantics;
};

/// Registers `p`'s three parts: tl::register_prim, tl::register_op_rule,
/// tl::npu::register_prim_semantics. A missing part is an internal error, raised at start-up.
struct Registrar {
  explicit Registrar(Prim p);
};

/// Looks up a primitive's own OpDef, its typed handle (the op registry is built on first use,
/// after static initialisation).
const OpDef& handle(std::string_view name);

// What a verifier rule can judge before the kernel runs: the operands known at compile time.

/// The value of scalar operand `name` when it is an integer literal; none when it is absent, a
/// tile, or an expression known only when the kernel runs.
std::optional<int64_t> const_of(const TileOpNode& n, std::string_view name);

/// The element count of `r` when every extent is a literal and their product fits in int64_t.
std::optional<int64_t> const_elems(const BufferRegion& r);

/// True when `dt` (dst's dtype) is one of the op's dtypes on the context's target; otherwise
/// reports "T.<op> on <target> takes <dtypes>, got <dt>" at operand dst (rule vector-dtype).
bool dtype_on_target(const TileOpNode& n, VerifyContext& ctx, DType dt);

}  // namespace tl::prims
