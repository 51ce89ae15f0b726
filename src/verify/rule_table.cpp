// The table from an op's OpRule (tl/op.h, named by the op tables in src/op/) to the verifier
// rule that implements it (op_rules.h). The rules register here, in the verifier, rather than in
// the op definitions, so that the op module does not link to the verifier above it
// (docs/architecture.md); a new rule is one enumerator in tl/op.h and one case here. The
// primitives of src/prims register theirs by name instead (register_op_rule, OpRule::Prim).
#include <unordered_map>

#include "op_rules.h"

namespace tl {
namespace {
/// The rules the primitives of src/prims register, by op name, during static initialisation
/// (a function-local static: registrars in other files may run before this file's statics).
struct PrimRules {
  std::unordered_map<std::string, OpRuleFn> by_name;
  bool closed = false;  // the table is built: a later registration would be lost
};
PrimRules& prim_rules() {
  static PrimRules rules;
  return rules;
}

/// The same by OpDef::id, built (and checked against the registry) on first use.
const std::vector<OpRuleFn>& prim_rule_table() {
  static const std::vector<OpRuleFn> table = [] {
    std::vector<OpRuleFn> t(all_ops().size(), nullptr);
    prim_rules().closed = true;
    for (const auto& [name, fn] : prim_rules().by_name) {
      const OpDef* op = find_op(name);
      TL_ASSERT(op && op->verify == OpRule::Prim,
                "a verifier rule is registered for {}, which is not a registered primitive", name);
      t[op->id] = fn;
    }
    for (const OpDef* op : all_ops())
      TL_ASSERT(op->verify != OpRule::Prim || t[op->id], "primitive {} has no verifier rule",
                op->name);
    return t;
  }();
  return table;
}
}  // namespace

void register_op_rule(std::string op_name, OpRuleFn rule) {
  TL_ASSERT(rule, "a null verifier rule is registered for {}", op_name);
  TL_ASSERT(!prim_rules().closed,
            "the verifier rule of {} is registered after the first verification (static "
            "initialisation only)",
            op_name);
  auto [it, fresh] = prim_rules().by_name.emplace(op_name, rule);
  TL_ASSERT(fresh, "primitive {} has two verifier rules", it->first);
}

}  // namespace tl

namespace tl::rules {

void run_op_rule(const TileOpNode& n, VerifyContext& ctx) {
  switch (n.op->verify) {
    case OpRule::None:
      return;
    case OpRule::Copy:
      return rule_copy(n, ctx);
    case OpRule::AtomicAdd:
      return rule_atomic_add(n, ctx);
    case OpRule::Dcci:
      return rule_dcci(n, ctx);
    case OpRule::GemmV0:
      return rule_gemm_v0(n, ctx);
    case OpRule::Mma:
      return rule_mma(n, ctx);
    case OpRule::InitConst:
      return rule_init_const(n, ctx);
    case OpRule::DumpTensor:
      return rule_dump_tensor(n, ctx);
    case OpRule::Elementwise:
      return rule_elementwise(n, ctx);
    case OpRule::FillLike:
      return rule_fill_like(n, ctx);
    case OpRule::Axpy:
      return rule_axpy(n, ctx);
    case OpRule::Cast:
      return rule_cast(n, ctx);
    case OpRule::Compare:
      return rule_compare(n, ctx);
    case OpRule::Select:
      return rule_select(n, ctx);
    case OpRule::Gather:
      return rule_gather(n, ctx);
    case OpRule::GatherMask:
      return rule_gather_mask(n, ctx);
    case OpRule::Broadcast:
      return rule_broadcast(n, ctx);
    case OpRule::RowExpand:
      return rule_row_expand(n, ctx);
    case OpRule::Transpose:
      return rule_transpose(n, ctx);
    case OpRule::Reduce:
      return rule_reduce(n, ctx);
    case OpRule::Sort:
      return rule_sort(n, ctx);
    case OpRule::MergeSort:
      return rule_merge_sort(n, ctx);
    case OpRule::Topk:
      return rule_topk(n, ctx);
    case OpRule::Prim:
      return prim_rule_table()[n.op->id](n, ctx);
  }
  TL_ASSERT(false, "op {} names an OpRule the verifier does not know", n.op->name);
}

}  // namespace tl::rules
