// Timed mode of the virtual NPU: a trace-driven discrete-event timing model.
//
// simulate_timing() replays an instruction trace (tl/npu/trace.h) on a model of the chip: per
// core a scalar unit that issues the core's events in program order into per-pipe queues, and
// the pipes S, V, M, MTE1, MTE2, MTE3, FIX that execute their queues in order (V/MTE2/MTE3
// overlap consecutive instructions unless a pipe_barrier separates them). Flags, barriers,
// cross-core flags and sync_all order the pipes as docs/hardware.md section 3 describes; logical
// blocks run on their physical core group in waves. Instruction costs come from the target's
// CostTable only (docs/hardware.md section 4); every GM transfer shares the chip's HBM / L2
// bandwidth with the transfers of every other core that run at the same time (fluid fair sharing).
// The result is deterministic: the same trace gives the same cycles. docs/calibration.md compares
// the model with published measurements.
#pragma once

#include <array>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "tl/ir.h"
#include "tl/target.h"

namespace tl::npu {

struct Trace;

/// One timed instruction (tile ops, flags and barriers are not drawn).
struct TimedInstr {
  int core = 0;   // index into Profile::cores (= Trace::cores)
  int event = 0;  // index into that core's events
  Pipe pipe = Pipe::S;
  double start = 0, end = 0;  // cycles
  std::string name;           // "copy global->UB", "tile.add", "gemm_v0.mmad", ...
  std::string loc;            // "gemm.cpp:23"
  int64_t bytes = 0, m = 0, n = 0, k = 0;
};

struct CoreProfile {
  int64_t block = 0;
  int slot = 0;  // 0 AIC, 1 AIV0, 2 AIV1
  int phys = 0;  // physical core group
  std::string name;
  double start = 0, end = 0;             // cycles; start = when the block was placed
  std::array<double, kNumPipes> busy{};  // busy cycles per pipe (union of instruction spans)
  int64_t instructions = 0;              // events in the trace
  /// Per trace event: the cycle the scalar unit reached it (issued it into its pipe queue, or
  /// began executing it). Non-decreasing in program order. The time-ordered replay
  /// (LaunchOptions::profile) lets each core's interpreter past event i only at issue[i].
  std::vector<double> issue;
};

struct Profile {
  std::string kernel;
  std::string target;
  double clock_ghz = 1;
  double total_cycles = 0;
  double total_us = 0;
  /// Launch and completion overhead outside the kernel (CostTable::launch_overhead_us):
  /// a profiler's Task Duration is task_us().
  double launch_overhead_us = 0;
  double task_us() const { return total_us + launch_overhead_us; }
  int64_t num_blocks = 0;
  int physical_blocks = 0;
  int64_t events = 0;              // trace events simulated
  double gm_bytes = 0;             // bytes moved to or from GM
  double gm_hbm_bytes = 0;         // of those, bytes the L2 model sent to HBM
  std::vector<CoreProfile> cores;  // index like Trace::cores
  std::vector<TimedInstr> instrs;  // in completion-independent order: per core, program order
  /// Timed launches with data (LaunchOptions::profile): the tensor arguments whose contents
  /// differ between program order and simulated-time order, one line each with the first
  /// differing element. Non-empty means an unsynchronised instruction pair changed the result.
  std::vector<std::string> time_order_effects;
  /// Timed launches with data: the tile ops the time-ordered replay executed, and how many of
  /// them it could execute once, in place, at their start (no other instruction touches their
  /// bytes while they run: src/npu/replay_isolation.h).
  int64_t replay_ops = 0, replay_in_place = 0;
  /// Timed launches with data: simulated time orders every two ops that conflict on a byte as
  /// the functional run executed them (and the other conditions of docs/virtual_npu.md, "Data
  /// in simulated-time order" hold), so the replay would compute what the functional run did:
  /// the launch keeps that run's memory and skips the replay. Its ops count in replay_ops and
  /// replay_in_place (each executed once, in place).
  bool replay_skipped = false;
  /// Busy fraction of `p` averaged over the cores of `kind` that issued anything, relative to
  /// the kernel's total time (what msOpProf's PipeUtilization reports).
  double busy_ratio(Pipe p, CoreKind kind) const;
  double us(double cycles) const { return cycles / (clock_ghz * 1e3); }
};

struct TimingOptions {
  /// Progress lines on stderr every `progress_percent` % of the events (0 = quiet).
  int progress_percent = 0;
  /// Keep every instruction's times (Profile::instrs, CoreProfile::issue: the Chrome trace,
  /// the HTML timeline and the time-ordered replay read them). Off, the profile has the totals
  /// and busy times only, and a streamed launch's memory does not grow with its length.
  bool instructions = true;
};

/// Simulates `trace` on `target`. Throws tl::Error if the trace deadlocks (a wait no set
/// satisfies).
Profile simulate_timing(const Trace& trace, const Target& target, const TimingOptions& opt = {});

/// Chrome trace-event JSON (open in Perfetto or chrome://tracing): pid = logical block, tid =
/// core x pipe, one "X" event per instruction with its DSL source line and sizes.
void write_chrome_trace(const Profile& p, std::ostream& os);

/// A self-contained HTML page with an inline SVG timeline: one row per (core, pipe) of the
/// first `max_blocks` blocks, a box per instruction (tooltip: name and source line), idle gaps
/// visible, a time axis in microseconds.
void write_html_timeline(const Profile& p, std::ostream& os, int max_blocks = 4);

/// The profile table: total cycles / us, and per physical core group and per core kind the
/// busy % of every pipe (the last row averages over all groups).
void print_profile(const Profile& p, std::ostream& os, int max_groups = 8);

}  // namespace tl::npu
