// Internal: the block scheduler of a functional launch (scheduler.cpp). Physical core groups
// are spread over host threads; each thread runs its groups' cores as cooperative
// interpreters and finds deadlocks, alone when only its own cores are involved, together
// with the other threads when a sync_all is.
#pragma once

#include <memory>
#include <vector>

#include "program.h"

namespace tl {
struct LaunchOptions;
}

namespace tl::npu {

class HazardStream;  // tl/npu/hazard.h

/// The cores of one physical group and the logical blocks it runs, wave by wave.
struct Group {
  std::vector<std::unique_ptr<Core>> cores;  // AIC, AIV0, AIV1
  int64_t next_block = 0;
  bool running = false;  // a block is started and not finished
};

/// Runs every block of the launch on `threads` host threads (groups[g] on thread g % threads).
/// Rethrows the first error of the lowest thread that failed.
/// `hazards`, if set, is told of every block whose cores finished (HazardStream::block_done:
/// the hazard checker checks it while the launch runs and frees its events).
void run_groups(LaunchState& ls, std::vector<Group>& groups, int threads,
                HazardStream* hazards = nullptr);

/// The instruction budget (LaunchOptions::max_steps, else TL_MAX_STEPS) and progress lines
/// (LaunchOptions::progress_percent) of a launch.
void configure_budget(LaunchState& ls, const LaunchOptions& opt);

}  // namespace tl::npu
