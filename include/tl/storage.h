// Storage of on-chip buffers: how many bytes a buffer occupies in its memory (fractal scopes
// pad to whole fractals) and the interval-assignment core of the memory planner. The planner
// (plan_memory) and the virtual NPU (npu::build_program) both size buffers with
// storage_bytes, so a planned layout is exactly the layout that runs.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "tl/ir.h"
#include "tl/target.h"

namespace tl {

/// Bytes a buffer of constant `shape` occupies in `scope`. ND scopes (UB, GM): the dense
/// product. Fractal scopes pad the last two dimensions (rows, cols) to whole fractals:
/// L1 and L0A pad rows to 16 and cols to 32 B / sizeof(dtype); L0B pads rows to
/// 32 B / sizeof(dtype) and cols to 16; L0C pads both to 16. Leading dimensions multiply.
/// `shape` must be positive. Saturates at INT64_MAX when the size does not fit in int64 (more
/// than any memory holds, so a capacity check rejects it; callers add it to an address with
/// checked arithmetic).
int64_t storage_bytes(MemScope scope, DType dtype, const std::vector<int64_t>& shape);

/// Element offset of element `idx` of a buffer of constant `shape` in `scope`'s layout, as the
/// virtual NPU stores it (tl/npu/layout.h): ND scopes row-major; L1 NZ, L0A ZZ, L0B ZN, L0C NZ
/// with 16 x 16 fractals, padded as storage_bytes pads, leading dimensions outermost. Every map
/// is non-decreasing in each index, so the bytes of a box of elements lie between those of its
/// first and its last element (how insert_syncs narrows a sub-tile to a byte interval).
int64_t storage_element_offset(MemScope scope, DType dtype, const std::vector<int64_t>& shape,
                               const std::vector<int64_t>& idx);

/// Start-address alignment the planner uses in `scope`: max(target alignment, 32 bytes).
int64_t planning_alignment(const Target& t, MemScope scope);

/// True for the memories plan_memory places: L1, L0A, L0B, L0C and UB.
bool is_planned_scope(MemScope s);

/// One block to place: its size, alignment and live range [first, last] (inclusive, in any
/// linear program order). `fixed` >= 0 pins the block at that offset (explicit addresses). A free
/// block's offset is `phase` modulo `align` (0 <= phase < align; plan_memory's UB bank groups
/// give a block align 512 and phase 0 or 256, say).
struct LiveBlock {
  int64_t bytes = 0;
  int64_t align = 32;
  int64_t first = 0, last = 0;
  int64_t fixed = -1;
  int64_t phase = 0;
};

/// May blocks i and j (whose live ranges do not intersect) share bytes? (plan_memory: only when
/// the program orders the one's last accesses before the other's first.)
using MayShare = std::function<bool(size_t i, size_t j)>;

/// Offsets for `blocks` such that blocks whose live ranges intersect never share a byte, nor
/// do blocks `may_share` refuses (fixed blocks keep their offset and are avoided; two fixed
/// blocks are not checked against each other), every free offset is its block's phase plus a
/// multiple of its alignment, and the footprint stays small: the better of first fit largest-first
/// and first fit in the given order, so never above a bump allocator in the given order.
/// Deterministic. Pure: no capacity check (offsets and ends saturate at INT64_MAX, beyond every
/// capacity).
std::vector<int64_t> assign_offsets(const std::vector<LiveBlock>& blocks,
                                    const MayShare& may_share = {});

}  // namespace tl
