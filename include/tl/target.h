// Targets as data: one description per Ascend chip. The verifier, the memory planner, the
// virtual NPU's timing model and (later) the AscendC emitter all read these tables; no chip
// fact lives in code elsewhere. Values and their sources: src/target/targets.cpp. What a tile
// primitive accepts (its dtypes per Arch) lives with the primitive (OpDef, include/tl/op.h),
// so adding a primitive touches one place.
#pragma once

#include <array>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tl/ir.h"

namespace tl {

/// A legal data path, the pipe that moves data along it and the core that issues it (a copy
/// must sit in a T::Scope of that core).
struct CopyPath {
  MemScope src, dst;
  Pipe pipe;
  CoreKind core = CoreKind::Cube;
};

/// A legal set_flag/wait_flag pipe pair (AscendC HardEvent::SRC_DST).
struct HardEvent {
  Pipe src, dst;
};

/// A legal cube (Mmad) dtype combination: a x b accumulated into c.
struct MmaDTypes {
  DType a, b, c;
};

/// A legal vector Cast: from -> to with the rounding modes allowed ("CAST_RINT", ...).
struct CastRule {
  DType from, to;
  std::vector<std::string> modes;
};

/// A legal fixpipe conversion out of L0C: accumulator dtype -> destination dtype, per
/// destination scope (GM or L1).
struct FixpipeRule {
  MemScope dst;
  DType from, to;
};

/// Chip families whose instruction sets differ (AscendC's __NPU_ARCH__): the A2 and A3 series
/// (910B, 910_93) share 2201; Ascend 950 is 3510. Per-op legality tables (OpDef::dtypes) are
/// keyed by it.
enum class Arch : uint8_t { Npu2201, Npu3510 };
inline constexpr int kNumArches = 2;
std::string_view arch_name(Arch a);  // "2201", "3510"

/// The row of the cost table an instruction is charged from (docs/hardware.md section 4). Every
/// tile op and every instruction of an op's expansion names its class when it is registered
/// (OpDef::cost, InstrSpec::cost); the timing model never guesses it from a name.
enum class CostClass : uint8_t {
  Copy,          // a data transfer along a copy path: the path's rate and latency
  CubeLoad,      // gemm_v0's L1 -> L0A and L1 -> L0B loads (MTE1)
  Mmad,          // cube fractal products (M)
  VecSimple,     // vector add/mul class (rsqrt, reciprocal too): a repeat a cycle
  VecComposite,  // functions AscendC composes (sigmoid, silu, sin, cos, tanh)
  VecExpDiv,     // exp, ln, sqrt, div: 32 elements a cycle ("vec_exp_div")
  VecReduce,     // vector reductions: a whole-repeat reduce per row
  VecSort,       // sort / merge sort (Sort32, MrgSort)
  Scalar,        // the scalar unit (printf, dump_tensor; scalar loads and stores)
};
inline constexpr int kNumCostClasses = 9;
std::string_view cost_class_name(CostClass c);  // "copy", "cube_load", "mmad", "vec_simple", ...
/// True for the vector classes, which have a row in CostTable::vector.
inline bool is_vector_cost(CostClass c) {
  return c >= CostClass::VecSimple && c <= CostClass::VecSort;
}

/// Costs for the timing model (docs/hardware.md section 4). Cycles unless stated.
struct CostTable {
  double cube_fractals_per_cycle = 1.0;  // 16x16x16 fp16 fractal products per cycle per AIC
  double cube_head_cycles = 6;
  /// Theoretical bytes per cycle per core of each copy path, keyed "SRC->DST".
  std::map<std::string, double> copy_bytes_per_cycle;
  /// Latency constant K (bytes) of bw(B) = peak * B / (K + B), keyed like copy_bytes_per_cycle.
  std::map<std::string, double> copy_latency_bytes;
  double vector_bytes_per_repeat = 256;
  /// Per-instruction vector costs: head + per_repeat * repeats + tail, one row per vector
  /// cost class (is_vector_cost); vector_cost() reads it.
  struct VectorCost {
    double head = 0, per_repeat = 0, tail = 0;
  };
  std::map<CostClass, VectorCost> vector;
  /// The row of a vector cost class; a missing row is an internal error.
  const VectorCost& vector_cost(CostClass c) const;
  double hbm_bytes_per_s = 1.8e12;  // the peak: the rooflines (cann_ops_tilelang) use it
  /// What streaming reads get of HBM with every core busy: the timing model's HBM limit.
  double hbm_stream_bytes_per_s = 1.456e12;
  double l2_bytes_per_s = 5.0e12;
  // Timing-model additions (src/npu/timing_costs.cpp, timing_model.cpp; values and sources in
  // src/target/targets.cpp).
  /// Measured single-core plateau of a copy path in bytes/s, keyed like copy_bytes_per_cycle;
  /// a core's rate on a path is min(theoretical, measured plateau).
  std::map<std::string, double> copy_measured_bytes_per_s;
  /// Latency of on-chip copies (L1->L0A/L0B, L0C->L1, UB->UB) when copy_latency_bytes has no
  /// entry; GM paths without an entry take the GM->UB latency in cycles.
  double onchip_copy_latency_cycles = 28;
  double l2_bytes = 192.0 * 1024 * 1024;  // L2 capacity shared by all cores
  double issue_cycles = 1;                // scalar unit: cycles to issue one instruction
  double scalar_op_cycles = 2;            // other scalar-unit instructions (dcci, printf)
  double scalar_alu_cycles = 2;           // one scalar ALU operation (loop control, address math)
  double scalar_load_cycles = 6;          // a scalar load from UB or GM
  double scalar_store_cycles = 4;         // a scalar store to UB or GM
  double dma_issue_cycles = 9;            // a DMA engine accepts a GM copy this often at most
  int pipe_queue_depth = 32;              // instructions a pipe holds issued and not ended
  /// GM writes (UB->GM, L0C->GM) wait this fraction of the GM read latency.
  double gm_write_latency_fraction = 1;
  double launch_overhead_us = 0;       // Task Duration minus the kernel's own time
  int64_t gm_burst_align_bytes = 512;  // GM rows starting off this move at reduced efficiency
  double gm_unaligned_efficiency = 1;  // ... this fraction of the aligned bandwidth
  int64_t ub_bank_bytes = 32, ub_bank_groups = 16;  // UB bank rows and groups (block-interleaved)
  double bank_conflict_factor = 1;        // a conflicting vector instruction's repeats take this x
  double cross_flag_latency_cycles = 50;  // set_cross_flag -> the waiting core sees it
  double sync_all_latency_cycles = 100;   // sync_all: last arrival -> every core released
};

struct Target {
  std::string name;  // "A2", "910B3", "910B4", "A3", "950"
  std::string chip;  // "Ascend910B2", ...
  Arch arch = Arch::Npu2201;
  int num_aic = 0;
  int num_aiv = 0;
  double clock_ghz = 0;
  std::array<int64_t, kNumMemScopes> capacity{};   // bytes usable per core; 0 = unbounded/NA
  std::array<int64_t, kNumMemScopes> alignment{};  // start-address alignment in bytes
  int64_t gm_bytes = 0;
  std::vector<CopyPath> copy_paths;
  std::vector<MmaDTypes> mma_dtypes;
  std::vector<FixpipeRule> fixpipe;
  std::vector<CastRule> casts;
  bool l1_transpose_16bit_only = true;    // LoadData transpose only for 16-bit types
  int num_event_ids = 8;                  // set_flag/wait_flag ids are 0 .. num_event_ids-1
  std::vector<int> reserved_event_ids;    // ids insert_syncs leaves to the author's flags
  int num_cross_flags = 16;               // cross-core flag ids 0 .. num_cross_flags-1
  std::vector<int> sync_all_cross_flags;  // ids used by sync_all
  int max_pending_cross_sets = 15;
  int num_cross_flag_modes = 3;           // set_cross_flag mode is 0 .. num_cross_flag_modes-1
  std::vector<Pipe> cross_flag_pipes;     // pipes set_cross_flag may be issued on
  std::vector<HardEvent> hard_events;     // legal set_flag/wait_flag (src, dst) pairs
  std::vector<Pipe> cube_pipes;           // pipes of the AIC (flags, barriers in Cube scopes)
  std::vector<Pipe> vector_pipes;         // pipes of an AIV (flags, barriers in Vector scopes)
  std::vector<DType> atomic_dtypes;       // dtypes of atomic_add into GM
  std::vector<MemScope> scalar_scopes;    // memories the scalar unit may load/store
  std::vector<MemScope> cube_memories;    // on-chip memories of the AIC (L1, L0A, L0B, L0C)
  std::vector<MemScope> vector_memories;  // on-chip memories of an AIV (UB)
  std::vector<MemScope> dump_scopes;      // memories dump_tensor can print
  /// Compare modes allowed per source dtype ("LT", "EQ", ...); a dtype absent here allows all.
  std::map<DType, std::vector<std::string>> compare_modes;
  int64_t compare_align_bytes = 256;  // compare: count * sizeof must be a multiple of this
  /// The vector unit treats subnormal inputs and results of the ops marked
  /// OpDef::flushes_subnormals (Exp, Ln, Sqrt, Rsqrt, Reciprocal, Div) as zeros of their sign
  /// (FTZ). 3510 (950) does by default, 2201 (A2/A3) keeps subnormals: asc-devkit's
  /// "2201到3510架构变更", 计算单元 (3510: 硬件不支持Subnormal功能, Ln/Sqrt/Rsqrt/Div/
  /// Reciprocal/Exp) and its Subnormal compatibility example (A2/A3 support them by default).
  bool vector_flushes_subnormals = false;
  /// axpy dtype pairs (src, dst) with src != dst (fp16 src accumulated into fp32 dst).
  std::vector<std::pair<DType, DType>> axpy_mixed;
  /// Cube fractals: `fractal_rows` rows of `fractal_row_bytes` bytes (16 x 32 B on A2): M, N
  /// multiples of fractal_rows, K a multiple of fractal_row_bytes / sizeof(operand).
  int64_t fractal_rows = 16;
  int64_t fractal_row_bytes = 32;
  CostTable costs;

  /// The legal path src -> dst, if there is one on this target.
  const CopyPath* copy_path(MemScope src, MemScope dst) const;
  bool hard_event_ok(Pipe src, Pipe dst) const;
  bool pipe_on_core(Pipe p, CoreKind c) const;
  /// The core whose private memory `s` is (nullopt for GM, var and developer-mode scopes).
  std::optional<CoreKind> memory_core(MemScope s) const;

  /// The pipe of the copy src -> dst, if the path is legal on this target.
  std::optional<Pipe> copy_pipe(MemScope src, MemScope dst) const;
  int64_t cap(MemScope s) const { return capacity[static_cast<size_t>(s)]; }
  int64_t align(MemScope s) const { return alignment[static_cast<size_t>(s)]; }
};

/// The target called `name` ("A2", "Ascend910B2", "910B3", "910B4", "A3", "950"); a user
/// error that lists the known names otherwise.
const Target& get_target(std::string_view name);
/// The default target: A2 (Ascend 910B2).
const Target& default_target();
std::vector<std::string> target_names();

}  // namespace tl
