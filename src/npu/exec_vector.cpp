// Semantics of the vector tile ops (T.tile.*) on the virtual NPU. Float ops widen their
// operands to fp32 (exact), compute in fp32 and round the result to the destination dtype
// (RINT) - the vector unit's per-instruction rounding (numerics.h). Integer ops compute in
// 64 bits and wrap to the destination width. Subnormals are kept (IEEE), except in the ops
// marked OpDef::flushes_subnormals on a target whose vector unit flushes them (950): those read
// subnormal inputs as zeros and write subnormal results as zeros of their sign.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "broadcast_rows.h"
#include "exec.h"
#include "tl/ops.h"
#include "values.h"

namespace tl::npu {
namespace {

thread_local std::vector<float> g_a, g_b, g_d;
thread_local std::vector<int64_t> g_ia, g_ib;

// The fp32 row loops of the elementwise ops, compiled three times: for the baseline ISA, for
// AVX2 and for AVX-512F, picked at run time (host_has_avx2, host_has_avx512f). Each performs the
// same IEEE fp32 operation per element: every expression of vector_ops.def's binary and
// row-expand rows is a single operation (or comparisons and a select), so the FMA the AVX-512
// target allows has nothing to contract, and the results are bit-identical, but for the payload
// of a NaN result whose operands are both NaN: which operand an x86 instruction takes it from
// follows the compiler's operand order (docs/virtual_npu.md, Numerics), so plain paths run the
// same loops and VectorRowLoops.* checks them against the scalar expressions. The AVX-512 loop
// moves 16 lanes a step where AVX2 moved 8: the max / add trees and the row-expand sub / mul of
// softmax's resident kernel were 13 % of its host samples at 8 lanes (issue 31, branch
// softhost).
#if defined(__x86_64__) || defined(__i386__)
#define TL_ROW_LOOPS_AVX2 1
#endif
}  // namespace
bool host_has_avx512f();  // src/support/numerics.cpp (bf16 <-> fp32 convert picks on it too)
namespace {
#define TL_DEFINE_ROW_LOOPS(SUFFIX, ATTR)                                              \
  template <typename F>                                                                \
  ATTR void row_tt##SUFFIX(float* d, const float* a, const float* b, int64_t n, F f) { \
    for (int64_t k = 0; k < n; ++k) d[k] = f(a[k], b[k]);                              \
  }                                                                                    \
  template <typename F>                                                                \
  ATTR void row_ts##SUFFIX(float* d, const float* a, float y, int64_t n, F f) {        \
    for (int64_t k = 0; k < n; ++k) d[k] = f(a[k], y);                                 \
  }
TL_DEFINE_ROW_LOOPS(_base, )
#ifdef TL_ROW_LOOPS_AVX2
TL_DEFINE_ROW_LOOPS(_avx2, __attribute__((target("avx2"))))
TL_DEFINE_ROW_LOOPS(_avx512, __attribute__((target("avx512f,prefer-vector-width=512"))))
#endif
#undef TL_DEFINE_ROW_LOOPS

/// d[k] = f(a[k], b[k]) for k < n (d may alias a or b exactly).
template <typename F>
void row_tile_tile(float* d, const float* a, const float* b, int64_t n, F f) {
#ifdef TL_ROW_LOOPS_AVX2
  if (host_has_avx512f()) return row_tt_avx512(d, a, b, n, f);
  if (host_has_avx2()) return row_tt_avx2(d, a, b, n, f);
#endif
  row_tt_base(d, a, b, n, f);
}
/// d[k] = f(a[k], y) for k < n (d may alias a exactly).
template <typename F>
void row_tile_scalar(float* d, const float* a, float y, int64_t n, F f) {
#ifdef TL_ROW_LOOPS_AVX2
  if (host_has_avx512f()) return row_ts_avx512(d, a, y, n, f);
  if (host_has_avx2()) return row_ts_avx2(d, a, y, n, f);
#endif
  row_ts_base(d, a, y, n, f);
}

/// Second operand: a tile, or a scalar broadcast to every element (rounded to the op dtype).
struct Operand2 {
  bool scalar = false;
  double value = 0;
  TileRef tile;
};
Operand2 second(const TileOpNode& n, Core& c, std::string_view name, DType op_dtype) {
  const TileArg* a = op_operand(n, name);
  Operand2 o;
  if (a->is_region()) {
    o.tile = c.resolve(a->region, n.op->name, name);
  } else {
    o.scalar = true;
    o.value = c.eval_float(a->scalar);
    if (is_float(op_dtype)) o.value = round_value(op_dtype, o.value);
  }
  return o;
}

/// Whether op `n` flushes subnormals on this core's target (OpDef::flushes_subnormals on a
/// Target::vector_flushes_subnormals chip: 950's Exp, Ln, Sqrt, Rsqrt, Reciprocal and Div).
bool flushes(const TileOpNode& n, const Core& c) {
  return n.op->flushes_subnormals && c.program.target->vector_flushes_subnormals;
}
/// x (a value of dtype t, widened to fp32), or a zero of its sign when it is subnormal in t:
/// below fp16's smallest normal 2^-14 for float16, below fp32's 2^-126 for float32 and bfloat16
/// (which shares fp32's exponent range). NaN and inf are kept.
float flush_subnormal(DType t, float x) {
  const float smallest_normal =
      t == DType::Float16 ? 6.103515625e-05f : std::numeric_limits<float>::min();
  return x != 0 && std::fabs(x) < smallest_normal ? std::copysign(0.0f, x) : x;
}
void flush_inputs(DType t, std::vector<float>& v) {
  for (auto& x : v) x = flush_subnormal(t, x);
}
/// Results rounded to the destination dtype, then flushed: a result is subnormal when it rounds
/// to a subnormal of that dtype.
void flush_results(DType t, std::vector<float>& v) {
  for (auto& x : v) x = flush_subnormal(t, round_to(t, x));
}

void check_same_numel(const TileOpNode& n, Core& c, const TileRef& d, const TileRef& s,
                      const char* name) {
  if (d.numel() != s.numel())
    c.fail(fmt::format("T.{}: operand '{}' has {} elements but 'dst' has {}", n.op->name, name,
                       s.numel(), d.numel()));
}

/// fp32 operands whose rows line up are computed in place, row by row, without staging.
bool rows_align(const TileRef& x, const TileRef& y) {
  return x.dtype == DType::Float32 && y.dtype == DType::Float32 && x.cols() == y.cols() &&
         x.rows() == y.rows();
}

template <typename F>
void float_binary(const TileOpNode& n, Core& c, F f) {
  TileRef d = c.operand(n, "dst"), a = c.operand(n, "src0");
  check_same_numel(n, c, d, a, "src0");
  Operand2 b = second(n, c, "src1", a.dtype);
  if (flushes(n, c)) {  // staged, with the inputs and results flushed
    load_f32(a, g_a);
    flush_inputs(a.dtype, g_a);
    g_d.resize(g_a.size());
    if (b.scalar) {
      float y = flush_subnormal(a.dtype, static_cast<float>(b.value));
      for (size_t i = 0; i < g_a.size(); ++i) g_d[i] = f(g_a[i], y);
    } else {
      check_same_numel(n, c, d, b.tile, "src1");
      load_f32(b.tile, g_b);
      flush_inputs(b.tile.dtype, g_b);
      for (size_t i = 0; i < g_a.size(); ++i) g_d[i] = f(g_a[i], g_b[i]);
    }
    flush_results(d.dtype, g_d);
    store_f32(d, g_d);
    return;
  }
  if (rows_align(d, a) && (b.scalar || rows_align(d, b.tile))) {
    int64_t C = d.cols();
    float y = static_cast<float>(b.value);
    for (int64_t r = 0; r < d.rows(); ++r) {
      float* dp = reinterpret_cast<float*>(row_ptr(d, r));
      const float* ap = reinterpret_cast<const float*>(row_ptr(a, r));
      if (b.scalar)
        row_tile_scalar(dp, ap, y, C, f);
      else
        row_tile_tile(dp, ap, reinterpret_cast<const float*>(row_ptr(b.tile, r)), C, f);
    }
    return;
  }
  load_f32(a, g_a);
  g_d.resize(g_a.size());
  if (b.scalar) {
    float y = static_cast<float>(b.value);
    for (size_t i = 0; i < g_a.size(); ++i) g_d[i] = f(g_a[i], y);
  } else {
    check_same_numel(n, c, d, b.tile, "src1");
    load_f32(b.tile, g_b);
    for (size_t i = 0; i < g_a.size(); ++i) g_d[i] = f(g_a[i], g_b[i]);
  }
  store_f32(d, g_d);
}

template <typename F>
void int_binary(const TileOpNode& n, Core& c, F f) {
  TileRef d = c.operand(n, "dst"), a = c.operand(n, "src0");
  check_same_numel(n, c, d, a, "src0");
  Operand2 b = second(n, c, "src1", a.dtype);
  load_i64(a, g_ia);
  if (b.scalar) {
    g_ib.assign(g_ia.size(), static_cast<int64_t>(b.value));
  } else {
    check_same_numel(n, c, d, b.tile, "src1");
    load_i64(b.tile, g_ib);
  }
  for (size_t i = 0; i < g_ia.size(); ++i) g_ia[i] = f(g_ia[i], g_ib[i]);
  store_i64(d, g_ia);
}

/// The dtype of a region operand, without resolving the region (the op resolves it later).
DType operand_dtype(const TileOpNode& n, std::string_view name) {
  const TileArg* a = op_operand(n, name);
  TL_ASSERT(a && a->is_region(), "T.{}: operand {} is not a region", n.op->name, name);
  return a->region.buffer->dtype;
}

template <typename FF, typename FI>
void binary(const TileOpNode& n, Core& c, FF ff, FI fi) {
  DType t = operand_dtype(n, "dst");
  if (is_float(t))
    float_binary(n, c, ff);
  else
    int_binary(n, c, fi);
}

// A tag type per unary op of vector_ops.def (Unary_exp, ...), naming its batched rows below.
#define TL_VECTOR_UNARY(NAME, ...) struct Unary_##NAME;
#include "tl/vector_ops.def"

/// The batched form of a unary op: `Rows::run(d, s, n)` sets d[k] = f(s[k]) for k < n, bit for
/// bit as the op's element expression f would (d may be s exactly). Ops without one keep
/// `has = false` and run f per element; exp, sigmoid and silu have one (their exp runs several
/// lanes at a time, exp_f32).
template <typename Op>
struct UnaryRows {
  static constexpr bool has = false;
  static void run(float*, const float*, int64_t) {}
};

template <typename Rows, typename F>
void float_unary(const TileOpNode& n, Core& c, F f) {
  TileRef d = c.operand(n, "dst"), s = c.operand(n, "src");
  check_same_numel(n, c, d, s, "src");
  const bool flush = flushes(n, c);
  // TL_NPU_PLAIN_PATHS=1 keeps the element expression, so the batched rows are compared with it
  // (tests/npu/fast_paths_test.cpp).
  const bool batched = Rows::has && !plain_paths();
  if (rows_align(d, s) && !flush) {
    for (int64_t r = 0; r < d.rows(); ++r) {
      float* dp = reinterpret_cast<float*>(row_ptr(d, r));
      const float* sp = reinterpret_cast<const float*>(row_ptr(s, r));
      if (batched)
        Rows::run(dp, sp, d.cols());
      else
        for (int64_t k = 0; k < d.cols(); ++k) dp[k] = f(sp[k]);
    }
    return;
  }
  load_f32(s, g_a);
  if (flush) flush_inputs(s.dtype, g_a);
  if (batched)
    Rows::run(g_a.data(), g_a.data(), static_cast<int64_t>(g_a.size()));
  else
    for (auto& x : g_a) x = f(x);
  if (flush) flush_results(d.dtype, g_a);
  store_f32(d, g_a);
}
template <typename F>
void float_unary(const TileOpNode& n, Core& c, F f) {
  float_unary<UnaryRows<void>>(n, c, f);
}

void band(const TileOpNode& n, Core& c) {
  binary(
      n, c, [](float a, float) -> float { return a; },
      [](int64_t a, int64_t b) -> int64_t { return a & b; });
}
void bor(const TileOpNode& n, Core& c) {
  binary(
      n, c, [](float a, float) -> float { return a; },
      [](int64_t a, int64_t b) -> int64_t { return a | b; });
}
void bxor(const TileOpNode& n, Core& c) {
  binary(
      n, c, [](float a, float) -> float { return a; },
      [](int64_t a, int64_t b) -> int64_t { return a ^ b; });
}

void relu(const TileOpNode& n, Core& c) {
  if (is_float(operand_dtype(n, "dst")))
    return float_unary(n, c, [](float x) { return x > 0 ? x : (x != x ? x : 0.0f); });
  TileRef d = c.operand(n, "dst"), s = c.operand(n, "src");
  check_same_numel(n, c, d, s, "src");
  load_i64(s, g_ia);
  for (auto& x : g_ia) x = std::max<int64_t>(x, 0);
  store_i64(d, g_ia);
}

void bnot(const TileOpNode& n, Core& c) {
  TileRef d = c.operand(n, "dst"), s = c.operand(n, "src");
  check_same_numel(n, c, d, s, "src");
  load_i64(s, g_ia);
  for (auto& x : g_ia) x = ~x;
  store_i64(d, g_ia);
}
void shift(const TileOpNode& n, Core& c, bool left) {
  TileRef d = c.operand(n, "dst"), s = c.operand(n, "src");
  check_same_numel(n, c, d, s, "src");
  int64_t bits = c.eval_int(op_operand(n, "bits")->scalar);
  load_i64(s, g_ia);
  for (auto& x : g_ia) {
    if (left)
      x = static_cast<int64_t>(static_cast<uint64_t>(x) << (bits & 63));
    else if (is_unsigned_int(s.dtype))
      x = static_cast<int64_t>(static_cast<uint64_t>(x) >> (bits & 63));
    else
      x >>= (bits & 63);
  }
  store_i64(d, g_ia);
}
void shl(const TileOpNode& n, Core& c) {
  shift(n, c, true);
}
void shr(const TileOpNode& n, Core& c) {
  shift(n, c, false);
}

float scalar_of(const TileOpNode& n, Core& c, const char* name, DType t) {
  return static_cast<float>(round_value(t, c.eval_float(op_operand(n, name)->scalar)));
}

void axpy(const TileOpNode& n, Core& c) {
  TileRef d = c.operand(n, "dst"), s = c.operand(n, "src");
  check_same_numel(n, c, d, s, "src");
  float alpha = scalar_of(n, c, "alpha", s.dtype);
  load_f32(s, g_a);
  load_f32(d, g_d);
  for (size_t i = 0; i < g_d.size(); ++i) g_d[i] = g_d[i] + alpha * g_a[i];
  store_f32(d, g_d);
}
void leaky_relu(const TileOpNode& n, Core& c) {
  float alpha = scalar_of(n, c, "alpha", operand_dtype(n, "dst"));
  float_unary(n, c, [alpha](float x) { return x >= 0 ? x : alpha * x; });
}
void clamp(const TileOpNode& n, Core& c) {
  DType t = operand_dtype(n, "dst");
  float lo = scalar_of(n, c, "lo", t), hi = scalar_of(n, c, "hi", t);
  float_unary(n, c, [lo, hi](float x) { return std::min(std::max(x, lo), hi); });
}

void cast(const TileOpNode& n, Core& c) {
  TileRef d = c.operand(n, "dst"), s = c.operand(n, "src");
  check_same_numel(n, c, d, s, "src");
  RoundMode m = parse_round_mode(n.attr_str("mode"));
  if (s.dtype == DType::Float32 && d.dtype == DType::Float32) {
    // Cast float -> float rounds to an integral value in the mode ("将src按照roundMode取整，仍以
    // float格式存入dst中", AscendC Cast, table 1); infinities and NaN pass through.
    std::vector<float> v;
    load_f32(s, v);
    for (auto& x : v) x = static_cast<float>(round_integral(x, m));
    store_f32(d, v);
    return;
  }
  int64_t C = s.cols();
  if (d.cols() == C && d.rows() == s.rows()) {
    for (int64_t r = 0; r < s.rows(); ++r)
      convert(s.dtype, row_ptr(s, r), d.dtype, row_ptr(d, r), C, m);
    return;
  }
  std::vector<uint8_t> tmp(d.numel() * dtype_bytes(d.dtype));
  std::vector<uint8_t> src;
  load_bytes(s, src);
  convert(s.dtype, src.data(), d.dtype, tmp.data(), s.numel(), m);
  store_bytes(d, tmp);
}

bool compare_values(const std::string& mode, double a, double b) {
  if (mode == "LT") return a < b;
  if (mode == "GT") return a > b;
  if (mode == "EQ") return a == b;
  if (mode == "LE") return a <= b;
  if (mode == "GE") return a >= b;
  return a != b;
}
void compare(const TileOpNode& n, Core& c) {
  TileRef d = c.operand(n, "dst"), a = c.operand(n, "src0");
  Operand2 b = second(n, c, "src1", a.dtype);
  const std::string& mode = n.attr_str("mode");
  int64_t count = a.numel();
  if (!b.scalar && b.tile.numel() != count)
    c.fail(fmt::format("T.tile.compare: 'src1' has {} elements but 'src0' has {}", b.tile.numel(),
                       count));
  // Integers compare exactly (int32 values above 2^24 do not survive a trip through fp32).
  bool integer = is_int(a.dtype);
  if (integer) {
    load_i64(a, g_ia);
    if (b.scalar)
      g_ib.assign(g_ia.size(), static_cast<int64_t>(b.value));
    else
      load_i64(b.tile, g_ib);
  } else {
    load_f32(a, g_a);
    if (!b.scalar) load_f32(b.tile, g_b);
  }
  if (d.numel() * dtype_bytes(d.dtype) * 8 < count)
    c.fail(fmt::format("T.tile.compare: 'dst' holds {} bits, {} elements are compared",
                       d.numel() * dtype_bytes(d.dtype) * 8, count));
  std::vector<uint8_t> bits((d.numel() * dtype_bytes(d.dtype)), 0);
  load_bytes(d, bits);
  std::fill(bits.begin(), bits.begin() + (count + 7) / 8, 0);
  for (int64_t i = 0; i < count; ++i) {
    // The sign of a - b without computing it (int64 operands may overflow the difference).
    bool hit = integer ? compare_values(mode, (g_ia[i] > g_ib[i]) - (g_ia[i] < g_ib[i]), 0.0)
                       : compare_values(mode, g_a[i], b.scalar ? b.value : g_b[i]);
    if (hit) bits[i / 8] |= static_cast<uint8_t>(1u << (i % 8));
  }
  store_bytes(d, bits);
}

void select(const TileOpNode& n, Core& c) {
  TileRef d = c.operand(n, "dst"), m = c.operand(n, "mask"), a = c.operand(n, "src0");
  check_same_numel(n, c, d, a, "src0");
  Operand2 b = second(n, c, "src1", a.dtype);
  if (!b.scalar) check_same_numel(n, c, d, b.tile, "src1");
  int64_t mode = n.attr_int("mode");
  std::vector<uint8_t> bits;
  load_bytes(m, bits);
  load_f32(a, g_a);
  if (!b.scalar) load_f32(b.tile, g_b);
  int64_t per_repeat = 256 / dtype_bytes(d.dtype);
  g_d.resize(g_a.size());
  for (size_t i = 0; i < g_a.size(); ++i) {
    int64_t bit = mode == 0 ? static_cast<int64_t>(i) % per_repeat : static_cast<int64_t>(i);
    if (bit / 8 >= static_cast<int64_t>(bits.size()))
      c.fail(fmt::format("T.tile.select: 'mask' has {} bits, element {} needs bit {}",
                         bits.size() * 8, i, bit));
    bool pick = (bits[bit / 8] >> (bit % 8)) & 1;
    g_d[i] = pick ? g_a[i] : (b.scalar ? static_cast<float>(b.value) : g_b[i]);
  }
  store_f32(d, g_d);
}

void fill(const TileOpNode& n, Core& c) {
  TileRef d = c.operand(n, "dst");
  double v = c.eval_float(op_operand(n, "value")->scalar);
  int64_t es = dtype_bytes(d.dtype), cols = d.cols();
  std::vector<uint8_t> row(cols * es);
  store_value(d.dtype, row.data(), v);
  for (int64_t k = 1; k < cols; ++k) std::memcpy(row.data() + k * es, row.data(), es);
  for (int64_t r = 0; r < d.rows(); ++r) std::memcpy(row_ptr(d, r), row.data(), row.size());
}

void progression(const TileOpNode& n, Core& c, double first, double diff, int64_t count) {
  TileRef d = c.operand(n, "dst");
  if (count > d.numel())
    c.fail(fmt::format("T.{}: count {} exceeds the {} elements of 'dst'", n.op->name, count,
                       d.numel()));
  int64_t es = dtype_bytes(d.dtype);
  for (int64_t i = 0; i < count; ++i) {
    double v = is_float(d.dtype) ? round_value(d.dtype, first + static_cast<double>(i) * diff)
                                 : first + static_cast<double>(i) * diff;
    store_value(d.dtype, d.at_flat(i), v);
  }
  (void)es;
}
void createvecindex(const TileOpNode& n, Core& c) {
  progression(n, c, c.eval_float(op_operand(n, "first")->scalar), 1, c.operand(n, "dst").numel());
}
void arith_progression(const TileOpNode& n, Core& c) {
  int64_t count = c.has_operand(n, "count") ? c.eval_int(op_operand(n, "count")->scalar)
                                            : c.operand(n, "dst").numel();
  progression(n, c, c.eval_float(op_operand(n, "first")->scalar),
              c.eval_float(op_operand(n, "diff")->scalar), count);
}

void gather(const TileOpNode& n, Core& c) {
  TileRef d = c.operand(n, "dst"), s = c.operand(n, "src"), o = c.operand(n, "offsets");
  int64_t base = c.has_operand(n, "base") ? c.eval_int(op_operand(n, "base")->scalar) : 0;
  load_i64(o, g_ia);
  int64_t es = dtype_bytes(s.dtype);
  if (static_cast<int64_t>(g_ia.size()) < d.numel())
    c.fail(fmt::format("T.tile.gather: 'offsets' has {} elements, 'dst' needs {}", g_ia.size(),
                       d.numel()));
  std::vector<uint8_t> out(d.numel() * es);
  for (int64_t i = 0; i < d.numel(); ++i) {
    int64_t off = g_ia[i] & 0xffffffff, byte, e = -1;
    bool wrapped = __builtin_add_overflow(base, off, &byte);  // a base near INT64_MAX
    if (!wrapped) e = byte / es;
    if (wrapped || byte % es != 0 || e < 0 || e >= s.numel())
      c.fail(fmt::format(
          "T.tile.gather: offset {} (element {}) of 'offsets' addresses byte {} of 'src', which "
          "has "
          "{} elements of {} bytes",
          g_ia[i], i, wrapped ? fmt::format("{} + {}", base, off) : std::to_string(byte), s.numel(),
          es));
    std::memcpy(out.data() + i * es, s.at_flat(e), es);
  }
  store_bytes(d, out);
}

void gather_mask(const TileOpNode& n, Core& c) {
  TileRef d = c.operand(n, "dst"), s = c.operand(n, "src");
  int64_t es = dtype_bytes(s.dtype), kept = 0;
  std::vector<uint8_t> bits;
  std::string pattern = n.attr_str("pattern");
  if (c.has_operand(n, "mask"))
    load_bytes(c.operand(n, "mask"), bits);
  else if (pattern.empty())
    c.fail("T.tile.gather_mask needs a pattern or a mask tile");
  for (int64_t i = 0; i < s.numel(); ++i) {
    bool pick;
    if (!bits.empty()) {
      pick = i / 8 < static_cast<int64_t>(bits.size()) && ((bits[i / 8] >> (i % 8)) & 1);
    } else {
      // Pattern "Pb3b2b1b0": bit k (from the right) set keeps element k of every group of four
      // ("P0101" keeps the even elements).
      pick = pattern[4 - i % 4] == '1';
    }
    if (!pick) continue;
    if (kept >= d.numel())
      c.fail(
          fmt::format("T.tile.gather_mask: more than {} elements selected for 'dst'", d.numel()));
    std::memcpy(d.at_flat(kept++), s.at_flat(i), es);
  }
}

void broadcast(const TileOpNode& n, Core& c) {
  TileRef d = c.operand(n, "dst"), s = c.operand(n, "src");
  const int64_t es = dtype_bytes(d.dtype), cols = d.cols();
  const bool contiguous = s.strides.back() == 1 && d.strides.back() == 1;
  std::string why =
      broadcast_rows(d, s, n.attr_int("axis"), [&](int64_t r, int64_t sflat, bool last_kept) {
        uint8_t* dst = row_ptr(d, r);
        if (last_kept && contiguous) {
          std::memcpy(dst, s.at_flat(sflat), cols * es);  // a source row is contiguous in UB
        } else if (last_kept) {
          for (int64_t k = 0; k < cols; ++k) std::memcpy(dst + k * es, s.at_flat(sflat + k), es);
        } else {
          const uint8_t* v = s.at_flat(sflat);
          for (int64_t k = 0; k < cols; ++k) std::memcpy(dst + k * es, v, es);
        }
      });
  if (!why.empty()) c.fail("T.tile.broadcast: " + why);
}

template <typename F, typename FI>
void row_expand(const TileOpNode& n, Core& c, F f, FI fi) {
  TileRef d = c.operand(n, "dst"), a = c.operand(n, "src0"), b = c.operand(n, "src1");
  check_same_numel(n, c, d, a, "src0");
  int64_t R = a.rows(), C = a.cols();
  if (b.numel() != R)
    c.fail(fmt::format("T.{}: 'src1' has {} elements, expected one per row of 'src0' ({})",
                       n.op->name, b.numel(), R));
  if (is_int(d.dtype)) {  // exact, wrapping like the elementwise integer ops
    load_i64(a, g_ia);
    load_i64(b, g_ib);
    for (int64_t r = 0; r < R; ++r)
      for (int64_t k = 0; k < C; ++k) g_ia[r * C + k] = fi(g_ia[r * C + k], g_ib[r]);
    store_i64(d, g_ia);
    return;
  }
  load_f32(b, g_b);
  const bool flush = flushes(n, c);
  if (rows_align(d, a) && !flush) {
    for (int64_t r = 0; r < R; ++r) {
      float* dp = reinterpret_cast<float*>(row_ptr(d, r));
      const float* ap = reinterpret_cast<const float*>(row_ptr(a, r));
      row_tile_scalar(dp, ap, g_b[r], C, f);
    }
    return;
  }
  load_f32(a, g_a);
  if (flush) {
    flush_inputs(a.dtype, g_a);
    flush_inputs(b.dtype, g_b);
  }
  for (int64_t r = 0; r < R; ++r)
    for (int64_t k = 0; k < C; ++k) g_a[r * C + k] = f(g_a[r * C + k], g_b[r]);
  if (flush) flush_results(d.dtype, g_a);
  store_f32(d, g_a);
}

/// Rsqrt and Reciprocal are approximations on the chip (float within 1e-4, half within 1e-3
/// relative, per their API pages): the exact result times (1 + d), d a deterministic function
/// of the input's bits with |d| <= 5e-5, so results are reproducible and never flatter the
/// chip's precision by being exact.
inline float approximate(float exact, float x) {
  uint32_t h;
  std::memcpy(&h, &x, 4);
  h *= 2654435761u;
  h ^= h >> 15;
  h *= 2246822519u;
  h ^= h >> 13;
  const float d = (static_cast<float>(h & 0xFFFFu) / 65535.0f - 0.5f) * 1e-4f;
  return exact * (1.0f + d);
}

/// exp(-s[k]) for k < n into e, chunk by chunk (the exp of sigmoid and silu).
constexpr int64_t kExpChunk = 512;
inline void exp_neg(float* e, const float* s, int64_t n) {
  for (int64_t k = 0; k < n; ++k) e[k] = -s[k];
  exp_f32(e, e, n);
}

// The batched rows of the ops whose element expression (vector_ops.def) calls std::exp: the
// same expression with the exp taken from exp_f32, which equals std::exp bit for bit, and the
// rest the same fp32 operations in the same order.
template <>
struct UnaryRows<Unary_exp> {
  static constexpr bool has = true;
  static void run(float* d, const float* s, int64_t n) { exp_f32(s, d, n); }
};
template <>
struct UnaryRows<Unary_sigmoid> {
  static constexpr bool has = true;
  static void run(float* d, const float* s, int64_t n) {
    float e[kExpChunk];
    for (int64_t i = 0; i < n; i += kExpChunk) {
      const int64_t m = std::min(kExpChunk, n - i);
      exp_neg(e, s + i, m);
      for (int64_t k = 0; k < m; ++k) d[i + k] = 1.0f / (1.0f + e[k]);
    }
  }
};
template <>
struct UnaryRows<Unary_silu> {
  static constexpr bool has = true;
  static void run(float* d, const float* s, int64_t n) {
    float e[kExpChunk];
    for (int64_t i = 0; i < n; i += kExpChunk) {
      const int64_t m = std::min(kExpChunk, n - i);
      exp_neg(e, s + i, m);
      for (int64_t k = 0; k < m; ++k) d[i + k] = s[i + k] / (1.0f + e[k]);  // s read first
    }
  }
};

// The elementwise ops of include/tl/vector_ops.def, instantiated from the math written there
// (inlined into the row loops, so the compiler vectorises them).
#define TL_VECTOR_BINARY(NAME, DTYPES, COST, F, FI, SUMMARY) \
  void exec_##NAME(const TileOpNode& n, Core& c) {           \
    binary(                                                  \
        n, c, [](float a, float b) -> float { return F; },   \
        [](int64_t a, int64_t b) -> int64_t { return FI; }); \
  }
#define TL_VECTOR_UNARY(NAME, DTYPES, COST, F, SUMMARY)                             \
  void exec_##NAME(const TileOpNode& n, Core& c) {                                  \
    float_unary<UnaryRows<Unary_##NAME>>(n, c, [](float x) -> float { return F; }); \
  }
#define TL_VECTOR_ROW_EXPAND(NAME, DTYPES, COST, F, FI, SUMMARY) \
  void exec_row_expand_##NAME(const TileOpNode& n, Core& c) {    \
    row_expand(                                                  \
        n, c, [](float a, float b) -> float { return F; },       \
        [](int64_t a, int64_t b) -> int64_t { return FI; });     \
  }
#include "tl/vector_ops.def"

void transpose(const TileOpNode& n, Core& c) {
  TileRef d = c.operand(n, "dst"), s = c.operand(n, "src");
  if (s.numel() != 256 || d.numel() != 256 || dtype_bytes(s.dtype) != 2)
    c.fail(fmt::format(
        "T.tile.transpose transposes one 16x16 block of 16-bit elements; got {} elements of {}",
        s.numel(), dtype_name(s.dtype)));
  std::vector<uint8_t> in, out(512);
  load_bytes(s, in);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) std::memcpy(&out[(j * 16 + i) * 2], &in[(i * 16 + j) * 2], 2);
  store_bytes(d, out);
}

}  // namespace

std::vector<ExecEntry> vector_execs() {
  return {
#define TL_VECTOR_BINARY(NAME, ...) {&ops::tile::NAME(), exec_##NAME},
#define TL_VECTOR_UNARY(NAME, ...) {&ops::tile::NAME(), exec_##NAME},
#define TL_VECTOR_ROW_EXPAND(NAME, ...) {&ops::tile::row_expand_##NAME(), exec_row_expand_##NAME},
#include "tl/vector_ops.def"
      {&ops::tile::bitwise_and(), band},
      {&ops::tile::bitwise_or(), bor},
      {&ops::tile::bitwise_xor(), bxor},
      {&ops::tile::bitwise_not(), bnot},
      {&ops::tile::shift_left(), shl},
      {&ops::tile::shift_right(), shr},
      {&ops::tile::relu(), relu},
      {&ops::tile::axpy(), axpy},
      {&ops::tile::leaky_relu(), leaky_relu},
      {&ops::tile::clamp(), clamp},
      {&ops::tile::cast(), cast},
      {&ops::tile::compare(), compare},
      {&ops::tile::select(), select},
      {&ops::tile::fill(), fill},
      {&ops::tile::createvecindex(), createvecindex},
      {&ops::tile::arith_progression(), arith_progression},
      {&ops::tile::gather(), gather},
      {&ops::tile::gather_mask(), gather_mask},
      {&ops::tile::broadcast(), broadcast},
      {&ops::tile::transpose(), transpose},
  };
}

}  // namespace tl::npu
