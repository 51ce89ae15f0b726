// Shape rules that more than one component must apply identically. A rule lives here once so
// that the simulator's semantics (src/npu/exec_*.cpp), the stale-data checker that shadows them
// (src/npu/stale_rules.cpp) and anything else reading an op's shape cannot disagree.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace tl {

/// T.tile.broadcast: how many leading dimensions of the source to ignore. A broadcast reads the
/// source right-aligned against the destination, and TileLang-Ascend's broadcast looks only at
/// the trailing dimensions of its operands, so a source region such as `neg_sm[0, :, :]`
/// ([1, 64, 1]) broadcast into a [64, 128] tile, or a [1, 1, n] row into an [m, n] tile, is
/// legal: its leading unit dimensions carry no index and are dropped (always keeping the last
/// dimension). What remains must still have no more dimensions than the destination; the caller
/// reports it otherwise. See docs/language.md (T.tile.broadcast).
inline size_t broadcast_source_skip(std::span<const int64_t> src_extents) {
  size_t skip = 0;
  while (skip + 1 < src_extents.size() && src_extents[skip] == 1) ++skip;
  return skip;
}

/// T.tile.broadcast's source extents as the broadcast reads them: the leading unit dimensions
/// dropped (broadcast_source_skip), then, with `axis` 1 (TileLang-Ascend's `axis=1`: the source
/// is one value per destination row) and a source of one dimension left, a unit dimension
/// appended, so [n] reads as the column [n, 1]. `axis` -1 (the default) and 0 (a row, the
/// right-aligned reading) change nothing. Flat source indices are unchanged by either step.
inline std::vector<int64_t> broadcast_source_extents(std::span<const int64_t> src_extents,
                                                     int64_t axis) {
  const size_t skip = broadcast_source_skip(src_extents), n = src_extents.size() - skip;
  // Sized once and filled (the appended unit dimension is the fill value): GCC 12's
  // -Warray-bounds misreads a push_back onto a vector copied from a span.
  std::vector<int64_t> e(n + (axis == 1 && n == 1 ? 1 : 0), 1);
  for (size_t i = 0; i < n; ++i) e[i] = src_extents[skip + i];
  return e;
}

}  // namespace tl
