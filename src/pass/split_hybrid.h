// split_hybrid (src/pass/split_hybrid.cpp): combine_cv's split of a TileLang-Ascend hybrid
// kernel with cube work into a Cube scope and a Vector scope, and the marking of the GM
// tensors that cross cores as channels for insert_channel_syncs (tl.ascend_auto_cross_core_sync).
// Kept out of combine_cv.cpp so that the pass's entry stays small and the split has a file of
// its own (docs/compiler.md, pass 0).
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "tl/ir.h"
#include "tl/target.h"

namespace tl::hybrid {

/// `f`, whose kernel `k` is written without T.Scope and whose body `body` (its developer tiles
/// already placed) has cube work, with that body as a Cube scope and a Vector scope: each tile
/// op and store in the scope of the core whose buffers it touches, the lets, loops and ifs
/// around work in both where both have work in them. With `cross_syncs`, each GM tensor one
/// scope writes and the other reads becomes a channel (BufferNode::channel_slots = 1) that
/// insert_channel_syncs gives its cross-core flags. A tl::Error at the author's line when the
/// cube's part uses vid or an on-chip vector buffer, or (with `cross_syncs`) when a tensor that
/// crosses cores is not one write and one read per iteration.
PrimFunc split(const PrimFunc& f, const KernelNode& k, const Stmt& body, const Target& t,
               bool cross_syncs);

/// `f` (split) with each GM tensor parameter that `work` (the body before the split) writes on
/// one core and reads on the other marked as a channel of one slot (or of one slot per constant
/// slot index it is written at, read at the same slots in the same order). `core_of` answers
/// where a statement of `work` runs. A tl::Error naming the tensor when it crosses cores other
/// than by one write and one read per iteration (per slot) under the same loops and ifs
/// (hybrid_channels.cpp), or is no kernel parameter.
PrimFunc mark_channels(const PrimFunc& f, const Stmt& work, const Target& t,
                       const std::function<std::optional<CoreKind>(const Stmt&)>& core_of);

/// How many levels of two loop nests, outermost first, pair up iteration by iteration for
/// workspace `ws`: at each level both are loops with the same trip count (structurally equal
/// extents) and neither moves `ws`'s copies (moves_with): the workspace is reused whole each
/// iteration. A channel whose cube side and vector side run in separate loops of equal trip
/// count (a cube loop, then a vector loop over the same tiles) is paired per iteration of those
/// loops, as TileLang-Ascend's auto cross-core sync pairs a workspace's producer and consumer by
/// equal loop counts; deeper loops on one side are that side's group (flagged around as one
/// write or read). Copies that move with the loop (a slot per iteration) are not paired: iteration
/// k's write and read would have to be the same slot, which flags cannot check, while flagging
/// each whole loop (all writes, then all reads) is right for them. mark_channels (which checks
/// the pattern) and insert_channel_syncs (which flags it) both use it, so they agree.
size_t paired_loops(const std::vector<const ForNode*>& a, const std::vector<const ForNode*>& b,
                    const BufferNode* ws);

/// Whether a copy (or element store/load) of `ws` inside `loop` depends on the loop's variable,
/// directly or through a let inside the loop.
bool moves_with(const ForNode* loop, const BufferNode* ws);

}  // namespace tl::hybrid
