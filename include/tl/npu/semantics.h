// The virtual NPU's registration entry point for the primitives of src/prims (one file per
// primitive, docs/architecture.md "The prims layer"), and the small view of a running core that
// their semantics need. The ops of src/op keep their semantics in src/npu/exec_*.cpp, written
// against the interpreter's private types (src/npu/program.h); a primitive lives in a module
// above npu and sees only this header: its tile operands resolved to addresses (bounds and
// start alignment checked as for every op), its scalar operands evaluated, and the core's
// error. The same view, pointed at the shadow memory, runs as its stale-data rule.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tl/ir.h"

namespace tl::npu {

class Core;

/// A tile operand of the op being executed: a region of a buffer in a core's memory (or of a GM
/// tensor), elements in row-major region order. In a stale-data rule (PrimCall::stale_rule())
/// the same region of the shadow memory: one shadow byte per data byte, 0 when valid.
struct PrimTile {
  DType dtype = DType::Float32;
  MemScope scope = MemScope::UB;
  std::string buffer;            // the buffer's name, for messages
  std::vector<int64_t> extent;   // the region's extents
  uint8_t* base = nullptr;       // the buffer's first byte
  std::vector<int64_t> start;    // the region's start in the buffer
  std::vector<int64_t> shape;    // the buffer's shape
  std::vector<int64_t> strides;  // the buffer's element strides
  int64_t numel() const;
  /// The address of region element `flat` (0 <= flat < numel()).
  uint8_t* at(int64_t flat) const;
  /// Whether the region's elements are one run of the buffer's storage (every dimension after
  /// the first one of extent > 1 is whole): an instruction that addresses its operand by byte
  /// offsets from its start, as AscendC's do, sees the region's elements only then.
  bool contiguous() const;
};

/// One execution of a primitive on a core: what its semantics read and write through.
class PrimCall {
 public:
  PrimCall(const TileOpNode& n, Core& c, bool stale_rule) : n_(n), c_(c), stale_(stale_rule) {}
  const TileOpNode& node() const { return n_; }
  /// Tile operand `name`, resolved: an out-of-bounds region or a misaligned on-chip start is a
  /// tl::Error naming the op and the operand. In a stale-data rule, its shadow.
  PrimTile tile(std::string_view name);
  /// Whether optional operand `name` was given.
  bool has(std::string_view name) const;
  /// Scalar operand `name`, evaluated as an integer.
  int64_t scalar(std::string_view name);
  /// A tl::Error at the op's source line, naming the core and the kernel.
  [[noreturn]] void fail(const std::string& msg) const;
  /// True while the semantics run as the op's stale-data rule (on the shadow memory).
  bool stale_rule() const { return stale_; }

 private:
  const TileOpNode& n_;
  Core& c_;
  bool stale_;
};

using PrimFn = void (*)(PrimCall& call);

/// The virtual-NPU part of a primitive.
struct PrimSemantics {
  /// Executes the op: reads its sources, writes its destinations (required).
  PrimFn exec = nullptr;
  /// How the stale-data checker (docs/virtual_npu.md) follows validity through the op; every
  /// primitive states it (Unset is rejected at registration).
  ///  - MovesBytes: every byte the op writes is a copy of a byte it reads (or is left alone), and
  ///    where each goes does not depend on element values: `exec` runs once more on the shadow
  ///    memory, which moves validity exactly as the data; an invalid scalar operand makes every
  ///    written operand invalid.
  ///  - Custom: `stale` writes the shadow of everything the op writes (before `exec` runs).
  enum class Stale : uint8_t { Unset, MovesBytes, Custom };
  Stale stale_kind = Stale::Unset;
  PrimFn stale = nullptr;
};

/// Registers the semantics of primitive `op_name`, from its file in src/prims during static
/// initialisation only (tl::register_prim says why). Checked when the first kernel is built:
/// a primitive without semantics, or semantics for an unknown op, is an internal error.
void register_prim_semantics(std::string op_name, PrimSemantics s);

}  // namespace tl::npu
