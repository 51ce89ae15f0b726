// The hazard checker and the flag/deadlock checker over an instruction trace (tl/npu/trace.h).
//
// check_hazards builds happens-before (HB) from the trace with vector clocks, one component per
// (core, pipe) timeline of a block (cross-block order only comes from sync_all), and reports
// every pair of conflicting accesses (overlapping bytes of one memory, GM included, at least
// one a write) that HB does not order. The HB rules are documented in docs/virtual_npu.md
// ("Hazard checker") and docs/hardware.md section 3:
//   - MTE1, M, FIX and S are in order: each instruction HB the next on its pipe. V, MTE2 and
//     MTE3 may overlap consecutive instructions: only barriers and flags order them.
//   - an S (scalar) event HB every later instruction of its core.
//   - set_flag(src, dst, id) fires when every earlier src instruction is done; the matching
//     wait_flag (k-th wait <-> k-th set of (src, dst, id) on that core) orders every later dst
//     instruction after them.
//   - pipe_barrier(P): earlier P before later P. barrier_all: everything before everything.
//   - set_cross_flag(pipe, id, mode) fires when the core's earlier `pipe` work is done; a
//     wait_cross_flag(id) orders everything after it on the waiting core (all pipes) after the
//     matching set(s) (mode 2 from the AIC: each AIV's k-th wait <-> the k-th set; mode 2 from
//     the AIVs: the AIC's k-th wait <-> the k-th set of each AIV; mode 1: AIV <-> other AIV).
//   - sync_all: everything before it on the participating cores before everything after it.
// HB is transitive (knowledge travels through chains of flags and cross-core flags).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tl/npu/trace.h"
#include "tl/target.h"

namespace tl::npu {

/// One side of a hazard: an instruction and the access of it that conflicts.
struct HazardSide {
  std::string op;  // "copy", "tile.exp", "gemm_v0.mmad", "store", ...
  Pipe pipe = Pipe::S;
  std::string core;  // "block 0 AIV1"
  std::string buffer;
  uint64_t start = 0, end = 0;  // byte range [start, end) (GM: host addresses)
  std::string where;  // GM: "C elements [0, 0] to [63, 63]" (reports never show host addresses)
  bool write = false;
  SourceLoc loc;
  int core_index = 0;  // index into Trace::cores
  size_t event = 0;    // index into CoreTrace::events
};

/// Two conflicting accesses not ordered by happens-before.
struct Hazard {
  std::string kind;    // "RAW", "WAR" or "WAW" (first -> second in trace order of the checker)
  std::string memory;  // "GM", "UB of block 0 AIV1", ...
  HazardSide first, second;
  int count = 1;    // occurrences with the same pair of source lines and buffers
  std::string why;  // a rule beyond "unordered" (the PIPE_M rule of small Mmads), or empty
  /// A duplicate store (a remark, not a hazard): two cores' unordered stores of the same GM byte
  /// range with identical bytes (equal digests, Access::digest), and no read of those bytes
  /// that the first store's core ordered before it left unordered with the second. On the chip
  /// the bytes are the same whichever lands last (docs/virtual_npu.md, "Duplicate stores").
  bool duplicate = false;
  std::string str() const;
};

/// A flag protocol error or a deadlock found in a trace.
struct FlagIssue {
  /// "deadlock", "set twice", "too many pending cross-core sets", "unsupported", "flag left set"
  /// (a set_flag no wait_flag consumed when its core finished), "cross flag left set" (a
  /// cross-core set the waiting core never consumed before it finished).
  std::string kind;
  std::string core;
  Pipe pipe = Pipe::S;
  std::string flag;  // "wait_flag(MTE2, V, 0)", "wait_cross_flag(3)", ...
  SourceLoc loc;
  std::vector<std::string> last_events;  // the core's events just before it
  std::string str() const;
};

/// Every unordered conflicting pair, deduplicated by (source lines, buffers). Duplicate stores
/// (Hazard::duplicate) are not among them: see duplicate_stores.
std::vector<Hazard> check_hazards(const Trace& trace, const Target& target = default_target());

/// The duplicate stores of a trace (Hazard::duplicate), deduplicated as hazards are: remarks.
std::vector<Hazard> duplicate_stores(const Trace& trace, const Target& target = default_target());

/// Flag bookkeeping errors and waits that can never be satisfied.
std::vector<FlagIssue> check_flags(const Trace& trace, int max_pending_cross_sets = 15);

/// Runs both checkers and throws a tl::Error listing what they found
/// (LaunchOptions::check_hazards). Duplicate stores are written to stderr as remarks.
void throw_on_hazards(const Trace& trace, const Target& target);
/// The message throw_on_hazards would throw, or empty when the trace is clean. `remarks`, if
/// given, receives one `file:line: remark: ...` line per duplicate store.
std::string hazard_report(const Trace& trace, const Target& target,
                          std::vector<std::string>* remarks = nullptr);

/// The checkers run while a launch runs (LaunchOptions::check_hazards without a caller trace,
/// timing or sync_all): each block is checked once its cores have finished, in block order,
/// and then retired: its events freed, its on-chip shadows dropped, the GM accesses a later
/// block may race with kept as copies. The findings, their order and counts are those of
/// check_hazards / check_flags on the whole trace (which replays block by block too), while the
/// memory no longer grows with the launch's instructions, only with the GM accesses blocks leave
/// for later ones (docs/virtual_npu.md, "Checking while the launch runs").
class HazardStream {
 public:
  /// `trace` is the launch's, sized (one CoreTrace per core of every block) and being recorded.
  HazardStream(Trace& trace, const Target& target);
  ~HazardStream();
  /// True unless the kernel uses sync_all (its blocks wait for each other) or TL_HAZARD_RETIRE=0
  /// asks for the check after the launch (anything but 0 or 1 is an error).
  static bool applies(bool uses_sync_all);
  /// Block `block`'s cores have finished (thread-safe; any order). Checks every finished block
  /// next in order, and frees their events.
  void block_done(int64_t block);
  /// After every block was done: what hazard_report would say of the whole trace.
  std::string report(std::vector<std::string>* remarks = nullptr);
  const std::vector<Hazard>& hazards();
  const std::vector<Hazard>& duplicates();
  const std::vector<FlagIssue>& flag_issues();

 private:
  void finish();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tl::npu
