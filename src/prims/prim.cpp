// The registrar of the primitives of src/prims (prim.h): each primitive's file constructs one
// during static initialisation, which hands its parts to the registries of op, verify and npu;
// and the compile-time operand queries the primitives' verifier rules share.
#include "prim.h"

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

}  // namespace tl::prims
