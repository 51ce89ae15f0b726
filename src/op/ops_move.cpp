// Data-movement primitives: T.copy (every legal path, with relu / transpose / pad / ND->NZ
// options) and T.atomic_add (accumulate a local tile into GM).
#include "op_families.h"
#include "op_rules.h"
#include "tl/target.h"

namespace tl::ops {
namespace {
Pipe path_pipe(const TileOpNode& n, const Target& t, int src, int dst) {
  auto p = t.copy_pipe(n.args[src].region.buffer->scope, n.args[dst].region.buffer->scope);
  return p.value_or(Pipe::S);  // illegal paths are rejected by the verifier before use
}
}  // namespace

void register_move_ops(OpList& ops) {
  ops.push_back(no_element_math({
      .name = "copy",
      .unit = OpUnit::Move,
      .operands = {in("src"), out("dst")},
      .attrs = {{"enable_relu", false, {}},
                {"transpose", false, {}},
                {"pad", false, {}},
                {"pad_value", 0.0, {}},
                {"nd2nz", true, {}},
                // Set by legalize_copies on a GM -> UB copy it clipped at the tensor's end whose
                // tile side is the leading corner of its whole tile: the tile's elements past the
                // copied region are stale after the copy (docs/developer_mode.md, "Tails"). No
                // effect on the data; the virtual NPU's stale-data checker marks them invalid.
                {"clipped", false, {}},
                // Set by clip_expert_copies on a GM -> UB copy it gave the padded form for a row
                // that is not whole 32-byte blocks: TileLang-Ascend's copy_gm_to_ub moves it
                // with DataCopyPad and isPad=false, which leaves the UB lanes from the row's end
                // to its 32-byte boundary undefined (AscendC "DataCopyPad" API page). The data
                // gets pad_value as for any padded copy; the stale-data checker marks those
                // lanes invalid, so a kernel that reads them into GM is reported.
                {"pad_undefined", false, {}}},
      .pipe = [](const TileOpNode& n, const Target& t) { return path_pipe(n, t, 0, 1); },
      .verify = rules::rule_copy,
      // Any element type moves; the fixpipe's conversions come from the target (rule_copy).
      .dtypes = any_dtype(),
      .cost = CostClass::Copy,
      .rows = RowMap::Copy,
      .atomic = false,
      .developer_only = false,
      .summary = "copy a tile along a legal path (GM<->UB, GM->L1, L1->L0A/L0B, L0C->GM/L1, ...)",
  }));
  // AscendC DataCacheCleanAndInvalid: scalar loads and stores of GM go through each core's
  // data cache, which DMA and the other cores do not see. dcci writes back the core's dirty
  // lines of `dst` and drops them, so the next scalar load reads GM (`entire`: the whole cache).
  ops.push_back(no_element_math({
      .name = "dcci",
      .unit = OpUnit::Scalar,
      .operands = {inout("dst")},
      .attrs = {{"entire", false, {}}},
      .pipe = on(Pipe::S),
      .verify = rules::rule_dcci,
      .dtypes = any_dtype(),
      .cost = CostClass::Scalar,
      .rows = RowMap::Whole,
      .atomic = false,
      .developer_only = false,
      .summary =
          "DataCacheCleanAndInvalid: write back and drop this core's cached lines of a GM region",
  }));
  ops.push_back(no_element_math({
      .name = "atomic_add",
      .unit = OpUnit::Move,
      .operands = {inout("dst"), in("src")},
      .attrs = {},
      .pipe = [](const TileOpNode& n, const Target& t) { return path_pipe(n, t, 1, 0); },
      .verify = rules::rule_atomic_add,
      .dtypes = dtypes_from_target("atomic_dtypes"),
      .cost = CostClass::Copy,
      .rows = RowMap::Whole,
      .atomic = true,
      .developer_only = false,
      .summary = "dst (GM) += src (UB, L0C or L1), atomically across cores",
  }));
}

}  // namespace tl::ops
