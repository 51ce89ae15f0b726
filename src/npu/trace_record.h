// Internal: the interpreter's hooks that append to the instruction trace.
#pragma once

#include "program.h"
#include "tl/npu/trace.h"

namespace tl::npu {

/// The bytes region `t` touches, as strided runs (one Access per run of rows). GM tensors are
/// registered in `ct` (when given) so reports can name their elements.
std::vector<Access> accesses_of(const Core& c, const TileRef& t, bool write, CoreTrace* ct);
/// Scalar ALU operations evaluating `e` takes (one per operator node; variables, constants and
/// the loads themselves, which are scalar-pipe events, take none).
int64_t scalar_ops_of(const Expr& e);
/// Appends `ev` to the trace, charging it the scalar operations pending since the last event.
void push_event(CoreTrace& ct, TraceEvent&& ev);
void record_op(Core& c, CoreTrace& ct, const TileOpNode& n);
void record_sync(Core& c, CoreTrace& ct, const SyncNode& s);
/// True if an event from `first` on stores to GM (not atomically: an atomic add's result
/// depends on the order of the adds, so its bytes are never a duplicate store).
bool stores_to_gm(const CoreTrace& ct, size_t first);
/// Digests the GM bytes the events from `first` on stored (Access::digest), right after the
/// op that recorded them ran.
void digest_gm_stores(CoreTrace& ct, size_t first);
/// Scalar-pipe memory traffic of a Store or a Let (loads of UB/GM inside the expression).
void record_scalar(Core& c, CoreTrace& ct, const StmtNode& s);

}  // namespace tl::npu
