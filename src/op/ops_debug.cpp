// Debug primitives: T.printf and T.dump_tensor, printed by the virtual NPU with the core id.
// Both run on the scalar unit of any core and accept any dtype.
#include "op_families.h"
#include "op_rules.h"

namespace tl::ops {
namespace {
OpDef debug_op(std::string name, std::vector<OperandSpec> operands, AttrSpec attr, OpRule verify,
               std::string summary) {
  return no_element_math(OpDef{.name = std::move(name),
                               .unit = OpUnit::Debug,
                               .operands = std::move(operands),
                               .attrs = {std::move(attr)},
                               .pipe = on(Pipe::S),
                               .verify = verify,
                               .dtypes = any_dtype(),
                               .cost = CostClass::Scalar,
                               .rows = RowMap::Whole,
                               .atomic = false,
                               .developer_only = false,
                               .summary = std::move(summary)});
}
}  // namespace

void register_debug_ops(OpList& ops) {
  ops.push_back(debug_op("printf", {{"args", OperandKind::Scalar, Access::Read, true, true}},
                         {"fmt", std::string(""), {}}, {},
                         "print a formatted line (%d %i %u %x %f %s) prefixed by the core id"));
  ops.push_back(debug_op("dump_tensor", {in("src")}, {"desc", int64_t{0}, {}},
                         rules::rule_dump_tensor,
                         "print a tile's contents with its description id and the core id"));
}

}  // namespace tl::ops
