// The instruction trace of a launch: for every core of every logical block, the instructions
// it issued in program order, each with its pipe, its memory accesses (byte ranges in a named
// memory) and the sizes the cost model needs. The hazard checker (happens-before over flags,
// barriers and cross-core flags) and the timing model both read it.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "tl/ir.h"
#include "tl/target.h"

namespace tl::npu {

// A launch of tens of millions of instructions keeps every event until the checkers run, so
// the strings an event repeats (its op name, its source location, its buffers' names) are
// interned: one process-wide copy of each distinct value, never freed (their number is bounded
// by the programs' text), and an 8-byte pointer per use. Before, an event held a SourceLoc
// (72 bytes and a heap copy of the file name) and each access a std::string; a checked
// FlashAttention launch of 52 million events needed over 20 GB (docs/virtual_npu.md, "Trace
// memory"). Interning is thread-safe (the cores record on several threads).
const std::string* intern_string(std::string_view s);
const SourceLoc* intern_loc(const SourceLoc& l);

/// An interned string: reads as a const std::string&.
class TraceName {
 public:
  TraceName() : p_(intern_string({})) {}
  TraceName(std::string_view s) : p_(intern_string(s)) {}    // NOLINT: implicit, as a string
  TraceName(const std::string& s) : p_(intern_string(s)) {}  // NOLINT
  TraceName(const char* s) : p_(intern_string(s)) {}         // NOLINT
  operator const std::string&() const { return *p_; }        // NOLINT
  const std::string& str() const { return *p_; }
  bool empty() const { return p_->empty(); }
  size_t size() const { return p_->size(); }
  // One pointer per distinct value: equal strings are equal pointers.
  friend bool operator==(const TraceName& a, const TraceName& b) { return a.p_ == b.p_; }
  friend bool operator==(const TraceName& a, std::string_view b) { return *a.p_ == b; }
  friend bool operator==(const TraceName& a, const std::string& b) { return *a.p_ == b; }
  friend bool operator==(const TraceName& a, const char* b) { return *a.p_ == b; }
  friend std::string operator+(const std::string& a, const TraceName& b) { return a + *b.p_; }
  friend std::string operator+(const TraceName& a, const std::string& b) { return *a.p_ + b; }
  friend std::string operator+(const char* a, const TraceName& b) { return a + *b.p_; }
  friend std::string operator+(const TraceName& a, const char* b) { return *a.p_ + b; }

 private:
  const std::string* p_;
};

/// An interned source location: reads as a const SourceLoc&.
class TraceLoc {
 public:
  TraceLoc() : p_(intern_loc({})) {}
  TraceLoc(const SourceLoc& l) : p_(intern_loc(l)) {}  // NOLINT: implicit, as a SourceLoc
  TraceLoc(std::string file, int line) : p_(intern_loc(SourceLoc(std::move(file), line))) {}
  operator const SourceLoc&() const { return *p_; }  // NOLINT
  const SourceLoc* operator->() const { return p_; }
  std::string str() const { return p_->str(); }
  bool known() const { return p_->known(); }

 private:
  const SourceLoc* p_;
};

/// A memory instance: GM (shared by every core), or one on-chip memory of one core.
struct MemoryId {
  MemScope scope = MemScope::GM;
  int32_t block = -1;  // logical block for on-chip memories (-1 for GM)
  int32_t core = 0;    // 0 AIC, 1 AIV0, 2 AIV1
  bool operator==(const MemoryId& o) const {
    return scope == o.scope && block == o.block && core == o.core;
  }
};

/// Bytes touched: `count` runs of `len` bytes starting at `start`, `pitch` bytes apart.
/// GM offsets are host addresses of the tensor storage; on-chip offsets are byte offsets into
/// that core's memory.
struct Access {
  MemoryId mem;
  uint64_t start = 0;
  uint64_t len = 0;
  uint64_t pitch = 0;
  uint64_t count = 1;
  bool write = false;
  /// The destination of an atomic read-modify-write (T.atomic_add): two of them on the same
  /// bytes do not race (the hardware serialises them), an atomic one and a plain one do.
  bool atomic = false;
  /// A digest (128 bits) of the bytes a tile op stored, for GM writes of hazard-checked
  /// functional launches (`digested`): two unordered stores of one byte range with equal
  /// digests are a duplicate store, not a race (docs/virtual_npu.md, "Duplicate stores").
  bool digested = false;
  TraceName buffer;  // for reports
  std::array<uint64_t, 2> digest{};
  uint64_t end() const { return start + (count - 1) * pitch + len; }
};
/// True if the two accesses touch a common byte.
bool overlaps(const Access& a, const Access& b);
/// The digest of the bytes `a` covers now (a GM access: its offsets are host addresses), row by
/// row: equal for equal bytes, and different bytes collide with probability about 2^-128.
std::array<uint64_t, 2> digest_bytes(const Access& a);

enum class EventKind : uint8_t { Op, SetFlag, WaitFlag, Barrier, SetCross, WaitCross, SyncAll };

struct TraceEvent {
  // (Fields ordered by size so that they pack: a launch holds tens of millions of events.)
  TraceName name;  // "copy", "tile.add", "gemm_v0.load", "set_flag", ...
  TraceLoc loc;
  std::vector<Access> accesses;
  // Inputs of the cost model.
  int64_t bytes = 0;            // bytes moved (copies, cube loads) or touched (vector)
  int64_t m = 0, n = 0, k = 0;  // cube
  /// Scalar ALU operations the core executed since its previous event (loop control, branch
  /// conditions, lets, the address arithmetic of this instruction's operands): the scalar
  /// unit spends them before it can issue this event.
  int64_t scalar_ops = 0;
  int id = 0;    // event or cross-flag id
  int mode = 0;  // cross-flag mode
  EventKind kind = EventKind::Op;
  Pipe pipe = Pipe::S;  // issuing pipe (flags: source pipe; barriers: the drained pipe or ALL)
  Pipe dst = Pipe::S;   // wait/set flag destination pipe
  CostClass cost = CostClass::Scalar;  // the instruction's row of the cost table (its op's)
  MemScope src_scope = MemScope::GM, dst_scope = MemScope::GM;  // copies
  DType dtype = DType::Float32;
  bool accumulates = false;              // an Mmad adding into L0C (init false): the PIPE_M rule
  SyncOrigin origin = SyncOrigin::User;  // synchronisations: the author's or insert_syncs'
  bool expanded = false;  // a barrier an op's expansion issues (gemm_v0's), not a statement
  /// Recorded by the same statement as the event before it (an op's expansion after its first
  /// instruction): the time-ordered replay executes such a group as one (replay_isolation.h).
  bool continues = false;
  /// A GM copy whose GM rows do not all start on 512 bytes (from the tensor's base).
  bool gm_unaligned = false;
  /// An instruction whose GM operand has L2 cache mode "disable" (T.annotate_l2_cache): its
  /// bytes do not enter L2 (src/npu/timing_l2.h).
  bool l2_bypass = false;
  /// A vector instruction whose UB operands collide in a bank group (two sources) or a bank
  /// (a source and the destination) in the same beat.
  bool bank_conflict = false;
};

/// A GM tensor as the trace met it, to name the elements of a GM access in reports (its
/// offsets are host addresses, which mean nothing to the kernel's author).
struct GmTensor {
  uint64_t base = 0;  // host address of element 0
  int64_t elem_bytes = 1;
  std::vector<int64_t> shape, strides;  // strides in elements
};
/// "C elements [0, 0] to [63, 63]": the first and last element of bytes [start, end) of the
/// GM tensor `name`.
std::string gm_elements(const std::string& name, const GmTensor& t, uint64_t start, uint64_t end);

struct TraceStream;

struct CoreTrace {
  int64_t block = 0;
  CoreKind kind = CoreKind::Cube;
  int vid = 0;
  int phys = 0;  // physical core group the block ran on
  std::vector<TraceEvent> events;
  std::map<std::string, GmTensor> gm;  // the GM tensors this core accessed, by name
  /// Scalar ALU operations not yet attached to an event: while recording, those since the
  /// last event; after the run, the ones after the core's last event.
  int64_t pending_scalar_ops = 0;
  /// A streamed timed launch (src/npu/trace_stream.h): `events` is the chunk being filled,
  /// handed to the timing model as it fills; `hold` stops the core's interpreter while the
  /// model has not consumed enough of what it already recorded.
  TraceStream* stream = nullptr;
  bool hold = false;
  std::string name() const;  // "block 3 AIV1"
};

struct Trace {
  std::string kernel;
  int64_t num_blocks = 0;
  int physical_blocks = 0;
  std::vector<CoreTrace> cores;  // index: block * 3 + (0 AIC, 1 AIV0, 2 AIV1)
};

}  // namespace tl::npu

template <>
struct fmt::formatter<tl::npu::TraceName> : fmt::formatter<std::string_view> {
  template <typename Ctx>
  auto format(const tl::npu::TraceName& n, Ctx& ctx) const {
    return fmt::formatter<std::string_view>::format(std::string_view(n.str()), ctx);
  }
};
