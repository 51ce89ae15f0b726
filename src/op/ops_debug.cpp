// Debug primitives: T.printf and T.dump_tensor, printed by the virtual NPU with the core id.
#include "../verify/op_rules.h"
#include "op_families.h"

namespace tl::ops {

void register_debug_ops(OpList& ops) {
  ops.push_back({
      .name = "printf",
      .unit = OpUnit::Debug,
      .operands = {{"args", OperandKind::Scalar, Access::Read, true, true}},
      .attrs = {{"fmt", std::string(""), {}}},
      .pipe = on(Pipe::S),
      .verify = {},
      .dtypes = any_dtype(),
      .cost = CostClass::Scalar,
      .summary = "print a formatted line (%d %i %u %x %f %s) prefixed by the core id",
  });
  ops.push_back({
      .name = "dump_tensor",
      .unit = OpUnit::Debug,
      .operands = {in("src")},
      .attrs = {{"desc", int64_t{0}, {}}},
      .pipe = on(Pipe::S),
      .verify = rules::rule_dump_tensor,
      .dtypes = any_dtype(),
      .cost = CostClass::Scalar,
      .summary = "print a tile's contents with its description id and the core id",
  });
}

}  // namespace tl::ops
