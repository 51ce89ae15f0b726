// Kernel reports (`tlc report KERNEL`): what the compiler made of a kernel, in the terms a
// kernel author weighs — synchronisations (in the IR and executed per block, the author's and
// the compiler's), event ids, cross-core channels and their GM workspace, and on-chip memory
// per scope — so a developer-mode kernel can be compared with its expert twin line by line
// (issue "Developer mode II").
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "tl/ir.h"
#include "tl/npu/trace.h"
#include "tl/target.h"

namespace tl::npu {

/// Synchronisations of one kind, by who wrote them.
struct SyncTally {
  int64_t user = 0;       // written by the kernel's author
  int64_t automatic = 0;  // inserted by the compiler (insert_syncs, insert_channel_syncs)
  int64_t expanded = 0;   // issued by an op's expansion (gemm_v0's barrier_all: 3 per call)
  int64_t total() const { return user + automatic + expanded; }
};

/// The tallies of every kind added up.
SyncTally sum(const std::map<std::string, SyncTally>& by_kind);

struct KernelReport {
  std::string kernel, target;
  /// Synchronisation statements of the lowered IR, by kind ("set_flag", "pipe_barrier", ...).
  std::map<std::string, SyncTally> static_syncs;
  /// Executed synchronisations per logical block (its AIC and both AIVs), by kind: for each
  /// kind, the most any block executed. Empty without a trace.
  std::map<std::string, SyncTally> dynamic_syncs;
  int64_t blocks = 0;           // logical blocks of the traced launch
  int64_t max_block_syncs = 0;  // the most synchronisations one block executed (all kinds)
  /// Distinct set_flag/wait_flag event ids per (src, dst) pipe pair ("MTE2->V"), and distinct
  /// cross-core flag ids, as executed (from the trace; from constant ids without one).
  std::map<std::string, int> event_ids;
  int cross_flag_ids = 0;
  struct Buffer {
    std::string name;
    MemScope scope = MemScope::UB;
    std::string bytes;  // a number, or the expression of a dynamic size
    int64_t size = -1;  // bytes when static; -1 for a dynamic size
    int64_t address = -1;
    std::string origin;  // what made it, for compiler-made buffers; empty for the author's
  };
  /// On-chip buffers and GM workspaces (cross-core channels) of the lowered kernel.
  std::vector<Buffer> buffers;
  /// Planned bytes per on-chip scope (the end of the highest buffer) and the capacity.
  std::map<MemScope, std::pair<int64_t, int64_t>> memory;
  /// Where the vector work runs (the AIV split decision): "" when the kernel has none.
  std::string vector_work;
};

/// The report of `source` lowered to `lowered` for `target`; `trace` (a launch of the compiled
/// kernel) adds the executed counts.
KernelReport make_report(const PrimFunc& source, const PrimFunc& lowered, const Target& target,
                         const Trace* trace = nullptr);
void print_report(const KernelReport& r, std::ostream& os);

}  // namespace tl::npu
