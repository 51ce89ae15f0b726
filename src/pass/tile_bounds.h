// Where a developer kernel's tiles meet the end of their tensors, shared by mask_tails (which
// keeps the stale part of a clipped tile out of every result) and legalize_copies (which clips
// the copies): the interval bounds of the block, loop and let variables at a point of the walk
// (Bounds), and the extents a copy between a GM tensor and an on-chip tile moves once clipped to
// the tensor (clip_copy). Both passes clip with the same rule, so the valid part mask_tails
// reasons about is exactly the part legalize_copies moves (docs/developer_mode.md, "Tails").
#pragma once

#include <optional>
#include <unordered_set>

#include "tl/arith.h"
#include "tl/ir.h"

namespace tl::dev {

/// Interval bounds of the integer variables in scope, kept by a walk that calls `kernel`,
/// `loop`, `let` and `refine` as it enters those statements (and restores `vars` itself where
/// a scope ends, when it needs to).
struct Bounds {
  arith::VarIntervals vars;
  /// Integer lets whose value is read from memory (`src = idx_ub[0, k]`, or computed from such a
  /// value): a gather index, whose range no shape or loop bound gives.
  std::unordered_set<const VarNode*> loaded;
  /// Whether `e` reads memory: a load, or a variable bound to one.
  bool reads_memory(const Expr& e) const;
  /// cid ranges over [0, num_blocks - 1].
  void kernel(const KernelNode& k);
  /// The loop variable ranges over [min, min + extent - 1].
  void loop(const ForNode& f);
  /// An integer let's variable ranges over its value's bound (bx = cid % q_tiles: [0, q_tiles
  /// - 1]), so a copy indexed by it is clipped only where it can pass its tensor's end.
  void let(const LetNode& l);
  /// Narrows the upper bound of an integer variable that `cond` (true) bounds from above, for
  /// the then branch of an if: `v < e`, `v <= e`, `e > v`, `e >= v` and conjunctions of them
  /// (T.Persistent's `if tile < total` keeps the tile coordinates inside the domain).
  void refine(const Expr& cond);
};

/// A copy between GM region `gm` and on-chip region `tile`, clipped to the tensor.
struct ClippedCopy {
  BufferRegion gm, tile;      // both sides, each clipped dimension's extent a run-time value
  bool clipped = false;       // some dimension may pass the tensor's end
  bool clipped_last = false;  // the last one may
};
/// Clips both sides along each trailing dimension whose end the bounds cannot prove inside the
/// tensor: the extent becomes min(extent, tensor extent - start), a run-time value. nullopt when
/// the two sides' trailing extents differ (the author's layout, left as written: an
/// out-of-bounds block is then a run-time error naming the region).
/// A dimension of extent 1 whose start is read from memory (a gathered row, `x[idx_ub[0, k], :]`)
/// is not clipped: clipping it could only drop the whole row, which a valid index never needs and
/// an invalid one must not hide; the virtual NPU's bounds check reports such an index at run time.
std::optional<ClippedCopy> clip_copy(BufferRegion gm, BufferRegion tile, const Bounds& bounds);

/// Integer extents equal: equal constants, or structurally equal expressions.
bool same_extent(const Expr& a, const Expr& b);

}  // namespace tl::dev
