// The virtual Ascend NPU's public interface: compile a verified expert-mode PrimFunc into an
// executable kernel and launch it on a tl::Device with tensor and scalar arguments. The NPU is
// a compiler backend (tl/backend.h, npu_backend()); tl::compile(f, target, opt) here is the
// convenience that compiles with it and returns a launchable CompiledKernel.
//
// Functional mode (this file) runs every core of every block: the AIC and the two AIVs of a
// block run concurrently as cooperative interpreters with private memories of the target's
// exact capacities; GM is shared. Cross-core flags and sync_all really synchronise them.
// Blocks are placed on physical cores in waves and the physical cores are spread over host
// threads; results are bit-identical for any thread count (see docs/virtual_npu.md).
#pragma once

#include <atomic>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "tl/backend.h"
#include "tl/error.h"
#include "tl/ir.h"
#include "tl/runtime.h"
#include "tl/target.h"

namespace tl {

/// A kernel argument: a tensor, or a scalar for a T::Scalar parameter. Integers are kept
/// exactly (an int64 beyond 2^53 does not pass through a double). A scalar must fit its
/// parameter's dtype: an integer parameter takes an integral value in its dtype's range (no
/// NaN, inf or fraction), a float parameter any value that does not overflow its dtype to inf;
/// anything else is a launch error naming the parameter, its dtype's range and the value.
struct Arg {
  std::variant<Tensor, double, int64_t> value;
  Arg(Tensor t) : value(std::move(t)) {}  // NOLINT
  Arg(double v) : value(v) {}             // NOLINT
  Arg(int v) : value(int64_t{v}) {}       // NOLINT
  Arg(int64_t v) : value(v) {}            // NOLINT
};

/// The instruction budget of a launch unless LaunchOptions::max_steps or TL_MAX_STEPS says
/// otherwise: 2^30 interpreter steps per core and block (tens of seconds of host time; every
/// example kernel stays below 2^25), so a loop that never ends fails with an error naming it
/// instead of running for hours.
inline constexpr int64_t kDefaultMaxSteps = int64_t{1} << 30;
/// LaunchOptions::max_steps for no budget at all.
inline constexpr int64_t kNoStepBudget = INT64_MAX;

/// What a launch throws when LaunchOptions::cancel was set: a tl::Error, so callers that
/// report errors report it; callers that cancelled on purpose (the Python binding on Ctrl-C)
/// catch it by type.
class LaunchCancelled : public Error {
 public:
  using Error::Error;
};

/// The most logical blocks one launch may have (T::Kernel's block count), AscendC's blockDim
/// limit; more is a launch error (docs/virtual_npu.md).
inline constexpr int64_t kMaxLaunchBlocks = 65535;

namespace npu {
struct Trace;
struct Profile;
struct StaleFinding;
}  // namespace npu

struct LaunchOptions {
  int threads = 0;              // host threads; 0 = all hardware threads
  std::ostream* out = nullptr;  // printf / dump_tensor output (default std::cout)
  npu::Trace* trace = nullptr;  // if set, receives every core's instruction trace
  /// Timed-only runs (tlc run --mode timed): record the trace but skip the tile ops' data work
  /// (control flow and scalar values are still computed; tensor contents are not).
  bool timing_only = false;
  /// Record a trace (if `trace` is unset) and run the hazard and flag checkers on it
  /// (tl/npu/hazard.h); a tl::Error lists every unordered access pair and flag issue.
  bool check_hazards = false;
  /// Start from poisoned on-chip memories (every byte 0xFF: NaN in each float dtype) instead of
  /// what the previous launch left. Always on for timed and hazard-checked launches; set it on
  /// a fast launch to compare it with them, or to expose reads of memory the kernel never wrote.
  bool poison = false;
  /// Timed mode: if set, the launch is traced, the timing model (tl/npu/timing.h) gives every
  /// instruction its simulated cycles, and its profile lands here. Unless `timing_only`, the
  /// tensors then hold the result of a second execution in simulated-time order: each
  /// instruction reads its operands at its start cycle and its writes land at its end cycle,
  /// so a missing synchronisation gives wrong data, as on hardware (Profile::time_order_effects
  /// lists the outputs that differ from program order). Docs: docs/virtual_npu.md.
  npu::Profile* profile = nullptr;
  /// Timed mode: keep every instruction's times in the profile (Profile::instrs, for
  /// write_chrome_trace and write_html_timeline). A timing-only launch without them holds a
  /// bounded window of its trace, whatever its length (docs/virtual_npu.md, "Timed mode").
  bool profile_instructions = true;
  /// Progress lines on stderr for long launches (over two million interpreter steps, or two
  /// million trace events in timed mode): every this many % of the blocks finished (timed mode:
  /// of the simulated instructions), and at least every 2^27 steps. 0 = quiet.
  int progress_percent = 0;
  /// Instruction budget: each core may take at most this many interpreter steps (statements
  /// and loop iterations) per block; beyond, the launch fails naming the innermost loop being
  /// executed and how to raise the budget. 0 = the TL_MAX_STEPS environment variable if set
  /// (its `0` or `none`: no budget), else kDefaultMaxSteps (2^30); kNoStepBudget = none;
  /// negative: a launch error.
  int64_t max_steps = 0;
  /// Cancellation: when set, the launch polls the flag (every 2^16 interpreter steps of each
  /// core, at each block start and between the phases of a timed launch) and, once it is
  /// true, stops and throws LaunchCancelled; the tensors then hold a partial result. Set it
  /// from another thread (a Ctrl-C handler, a timeout). One step is one statement, so a
  /// single huge tile operation finishes before the flag is seen.
  const std::atomic<bool>* cancel = nullptr;
  /// The stale-data checker (tl/npu/stale.h): shadow validity of every byte the launch touches,
  /// and a tl::Error after the launch naming each invalid value stored to a GM parameter or
  /// deciding a branch, loop bound, address or flag. Unset: on when the environment variable
  /// TL_CHECK_STALE is 1 (0: off), else when check_hazards is. Skipped by timing_only launches
  /// (they compute no data). It checks the program-order (functional) run.
  std::optional<bool> check_stale{};
  /// If set, receives the stale-data checker's findings instead of a tl::Error.
  std::vector<npu::StaleFinding>* stale_findings = nullptr;
  /// If set, receives the hazard checker's remarks (duplicate stores of identical bytes,
  /// docs/virtual_npu.md "Duplicate stores"), one `file:line: remark: ...` string each, instead
  /// of stderr.
  std::vector<std::string>* hazard_remarks = nullptr;
};

namespace npu {
class Program;  // the executable form (src/npu/program.h), the npu backend's Artifact
/// True if the virtual NPU has semantics for `op`. Every registered op must: the table is
/// checked when it is built, and a gap is a registration error (tl::InternalError).
bool implements(const OpDef& op);
}  // namespace npu

/// The virtual NPU as a backend (name "npu"): its artifacts are npu::Programs.
const Backend& npu_backend();

/// A compiled, launchable kernel. Cheap to copy (shares the program).
class CompiledKernel {
 public:
  CompiledKernel() = default;
  explicit CompiledKernel(std::shared_ptr<const npu::Program> p) : program_(std::move(p)) {}
  const PrimFunc& func() const;
  const Target& target() const;
  /// Runs the kernel. Checks each argument against the signature (dtype, rank, shape, strides,
  /// device) with clear errors, binds dynamic symbols from tensor shapes, then executes.
  void launch(Device& dev, const std::vector<Arg>& args, const LaunchOptions& opt = {}) const;
  const npu::Program& program() const { return *program_; }

 private:
  std::shared_ptr<const npu::Program> program_;
};

/// Compiles `f` for `target` with npu_backend(): verifies it (a tl::Error listing every
/// violation otherwise), lowers it (planning on-chip addresses) and prepares it for execution,
/// as `opt` says (tl/backend.h).
CompiledKernel compile(const PrimFunc& f, const Target& target = default_target(),
                       const CompileOptions& opt = {});

}  // namespace tl
