// Direct execution on the virtual NPU: tile ops and synchronisations issued one at a time by a
// program that is not Tile IR, on the cores of one launch, through the same op semantics
// (src/npu/exec_*.cpp), the same bounds and alignment checks, and into the same instruction
// trace as an interpreted kernel, so the hazard checker (tl/npu/hazard.h) reads it as it reads
// any launch. Its client is the AscendC CPU model (include/ascendc_cpu/, docs/ascendc.md "CPU
// model"): each AscendC call there becomes one tile op (or sync) built over buffers declared
// here at the byte offsets the AscendC code names.
//
// The caller drives the cores (which core runs when is its business, one at a time): start a
// block on a core of a core group, execute statements on it, finish it. A cross-core wait whose
// flag is not set yet returns false and must be issued again after another core has run.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tl/ir.h"
#include "tl/npu/cache_aligned.h"
#include "tl/runtime.h"
#include "tl/target.h"

namespace tl::npu {

struct Trace;

class DirectLaunch {
 public:
  struct Options {
    std::string kernel = "kernel";   // for messages and the trace
    const Target* target = nullptr;  // default_target() when null
    int64_t num_blocks = 1;
    Trace* trace = nullptr;  // if set, receives every core's instructions
    bool poison = true;      // on-chip memories start as 0xFF bytes (NaN in every float dtype)
  };
  explicit DirectLaunch(Options opt);
  ~DirectLaunch();
  DirectLaunch(const DirectLaunch&) = delete;
  DirectLaunch& operator=(const DirectLaunch&) = delete;

  const Target& target() const;
  int64_t num_blocks() const;

  /// A GM buffer for operands: the elements of `view` (any shape and strides; its address is
  /// what the trace records). `name` names it in messages and hazard reports.
  Buffer gm_buffer(const std::string& name, const Tensor& view);
  /// Registers the whole GM tensor `name` so hazard reports name the elements of accesses to
  /// it by their indices in `whole` (views of it registered later keep this name).
  void name_gm_tensor(const std::string& name, const Tensor& whole);
  /// An on-chip buffer of every core: `shape` elements of `dtype` with element `strides` (row-
  /// major when empty) from byte `offset` of memory `scope`. Strides may be 0 (an operand that
  /// reads the same elements again, as a repeat stride of 0 does). Cached: the same arguments
  /// give the same buffer.
  Buffer onchip_buffer(const std::string& name, MemScope scope, int64_t offset, DType dtype,
                       const std::vector<int64_t>& shape, const std::vector<int64_t>& strides = {});

  /// Starts logical block `block` on core (kind, vid) (vid 0 on the AIC, 0/1 on the AIVs) of
  /// core group `group` (a physical block with its own memories; group N is created when
  /// first used, and must then be the next one). Blocks run one after the other on group 0
  /// unless the client keeps several resident at once (SyncAll: each in a group of its own).
  void start(int64_t block, CoreKind kind, int vid, int group = 0);
  /// Executes `s`, a TileOp or a Sync statement, on that core: records its trace events and
  /// applies its semantics. False only for a cross-core wait that cannot complete yet (nothing
  /// recorded: issue it again later). Errors are tl::Errors as in an interpreted launch.
  /// SyncAll passes at once (the client has held the core until every block arrived) and is
  /// recorded, so the hazard checker orders across blocks by it.
  bool exec(CoreKind kind, int vid, const Stmt& s, int group = 0);
  /// A scalar load or store of `bytes` bytes at element `index` of buffer `b` (an S-pipe event
  /// with its access, as the interpreter records Let/Store); returns the element's address.
  uint8_t* scalar_access(CoreKind kind, int vid, const Buffer& b, int64_t index, bool write,
                         const SourceLoc& loc = {}, int group = 0);
  /// Ends the block on that core: a flag left set is an error (as in an interpreted launch
  /// without the hazard checker, which reports it itself).
  void finish(CoreKind kind, int vid, bool check_flags = true, int group = 0);
  /// The core's memory `scope` (its bytes; empty if the core has none).
  CoreMemory& memory(CoreKind kind, int vid, MemScope scope, int group = 0);
  /// Core groups created so far.
  int core_groups() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tl::npu
