// T.copy of one row whose length is an expression, between GM and UB: the last tile of a 1-D
// tensor of dynamic length (a row-sum vector of a tile clipped at row M, as SwiGLU's backward
// stores its dweight partials), which developer mode's legalize_copies clips on both sides to
// the same extent (docs/developer_mode.md, "Tails"). DataCopyPad takes the row's length in
// bytes as a run-time value (DataCopyExtParams.blockLen, "DataCopyPad" API page), so one call
// with blockCount 1 moves it; GM -> UB pads the row to its 32-byte boundary with the copy's
// pad value (rightPadding, in elements, computed from the same length), as the VM's padded
// copy does. Every other copy goes through emit_move.cpp.
#include "emitter.h"
#include "tl/ir_equal.h"
#include "tl/ir_ops.h"

namespace tl::ascendc {

bool Emitter::emit_dynamic_row_copy(const TileOpNode& n, const Operand& gm, const Operand& ub,
                                    bool in) {
  if (!is_const(gm.rows, 1) || !is_const(ub.rows, 1)) return false;
  if (!gm.cols.defined() || !ub.cols.defined() || !structural_equal(gm.cols, ub.cols)) return false;
  const bool pad = n.attr("pad") && n.attr_bool("pad");
  // An unpadded GM -> UB row must be whole 32-byte blocks, which a run-time length cannot
  // promise here: left to the general path's error.
  if (in && !pad) return false;
  const SourceLoc& loc = n.loc;
  const std::string what = fmt::format("T.copy {} -> {} of one row of dynamic length ('{}')",
                                       in ? "GM" : "UB", in ? "UB" : "GM", ub.buf->name);
  if (!aligned(ub, ub.offset, 32)) unsupported(loc, what + " at a UB offset not 32-byte aligned");
  const DType t = ub.buf->dtype;
  const int64_t es = dtype_bytes(t), per_block = 32 / es;
  const std::string bytes = expr(gm.cols * ci(es), loc);
  const std::string dst = in ? at(ub) : at(gm), src = in ? at(gm) : at(ub);
  if (!in) {
    // UB -> GM: DataCopyExtParams{blockCount 1, blockLen bytes, srcStride 0, dstStride 0}.
    line(fmt::format("AscendC::DataCopyPad({}, {}, AscendC::DataCopyExtParams(1, {}, 0, 0, 0));",
                     dst, src, bytes),
         loc);
    return true;
  }
  // DataCopyPadExtParams<T>{isPad, leftPadding, rightPadding (elements to the 32-byte boundary),
  // paddingValue}.
  const Expr right = floordiv(gm.cols + ci(per_block - 1), ci(per_block)) * ci(per_block) - gm.cols;
  const std::string value =
      scalar(FloatImmNode::make(DType::Float64, n.attr_float("pad_value")), t, loc);
  line(fmt::format("AscendC::DataCopyPad({}, {}, AscendC::DataCopyExtParams(1, {}, 0, 0, 0), "
                   "AscendC::DataCopyPadExtParams<{}>(true, 0, {}, {}));",
                   dst, src, bytes, ctype(t, loc), expr(right, loc), value),
       loc);
  return true;
}

}  // namespace tl::ascendc
