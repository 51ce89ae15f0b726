// The chip descriptions. Every number carries its source; see DESIGN.md section 3 and
// ASCENDC_API.md (asc-devkit docs) for the published facts these tables restate.
#include <algorithm>

#include "tl/target.h"

namespace tl {
namespace {

void set(std::array<int64_t, kNumMemScopes>& a, MemScope s, int64_t v) { a[static_cast<size_t>(s)] = v; }

/// Atlas A2 training series, Ascend 910B2: the default target.
Target make_a2() {
  Target t;
  t.name = "A2";
  t.chip = "Ascend910B2";
  // 24 AIC / 48 AIV at 1.85 GHz (asc-devkit architecture spec; DESIGN.md 3.1).
  t.num_aic = 24;
  t.num_aiv = 48;
  t.clock_ghz = 1.85;
  // Capacities as the TileLang-Ascend code generator sizes its TBufs (ASCENDC_API.md, kernel
  // skeleton): L1 524032 B (512 KB - 256 B), L0A/L0B 64 KB, L0C 128 KB, UB 196352 B
  // (192 KB - 256 B).
  set(t.capacity, MemScope::L1, 524032);
  set(t.capacity, MemScope::L0A, 65536);
  set(t.capacity, MemScope::L0B, 65536);
  set(t.capacity, MemScope::L0C, 131072);
  set(t.capacity, MemScope::UB, 196352);
  // Start-address alignment: UB, L1 32 B; L0A/L0B 512 B; L0C 64 B (ASCENDC_API.md).
  set(t.alignment, MemScope::GM, 1);
  set(t.alignment, MemScope::L1, 32);
  set(t.alignment, MemScope::L0A, 512);
  set(t.alignment, MemScope::L0B, 512);
  set(t.alignment, MemScope::L0C, 64);
  set(t.alignment, MemScope::UB, 32);
  set(t.alignment, MemScope::Var, 1);
  t.gm_bytes = int64_t{64} << 30;  // 64 GiB HBM
  // Legal paths and their pipes (DESIGN.md 3.2). Not on A2: UB<->L1, L0C->UB, GM->GM.
  using S = MemScope;
  t.copy_paths = {
      {S::GM, S::UB, Pipe::MTE2},   {S::GM, S::L1, Pipe::MTE2},   {S::GM, S::L0A, Pipe::MTE2},
      {S::GM, S::L0B, Pipe::MTE2},  {S::UB, S::GM, Pipe::MTE3},   {S::UB, S::UB, Pipe::V},
      {S::L1, S::L0A, Pipe::MTE1},  {S::L1, S::L0B, Pipe::MTE1},  {S::L0C, S::GM, Pipe::FIX},
      {S::L0C, S::L1, Pipe::FIX},   {S::L1, S::GM, Pipe::MTE3},
  };
  // Mmad dtypes on A2 (ASCENDC_API.md, Cube: Mmad).
  t.mma_dtypes = {{DType::Int8, DType::Int8, DType::Int32},
                  {DType::Float16, DType::Float16, DType::Float32},
                  {DType::BFloat16, DType::BFloat16, DType::Float32},
                  {DType::Float32, DType::Float32, DType::Float32}};
  // Fixpipe conversions (ASCENDC_API.md, Fixpipe L0C->GM / L0C->L1).
  for (DType to : {DType::Int8, DType::UInt8, DType::Float16, DType::BFloat16, DType::Float32})
    t.fixpipe.push_back({S::GM, DType::Float32, to});
  for (DType to : {DType::Int8, DType::UInt8, DType::Float16, DType::Int32})
    t.fixpipe.push_back({S::GM, DType::Int32, to});
  for (DType to : {DType::Int8, DType::UInt8, DType::Float16, DType::BFloat16})
    t.fixpipe.push_back({S::L1, DType::Float32, to});
  for (DType to : {DType::Int8, DType::UInt8, DType::Float16})
    t.fixpipe.push_back({S::L1, DType::Int32, to});
  // Cast pairs and modes (ASCENDC_API.md, Vector: Cast).
  const std::vector<std::string> all = {"CAST_NONE", "CAST_RINT", "CAST_FLOOR", "CAST_CEIL",
                                        "CAST_ROUND", "CAST_TRUNC", "CAST_ODD"};
  const std::vector<std::string> rounding = {"CAST_NONE", "CAST_RINT", "CAST_FLOOR", "CAST_CEIL",
                                             "CAST_ROUND", "CAST_TRUNC"};
  const std::vector<std::string> exact = {"CAST_NONE"};
  using D = DType;
  t.casts = {
      {D::Float16, D::Float32, exact},    {D::Float32, D::Float16, all},
      {D::Float32, D::BFloat16, rounding}, {D::Float32, D::Int32, rounding},
      {D::Float32, D::Int16, rounding},   {D::Float32, D::Int64, rounding},
      {D::BFloat16, D::Float32, exact},   {D::Int32, D::Float32, rounding},
      {D::Int16, D::Float16, rounding},   {D::Int16, D::Float32, exact},
      {D::Int8, D::Float16, exact},       {D::UInt8, D::Float16, exact},
      {D::Float16, D::Int8, rounding},    {D::Float16, D::UInt8, rounding},
      {D::Float16, D::Int16, rounding},   {D::Float16, D::Int32, rounding},
      {D::Int32, D::Int16, exact},        {D::Int32, D::Int64, exact},
      {D::Int64, D::Int32, exact},        {D::Int64, D::Float32, rounding},
  };
  // Vector op dtypes (ASCENDC_API.md, Vector table).
  const std::vector<DType> arith = {D::Int16, D::Float16, D::Int32, D::Float32};
  const std::vector<DType> flt = {D::Float16, D::Float32};
  for (const char* op : {"tile.add", "tile.sub", "tile.mul", "tile.max", "tile.min"})
    t.vector_dtypes[op] = arith;
  t.vector_dtypes["tile.div"] = flt;
  for (const char* op : {"tile.exp", "tile.ln", "tile.sqrt", "tile.rsqrt", "tile.reciprocal",
                         "tile.abs", "tile.leaky_relu", "tile.sigmoid", "tile.silu", "tile.sin",
                         "tile.cos", "tile.round", "tile.axpy", "tile.clamp", "tile.select",
                         "reduce_sum", "reduce_max", "reduce_min", "sort", "topk", "merge_sort",
                         "init_sort_buf"})
    t.vector_dtypes[op] = flt;
  t.vector_dtypes["tile.relu"] = {D::Float16, D::Int32, D::Float32};
  t.vector_dtypes["tile.compare"] = {D::Float16, D::Float32, D::Int32};
  t.vector_dtypes["tile.fill"] = {D::Int16, D::UInt16, D::Float16, D::BFloat16, D::Int32,
                                  D::UInt32, D::Float32};
  t.vector_dtypes["tile.createvecindex"] = arith;
  t.vector_dtypes["tile.arith_progression"] = arith;
  for (const char* op : {"tile.bitwise_and", "tile.bitwise_or", "tile.bitwise_not"})
    t.vector_dtypes[op] = {D::Int16, D::UInt16};
  for (const char* op : {"tile.shift_left", "tile.shift_right"})
    t.vector_dtypes[op] = {D::Int16, D::UInt16, D::Int32, D::UInt32};
  t.vector_dtypes["tile.transpose"] = {D::Int16, D::UInt16, D::Float16, D::BFloat16};
  for (const char* op : {"tile.row_expand_add", "tile.row_expand_sub", "tile.row_expand_mul",
                         "tile.row_expand_max", "tile.row_expand_min"})
    t.vector_dtypes[op] = arith;
  t.vector_dtypes["tile.row_expand_div"] = flt;
  const std::vector<DType> any_dt = {D::Int8, D::UInt8, D::Int16, D::UInt16, D::Float16, D::BFloat16,
                                     D::Int32, D::UInt32, D::Float32};
  for (const char* op : {"tile.gather", "tile.gather_mask", "tile.broadcast"})
    t.vector_dtypes[op] = any_dt;
  // Event ids 0-7, 6-7 kept by the vendor runtime (ASCENDC_API.md, Synchronization).
  t.num_event_ids = 8;
  t.reserved_event_ids = {6, 7};
  // Cross-core flags: ids 0-15, SyncAll uses 11-14, > 15 pending sets hang (DESIGN.md 3.3).
  t.num_cross_flags = 16;
  t.sync_all_cross_flags = {11, 12, 13, 14};
  t.max_pending_cross_sets = 15;
  // Costs (DESIGN.md 3.4; msKPP arch tables).
  auto& c = t.costs;
  c.copy_bytes_per_cycle = {{"global->UB", 128}, {"global->L1", 256}, {"L1->L0A", 256},
                            {"L1->L0B", 128},    {"L0C->global", 128}, {"L0C->L1", 256},
                            {"UB->UB", 128},     {"UB->global", 128}};
  c.copy_latency_bytes = {{"global->UB", 30 * 1024}};
  c.vector = {{"simple", {10, 2, 14}}, {"exp", {13, 2, 18}}, {"div", {11, 4, 19}},
              {"reduce", {14, 7, 32}}, {"merge_sort", {20, 78, 0}}};
  return t;
}

const std::vector<Target>& targets() {
  static const std::vector<Target> ts = {make_a2()};
  return ts;
}

}  // namespace

std::optional<Pipe> Target::copy_pipe(MemScope src, MemScope dst) const {
  for (const auto& p : copy_paths)
    if (p.src == src && p.dst == dst) return p.pipe;
  return std::nullopt;
}

bool Target::vector_dtype_ok(std::string_view op, DType t) const {
  auto it = vector_dtypes.find(std::string(op));
  if (it == vector_dtypes.end()) return true;
  return std::find(it->second.begin(), it->second.end(), t) != it->second.end();
}

const Target& get_target(std::string_view name) {
  for (const auto& t : targets())
    if (t.name == name || t.chip == name) return t;
  std::string known;
  for (const auto& t : targets()) known += (known.empty() ? "" : ", ") + t.name;
  throw Error(fmt::format("unknown target '{}'; known targets: {}", name, known));
}
const Target& default_target() { return targets().front(); }
std::vector<std::string> target_names() {
  std::vector<std::string> n;
  for (const auto& t : targets()) n.push_back(t.name);
  return n;
}

}  // namespace tl
