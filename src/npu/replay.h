// Internal: timed mode with data. After the functional run has recorded the trace and the
// timing model has given every instruction its simulated cycles, the launch is executed again
// with each instruction's memory effects applied in simulated-time order (replay.cpp), so that
// a missing synchronisation gives the wrong data it would give on hardware.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "program.h"
#include "tl/npu/timing.h"
#include "tl/npu/trace.h"

namespace tl::npu {

/// The memory a launch can touch, saved before the functional run so the replay starts from
/// the same state: every GM tensor argument and the on-chip memories of the physical groups.
class LaunchSnapshot {
 public:
  LaunchSnapshot(const LaunchState& ls, DeviceMemories& mem, int physical_blocks);
  void restore();

 private:
  struct Span {
    uint8_t* data;
    std::vector<uint8_t> saved;
  };
  std::vector<Span> gm_;
  DeviceMemories& mem_;
  std::vector<std::array<std::vector<uint8_t>, kNumMemScopes>> cores_;
};

/// The tensor arguments' elements, to compare the program-order result with the time-ordered one.
struct TensorContents {
  std::vector<std::vector<uint8_t>> bytes;  // per parameter (empty for scalars)
};
TensorContents capture_tensors(const LaunchState& ls);
/// One line per tensor whose elements differ: "Y[3, 17]: 1.5 in program order, 0.25 in
/// simulated-time order (96 of 4096 elements differ)".
std::vector<std::string> diff_tensors(const LaunchState& ls, const TensorContents& program_order);

/// Runs the launch again on `mem` (restored to its state before the functional run): every
/// core's interpreter advances only as far as simulated time allows, a tile op reads its
/// operands at its start cycle and its writes land at its end cycle (atomic_add reads and
/// writes at its end, as the GM atomic unit does), and scalar loads and stores act at their
/// cycle. Throws tl::Error if a core takes a different path than in the functional run (its
/// control flow read data that an unsynchronised instruction changed).
/// `progress_percent` > 0: a line on stderr every that many % of the instructions started.
void replay_in_time_order(LaunchState& ls, DeviceMemories& mem, const Trace& trace,
                          const Profile& profile, int progress_percent = 0);

}  // namespace tl::npu
