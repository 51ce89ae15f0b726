// Internal: the UB bank-group side of plan_memory. On A2/A3 a vector instruction reads one
// 32-byte row per bank group per beat, 8 consecutive blocks of each source per repeat, so its
// two sources share a beat only when their starts are 8 blocks apart modulo the 16 groups
// (256 bytes modulo 512); otherwise every repeat takes bank_conflict_factor beats
// (docs/hardware.md section 4, docs/calibration.md "UB bank conflicts"; the virtual NPU's rule
// is set_cost_flags in src/npu/trace_record.cpp). This file finds, from each tile op's
// instruction expansion (OpDef::expansion: the vector-cost instructions and the operands they
// read), the pairs of UB sources whose bank-group distance the planner decides, weighs each by
// its repeats times its loops' trip counts, and proposes a residue modulo 512 for each buffer
// that puts as many weighted repeats as it can in opposite groups. plan_memory places the
// buffers with those residues and keeps that layout only when it conflicts less and fits.
#pragma once

#include <cstdint>
#include <vector>

#include "liveness.h"

#include "tl/ir.h"
#include "tl/target.h"

namespace tl {

/// Two UB sources of one vector instruction in buffers `a` and `b` (indices into the planned
/// buffers of one scope; a != b): conflict-free when (offset[a] - offset[b] + delta) / block is
/// groups / 2 modulo groups. `weight`: the instruction's repeats times its enclosing loops' trip
/// counts, summed over the instructions with the same (a, b, delta).
struct BankPair {
  size_t a = 0, b = 0;
  int64_t delta = 0;  // byte offset of a's source in a minus b's in b, modulo the group period
  double weight = 0;
};

/// The pairs of `body`'s vector instructions whose two UB sources lie in different buffers of
/// `lives` (a buffer's views count as the buffer) at a distance fixed modulo the bank period
/// (ub_bank_bytes * ub_bank_groups) whatever the loop variables. An instruction with more than
/// two distinct sources, or whose sources' distance depends on a loop variable or is not whole
/// bank rows, is left out: no placement changes its cost. Empty when the target has no bank
/// conflicts (bank_conflict_factor 1).
std::vector<BankPair> bank_pairs(const Stmt& body, const Target& target, const Liveness& lv,
                                 const std::vector<const BufferLife*>& lives);

/// Weighted conflicting repeats of `pairs` with buffers at `offsets`.
double bank_conflicts(const std::vector<BankPair>& pairs, const std::vector<int64_t>& offsets,
                      const Target& target);

/// A residue modulo the bank period for each of the `n` buffers, or -1 for a buffer left free
/// (in no pair): greedy, heaviest buffer first, each taking the residue with the fewest weighted
/// conflicts against those already chosen (a pinned buffer's is its address's, `fixed` >= 0),
/// then rounds of single changes while one lowers the total. Ties keep `base` (the default
/// layout's offsets), so a layout without conflicts is proposed unchanged.
std::vector<int64_t> bank_residues(const std::vector<BankPair>& pairs, size_t n,
                                   const std::vector<int64_t>& base,
                                   const std::vector<int64_t>& fixed, const Target& target);

}  // namespace tl
