// One row of a clipped length between GM and UB: a T.copy whose GM side is a single row whose
// length is an expression (the last tile of a row clipped at the tensor's end, e.g.
// FlashAttention's LSE row of a partial query block), the UB side a buffer row at least that
// long. DataCopyPad takes its blockLen in bytes as a runtime value ("DataCopyPad" API page,
// DataCopyExtParams{blockCount, blockLen, srcStride, dstStride, rsv}), so one call moves it:
// UB -> GM writes exactly blockLen bytes. GM -> UB goes through the padded run-time-width copy
// (emit_move.cpp), which the caller chooses; this form refuses it by name.
#include "emitter.h"

namespace tl::ascendc {

bool Emitter::emit_clipped_row(const TileOpNode& n, const Operand& gm, const Operand& ub, bool in) {
  if (as_const_int(gm.cols) || !is_const(gm.rows, 1)) return false;  // not this form
  const SourceLoc& loc = n.loc;
  const std::string what =
      fmt::format("T.copy {} ('{}' -> '{}') of one row of a dynamic length",
                  in ? "global -> UB" : "UB -> global", in ? gm.buf->name : ub.buf->name,
                  in ? ub.buf->name : gm.buf->name);
  if (!is_const(ub.rows, 1) || !ub.contiguous || !aligned(ub, ub.offset, 32))
    unsupported(loc, what + " into a UB region that is not one 32-byte aligned run");
  // The UB side holds the longest row the length can be (its own extent: the same expression,
  // or a constant at least the length's bound).
  const auto len = arith::bound(gm.cols, ivs_);
  // A length the bounds cannot keep above zero is guarded below (`if (len > 0)`: an empty or
  // negative extent copies nothing, as in the VM); only the upper bound must fit.
  if (len.hi > 65535)
    unsupported(loc, what + fmt::format(" of length up to {} (not within 65535)", len.hi));
  // (The same expression printed the same way: the same value at run time.)
  auto ub_cols = as_const_int(ub.cols);
  if (!(ub_cols ? *ub_cols >= len.hi : expr(ub.cols, loc) == expr(gm.cols, loc)))
    unsupported(loc, what + " whose UB row may be shorter than the GM row");
  // GM -> UB: not emitted yet (no kernel end to end reads a clipped row this way to check it).
  if (in) unsupported(loc, what);
  const int64_t es = dtype_bytes(gm.buf->dtype);
  const std::string call =
      fmt::format("AscendC::DataCopyPad({}, {}, AscendC::DataCopyExtParams(1, {}, 0, 0, 0));",
                  at(gm), at(ub), expr(gm.cols * ci(es), loc));
  if (len.lo > 0) {
    line(call, loc);
  } else {  // an empty row (a block past the tensor's end) copies nothing
    open(fmt::format("if ({} > 0)", expr(gm.cols, loc)), loc);
    line(call, loc);
    close();
  }
  return true;
}

}  // namespace tl::ascendc
