// The op-semantics table, region resolution and the shared element-movement helpers.
#include "exec.h"

#include <atomic>
#include <cstring>
#include <string>

#include "stale.h"
#include "tl/env.h"
#include "values.h"

#include <fmt/ranges.h>

namespace tl::npu {

namespace {
std::atomic<bool> g_plain_paths{false};
}  // namespace

bool plain_paths() {
  return g_plain_paths.load(std::memory_order_relaxed);
}
void refresh_plain_paths() {
  const std::string v = env_value("TL_NPU_PLAIN_PATHS");
  g_plain_paths.store(!v.empty() && v != "0", std::memory_order_relaxed);
}

namespace {
/// The semantics of every op, indexed by OpDef::id. Built once from the families' lists; an op
/// without semantics, two semantics for one op, or semantics naming no registered op are
/// registration errors, found the first time any kernel runs, not when that op first does.
const std::vector<ExecFn>& exec_table() {
  static const std::vector<ExecFn> table = [] {
    std::vector<ExecFn> t(all_ops().size(), nullptr);
    for (const auto& list : {move_execs(), cube_execs(), vector_execs(), reduce_sort_execs(),
                             debug_execs(), prim_execs()})
      for (const auto& e : list) {
        const OpDef* op = e.op;
        TL_ASSERT(!t[op->id], "T.{} has two virtual-NPU semantics", op->name);
        t[op->id] = e.fn;
      }
    // Developer-only ops never reach a backend: the developer passes lower them first.
    for (const OpDef* op : all_ops())
      TL_ASSERT(t[op->id] || op->developer_only, "T.{} has no virtual-NPU semantics", op->name);
    return t;
  }();
  return table;
}

/// The stale-data checker's rule of every op, indexed like the semantics: every op with
/// semantics has exactly one rule and every rule names an op with semantics, checked when the
/// table is built, so a new op cannot be forgotten.
const std::vector<StaleRule>& stale_table() {
  static const std::vector<StaleRule> table = [] {
    std::vector<StaleRule> t(all_ops().size(), nullptr);
    for (const auto& list : {move_stale_rules(), cube_stale_rules(), vector_stale_rules(),
                             reduce_sort_stale_rules(), debug_stale_rules(), prim_stale_rules()})
      for (const auto& e : list) {
        const OpDef* op = e.op;
        TL_ASSERT(!t[op->id], "T.{} has two stale-data rules", op->name);
        TL_ASSERT(exec_table()[op->id], "T.{} has a stale-data rule but no virtual-NPU semantics",
                  op->name);
        t[op->id] = e.rule;
      }
    for (const OpDef* op : all_ops())
      TL_ASSERT(t[op->id] || !exec_table()[op->id],
                "T.{} has virtual-NPU semantics but no stale-data rule", op->name);
    return t;
  }();
  return table;
}
}  // namespace

ExecFn find_exec(const OpDef* op) {
  return exec_table()[op->id];
}
bool implements(const OpDef& op) {
  return op.id >= 0 && exec_table()[op.id] != nullptr;
}
StaleRule find_stale_rule(const OpDef* op) {
  return stale_table()[op->id];
}
void check_op_tables() {
  (void)stale_table();
}
bool has_stale_rule(const OpDef& op) {
  return op.id >= 0 && stale_table()[op.id] != nullptr;
}

// ---------------------------------------------------------------------------------------------
// Region resolution

uint8_t* TileRef::at(std::span<const int64_t> idx) const {
  int64_t off = 0;
  for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * strides[d];
  return base + off * dtype_bytes(dtype);
}

uint8_t* TileRef::at_flat(int64_t flat) const {
  int64_t off = 0;
  for (size_t d = extent.size(); d-- > 0;) {
    off += (start[d] + flat % extent[d]) * strides[d];
    flat /= extent[d];
  }
  return base + off * dtype_bytes(dtype);
}

uint8_t* row_ptr_nd(const TileRef& t, int64_t r) {
  size_t n = t.extent.size();
  int64_t off = t.start[n - 1] * t.strides[n - 1];
  for (size_t d = n - 1; d-- > 0;) {
    off += (t.start[d] + r % t.extent[d]) * t.strides[d];
    r /= t.extent[d];
  }
  return t.base + off * dtype_bytes(t.dtype);
}

namespace {
/// A region bound: most are literals, read directly instead of through the evaluator.
int64_t bound(Core& c, const Expr& e) {
  if (e.kind() == ExprKind::IntImm) return static_cast<const IntImmNode*>(e.get())->value;
  return c.eval_int(e);
}
}  // namespace

TileRef Core::resolve(const BufferRegion& r, std::string_view op, std::string_view operand) {
  const BufferInfo& info = program.buffer(r.buffer.get());
  const BufferNode& b = *r.buffer.get();
  TileRef t;
  t.buffer = &b;
  t.scope = b.scope;
  t.dtype = b.dtype;
  if (info.scope == MemScope::Var)
    fail(fmt::format("T.{}: operand '{}' is the scalar variable '{}'", op, operand, b.name));
  if (r.ranges.size() > Dims::kMaxRank)
    fail(fmt::format("T.{}: operand '{}' ('{}') has rank {}; the virtual NPU supports up to {}", op,
                     operand, b.name, r.ranges.size(), Dims::kMaxRank));
  if (info.scope == MemScope::GM) {
    const Tensor& ten = launch.tensors[info.param];
    t.base = ten.data();
    t.shape.assign(ten.shape().begin(), ten.shape().end());  // in place: no temporary Dims
    t.strides.assign(ten.strides().begin(), ten.strides().end());
  } else {
    auto& m = mem[static_cast<size_t>(info.scope)];
    if (m.empty())
      fail(fmt::format("T.{}: operand '{}' uses '{}' in {}, which the {} does not have", op,
                       operand, b.name, scope_name(info.scope),
                       kind == CoreKind::Cube ? "AIC" : "AIV"));
    t.base = m.data() + info.offset;
    t.shape.assign(info.shape.begin(), info.shape.end());  // constant, planned once
    t.strides.assign(info.strides.begin(), info.strides.end());
  }
  for (size_t d = 0; d < r.ranges.size(); ++d) {
    int64_t s = bound(*this, r.ranges[d].min), e = bound(*this, r.ranges[d].extent);
    // `e > shape - s` rather than `s + e > shape`, which overflows for a start near INT64_MAX
    // (the region then passed and the copy reached before the buffer). Every address the op
    // semantics compute from a checked region lies inside the buffer: no further overflow.
    if (e < 0 || s < 0 || s > t.shape[d] || e > t.shape[d] - s) {
      int64_t end;
      std::string e_str =
          __builtin_add_overflow(s, e, &end) ? fmt::format("{} + {}", s, e) : std::to_string(end);
      fail(fmt::format(
          "T.{}: out-of-bounds access to '{}' ({}, shape [{}]) by operand '{}': dimension {} "
          "covers [{}, {}), outside [0, {})",
          op, b.name, scope_name(b.scope), fmt::join(t.shape, ", "), operand, d, s, e_str,
          t.shape[d]));
    }
    t.start.push_back(s);
    t.extent.push_back(e);
  }
  return t;
}

TileRef Core::operand(const TileOpNode& n, std::string_view name) {
  const TileArg* a = op_operand(n, name);
  TL_ASSERT(a && a->is_region(), "T.{}: operand {} is not a region", n.op->name, name);
  TileRef t = resolve(a->region, n.op->name, name);
  if (n.op->unit != OpUnit::Debug)
    check_start_alignment(t, n.op->name, name);  // printing reads anywhere
  return t;
}

/// An instruction's on-chip operand must start on its memory's alignment (UB and L1 32 B, L0A
/// and L0B 512 B, L0C 64 B on A2; docs/hardware.md section 5, "General constraints"): the chip
/// raises an exception for a misaligned address. The verifier checks constant starts; this is the
/// same rule at run time, where a start computed from a loop variable or a parameter is known.
void Core::check_start_alignment(const TileRef& t, std::string_view op, std::string_view name) {
  if (t.scope == MemScope::GM || t.numel() == 0) return;
  const int64_t align = program.target->align(t.scope);
  if (align <= 1) return;
  int64_t elem = 0;
  if (t.scope == MemScope::UB) {  // row-major: no layout lookup (and no allocation) per operand
    for (size_t d = 0; d < t.start.size(); ++d) elem += t.start[d] * t.strides[d];
  } else {  // the start read in place: an index vector was a malloc and free per cube operand
    int64_t run;
    elem = storage_offset(t, t.start.data(), &run);
  }
  const auto byte = static_cast<int64_t>(t.base - mem[static_cast<size_t>(t.scope)].data()) +
                    elem * dtype_bytes(t.dtype);
  if (byte % align != 0)
    fail(
        fmt::format("T.{}: operand '{}' ('{}' from element [{}]) starts at byte {} of {}, not on a "
                    "{}-byte boundary "
                    "(the chip raises an exception for a misaligned {} address)",
                    op, name, t.buffer->name, fmt::join(t.start, ", "), byte, scope_name(t.scope),
                    align, scope_name(t.scope)));
}

bool Core::has_operand(const TileOpNode& n, std::string_view name) const {
  return op_operand(n, name) != nullptr;
}

// ---------------------------------------------------------------------------------------------
// Element movement

void load_f32(const TileRef& t, std::vector<float>& out) {
  int64_t R = t.rows(), C = t.cols();
  out.resize(R * C);
  for (int64_t r = 0; r < R; ++r)
    convert(t.dtype, row_ptr(t, r), DType::Float32, out.data() + r * C, C);
}
void store_f32(const TileRef& t, const std::vector<float>& in, RoundMode m) {
  int64_t R = t.rows(), C = t.cols();
  for (int64_t r = 0; r < R; ++r)
    convert(DType::Float32, in.data() + r * C, t.dtype, row_ptr(t, r), C, m);
}
void load_i64(const TileRef& t, std::vector<int64_t>& out) {
  int64_t R = t.rows(), C = t.cols(), es = dtype_bytes(t.dtype);
  out.resize(R * C);
  for (int64_t r = 0; r < R; ++r) {
    uint8_t* p = row_ptr(t, r);
    for (int64_t c = 0; c < C; ++c)
      out[r * C + c] = static_cast<int64_t>(load_value(t.dtype, p + c * es));
  }
}
void store_i64(const TileRef& t, const std::vector<int64_t>& in) {
  int64_t R = t.rows(), C = t.cols(), es = dtype_bytes(t.dtype);
  for (int64_t r = 0; r < R; ++r) {
    uint8_t* p = row_ptr(t, r);
    for (int64_t c = 0; c < C; ++c) {
      int64_t w = wrap_int(t.dtype, in[r * C + c]);
      std::memcpy(p + c * es, &w, es);
    }
  }
}
void load_bytes(const TileRef& t, std::vector<uint8_t>& out) {
  int64_t R = t.rows(), row = t.cols() * dtype_bytes(t.dtype);
  out.resize(R * row);
  for (int64_t r = 0; r < R; ++r) std::memcpy(out.data() + r * row, row_ptr(t, r), row);
}
void store_bytes(const TileRef& t, const std::vector<uint8_t>& in) {
  int64_t R = t.rows(), row = t.cols() * dtype_bytes(t.dtype);
  for (int64_t r = 0; r < R; ++r) std::memcpy(row_ptr(t, r), in.data() + r * row, row);
}

RoundMode parse_round_mode(const std::string& s) {
  if (s == "CAST_RINT") return RoundMode::Rint;
  if (s == "CAST_FLOOR") return RoundMode::Floor;
  if (s == "CAST_CEIL") return RoundMode::Ceil;
  if (s == "CAST_ROUND") return RoundMode::Round;
  if (s == "CAST_TRUNC") return RoundMode::Trunc;
  if (s == "CAST_ODD") return RoundMode::Odd;
  return RoundMode::None;
}

}  // namespace tl::npu
