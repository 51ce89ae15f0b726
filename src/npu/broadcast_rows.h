// Internal: the index map of T.tile.broadcast, shared by its semantics (exec_vector.cpp) and
// its stale-data rule (stale_rules.cpp) so the checker's shadows move exactly as the values do.
// The source is read right-aligned against the destination after dropping its leading unit
// dimensions (tl/shape_rules.h); each destination row then comes from one source row (last
// dimension kept) or from one source element repeated (last dimension broadcast).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "program.h"
#include "tl/shape_rules.h"

namespace tl::npu {

/// Calls `row(r, src_flat, last_kept)` for every row `r` of `d` viewed as rows x cols:
/// `src_flat` is the region-relative flat index (TileRef::at_flat) of the first source element
/// the row reads; with `last_kept` the row copies cols consecutive source elements, otherwise
/// it repeats that one element. Returns an empty string, or (calling nothing) why the shapes
/// cannot broadcast. `axis` is the op's attribute (tl/shape_rules.h, broadcast_source_extents).
template <typename RowFn>
std::string broadcast_rows(const TileRef& d, const TileRef& s, int64_t axis, RowFn&& row) {
  const std::vector<int64_t> se_all = broadcast_source_extents(s.extent, axis);
  const size_t nd = d.extent.size();
  const size_t ns = se_all.size();
  if (ns > nd) return "'src' has rank " + std::to_string(ns) + ", 'dst' rank " + std::to_string(nd);
  for (size_t i = 0; i < ns; ++i) {
    const int64_t se = se_all[se_all.size() - 1 - i], de = d.extent[nd - 1 - i];
    if (se != 1 && se != de) {
      std::string read;
      for (int64_t e : se_all) read += (read.empty() ? "" : ", ") + std::to_string(e);
      return "dimension " + std::to_string(se_all.size() - 1 - i) + " of 'src' (read as [" + read +
             "]) is " + std::to_string(se) + ", expected 1 or " + std::to_string(de);
    }
  }
  // Leading unit dimensions skipped above add nothing to a flat index: the map is computed on
  // the trailing `ns` dimensions only.
  const bool last_kept = ns > 0 && se_all.back() != 1;
  std::vector<int64_t> idx(nd);
  for (int64_t r = 0; r < d.rows(); ++r) {
    int64_t rem = r, sflat = 0, smul = last_kept ? se_all.back() : 1;
    for (size_t k = nd - 1; k-- > 0;) {
      idx[k] = rem % d.extent[k];
      rem /= d.extent[k];
    }
    for (size_t i = 1; i < ns; ++i) {
      const int64_t se = se_all[se_all.size() - 1 - i];
      sflat += (se == 1 ? 0 : idx[nd - 1 - i]) * smul;
      smul *= se;
    }
    row(r, sflat, last_kept);
  }
  return {};
}

}  // namespace tl::npu
