// Internal: the executable form of a kernel and the per-core interpreter state the op
// semantics (exec_*.cpp) work against.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>
#include <vector>

#include "print_sink.h"
#include "ptr_index.h"
#include "tl/arith.h"
#include "tl/backend.h"
#include "tl/ir.h"
#include "tl/npu/cache_aligned.h"
#include "tl/npu/npu.h"
#include "tl/op.h"
#include "tl/target.h"

namespace tl::npu {

/// A scalar value during interpretation: integers (and bools) in `i`, floats in `f`.
using Scalar = arith::Value;

/// Where a buffer lives once the program is planned.
struct BufferInfo {
  const BufferNode* node = nullptr;
  MemScope scope = MemScope::GM;
  int64_t offset = 0;  // bytes into the core's memory of that scope (on-chip buffers)
  int64_t bytes = 0;   // storage bytes (fractal layouts include padding)
  int param = -1;      // GM tensors: parameter index (workspaces: params + their index)
  int slot = -1;       // var buffers: scalar slot
  std::vector<int64_t> shape, strides;  // on-chip buffers: constant shape, row-major strides
};

/// The npu backend's artifact (func and target are the Artifact's).
class Program : public Artifact {
 public:
  const KernelNode* kernel = nullptr;
  PtrIndex<VarNode> var_slot;
  PtrIndex<BufferNode> buffer_index;
  std::vector<BufferInfo> buffers;
  int num_slots = 0;
  bool uses_sync_all = false;
  int sync_all_kinds = 0;
  bool has_cube_code = false;  // a Cube scope or a cube op: the AIC needs its L0A/L0B  // bit 1:
                               // T.sync_all in Cube code; bit 2: in Vector code
  std::array<int64_t, kNumMemScopes> scope_bytes{};  // planned bytes per scope
  /// T.alloc_workspace buffers, in declaration order; workspace k is LaunchState::tensors
  /// [params + k] (BufferInfo::param), allocated by every launch.
  std::vector<const BufferNode*> workspaces;
  /// The vector tile ops of the kernel that can never fail Core::check_overlap (overlap_free):
  /// the interpreter skips the check for them.
  PtrIndex<TileOpNode> overlap_free_ops;

  int slot_of(const VarNode* v) const {
    const int s = var_slot.find(v);
    if (s < 0) [[unlikely]]
      no_slot(v);
    return s;
  }
  const BufferInfo& buffer(const BufferNode* b) const {
    const int i = buffer_index.find(b);
    if (i < 0) [[unlikely]]
      not_planned(b);
    return buffers[static_cast<size_t>(i)];
  }

 private:
  [[noreturn]] static void no_slot(const VarNode* v);
  [[noreturn]] static void not_planned(const BufferNode* b);
};

/// Whether tile op `n` of `p` can never fail Core::check_overlap, whatever its variables hold:
/// no UB operand it writes shares a planned byte with another of its UB operands, but as the
/// same region (the same buffer and bound expressions) where the op allows that (overlap.cpp).
bool overlap_free(const Program& p, const TileOpNode& n);

/// Builds the program: variable slots and on-chip address planning.
std::shared_ptr<Program> build_program(const PrimFunc& f, const Target& t);

struct LaunchState;
class Core;
struct CoreShadow;   // the stale-data checker's per-core state (stale.h)
struct StaleLaunch;  // and its per-launch state
struct TraceEvent;   // tl/npu/trace.h
struct CoreTrace;

/// The on-chip memories of a device's cores (per physical group: AIC, AIV0, AIV1), kept in
/// tl::Device::npu_state() so they persist across launches. One launch at a time uses them.
struct DeviceMemories {
  std::mutex in_use;
  std::vector<std::array<CoreMemory, kNumMemScopes>> cores;  // index: group * 3 + slot
  /// The stale-data checker's shadows of the same memories (stale.h), kept so that a checked
  /// launch does not fault in fresh pages; their contents are reset by every checked launch.
  std::vector<std::array<CoreMemory, kNumMemScopes>> shadows;
};

/// A short list of dimensions (shape, strides, region start or extent) stored inline, so
/// that resolving a region, which every tile op does for each operand, never allocates.
/// Ranks above kMaxRank are rejected when a region is resolved. Entries past size() are left
/// uninitialised (never read): zeroing them on every resolve was a measurable cost.
class Dims {
 public:
  static constexpr size_t kMaxRank = 8;
  Dims() = default;
  Dims(const std::vector<int64_t>& v) {
    assign(v.begin(), v.end());
  }  // NOLINT: drop-in for vectors
  template <typename It>
  void assign(It first, It last) {
    auto n = static_cast<size_t>(last - first);
    TL_ASSERT(n <= kMaxRank, "rank {} exceeds {}", n, kMaxRank);
    std::copy(first, last, v_.begin());
    n_ = n;
  }
  void push_back(int64_t x) {
    TL_ASSERT(n_ < kMaxRank, "rank exceeds {}", kMaxRank);
    v_[n_++] = x;
  }
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  int64_t& operator[](size_t i) { return v_[i]; }
  int64_t operator[](size_t i) const { return v_[i]; }
  int64_t back() const { return v_[n_ - 1]; }
  const int64_t* begin() const { return v_.data(); }
  const int64_t* end() const { return v_.data() + n_; }
  const int64_t* data() const { return v_.data(); }
  operator std::vector<int64_t>() const { return {begin(), end()}; }  // NOLINT: for index vectors
  friend bool operator==(const Dims& a, const Dims& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  std::array<int64_t, kMaxRank> v_;
  size_t n_ = 0;
};

/// A region of a buffer resolved against a core's memory or a GM tensor.
struct TileRef {
  const BufferNode* buffer = nullptr;
  MemScope scope = MemScope::GM;
  DType dtype = DType::Float32;
  uint8_t* base = nullptr;  // the buffer's first byte
  Dims shape;               // buffer shape
  Dims strides;             // buffer element strides (row-major for on-chip)
  Dims start, extent;       // the region
  // numel, rows and cols are inline: every op and check calls them, and out of line they were
  // about 2 % of a softmax call's host samples (issue 31, branch hostsm).
  int64_t numel() const {
    int64_t n = 1;
    for (auto e : extent) n *= e;
    return n;
  }
  /// Address of the region element at region-relative row-major index `flat` (ND buffers).
  uint8_t* at_flat(int64_t flat) const;
  /// Address of buffer element `idx` (absolute indices, ND buffers).
  uint8_t* at(std::span<const int64_t> idx) const;
  /// The region as a 2-D tile: product of all but the last extent, and the last extent.
  int64_t rows() const {
    int64_t n = 1;
    for (size_t i = 0; i + 1 < extent.size(); ++i) n *= extent[i];
    return n;
  }
  int64_t cols() const { return extent.empty() ? 1 : extent.back(); }
  /// Element stride between consecutive rows of the 2-D view (requires the leading
  /// dimensions of the region to be contiguous in the buffer, true for on-chip buffers).
  int64_t row_stride() const { return strides.size() >= 2 ? strides[strides.size() - 2] : 0; }
};

/// Semantics of one tile op on the virtual NPU (registered per op name in exec_*.cpp).
using ExecFn = void (*)(const TileOpNode& op, Core& core);
ExecFn find_exec(const OpDef* op);

/// The functional run's order of one tile op of a core (timed launches with data): the op whose
/// trace events start at `event` executed between ticks `begin` and `end` of the launch's clock
/// (LaunchState::op_clock).
struct OpTicks {
  uint32_t event;
  uint64_t begin, end;
};

/// The time-ordered replay (replay.cpp) steers a core through these hooks: before a statement
/// that records trace events the core asks whether it may go on (the driver answers once
/// simulated time has reached the statement's issue cycle), and tile ops are handed to the driver,
/// which applies their memory effects at their simulated start and end.
class ReplayDriver {
 public:
  virtual ~ReplayDriver() = default;
  /// May `core` execute the statement that recorded its trace events [first, end)? false: the
  /// core blocks and the driver runs it again later.
  virtual bool may_issue(Core& core, size_t first, size_t end) = 0;
  /// Has simulated time reached the cycle of `core`'s trace event `event` (the next one it
  /// records)? Asked before a statement records its events, because recording resolves its
  /// operands: a store's or a load's index may read memory, which must be read at the
  /// statement's cycle, not when the interpreter reached it. false: the core blocks and the
  /// driver runs it again then.
  virtual bool reached(Core& core, size_t event) = 0;
  /// A tile op whose trace events are [first, end), to execute at its simulated times.
  virtual void defer(Core& core, const TileOpNode& op, size_t first, size_t end) = 0;
};

/// One core (AIC or AIV) of one physical block: private memories and an explicit-stack
/// interpreter that can block on a wait and resume. Scalar expressions are evaluated by the
/// IR's one evaluator (arith::Evaluator), whose variables are this core's registers and whose
/// loads read its memories.
class Core final : public arith::Evaluator {
 public:
  /// `memories` holds this core's memories; each scope the program uses grows to its need.
  /// `shadows`: the storage of the stale-data checker's shadows of these memories (when it
  /// is on).
  Core(const Program& p, LaunchState& ls, CoreKind kind, int vid, int phys,
       std::array<CoreMemory, kNumMemScopes>& memories,
       std::array<CoreMemory, kNumMemScopes>* shadows = nullptr);

  const Program& program;
  LaunchState& launch;
  CoreKind kind;
  int vid;   // 0/1 on AIVs, 0 on the AIC
  int phys;  // physical block (core group) index
  int64_t block = -1;
  std::array<std::span<uint8_t>, kNumMemScopes> mem;  // views of the device's memories

  enum class Status { Runnable, Blocked, Done };
  /// Starts logical block `b` on this core.
  void start(int64_t b);
  /// Runs until the core blocks or finishes; returns whether it made progress.
  bool run();
  Status status() const { return status_; }
  /// What the core is blocked on (for deadlock reports), formatted when asked.
  std::string blocked_on() const;
  /// Blocked at T.sync_all, waiting for the other participants.
  bool at_barrier() const { return sync_gen_ >= 0; }
  /// The barrier generation the scheduler saw before its current sweep: a core waiting at
  /// sync_all passes only once this has moved on, so the sweep in which it passes does not
  /// depend on when another host thread completed the barrier.
  void see_barrier(int64_t generation) { barrier_view_ = generation; }
  std::string name() const;  // "block 3 AIV1"

  // Used by op semantics (and eval, eval_int, eval_float of arith::Evaluator).
  TileRef resolve(const BufferRegion& r, std::string_view op, std::string_view operand);
  TileRef operand(const TileOpNode& n, std::string_view name);
  bool has_operand(const TileOpNode& n, std::string_view name) const;
  const SourceLoc& current_loc() const { return *loc_; }
  /// Replay mode (replay.cpp): tile ops go to `d` instead of executing; syncs only record.
  void set_replay(ReplayDriver* d) { replay_ = d; }
  const std::vector<Scalar>& scalar_slots() const { return slots_; }
  /// Executes a tile op the replay deferred, with the scalar state it had when issued.
  void exec_deferred(const TileOpNode& op, const std::vector<Scalar>& slots, const SourceLoc& loc);
  /// A tl::Error at the current statement's location, naming the core and the kernel.
  [[noreturn]] void fail(const std::string& msg) const override;
  void print_line(const std::string& text);  // printf / dump_tensor output, tagged with the core
  std::string last_events() const;
  /// Fails when a vector op's destination partly overlaps a source (or, for the reductions and
  /// merge_sort, overlaps one at all).
  void check_overlap(const TileOpNode& n);
  /// Fails when on-chip operand `t` of a tile op does not start on its memory's alignment.
  void check_start_alignment(const TileRef& t, std::string_view op, std::string_view name);
  /// The intra-core flags this core left set ("set_flag(\"MTE2\", \"V\", 0)", ...), for the
  /// end-of-block check; empty when every set was consumed.
  std::vector<std::string> pending_flags() const;
  /// T.dcci in the time-ordered replay: writes back and drops the data-cache lines of GM
  /// region `t` (every line when `t` is null).
  void dcache_clean_invalidate(const TileRef* t);

  // The stale-data checker (stale.h, stale.cpp): null when it is off, so it costs nothing then.
  CoreShadow* shadow() const { return shadow_.get(); }
  /// The origin of `e`'s value (0: valid), evaluating it (into `value` if given) as the
  /// interpreter does; precise for T.if_then_else (only the chosen branch counts).
  uint8_t expr_taint(const Expr& e, Scalar* value = nullptr);
  ~Core();

  // Direct execution (direct.cpp, tl/npu/direct.h): no program body; the client issues tile
  // ops and syncs one at a time.
  void start_direct(int64_t b);
  /// A TileOp or Sync statement, as step() executes it; false: a cross-core wait must wait.
  bool exec_direct(const StmtNode& s);
  /// Appends an event to this block's trace (when recording).
  void record_direct(TraceEvent&& ev);
  void finish_direct() { finish(); }
  CoreTrace* trace() const { return trace_; }

 private:
  struct Frame {
    const StmtNode* node;
    size_t index = 0;
    int64_t i = 0, end = 0;  // For: the variable's next value and the iterations left
  };
  bool step();  // executes one statement; false if blocked
  /// The number of iterations of `f` from `min` (>= 0); a tl::Error naming the loop when its
  /// variable would leave its dtype's range.
  int64_t loop_trip_count(const ForNode& f, int64_t min, int64_t extent);
  void finish();       // the block's program is done on this core
  void count_steps();  // every kStepChunk steps and at the budget: progress, cancel, budget check
  [[noreturn]] void fail_budget();
  bool exec_sync(const SyncNode& s);
  bool replay_gate(const StmtNode* s);
  void record_events(const StmtNode* s);
  void exec_leaf(const StmtNode* s);
  Scalar var(const VarNode& v) override {
    const int slot = program.slot_of(&v);
    if (shadow_) taint_slot(slot);
    return slots_[slot];
  }
  void taint_slot(int slot);
  void taint_load(const TileRef& t, std::span<const int64_t> idx);
  void stale_block_start();
  void stale_let(const LetNode& n);
  void stale_store(const StoreNode& n, const TileRef* ref, const std::vector<int64_t>& idx);
  void stale_control(const StmtNode& s, const Expr& e, int kind);
  Scalar load(const LoadNode& n) override;
  void store(const StoreNode& n);
  void set_var(const Var& v, Scalar x);

  std::vector<Scalar> slots_;
  std::vector<Frame> stack_;
  Status status_ = Status::Done;
  // The current statement's location: a program statement's own (the program outlives the
  // core), or own_loc_, a copy, for deferred and direct statements. A pointer, not a copy per
  // statement: copying the file name was a heap allocation per interpreter step.
  const SourceLoc* loc_ = &own_loc_;
  SourceLoc own_loc_;
  // What the core waits at: a program's wait_cross_flag / sync_all and its event id, formatted
  // only by blocked_on() (a deadlock report). A string formatted on every blocked wait, with the
  // statement's location, was two heap allocations per wait, several per kv step of
  // FlashAttention (docs/virtual_npu.md, "Host speed", branch hostfa3). A statement that may
  // not outlive the call (direct execution) is described at once, in blocked_.
  void set_blocked(const SyncNode& s, int64_t id);
  const SyncNode* blocked_sync_ = nullptr;
  int64_t blocked_id_ = 0;
  std::string blocked_;
  std::array<uint8_t, kNumPipes * kNumPipes> flags_{};  // bit per event id
  /// The last 8 statements executed, oldest first (error messages: last_events), in a ring.
  class Recent {
   public:
    void push(const StmtNode* s) {
      ring_[(first_ + n_) % ring_.size()] = s;
      if (n_ < ring_.size())
        ++n_;
      else
        first_ = (first_ + 1) % ring_.size();
    }
    void clear() { first_ = n_ = 0; }
    size_t size() const { return n_; }
    const StmtNode* operator[](size_t i) const { return ring_[(first_ + i) % ring_.size()]; }

   private:
    std::array<const StmtNode*, 8> ring_{};
    size_t first_ = 0, n_ = 0;
  };
  Recent recent_;
  int64_t steps_ = 0;           // interpreter steps of the current block
  int64_t steps_reported_ = 0;  // of those, added to LaunchState::steps
  int64_t step_mark_ = 0;       // count_steps() runs when steps_ reaches this
  int64_t sync_gen_ = -1;       // barrier generation this core waits to pass (-1: not waiting)
  int64_t barrier_view_ = 0;    // see_barrier()
  // The scalar unit's GM data cache, modelled in the time-ordered replay only (DataCacheClean-
  // AndInvalid's page: scalar GM accesses go through it; DMA and other cores do not see it):
  // 64-byte lines of host addresses, filled from the bytes of the accessed tensor, stores kept
  // (dirty) until a dcci, an eviction or the block's end writes them back.
  struct CacheLine {
    std::array<uint8_t, 64> data{};
    uint64_t valid = 0, dirty = 0;  // a bit per byte
  };
  std::map<uintptr_t, CacheLine> dcache_;
  std::deque<uintptr_t> dcache_order_;  // lines in fill order: the oldest is evicted first
  CacheLine& dcache_line(uintptr_t line, const TileRef& t);
  void dcache_access(const TileRef& t, uint8_t* p, uint8_t* bytes, int64_t n, bool write);
  void dcache_write_back(uintptr_t line, CacheLine& l);
  struct CoreTrace* trace_ = nullptr;  // this block's instruction trace, when recording
  ReplayDriver* replay_ = nullptr;
  std::unique_ptr<CoreShadow> shadow_;
  bool gate_recorded_ = false;  // replay: the blocked statement's events are recorded
  size_t gate_first_ = 0, gate_end_ = 0;
};

/// Shared state of one launch: GM tensors, cross-core flags, global barriers.
struct LaunchState {
  const Program& program;
  std::vector<Tensor> tensors;    // per parameter (undefined for scalars), then the workspaces
  std::vector<Scalar> scalars;    // per parameter
  std::vector<int64_t> dynamics;  // values of the dynamic symbols
  int64_t num_blocks = 0;
  int physical_blocks = 0;

  // Cross-core flag counters per (logical block, slot, id): slots 1/2 are what AIV0/AIV1
  // may consume, 3/4 the sets AIV0/AIV1 made towards the AIC, 5/6 the mode-1 sets of AIV0/AIV1
  // not yet matched by the other AIV's. Only the block's own cores touch them, and a block's
  // cores always run on one host thread; the table is sized before the threads start so no
  // thread ever reshapes it.
  static constexpr int kCrossSlots = 7;
  // Report flags a block leaves pending when it ends (off under check_hazards: the hazard
  // checker's flag check reports them, with the hazards they cause, after the launch).
  bool check_block_flags = true;
  std::vector<std::array<int, 16>> cross;
  std::array<int, 16>& cross_counters(int64_t block, int slot) {
    return cross[block * kCrossSlots + slot];
  }

  // sync_all: a barrier over every core of the launch, across host threads. The scheduler
  // (scheduler.cpp) also keeps here which threads still run and which can only wait for the
  // barrier: a deadlock involving sync_all is only certain once every running thread waits.
  std::mutex mu;
  std::condition_variable cv;
  int64_t barrier_generation = 0;
  int64_t barrier_arrived = 0;
  int64_t barrier_participants = 0;
  int64_t cores_done = 0;  // participating cores (of a kind that calls sync_all) finished
  int live_threads = 0;    // host threads still running cores
  int parked_threads = 0;  // of those, threads that can only wait for the barrier
  int failed_threads = 0;  // threads that stopped with an error
  bool stuck = false;      // every live thread is parked: the barrier never completes

  struct Trace* trace = nullptr;  // LaunchOptions::trace, sized before the threads start
  StaleLaunch* stale = nullptr;   // the stale-data checker, when on (functional run only)
  bool timing_only = false;       // LaunchOptions::timing_only: skip the tile ops' data work
  // Hazard-checked functional launches digest what each tile op stores to GM (Access::digest,
  // for the duplicate-store rule). The op and its digest run under gm_store_mu, so a store of
  // another host thread cannot land between the two (a digest of another core's bytes could
  // make two different stores look identical).
  bool digest_gm_stores = false;
  std::mutex gm_store_mu;
  // Timed launches with data: the GM bytes the functional run writes are kept before their first
  // write, for the time-ordered replay to start from (replay.h).
  class LaunchSnapshot* gm_keep = nullptr;
  // Timed launches with data: per trace core (block * 3 + slot), the functional run's tile ops in
  // program order, each between two ticks of op_clock, which every host thread advances; the
  // replay is skipped when simulated time orders every conflicting pair of ops the same way
  // (replay_order.cpp). Sized before the threads start.
  std::vector<std::vector<OpTicks>>* op_ticks = nullptr;
  std::atomic<uint64_t> op_clock{1};

  // Budget, cancellation and progress (LaunchOptions::max_steps, TL_MAX_STEPS, cancel,
  // progress_percent).
  int64_t max_steps = INT64_MAX;  // interpreter steps each core may take per block
  std::string max_steps_source;   // how the budget was set, for its error message
  const std::atomic<bool>* cancel = nullptr;
  bool cancelled() const { return cancel && cancel->load(std::memory_order_relaxed); }
  [[noreturn]] void throw_cancelled() const;
  int progress_percent = 0;
  std::atomic<int64_t> steps{0};  // interpreter steps of all cores, in chunks
  std::atomic<int64_t> blocks_done{0};
  std::mutex progress_mu;
  int next_progress_percent = 0;
  int64_t next_progress_steps = 0;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  /// Core::run reports its steps in chunks of this many (a line on stderr may follow) and polls
  /// `cancel`: about a millisecond of interpreting, so Ctrl-C is prompt and the poll is free.
  static constexpr int64_t kStepChunk = 1 << 16;
  void add_steps(int64_t n);
  void block_done();

  PrintSink output;  // printf / dump_tensor lines

  explicit LaunchState(const Program& p) : program(p) {}

 private:
  void report_progress(int64_t steps_now, int64_t blocks_now);
};

}  // namespace tl::npu
