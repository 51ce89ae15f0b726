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
//
// When every op is isolated, a second question decides whether the replay is needed at all
// (replay_order.cpp): does simulated time order every pair of ops that conflict on a byte the
// way the functional run executed them? Then the replay computes what the functional run
// computed, and the launch keeps the functional run's memory.
#pragma once

#include <cstdint>
#include <vector>

#include "program.h"
#include "tl/npu/timing.h"
#include "tl/npu/trace.h"

namespace tl::npu {

/// TL_REPLAY_IN_PLACE=0: every op through the replay's read-at-start, land-at-end mechanism,
/// none in place and the replay never skipped (tests compare both).
bool replay_shortcuts_enabled();

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
  /// Would the replay leave memory as the functional run left it, byte for byte (and take the
  /// same path, with the same errors)? True when every op is isolated, no scalar load or store
  /// touches memory, no op is atomic, nothing prints, and for every two ops that conflict on a
  /// byte (one writes it), the one whose write lands first in simulated time is the one the
  /// functional run finished before the other began (`ticks`: per core, its ops' OpTicks in
  /// program order). Then every op reads, in the replay, the bytes it read in the functional
  /// run (replay_order.cpp). Call once: it frees the analysis' per-access storage, which the
  /// replay does not need.
  bool same_as_functional_run(const Program& p, const std::vector<std::vector<OpTicks>>& ticks);

  /// A trace access with its memory as one number: GM (host addresses) or an on-chip memory of
  /// a physical core (two logical blocks on one physical core share it).
  struct Span {
    bool gm;
    uint64_t key;  // on-chip: the memory; GM: unused (bucketed by address)
    uint64_t start, len, pitch, count;
    bool write;
    uint64_t end() const { return start + (count - 1) * pitch + len; }
  };
  /// The events of one statement (an op and its expansion, or a scalar load or store).
  struct Group {
    int core;
    uint32_t first;
    uint32_t span_begin, span_end;
    double start, finish;
    bool scalar;    // a scalar load or store (an S-pipe op event)
    bool isolated;  // still a candidate
  };

 private:
  /// The tick check of same_as_functional_run.
  bool ordered_alike(const std::vector<std::vector<OpTicks>>& ticks) const;
  std::vector<std::vector<uint8_t>> first_;  // per core, per event: 1 at an isolated op's first
  size_t groups_ = 0, isolated_ = 0;
  bool all_isolated_ = false;  // enabled, and every group with accesses is isolated
  std::vector<Group> all_;     // kept for same_as_functional_run (when all_isolated_)
  std::vector<Span> spans_;
  std::vector<uint32_t> order_;  // indices into all_ in start order (non-scalar groups)
};

/// False if the program reads memory where the trace does not record it at a cycle of its own
/// (a load in an `if` condition, a loop bound, a flag id or a tile op's operand).
bool loads_are_traced(const Program& p);

}  // namespace tl::npu
