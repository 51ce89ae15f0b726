// The values that leave a result unchanged, for mask_tails (docs/developer_mode.md, "Tails"):
// an op's identity (what a tile it combines may hold in its stale part), and the fill that
// makes an accumulating element loop's update a no-op where a stale tile is read (so the loop
// runs as written and only the stale part is filled, on the clipped iterations).
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "tl/ir.h"

namespace tl::dev {

/// `v` as a constant of `t` (infinities of an integer dtype: its range's ends).
Expr constant_of(DType t, double v);

/// A value v such that the store `st` (an accumulation: its value reads its own element) writes
/// back exactly the element's old value wherever every load of a buffer `stale` says is stale
/// reads v, whatever the other operands hold (assumed finite): 0 for `acc + x * x`, -inf for
/// `acc + exp(x - m)` and for `T.max(acc, x)`. Tried in the order 0, -inf, +inf, 1; nullopt when
/// none is provably neutral (`acc + exp(x)`: a select must mask the update instead).
std::optional<double> neutral_fill(const StoreNode& st,
                                   const std::function<bool(const BufferNode*)>& stale,
                                   const std::function<const BufferNode*(const BufferNode*)>& key);

}  // namespace tl::dev
