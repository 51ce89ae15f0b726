// Cube primitives: T.gemm_v0 (A, B in L1 -> C in L0C, loads L0A/L0B itself) and T.mma
// (L0A x L0B -> L0C, one Mmad).
#include "../verify/op_rules.h"
#include "op_families.h"

namespace tl::ops {

void register_cube_ops(OpList& ops) {
  ops.push_back({
      .name = "gemm_v0",
      .unit = OpUnit::Cube,
      .operands = {in("A"), in("B"), inout("C"), optional(scalar("init"))},
      .attrs = {{"transpose_A", false, {}}, {"transpose_B", false, {}}},
      .pipe = on(Pipe::M),
      .verify = rules::rule_gemm_v0,
      .summary = "C (L0C) = [C +] op(A) x op(B), A and B in L1; init clears C first",
  });
  ops.push_back({
      .name = "mma",
      .unit = OpUnit::Cube,
      .operands = {in("A"), in("B"), inout("C"), optional(scalar("init"))},
      .attrs = {},
      .pipe = on(Pipe::M),
      .verify = rules::rule_mma,
      .summary = "C (L0C) = [C +] A (L0A) x B (L0B); init clears C first",
  });
}

}  // namespace tl::ops
