// Which compare / select instructions pair their bitmask's bits with the rows of their data tile
// (mask_tails, docs/developer_mode.md "Tails"): for those, a tile stale in rows only stays stale
// in the same rows through the bitmask and the select, as through an elementwise op.
#pragma once

#include <functional>

#include "tl/ir.h"

namespace tl::dev {

/// An elementwise vector op with bitmask operands (compare's dst, select's mask) whose bits pair
/// with the rows of its data tiles: every bitmask has the data's rank and leading extents and 8
/// elements of a data row per byte of its last dimension (a bit per element, consumed
/// continuously: a select's mode 0 reuses one repeat's bits and does not pair), all operands
/// whole, and `rows_only_stale(buffer)` true for every operand (not stale in its last dimension,
/// where a column of bits is 8 columns of data). split_aiv relates the same rows (relate_masks).
/// The region is its whole buffer.
bool whole_region(const BufferRegion& r);

bool bits_pair_with_rows(const TileOpNode& n,
                         const std::function<bool(const Buffer&)>& rows_only_stale);

}  // namespace tl::dev
