// Internal: the instruction costs of the timing model (docs/hardware.md section 4). Every number
// comes from the target's CostTable; an instruction's row is its cost class (TraceEvent::cost,
// chosen when its op was registered), never its name. src/npu/timing_model.cpp schedules
// instructions with these costs.
#pragma once

#include "tl/npu/trace.h"
#include "tl/target.h"

namespace tl::npu {

/// Cost of one instruction: fixed part (latency, or the whole duration for non-GM work), the
/// data bytes and rate of a GM flow, and the issue interval of overlapping pipes.
struct Cost {
  double fixed = 0;     // cycles before the data phase (or the whole instruction)
  double bytes = 0;     // GM data phase: bytes at `rate` (0: no GM flow)
  double rate = 0;      // bytes per cycle of this core on the path
  double interval = 1;  // overlapping pipes: next start >= this start + interval
  bool gm = false;
  bool write = false;  // GM write
};

/// Costs of one target's instructions.
class CostModel {
 public:
  explicit CostModel(const Target& t);
  /// Bytes per cycle of one core on the copy path s -> d: min(theoretical, measured plateau).
  double rate(MemScope s, MemScope d) const;
  /// Cycles before a copy's data moves: K / rate where the path has a K, else the GM latency
  /// (GM paths) or the on-chip latency.
  double latency(MemScope s, MemScope d) const;
  /// Cycles of a full sort of `n` scores keeping `keep` entries per merged list (Sort32 and
  /// the MrgSort passes).
  double full_sort_cycles(int64_t n, int64_t keep) const;
  /// The cost of one Op event of a trace.
  Cost cost(const TraceEvent& e) const;

 private:
  const CostTable& c_;
  double clock_hz_ = 1, gm_latency_ = 0;
};

}  // namespace tl::npu
