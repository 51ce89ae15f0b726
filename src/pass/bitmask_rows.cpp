// bits_pair_with_rows (bitmask_rows.h): the rule mask_tails applies to compare and select.
#include "bitmask_rows.h"

#include <vector>

#include "tile_bounds.h"
#include "tl/arith.h"
#include "tl/op.h"

namespace tl::dev {

bool whole_region(const BufferRegion& r) {
  for (size_t d = 0; d < r.ranges.size(); ++d) {
    auto mn = as_const_int(r.ranges[d].min);
    if (!mn || *mn != 0 || !same_extent(r.ranges[d].extent, r.buffer->shape[d])) return false;
  }
  return true;
}

bool bits_pair_with_rows(const TileOpNode& n,
                         const std::function<bool(const Buffer&)>& rows_only_stale) {
  const OpDef& op = *n.op;
  if (op.rows != RowMap::Elementwise || op.unit != OpUnit::Vector) return false;
  for (const Attr& a : n.attrs)
    if (const auto* i = std::get_if<int64_t>(&a.value); i && a.key == "mode" && *i == 0)
      return false;
  const BufferRegion* data = nullptr;
  std::vector<const BufferRegion*> bits;
  for (size_t i = 0; i < n.args.size() && i < op.operands.size(); ++i) {
    if (!n.args[i].is_region()) continue;
    const BufferRegion& r = n.args[i].region;
    if (op.operands[i].bitmask)
      bits.push_back(&r);
    else if (!data)
      data = &r;
    if (!rows_only_stale(r.buffer)) return false;
  }
  if (bits.empty() || !data || data->ranges.empty() || !whole_region(*data)) return false;
  const size_t rank = data->ranges.size();
  for (const BufferRegion* b : bits) {
    if (b->ranges.size() != rank || !whole_region(*b)) return false;
    for (size_t d = 0; d + 1 < rank; ++d)
      if (!same_extent(b->ranges[d].extent, data->ranges[d].extent)) return false;
    auto wb = as_const_int(b->ranges.back().extent), wd = as_const_int(data->ranges.back().extent);
    if (!wb || !wd || *wb * 8 != *wd) return false;
  }
  return true;
}

}  // namespace tl::dev
