// Internal: timed mode with data. After the functional run has recorded the trace and the
// timing model has given every instruction its simulated cycles, the launch is executed again
// with each instruction's memory effects applied in simulated-time order (replay.cpp), so that
// a missing synchronisation gives the wrong data it would give on hardware.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "program.h"
#include "tl/npu/timing.h"
#include "tl/npu/trace.h"

namespace tl::npu {

class IsolatedOps;  // replay_isolation.h

/// The memory a launch can touch, kept so that the replay starts from the state the functional
/// run started from (replay_snapshot.cpp). On-chip memories: a timed launch starts them
/// poisoned (0xFF), so restoring refills them. GM: only the bytes the functional run writes are
/// kept, each before its first write (the trace names them before the op runs), in 64-byte
/// granules; the tensors it only reads are never copied.
class LaunchSnapshot {
 public:
  /// Call once the on-chip memories are poisoned, before the functional run: `poisoned[i][m]`
  /// bytes of mem.cores[i][m] (group * 3 + slot) hold 0xFF.
  LaunchSnapshot(const LaunchState& ls, DeviceMemories& mem,
                 std::vector<std::array<size_t, kNumMemScopes>> poisoned);
  ~LaunchSnapshot();
  LaunchSnapshot(const LaunchSnapshot&) = delete;
  LaunchSnapshot& operator=(const LaunchSnapshot&) = delete;
  /// The functional run is about to execute the statement whose events are ct.events[first..]:
  /// keeps the GM bytes they write that no earlier write changed. Any host thread.
  void save_gm_writes(const CoreTrace& ct, size_t first);
  /// Puts the memory back as it was before the functional run; what that run left in the GM
  /// bytes it wrote (the program-order result) is kept for diff().
  void restore();
  /// After the replay: one line per tensor whose elements differ from program order,
  /// "Y[3, 17]: 1.5 in program order, 0.25 in simulated-time order (96 of 4096 elements
  /// differ)". Both runs write the same bytes (the replay checks their paths are the same),
  /// so only those are compared.
  std::vector<std::string> diff(const LaunchState& ls) const;

 private:
  struct Span;
  Span* span_of(uint64_t address, uint64_t len);
  std::vector<Span> gm_;
  std::mutex mu_;
  DeviceMemories& mem_;
  std::vector<std::array<size_t, kNumMemScopes>> core_bytes_;  // poisoned bytes per memory
};

/// Runs the launch again on `mem` (restored to its state before the functional run): every
/// core's interpreter advances only as far as simulated time allows, a tile op reads its
/// operands at its start cycle and its writes land at its end cycle (atomic_add reads and
/// writes at its end, as the GM atomic unit does), and scalar loads and stores act at their
/// cycle. Throws tl::Error if a core takes a different path than in the functional run (its
/// control flow read data that an unsynchronised instruction changed).
/// `progress_percent` > 0: a line on stderr every that many % of the instructions started.
/// `isolated`: the ops it may execute in place (replay_isolation.h).
/// Returns {tile ops executed, of those in place at their start}.
std::pair<int64_t, int64_t> replay_in_time_order(LaunchState& ls, DeviceMemories& mem,
                                                 const Trace& trace, const Profile& profile,
                                                 const IsolatedOps& isolated,
                                                 int progress_percent = 0);

}  // namespace tl::npu
