// What the part of a UB tile past the end of a tensor holds, for clip_expert_copies: a clipped
// read leaves there either the pad (TileLang-Ascend's copy_gm_to_ub fills a partial tile of a
// 16- or 32-bit dtype with pad_value, 0 without one) or undefined bytes (int8, fp8, ...). The
// analysis follows that value through the kernel in program order and rejects a reduction, sort
// or top-k that would combine it into a result unless it is the op's identity (a sum over a
// 0-padded part is exact, a max over it is not when every value is negative).
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>

#include "tl/ir.h"

namespace tl::dev {

/// A clipped GM -> UB read of a whole tile: the tile's dimensions it may clip, and what the
/// chip leaves past the tensor's end (nullopt: undefined), and the copy as written (messages).
struct ClippedRead {
  uint32_t dims = 0;
  std::optional<double> pad;
  Stmt copy;
};

/// Throws tl::Error at the first reduction, sort or top-k over a clipped dimension of a tile
/// whose clipped part does not provably hold the op's identity there.
void check_pad_values(const Stmt& body,
                      const std::unordered_map<const TileOpNode*, ClippedRead>& reads);

}  // namespace tl::dev
