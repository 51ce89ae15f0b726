// The chip descriptions. Every number carries its source: a section of docs/hardware.md, which
// restates the published facts (Ascend C documentation, msKPP tables) these tables use.
#include <algorithm>

#include "tl/target.h"

namespace tl {
namespace {

void set(std::array<int64_t, kNumMemScopes>& a, MemScope s, int64_t v) {
  a[static_cast<size_t>(s)] = v;
}

/// Atlas A2 training series, Ascend 910B2: the default target.
Target make_a2() {
  Target t;
  t.name = "A2";
  t.chip = "Ascend910B2";
  // 24 AIC / 48 AIV at 1.85 GHz (asc-devkit architecture spec; docs/hardware.md section 1).
  t.num_aic = 24;
  t.num_aiv = 48;
  t.clock_ghz = 1.85;
  // Capacities (docs/hardware.md section 1): L1 524032 B (512 KB - 256 B, as the
  // TileLang-Ascend code generator sizes its L1 TBuf; AscendC itself keeps 128 B of L1 for its
  // matmul client-server messages), L0A/L0B 64 KB, L0C 128 KB, UB the physical 192 KB: AscendC's
  // own UB bound on A2 / A3 is TOTAL_UB_SIZE = 192 * 1024, with nothing reserved, and the 256 B
  // TileLang-Ascend's code generator leaves out of its UB TBuf have no hardware reason.
  set(t.capacity, MemScope::L1, 524032);
  set(t.capacity, MemScope::L0A, 65536);
  set(t.capacity, MemScope::L0B, 65536);
  set(t.capacity, MemScope::L0C, 131072);
  set(t.capacity, MemScope::UB, 196608);
  // Start-address alignment: UB, L1 32 B; L0A/L0B 512 B; L0C 64 B (docs/hardware.md section 5).
  set(t.alignment, MemScope::GM, 1);
  set(t.alignment, MemScope::L1, 32);
  set(t.alignment, MemScope::L0A, 512);
  set(t.alignment, MemScope::L0B, 512);
  set(t.alignment, MemScope::L0C, 64);
  set(t.alignment, MemScope::UB, 32);
  set(t.alignment, MemScope::Var, 1);
  t.gm_bytes = int64_t{64} << 30;  // 64 GiB HBM
  // Legal paths, their pipes and issuing cores (docs/hardware.md section 2; docs/hardware.md
  // section 5, "Data movement"). Not on A2: UB<->L1, L0C->UB, GM->GM. UB paths run on an AIV, L1/L0
  // paths on the AIC.
  using S = MemScope;
  const auto cube = CoreKind::Cube, vec = CoreKind::Vector;
  t.copy_paths = {
      {S::GM, S::UB, Pipe::MTE2, vec},   {S::UB, S::GM, Pipe::MTE3, vec},
      {S::UB, S::UB, Pipe::V, vec},      {S::GM, S::L1, Pipe::MTE2, cube},
      {S::GM, S::L0A, Pipe::MTE2, cube}, {S::GM, S::L0B, Pipe::MTE2, cube},
      {S::L1, S::L0A, Pipe::MTE1, cube}, {S::L1, S::L0B, Pipe::MTE1, cube},
      {S::L0C, S::GM, Pipe::FIX, cube},  {S::L0C, S::L1, Pipe::FIX, cube},
      {S::L1, S::GM, Pipe::MTE3, cube},
  };
  // Mmad dtypes on A2 (docs/hardware.md section 5, "Cube: Mmad").
  t.mma_dtypes = {{DType::Int8, DType::Int8, DType::Int32},
                  {DType::Float16, DType::Float16, DType::Float32},
                  {DType::BFloat16, DType::BFloat16, DType::Float32},
                  {DType::Float32, DType::Float32, DType::Float32}};
  // Fixpipe conversions (docs/hardware.md section 5, "Fixpipe").
  for (DType to : {DType::Int8, DType::UInt8, DType::Float16, DType::BFloat16, DType::Float32})
    t.fixpipe.push_back({S::GM, DType::Float32, to});
  for (DType to : {DType::Int8, DType::UInt8, DType::Float16, DType::Int32})
    t.fixpipe.push_back({S::GM, DType::Int32, to});
  for (DType to : {DType::Int8, DType::UInt8, DType::Float16, DType::BFloat16})
    t.fixpipe.push_back({S::L1, DType::Float32, to});
  for (DType to : {DType::Int8, DType::UInt8, DType::Float16})
    t.fixpipe.push_back({S::L1, DType::Int32, to});
  // Cast pairs and modes: AscendC Cast, table 4 "Atlas A2 ... Cast指令参数说明" (asc-devkit
  // docs/api/context/Cast.md). CAST_NONE is listed only where the doc lists it (it means RINT
  // for a lossy pair, no rounding for an exact one); float -> float rounds to an integral value
  // ("仍以float格式存入dst中"). Not modelled: int4b pairs, int32 -> half (SetDeqScale).
  const std::vector<std::string> five = {"CAST_RINT", "CAST_FLOOR", "CAST_CEIL", "CAST_ROUND",
                                         "CAST_TRUNC"};
  const std::vector<std::string> five_none = {"CAST_NONE", "CAST_RINT",  "CAST_FLOOR",
                                              "CAST_CEIL", "CAST_ROUND", "CAST_TRUNC"};
  const std::vector<std::string> five_odd_none = {
      "CAST_NONE", "CAST_RINT", "CAST_FLOOR", "CAST_CEIL", "CAST_ROUND", "CAST_TRUNC", "CAST_ODD"};
  const std::vector<std::string> exact = {"CAST_NONE"};
  using D = DType;
  t.casts = {
      {D::Float16, D::Int32, five},      {D::Float16, D::Int16, five},
      {D::Float16, D::Float32, exact},   {D::Float16, D::Int8, five_none},
      {D::Float16, D::UInt8, five_none}, {D::Float32, D::Float32, five},
      {D::Float32, D::Int32, five},      {D::Float32, D::Float16, five_odd_none},
      {D::Float32, D::Int64, five},      {D::Float32, D::Int16, five},
      {D::Float32, D::BFloat16, five},   {D::BFloat16, D::Float32, exact},
      {D::BFloat16, D::Int32, five},     {D::UInt8, D::Float16, exact},
      {D::Int8, D::Float16, exact},      {D::Int16, D::Float16, five_none},
      {D::Int16, D::Float32, exact},     {D::Int32, D::Float32, five_none},
      {D::Int32, D::Int16, exact},       {D::Int32, D::Int64, exact},
      {D::Int64, D::Int32, exact},       {D::Int64, D::Float32, five},
  };
  // Event ids 0-7 (AscendC SetFlag/WaitFlag, docs/hardware.md section 3). insert_syncs leaves
  // 6-7 to the author's hand-written flags, so the two never meet on one id; the chip reserves
  // none of them.
  t.num_event_ids = 8;
  t.reserved_event_ids = {6, 7};
  // Cross-core flags: ids 0-15, SyncAll uses 11-14, > 15 pending sets hang (docs/hardware.md
  // section 3); modes 0-2 and pipes V, M, MTE1, MTE2, MTE3, FIX (docs/hardware.md section 3).
  t.num_cross_flags = 16;
  t.sync_all_cross_flags = {11, 12, 13, 14};
  t.max_pending_cross_sets = 15;
  t.num_cross_flag_modes = 3;
  t.cross_flag_pipes = {Pipe::V, Pipe::M, Pipe::MTE1, Pipe::MTE2, Pipe::MTE3, Pipe::FIX};
  // The HardEvent list of SetFlag/WaitFlag (docs/hardware.md section 3).
  using P = Pipe;
  t.hard_events = {
      {P::MTE2, P::MTE1}, {P::MTE1, P::MTE2}, {P::MTE1, P::M},  {P::M, P::MTE1},
      {P::MTE2, P::V},    {P::V, P::MTE2},    {P::MTE3, P::V},  {P::V, P::MTE3},
      {P::M, P::V},       {P::V, P::M},       {P::V, P::V},     {P::MTE3, P::MTE1},
      {P::MTE1, P::MTE3}, {P::MTE1, P::V},    {P::MTE2, P::M},  {P::M, P::MTE2},
      {P::V, P::MTE1},    {P::M, P::FIX},     {P::FIX, P::M},   {P::MTE3, P::MTE2},
      {P::MTE2, P::MTE3}, {P::S, P::V},       {P::V, P::S},     {P::S, P::MTE2},
      {P::MTE2, P::S},    {P::S, P::MTE3},    {P::MTE3, P::S},  {P::MTE2, P::FIX},
      {P::FIX, P::MTE2},  {P::FIX, P::S},     {P::M, P::S},     {P::FIX, P::MTE3},
      {P::MTE1, P::FIX},  {P::FIX, P::MTE1},  {P::FIX, P::FIX},
  };
  // Pipes per core (docs/hardware.md section 2): the AIC has M, MTE1, MTE2, MTE3 (L1->GM), FIX and
  // S; an AIV has V, MTE2, MTE3 and S.
  t.cube_pipes = {P::S, P::M, P::MTE1, P::MTE2, P::MTE3, P::FIX, P::ALL};
  t.vector_pipes = {P::S, P::V, P::MTE2, P::MTE3, P::ALL};
  // SetAtomicAdd dtypes (docs/hardware.md section 5, "Data movement").
  t.atomic_dtypes = {D::Int8, D::Int16, D::Float16, D::BFloat16, D::Int32, D::Float32};
  // The scalar unit reads and writes GM and UB (and scalar vars); L1/L0 are not addressable.
  t.scalar_scopes = {S::GM, S::UB, S::Var};
  // Private memories per core (docs/hardware.md section 1): L1 and L0A/L0B/L0C on the AIC, UB on
  // each AIV.
  t.cube_memories = {S::L1, S::L0A, S::L0B, S::L0C};
  t.vector_memories = {S::UB};
  // DumpTensor works on UB, L1, L0C and GM (docs/hardware.md section 5, "Debug").
  t.dump_scopes = {S::UB, S::L1, S::L0C, S::GM};
  // Compare: fp16/fp32 all modes, int32 EQ only; count * sizeof a multiple of 256 B.
  t.compare_modes[D::Int32] = {"EQ"};
  t.compare_align_bytes = 256;
  // Axpy: fp16 src into an fp32 dst.
  t.axpy_mixed = {{D::Float16, D::Float32}};
  // Fractals: 512 B = 16 rows x 32 B (docs/hardware.md section 1).
  t.fractal_rows = 16;
  t.fractal_row_bytes = 32;
  // Costs (docs/hardware.md section 4; msKPP arch tables).
  auto& c = t.costs;
  c.copy_bytes_per_cycle = {{"global->UB", 128}, {"global->L1", 256},  {"L1->L0A", 256},
                            {"L1->L0B", 128},    {"L0C->global", 128}, {"L0C->L1", 256},
                            {"UB->UB", 128},     {"UB->global", 128}};
  // bw(B) = peak * B / (K + B): K ~ 30 KB for GM->UB (docs/hardware.md section 4, msKPP measured
  // curve). L1->L0A/L0B: ~28 cycles latency (docs/hardware.md section 4), i.e. K = 28 x
  // bytes/cycle.
  c.copy_latency_bytes = {{"global->UB", 30 * 1024}, {"L1->L0A", 28 * 256}, {"L1->L0B", 28 * 128}};
  // Measured single-core plateaus (docs/hardware.md section 4, msKPP measured curves): the
  // theoretical bytes/cycle above are never reached by one core on the GM paths.
  c.copy_measured_bytes_per_s = {{"global->UB", 78e9},  {"UB->global", 109e9},
                                 {"global->L1", 270e9}, {"L1->L0A", 429e9},
                                 {"L1->L0B", 218e9},    {"L0C->global", 200e9}};
  // On-chip copies without a K: the L1->L0A latency (docs/hardware.md section 4, ~28 cycles).
  c.onchip_copy_latency_cycles = 28;
  // Vector: head + per_repeat x repeats + tail, per row (docs/hardware.md section 4, "Vector";
  // docs/calibration.md, "Vector cost rows"). Per-repeat rates are A2 board measurements:
  // - simple: one 256-byte repeat a cycle ("128 half data per cycle", asc-devkit
  //   add_high_performance, A2; its case 6 measures 6.954 us of vector time for 86 Adds of 127
  //   repeats per core, 1 cycle a repeat + 24). Two sources in one bank group pay twice
  //   (bank_conflict_factor): its case 5, 12.846 us, and pto-isa's 910B3 measurements of vadd /
  //   vsub / vmax / vmul with sources 16 KB apart, 2.0-2.3 cycles a repeat + 23-25; its
  //   single-source vmuls / vadds / vmaxs / vrelu / vrsqrt measure 1.00-1.07 + 23-26.
  // - exp, ln, sqrt, div (the VecExpDiv class, "vec_exp_div"): 32 elements a cycle, 2 cycles a fp32
  //   repeat, 4 a fp16 one (CostModel::cost doubles 16-bit repeats). pto-isa 910B3: vexp 2.00 x
  //   repeat + 31 for 1-128 repeats, vln 2.00 + 33; its fitted TEXP / TSQRT 0.0314 cycles an
  //   element, any dtype. Its vdiv, 4.03 x repeat + 31, had its sources in one bank group, so
  //   conflict-free it is 2 (fp32), as Huawei's pypto A2/A3 instruction model has it (VDIV and
  //   VEXP: 128 bytes a cycle fp32, 64 fp16).
  // - reduce: a whole-repeat reduce (WholeReduceMax/Sum: vcmax, vcadd) takes 7 cycles a repeat
  //   (pypto's A2/A3 model, vecRmwDelay 7; pto-isa's measured TROWMAX / TROWSUM fits, 7.0
  //   cycles a row for rows of one repeat, fp32 and fp16); a row of several repeats is folded
  //   into one first at the simple rate (the same fits: about 1 cycle per further repeat).
  //   CostModel::cost applies the row structure.
  // - the VecComposite class ("vec_composite"): sigmoid, silu, sin, cos, tanh, which AscendC
  //   builds of several instructions; no measurement, so they keep the former figure (8 a
  //   repeat: a quarter of add's former rate, 950's Add 256 vs Exp 64 B/cycle).
  // - sort: pto-isa's 910B3 vmrgsort4 measurement, 78 x repeat + 20.
  // Heads + tails are the measured fixed parts (simple 24, exp 31); reduce's is pto-isa's vcadd.
  c.vector = {{CostClass::VecSimple, {10, 1, 14}},
              {CostClass::VecComposite, {13, 8, 18}},
              {CostClass::VecExpDiv, {13, 2, 18}},
              {CostClass::VecReduce, {14, 7, 32}},
              {CostClass::VecSort, {20, 78, 0}}};
  // HBM ~1.8 TB/s, L2 ~5 TB/s and 192 MB, shared by all cores (docs/hardware.md sections 1, 4).
  c.hbm_bytes_per_s = 1.8e12;
  // The timing model's HBM limit is what the chip streams, not the peak: asc-devkit's
  // add_high_performance example (README, A2, 48 AIV, 8192^2 fp16, msOpProf) reads at 1.456 TB/s
  // ("read bandwidth", case 3: 268 MB over 184.369 us of MTE2), and 1.53-1.56 TB/s with its
  // writes in L2 (cases 5-6): 81-87 % of 1.8 (docs/calibration.md, "GM side"). The peak stays
  // for the rooflines of docs/ops.md.
  c.hbm_stream_bytes_per_s = 1.456e12;
  c.l2_bytes_per_s = 5.0e12;
  c.l2_bytes = 192.0 * 1024 * 1024;
  // Not published: scalar issue 1 cycle per instruction, 2 cycles per scalar op, 50 cycles for
  // a cross-core flag to reach the other core and 100 for sync_all (assumptions, unfitted; they
  // only matter for latency-bound kernels, see docs/calibration.md).
  c.issue_cycles = 1;
  c.scalar_op_cycles = 2;
  c.cross_flag_latency_cycles = 50;
  c.sync_all_latency_cycles = 100;
  // The scalar unit and the DMA issue: no measurement is published. These are the values of
  // Huawei's own A2/A3 cost model (hicann/pypto, framework/src/cost_model/simulation_ca/A2A3/
  // model/pipe.cpp: ALU 2, LD 6, ST 4 cycles; dmaUeLatency_ 9 cycles per DMA), taken unchanged.
  c.scalar_alu_cycles = 2;
  c.scalar_load_cycles = 6;
  c.scalar_store_cycles = 4;
  c.dma_issue_cycles = 9;
  // "MTE1和MMAD指令队列的深度为32 ... 容易满，会阻塞其他指令下发" (asc-devkit, NPU architecture
  // 2201 hardware constraints): a pipe holds 32 instructions; assumed for every pipe (pypto's
  // isqMaxOtsd_ = 32 does the same).
  c.pipe_queue_depth = 32;
  // GM writes return sooner than reads: pypto's A2/A3 model (SimulatorA2A3.cpp) has a read
  // latency of 307 cycles and a write latency of 153; the only published per-path figure. The
  // read latency stays the msKPP curve's (K = 30 KB); writes take the same ratio of it.
  c.gm_write_latency_fraction = 153.0 / 307.0;
  // Launch overhead: profilers' Task Duration includes scheduling and completion
  // (docs/calibration.md, "a few us"). Task Duration minus the AIVs' time, derived from the tables
  // of asc-devkit's add_high_performance README, is 0.47 us on one core and 2.5-9.4 us on 48; the
  // smallest multi-core figure is taken.
  c.launch_overhead_us = 2.5;
  // GM addresses: MTE2/MTE3 requests are handled in 512-byte units; on A2 a copy whose rows start
  // 32 B- but not 512 B-aligned reaches 70 % of the aligned bandwidth (asc-devkit best practice
  // "GM地址尽量512B对齐": "32B对齐场景只能达到512B对齐场景的70%"). Taken for every unaligned row.
  c.gm_burst_align_bytes = 512;
  c.gm_unaligned_efficiency = 0.7;
  // UB (2201): 48 banks of 32-byte rows in 16 bank groups, consecutive 32 B blocks in consecutive
  // banks (bank = block % 48, group = bank % 16); per beat the vector unit reads or writes one row
  // per bank group, so two sources in one group, or a source and the destination in one bank,
  // conflict (asc-devkit "避免bank冲突（NPU架构版本2201）"). The add example's contiguous case
  // measured 12.846 -> 6.954 us when the conflict was removed: a conflicting repeat takes two
  // beats.
  c.ub_bank_bytes = 32;
  c.ub_bank_groups = 16;
  c.bank_conflict_factor = 2;
  return t;
}

/// Atlas A2 Ascend 910B3 / 910B4: the A2 architecture with 20 AIC / 40 AIV (docs/hardware.md
/// section 1, from the asc-devkit architecture spec); memories, paths and dtypes as 910B2.
Target make_910b(const char* name, const char* chip) {
  Target t = make_a2();
  t.name = name;
  t.chip = chip;
  t.num_aic = 20;
  t.num_aiv = 40;
  return t;
}

/// Atlas A3 (Ascend 910_93): per die the A2 core (same AscendC arch 2201 rules and TBuf sizes,
/// docs/hardware.md section 1), which gives 20-24 AIC / 40-48 AIV per die and assumes the A2
/// clock. We model the 24/48 die.
Target make_a3() {
  Target t = make_a2();
  t.name = "A3";
  t.chip = "Ascend910_93";
  t.num_aic = 24;
  t.num_aiv = 48;
  t.clock_ghz = 1.85;
  return t;
}

/// Ascend 950 (950PR/DT). docs/hardware.md section 1 (asc-devkit architecture spec; AscendNPU-IR
/// NPUTargetSpec.td): 28-36 AIC / 56-72 AIV, we model 32/64 at 1.65 GHz; L1 512 KB, L0A/L0B
/// 64 KB, L0C 256 KB, UB 256 KB of which 248 KB usable by default; HBM ~1.6 TB/s. Data paths
/// (docs/hardware.md sections 1, 2): UB<->L1 on MTE3 (new), no GM->L0A/L0B. Casts add fp8.
Target make_950() {
  Target t = make_a2();
  t.name = "950";
  t.chip = "Ascend950";
  t.arch = Arch::Npu3510;
  t.num_aic = 32;
  t.num_aiv = 64;
  t.clock_ghz = 1.65;
  set(t.capacity, MemScope::L1, 524288);
  set(t.capacity, MemScope::L0C, 262144);
  set(t.capacity, MemScope::UB, 253952);  // 248 KB default (256 KB physical)
  // The 3510 vector unit flushes subnormals in Exp, Ln, Sqrt, Rsqrt, Reciprocal and Div (their
  // INTRINSIC algorithms; asc-devkit "2201到3510架构变更", 计算单元, and the Div page's Subnormal
  // table: 1 / -5.0e-39 is -inf, 1.9e-39 / 7.7e-39 is NaN). Target::vector_flushes_subnormals.
  t.vector_flushes_subnormals = true;
  using S = MemScope;
  std::erase_if(t.copy_paths, [](const CopyPath& p) {
    return p.src == S::GM && (p.dst == S::L0A || p.dst == S::L0B);
  });
  // UB -> L1 is pushed by the AIV (the vector core writes its AIC's L1); L1 -> UB is pushed by
  // the AIC into an AIV's UB. Both on MTE3 (docs/hardware.md section 2).
  t.copy_paths.push_back({S::UB, S::L1, Pipe::MTE3, CoreKind::Vector});
  t.copy_paths.push_back({S::L1, S::UB, Pipe::MTE3, CoreKind::Cube});
  // fp8 (e4m3 / e5m2) conversions on 950 (docs/hardware.md section 1; exact mode
  // lists to be confirmed against the asc-devkit 950 Cast page): fp32 <-> fp8 and fp16 -> fp8.
  using D = DType;
  const std::vector<std::string> rint = {"CAST_RINT"};
  const std::vector<std::string> exact = {"CAST_NONE"};
  for (D f8 : {D::Float8E4M3, D::Float8E5M2}) {
    t.casts.push_back({D::Float32, f8, rint});
    t.casts.push_back({D::Float16, f8, rint});
    t.casts.push_back({f8, D::Float32, exact});
  }
  t.gm_bytes = int64_t{128} << 30;  // 950PR: 128 GB HiBL (vendor announcement)
  t.costs.hbm_bytes_per_s = 1.6e12;
  // The same example on the 950 (64 AIV): case 3 reads at 1.454 TB/s (docs/calibration.md).
  t.costs.hbm_stream_bytes_per_s = 1.454e12;
  // The 512 B alignment rule and the 2201 bank layout are A2/A3 pages; 950's bank layout (16
  // banks in 8 groups) and alignment figures are not modelled.
  t.costs.gm_unaligned_efficiency = 1;
  t.costs.bank_conflict_factor = 1;
  // 950's stated vector rates (docs/hardware.md section 4): Mul/Add 256 B a cycle, as A2's
  // simple row; Exp/Div 64 B a cycle: 4 cycles a fp32 repeat.
  t.costs.vector[CostClass::VecExpDiv] = {13, 4, 18};
  return t;
}

const std::vector<Target>& targets() {
  // The default target comes first.
  static const std::vector<Target> ts = {make_a2(), make_910b("910B3", "Ascend910B3"),
                                         make_910b("910B4", "Ascend910B4"), make_a3(), make_950()};
  return ts;
}

}  // namespace

std::optional<Pipe> Target::copy_pipe(MemScope src, MemScope dst) const {
  if (const CopyPath* p = copy_path(src, dst)) return p->pipe;
  return std::nullopt;
}

const CopyPath* Target::copy_path(MemScope src, MemScope dst) const {
  for (const auto& p : copy_paths)
    if (p.src == src && p.dst == dst) return &p;
  return nullptr;
}

bool Target::hard_event_ok(Pipe src, Pipe dst) const {
  return std::any_of(hard_events.begin(), hard_events.end(),
                     [&](const HardEvent& e) { return e.src == src && e.dst == dst; });
}

std::optional<CoreKind> Target::memory_core(MemScope s) const {
  if (std::find(cube_memories.begin(), cube_memories.end(), s) != cube_memories.end())
    return CoreKind::Cube;
  if (std::find(vector_memories.begin(), vector_memories.end(), s) != vector_memories.end())
    return CoreKind::Vector;
  return std::nullopt;
}

bool Target::pipe_on_core(Pipe p, CoreKind c) const {
  const auto& ps = c == CoreKind::Cube ? cube_pipes : vector_pipes;
  return std::find(ps.begin(), ps.end(), p) != ps.end();
}

std::string_view arch_name(Arch a) {
  return a == Arch::Npu2201 ? "2201" : "3510";
}

std::string_view cost_class_name(CostClass c) {
  // Cost-table row names (CostClass::Copy's row is named copy): not op names; no op lookup.
  static constexpr std::string_view kNames[kNumCostClasses] = {
      "copy",        "cube_load",  "mmad",     "vec_simple", "vec_composite",
      "vec_exp_div", "vec_reduce", "vec_sort", "scalar"};
  return kNames[static_cast<size_t>(c)];
}

const CostTable::VectorCost& CostTable::vector_cost(CostClass c) const {
  auto it = vector.find(c);
  TL_ASSERT(it != vector.end(), "the cost table has no row for {}", cost_class_name(c));
  return it->second;
}

const Target& get_target(std::string_view name) {
  for (const auto& t : targets())
    if (t.name == name || t.chip == name) return t;
  std::string known;
  for (const auto& t : targets()) known += (known.empty() ? "" : ", ") + t.name;
  throw Error(fmt::format("unknown target '{}'; known targets: {}", name, known));
}
const Target& default_target() {
  return targets().front();
}
std::vector<std::string> target_names() {
  std::vector<std::string> n;
  for (const auto& t : targets()) n.push_back(t.name);
  return n;
}

}  // namespace tl
