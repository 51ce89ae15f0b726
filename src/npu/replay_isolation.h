// Internal: which tile ops the time-ordered replay (replay.cpp) may execute once, in place, at
// their start cycle instead of reading at start, keeping their writes aside and landing them at
// their end cycle.
//
// The replay's rule (docs/virtual_npu.md, "Data in simulated-time order") makes an op read its
// operands at its start and its writes land, where they changed something, at its end. When no
// other instruction touches the op's bytes in between -- no instruction whose simulated interval
// overlaps the op's reads a byte the op writes or writes a byte the op reads or writes -- the
// bytes it writes are seen by nobody before its end, and what it read did not change while it
// ran: executing it in place at its start gives the same memory at every later moment as the
// rule does. Such an op is "isolated". Everything else (ops overlapping a conflicting one,
// atomic ops, ops whose bytes a scalar load or store touches at any time) keeps the rule's
// mechanism. A launch whose control flow or tile-op operands read memory outside the recorded
// scalar loads (a load in an `if` condition, a loop bound, a flag id or a tile op's operand)
// has no isolated op: such a read happens when the interpreter reaches it, not at a cycle the
// trace gives, so the analysis could not place it.
#pragma once

#include <cstdint>
#include <vector>

#include "program.h"
#include "tl/npu/timing.h"
#include "tl/npu/trace.h"

namespace tl::npu {

class IsolatedOps {
 public:
  /// Analyses the functional run's trace with the timing model's instruction times.
  /// `enabled` false: no op is isolated (the replay's exact mechanism for every op).
  IsolatedOps(const Program& p, const Trace& trace, const Profile& prof, bool enabled);
  /// Is the statement whose trace events start at `event` of core `core` isolated?
  bool isolated(int core, size_t event) const {
    return event < first_[core].size() && first_[core][event] != 0;
  }
  /// Ops with accesses, and how many of them are isolated (for the replay's statistics).
  size_t groups() const { return groups_; }
  size_t isolated_count() const { return isolated_; }

 private:
  std::vector<std::vector<uint8_t>> first_;  // per core, per event: 1 at an isolated op's first
  size_t groups_ = 0, isolated_ = 0;
};

/// False if the program reads memory where the trace does not record it at a cycle of its own
/// (a load in an `if` condition, a loop bound, a flag id or a tile op's operand).
bool loads_are_traced(const Program& p);

}  // namespace tl::npu
