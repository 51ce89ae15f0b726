// Internal: the program-order test plan_memory needs before two buffers may share bytes. On the
// chip each core's pipes run concurrently, so a buffer may take over another's bytes only when
// the old owner's last accesses are done before the new owner's first accesses start: on the
// same in-order pipe, or through a flag, a barrier or a barrier_all that the program already
// has on every path between them (and, for two buffers that live in one loop iteration, on the
// path around the loop's back edge too). AccessOrder answers that from the IR as written,
// using the happens-before rules of the hazard checker (tl/npu/hazard.h, docs/hardware.md section
// 3) and each tile op's instruction expansion (OpDef::expansion).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "tl/ir.h"
#include "tl/target.h"

namespace tl {

class AccessOrder {
 public:
  /// Indexes every access of every on-chip buffer of `body` (views count as their base). Keeps
  /// pointers into `body`, which must outlive the AccessOrder.
  /// With `loop_trips` a round trip may also run inside loops (once per iteration of the same
  /// loops on both cores: reuse_order.cpp, find_round_trips); without, only outside every loop
  /// and if (what plan_memory asks first, so that a kernel that fit keeps its plan).
  AccessOrder(const Stmt& body, const Target& target, bool loop_trips = true);
  ~AccessOrder();
  AccessOrder(const AccessOrder&) = delete;
  AccessOrder& operator=(const AccessOrder&) = delete;

  /// Why `later` (whose accesses all follow `earlier`'s in program order) may not take
  /// `earlier`'s bytes: the first pair of conflicting accesses (at least one a write) that
  /// nothing in the program orders, named with ops, pipes and source lines. nullopt when
  /// sharing is safe. When a loop holds every access of both buffers (each a fresh value per
  /// iteration), `later`'s accesses must also be ordered before `earlier`'s accesses of the
  /// next iteration, around the loop's back edge.
  std::optional<std::string> reuse_hazard(const BufferNode* earlier, const BufferNode* later) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// plan_memory (tl/pass.h) with `channel_syncs_follow` (insert_channel_syncs runs later, and
/// no insert_syncs): where a memory overflows otherwise, the ordering is proved on the kernel
/// with the cross-core flags insert_channel_syncs will add: a workspace round trip (this core's
/// store, the other core's load and then its store, this core's load) orders everything after
/// it (issue 29: bench_sfa's two L0B operands, which TileLang-Ascend's planner shares without
/// asking). check_shared_bytes proves those reuses again once the flags are there.
PrimFunc plan_memory(const PrimFunc& f, const Target& target, bool syncs_follow, bool bank_groups,
                     bool channel_syncs_follow);

/// Every two on-chip buffers of `f` (planned, with all its syncs) that share bytes with disjoint
/// live ranges are ordered by its syncs (AccessOrder); otherwise an internal error naming the
/// pair and the missing order. insert_channel_syncs' row of the pass registry calls it on a
/// kernel without insert_syncs, whose reuses plan_memory may have proved with the flags that
/// pass was going to add.
void check_shared_bytes(const PrimFunc& f, const Target& target);

}  // namespace tl
