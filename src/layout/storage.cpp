// Storage sizes of on-chip buffers and the planner's interval assignment (tl/storage.h).
#include "tl/storage.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "tl/error.h"
#include "tl/npu/layout.h"

namespace tl {
namespace {
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
// Saturating arithmetic on non-negative sizes and offsets: a result beyond int64 becomes
// INT64_MAX, which is more than any memory holds, so every capacity check still fails on it
// (wrapping around would turn a huge buffer into a small one).
int64_t sat_add(int64_t a, int64_t b) {
  int64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? kMax : r;
}
int64_t sat_mul(int64_t a, int64_t b) {
  int64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? kMax : r;
}
int64_t align_up(int64_t v, int64_t a) {
  if (a <= 1) return v;
  int64_t r = v % a;
  return r == 0 ? v : sat_add(v, a - r);
}
}  // namespace

int64_t storage_bytes(MemScope scope, DType dtype, const std::vector<int64_t>& shape) {
  int64_t esize = dtype_bytes(dtype);
  bool fractal = scope == MemScope::L1 || scope == MemScope::L0A || scope == MemScope::L0B ||
                 scope == MemScope::L0C;
  if (!fractal || shape.empty()) {
    int64_t n = 1;
    for (auto s : shape) n = sat_mul(n, s);
    return sat_mul(n, esize);
  }
  int64_t lead = 1;
  for (size_t i = 0; i + 2 < shape.size(); ++i) lead = sat_mul(lead, shape[i]);
  int64_t rows = shape.size() >= 2 ? shape[shape.size() - 2] : 1;
  int64_t cols = shape.back();
  int64_t c0 = scope == MemScope::L0C ? 16 : std::max<int64_t>(1, 32 / esize);
  // L0B (ZN) pads its rows (K) to the fractal width and its columns (N) to 16.
  if (scope == MemScope::L0B)
    return sat_mul(sat_mul(sat_mul(lead, align_up(rows, c0)), align_up(cols, 16)), esize);
  return sat_mul(sat_mul(sat_mul(lead, align_up(rows, 16)), align_up(cols, c0)), esize);
}

int64_t storage_element_offset(MemScope scope, DType dtype, const std::vector<int64_t>& shape,
                               const std::vector<int64_t>& idx) {
  TL_ASSERT(shape.size() == idx.size() && !shape.empty(),
            "storage_element_offset: {} indices for {} dimensions", idx.size(), shape.size());
  const size_t n = shape.size();
  if (scope != MemScope::L1 && scope != MemScope::L0A && scope != MemScope::L0B &&
      scope != MemScope::L0C) {
    int64_t off = 0;
    for (size_t d = 0; d < n; ++d) off = off * shape[d] + idx[d];
    return off;
  }
  const int64_t R = n >= 2 ? shape[n - 2] : 1, C = shape[n - 1];
  const int64_t r = n >= 2 ? idx[n - 2] : 0, c = idx[n - 1];
  int64_t lead = 0;
  for (size_t d = 0; d + 2 < n; ++d) lead = lead * shape[d] + idx[d];
  const int c0 = npu::c0_elems(dtype);
  switch (scope) {
    case MemScope::L1:
      return lead * align_up(R, 16) * align_up(C, c0) + npu::nz_offset(r, c, align_up(R, 16), c0);
    case MemScope::L0C:
      return lead * align_up(R, 16) * align_up(C, 16) + npu::l0c_offset(r, c, align_up(R, 16));
    case MemScope::L0A:
      return lead * align_up(R, 16) * align_up(C, c0) + npu::zz_offset(r, c, align_up(C, c0), c0);
    default:
      return lead * align_up(R, c0) * align_up(C, 16) + npu::zn_offset(r, c, align_up(C, 16), c0);
  }
}

int64_t planning_alignment(const Target& t, MemScope scope) {
  return std::max<int64_t>(t.align(scope), 32);
}

bool is_planned_scope(MemScope s) {
  return s == MemScope::L1 || s == MemScope::L0A || s == MemScope::L0B || s == MemScope::L0C ||
         s == MemScope::UB;
}

namespace {

/// First fit in `order`: each block at the lowest aligned offset that misses every placed
/// block it is live with. Returns the offsets and the footprint.
std::pair<std::vector<int64_t>, int64_t> first_fit(const std::vector<LiveBlock>& blocks,
                                                   const std::vector<size_t>& order,
                                                   const MayShare& may_share) {
  std::vector<int64_t> offset(blocks.size(), -1);
  std::vector<size_t> placed;
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (blocks[i].fixed >= 0) {
      offset[i] = blocks[i].fixed;
      placed.push_back(i);
    }
  }
  std::vector<size_t> conflicts;
  for (size_t i : order) {
    const LiveBlock& b = blocks[i];
    conflicts.clear();
    for (size_t j : placed) {
      const LiveBlock& o = blocks[j];
      bool live_together = o.first <= b.last && b.first <= o.last;
      if (o.bytes > 0 && (live_together || (may_share && !may_share(i, j)))) conflicts.push_back(j);
    }
    std::sort(conflicts.begin(), conflicts.end(),
              [&](size_t x, size_t y) { return offset[x] < offset[y]; });
    // The lowest offset >= x that is b.phase modulo b.align.
    auto placeable = [&](int64_t x) {
      return sat_add(align_up(std::max<int64_t>(x - b.phase, 0), b.align), b.phase);
    };
    int64_t at = placeable(0);
    for (size_t j : conflicts) {
      if (offset[j] >= sat_add(at, b.bytes)) break;  // fits in the gap below conflict j
      at = std::max(at, placeable(sat_add(offset[j], blocks[j].bytes)));
    }
    offset[i] = at;
    placed.push_back(i);
  }
  int64_t footprint = 0;
  for (size_t i = 0; i < blocks.size(); ++i)
    footprint = std::max(footprint, sat_add(offset[i], blocks[i].bytes));
  return {offset, footprint};
}

}  // namespace

std::vector<int64_t> assign_offsets(const std::vector<LiveBlock>& blocks,
                                    const MayShare& may_share) {
  std::vector<size_t> in_order;
  for (size_t i = 0; i < blocks.size(); ++i)
    if (blocks[i].fixed < 0) in_order.push_back(i);
  // Largest first usually packs best: big blocks get the low, contiguous space and small ones
  // fill the gaps.
  std::vector<size_t> by_size = in_order;
  std::stable_sort(by_size.begin(), by_size.end(), [&](size_t a, size_t b) {
    if (blocks[a].bytes != blocks[b].bytes) return blocks[a].bytes > blocks[b].bytes;
    return blocks[a].first < blocks[b].first;
  });
  auto best = first_fit(blocks, by_size, may_share);
  // First fit in the given order never ends above a bump allocator in that order (each block
  // has the top of everything placed so far as a candidate), so taking the better of the two
  // guarantees that reuse never costs memory.
  auto plain = first_fit(blocks, in_order, may_share);
  return plain.second < best.second ? plain.first : best.first;
}

}  // namespace tl
