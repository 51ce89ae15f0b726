// The registrar of the primitives of src/prims (prim.h): each primitive's file constructs one
// during static initialisation, which hands its parts to the registries of op, verify and npu.
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

}  // namespace tl::prims
