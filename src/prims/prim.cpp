// The registrar of the primitives of src/prims (prim.h): each primitive's file constructs one
// during static initialisation, which hands its parts to the registries of op, verify and npu;
// and the compile-time operand queries the primitives' verifier rules share.
#include "prim.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

namespace tl::prims {

Registrar::Registrar(Prim p) {
  TL_ASSERT(p.verify, "primitive {} has no verifier rule", p.def.name);
  p.def.verify = OpRule::Prim;
  const std::string name = p.def.name;
  register_prim(std::move(p.def));
  register_op_rule(name, p.verify);
  npu::register_prim_semantics(name, p.semantics);
}

const OpDef& handle(std::string_view name) {
  const OpDef* d = find_op(name);
  TL_ASSERT(d, "primitive {} is not registered", name);
  return *d;
}

std::optional<int64_t> const_of(const TileOpNode& n, std::string_view name) {
  const TileArg* a = op_operand(n, name);
  if (!a || !a->is_scalar() || a->scalar.kind() != ExprKind::IntImm) return std::nullopt;
  return static_cast<const IntImmNode*>(a->scalar.get())->value;
}

std::optional<int64_t> const_elems(const BufferRegion& r) {
  int64_t n = 1;
  for (const auto& rg : r.ranges) {
    if (rg.extent.kind() != ExprKind::IntImm) return std::nullopt;
    if (__builtin_mul_overflow(n, static_cast<const IntImmNode*>(rg.extent.get())->value, &n))
      return std::nullopt;
  }
  return n;
}

bool dtype_on_target(const TileOpNode& n, VerifyContext& ctx, DType dt) {
  const std::vector<DType>* legal = n.op->dtypes.on(ctx.target());
  if (std::find(legal->begin(), legal->end(), dt) != legal->end()) return true;
  std::string names;
  for (DType t : *legal) names += (names.empty() ? "" : ", ") + std::string(dtype_name(t));
  ctx.error(n, "dst", "vector-dtype",
            fmt::format("T.{} on {} takes {}, got {}", n.op->name, ctx.target().name, names,
                        dtype_name(dt)));
  return false;
}

}  // namespace tl::prims
