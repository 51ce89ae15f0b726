// Semantics of reductions and the sort family on the virtual NPU.
//
// Reductions reduce axis `dim` of the region: viewed as [outer, R, inner] (the extents before
// dim, dim's, the extents after it), each of the outer x inner outputs reduces R values. The
// last axis is ReduceSum/Max/Min's "AR" pattern (each row), another axis the "RA" pattern (each
// column of a [R, inner] slab), once per outer index; the verifier's reduce-shape rule is the
// same axis semantics. Sums accumulate in fp32: a binary tree inside each 256-byte repeat,
// then the repeat results in order.
//
// Sort entries are two lanes of the op's dtype, the score then the index lane; the index lane
// holds the source position encoded as a float, as TileLang-Ascend's sort leaves it (the
// comment of the sort family below says why). Order: descending score, NaN first; equal scores
// keep the smaller position first (Sort32), or their input position (MrgSort).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

#include "exec.h"
#include "tl/ops.h"
#include "values.h"

namespace tl::npu {
namespace {

thread_local std::vector<float> g_src, g_dst;

constexpr int64_t kRepeatBytes = 256;  // one vector repeat; at most 256 elements (1-byte types)

/// The pairwise tree over the m values of one repeat: each level adds the upper half onto the
/// lower half. The first level reads x directly.
float repeat_tree(const float* x, int64_t m, float* buf) {
  if (m == 1) return x[0];
  int64_t half = (m + 1) / 2;
  for (int64_t i = 0; i < half; ++i) buf[i] = i + half < m ? x[i] + x[i + half] : x[i];
  for (m = half; m > 1; m = half) {
    half = (m + 1) / 2;
    for (int64_t i = 0; i + half < m; ++i) buf[i] += buf[i + half];
  }
  return buf[0];
}

/// The same tree for a full repeat of M values, with every level's length known at compile
/// time so the compiler can vectorise it (the same additions in the same order).
template <int64_t M>
float full_repeat_tree(const float* x) {
  std::array<float, M / 2> buf;
  for (int64_t i = 0; i < M / 2; ++i) buf[i] = x[i] + x[i + M / 2];
  if constexpr (M / 2 > 1) return full_repeat_tree<M / 2>(buf.data());
  return buf[0];
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/// full_repeat_tree with AVX2: while the level holds whole vectors of 8, vector k of it is
/// vector k plus vector k + count / 2 of the level before, i.e. element i plus element i + M / 2
/// as above; then the 8 -> 4 -> 2 -> 1 levels add the upper half onto the lower one the same
/// way. The same IEEE additions of the same operands, so the same sum, bit for bit (issue 31: the
/// tree was 6 % of a softmax launch's host instructions, the compiler's baseline code 4 lanes
/// wide). Intrinsics on registers: a vector-extension array was copied through the stack.
/// One level of vectors: v[k] += v[k + N / 2] for k < N / 2, then the next level.
template <int N>
__attribute__((target("avx2"), always_inline)) inline void tree_levels_avx2(__m256* v) {
#pragma GCC unroll 8
  for (int k = 0; k < N / 2; ++k) v[k] = _mm256_add_ps(v[k], v[k + N / 2]);
  if constexpr (N / 2 > 1) tree_levels_avx2<N / 2>(v);
}
template <int64_t M>
__attribute__((target("avx2"))) float full_repeat_tree_avx2(const float* x) {
  static_assert(M % 16 == 0 && M <= 128);
  __m256 v[M / 8];
#pragma GCC unroll 16
  for (int64_t k = 0; k < M / 8; ++k) v[k] = _mm256_loadu_ps(x + 8 * k);
  tree_levels_avx2<M / 8>(v);
  const __m128 e = _mm_add_ps(_mm256_castps256_ps128(v[0]), _mm256_extractf128_ps(v[0], 1));
  const __m128 f = _mm_add_ps(e, _mm_movehl_ps(e, e));           // e0 + e2, e1 + e3
  return _mm_cvtss_f32(_mm_add_ss(f, _mm_shuffle_ps(f, f, 1)));  // f0 + f1
}
#endif

float tree_sum(const float* x, int64_t n, int64_t per_repeat) {
  float total = 0;
  std::array<float, kRepeatBytes> buf;  // on the stack: this runs once per repeat of every row
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  const bool avx2 = !plain_paths() && host_has_avx2();
#else
  const bool avx2 = false;
#endif
  for (int64_t s = 0; s < n; s += per_repeat) {
    int64_t m = std::min(per_repeat, n - s);
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (avx2 && m == 64) {
      total += full_repeat_tree_avx2<64>(x + s);
      continue;
    }
    if (avx2 && m == 128) {
      total += full_repeat_tree_avx2<128>(x + s);
      continue;
    }
#endif
    if (m == 64)
      total += full_repeat_tree<64>(x + s);  // fp32 sources
    else if (m == 128)
      total += full_repeat_tree<128>(x + s);  // fp16 / bf16 sources
    else
      total += repeat_tree(x + s, m, buf.data());
  }
  // A NaN sum is the quiet NaN 0x7FC00000, whichever NaN operand it came from: an addition of
  // two NaNs keeps the payload of the operand the compiler put first, and compilers reorder
  // commutative additions differently at each optimisation level and in each path (the scalar
  // tree at -O0 and the AVX2 tree kept different NaNs). The chip's NaN payload is not
  // documented; the Mmad's sums follow the same rule (docs/virtual_npu.md, "NaN results").
  return total == total ? total : std::numeric_limits<float>::quiet_NaN();
}

enum class Red { Sum, Max, Min };

/// The Max / Min fold as the chip's model defines it: in order, the first NaN is the result,
/// otherwise max(v, x) / min(v, x) from +-inf (std::max keeps v on a tie, so of +0 and -0 the
/// first one met stays).
float fold_plain(const float* p, int64_t len, bool max) {
  float v = max ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < len; ++i) {
    if (std::isnan(p[i])) return p[i];
    v = max ? std::max(v, p[i]) : std::min(v, p[i]);
  }
  return v;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
typedef float V8f __attribute__((vector_size(32)));
typedef int32_t V8i __attribute__((vector_size(32)));
/// fold_plain eight lanes at a time. Without a NaN the fold's result is the largest (smallest)
/// value whatever the order of the comparisons, except for the sign of a zero result; so a row
/// holding a NaN, or whose result is zero, is folded again by fold_plain (same result, by
/// construction).
__attribute__((target("avx2"))) float fold_avx2(const float* p, int64_t len, bool max) {
  const float init =
      max ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  V8f acc = V8f{} + init;
  V8i nan = V8i{};
  int64_t i = 0;
  for (; i + 8 <= len; i += 8) {
    V8f x;
    std::memcpy(&x, p + i, 32);
    nan |= x != x;
    acc = max ? (x > acc ? x : acc) : (x < acc ? x : acc);
  }
  float v = init;
  bool any_nan = false;
  for (int l = 0; l < 8; ++l) {
    any_nan |= nan[l] != 0;
    v = max ? std::max(v, acc[l]) : std::min(v, acc[l]);
  }
  for (; i < len; ++i) {
    any_nan |= std::isnan(p[i]);
    v = max ? std::max(v, p[i]) : std::min(v, p[i]);
  }
  return any_nan || v == 0 ? fold_plain(p, len, max) : v;
}
#endif

float fold(const float* p, int64_t len, bool max) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (!plain_paths() && host_has_avx2()) return fold_avx2(p, len, max);
#endif
  return fold_plain(p, len, max);
}

void reduce(const TileOpNode& n, Core& c, Red kind) {
  TileRef s = c.operand(n, "src"), d = c.operand(n, "dst");
  int64_t dim = n.attr_int("dim");
  bool clear = n.attr_bool("clear");
  const int64_t nd = static_cast<int64_t>(s.extent.size());
  if (dim < 0) dim += nd;
  if (dim < 0 || dim >= nd)
    c.fail(fmt::format("T.{}: dim {} of a {}-D source", n.op->name, n.attr_int("dim"), nd));
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < dim; ++i) outer *= s.extent[i];
  for (int64_t i = dim + 1; i < nd; ++i) inner *= s.extent[i];
  const int64_t R = s.extent[dim], C = s.cols();
  const bool rows = dim == nd - 1;
  const int64_t outn = outer * inner;
  if (d.numel() != outn)
    c.fail(
        fmt::format("T.{}: 'dst' has {} elements; reducing {} ({} elements) over dim {} gives {}",
                    n.op->name, d.numel(), s.buffer->name, s.numel(), dim, outn));
  // Row reductions of an fp32 source read its rows in place; anything else is widened first.
  bool in_place = rows && s.dtype == DType::Float32;
  if (!in_place) load_f32(s, g_src);
  load_f32(d, g_dst);
  int64_t per_repeat = kRepeatBytes / dtype_bytes(s.dtype);
  std::vector<float> col;
  for (int64_t o = 0; o < outn; ++o) {
    const float* p;
    int64_t len;
    if (rows) {
      p = in_place ? reinterpret_cast<const float*>(row_ptr(s, o)) : g_src.data() + o * C;
      len = C;
    } else {  // output o = (outer index, inner index): R values inner apart
      col.resize(R);
      const float* base = g_src.data() + (o / inner) * R * inner + o % inner;
      for (int64_t r = 0; r < R; ++r) col[r] = base[r * inner];
      p = col.data();
      len = R;
    }
    float v;
    if (kind == Red::Sum) {
      v = tree_sum(p, len, per_repeat);
      if (!clear) v += g_dst[o];
      if (v != v) v = std::numeric_limits<float>::quiet_NaN();  // as tree_sum's own NaN
    } else {
      v = fold(p, len, kind == Red::Max);
      if (!clear) v = kind == Red::Max ? std::max(v, g_dst[o]) : std::min(v, g_dst[o]);
    }
    g_dst[o] = v;
  }
  store_f32(d, g_dst);
}
void reduce_sum(const TileOpNode& n, Core& c) {
  reduce(n, c, Red::Sum);
}
void reduce_max(const TileOpNode& n, Core& c) {
  reduce(n, c, Red::Max);
}
void reduce_min(const TileOpNode& n, Core& c) {
  reduce(n, c, Red::Min);
}

// ---- The sort family ---------------------------------------------------------------------------
//
// An entry is two lanes of the op's dtype, [score, index lane]: what TileLang-Ascend's
// T.tile.sort / T.tile.topk leave in their destination ("dst must be 2x the size of src";
// "at least 2*K elements"). The index lane holds the *float* encoding of the source position:
// TileLang-Ascend generates the indices with ArithProgression<float> (0.0, 1.0, 2.0, ...) and
// hands those bits to Sort32 as its uint32 index operand, which Sort32 and MrgSort carry through
// unchanged (AscendC Sort32 page, atlasascendc_api_07_0231: "(score, index)" 8-byte structure,
// the index in the high 4 bytes). So a script's gather_mask("P1010") + float -> int cast reads
// the position back. float16 sorts run in float32 and the pairs are cast to half (RINT) at the
// end, so an fp16 entry is 4 bytes and its index lane is the position rounded to half: exact up
// to 2048, the nearest even half above it (2049 reads 2048), inf past 65519.
// Order: descending score, NaN first; equal scores keep source order (Sort32: "score[j] is
// selected first when i > j"; MrgSort: the lower queue first), which is ascending position.

struct Entry {
  float score;
  int64_t position;  // source position (sort, topk) or input order (merge_sort)
  uint64_t lanes;    // merge_sort: the entry's 8 bytes as they came
};
bool before(const Entry& a, const Entry& b) {
  bool an = std::isnan(a.score), bn = std::isnan(b.score);
  if (an != bn) return an;
  if (!an && a.score != b.score) return a.score > b.score;
  return a.position < b.position;
}

/// Entries of two `t.dtype` lanes that fit in region t.
int64_t entries_of(const TileRef& t) {
  return t.numel() / 2;
}

/// Writes the first `count` entries of e (score and index lane, both of t's dtype) to t.
void write_sorted(const TileRef& t, const std::vector<Entry>& e, int64_t count) {
  const int64_t es = dtype_bytes(t.dtype);
  std::vector<uint8_t> bytes(static_cast<size_t>(count * 2 * es));
  for (int64_t i = 0; i < count; ++i) {
    uint8_t* p = &bytes[static_cast<size_t>(i * 2 * es)];
    if (t.dtype == DType::Float32) {  // the score as it came in, the index as a float
      std::memcpy(p, &e[i].score, 4);
      float idx = static_cast<float>(e[i].position);
      std::memcpy(p + 4, &idx, 4);
    } else {  // float16: both lanes cast from float32 with RINT (scores are exact)
      uint16_t s = f32_to_f16(e[i].score), idx = f32_to_f16(static_cast<float>(e[i].position));
      std::memcpy(p, &s, 2);
      std::memcpy(p + 2, &idx, 2);
    }
  }
  // Write only the entries: the rest of the destination keeps its bytes.
  for (int64_t k = 0; k < count * 2; ++k)
    std::memcpy(t.at_flat(k), &bytes[static_cast<size_t>(k * es)], es);
}

std::vector<Entry> sorted_source(const TileOpNode& n, Core& c, const TileRef& s, int64_t actual) {
  if (actual < 0 || actual > s.numel())
    c.fail(fmt::format("T.{}: actual_num {} is outside [0, {}] (elements of 'src')", n.op->name,
                       actual, s.numel()));
  load_f32(s, g_src);
  // Sort32 works on whole repeats of 32: the unused tail is padded with -inf.
  int64_t padded = (actual + 31) / 32 * 32;
  std::vector<Entry> e(padded);
  for (int64_t i = 0; i < padded; ++i)
    e[i] = {i < actual ? g_src[i] : -std::numeric_limits<float>::infinity(), i, 0};
  std::stable_sort(e.begin(), e.end(), before);
  return e;
}

void sort(const TileOpNode& n, Core& c) {
  TileRef d = c.operand(n, "dst"), s = c.operand(n, "src");
  int64_t actual = c.eval_int(op_operand(n, "actual_num")->scalar);
  auto e = sorted_source(n, c, s, actual);
  if (entries_of(d) < static_cast<int64_t>(e.size()))
    c.fail(
        fmt::format("T.sort: 'dst' holds {} (value, index) entries of two {} lanes, {} are needed "
                    "(actual_num {} "
                    "rounded up to 32)",
                    entries_of(d), dtype_name(d.dtype), e.size(), actual));
  write_sorted(d, e, static_cast<int64_t>(e.size()));
}

void topk(const TileOpNode& n, Core& c) {
  TileRef d = c.operand(n, "dst"), s = c.operand(n, "src");
  int64_t k = c.eval_int(op_operand(n, "k")->scalar);
  int64_t actual = c.eval_int(op_operand(n, "actual_num")->scalar);
  auto e = sorted_source(n, c, s, actual);
  if (k < 0 || k > static_cast<int64_t>(e.size()))
    c.fail(fmt::format("T.topk: k = {} but only {} entries are sorted", k, e.size()));
  if (entries_of(d) < k)
    c.fail(fmt::format("T.topk: 'dst' holds {} (value, index) entries, k = {}", entries_of(d), k));
  // TileLang-Ascend's TopK copies 2k lanes rounded up to whole 32-byte blocks (DataCopy moves
  // blocks), so the entries after the k-th up to that boundary are written too; the model stops
  // at the end of the destination region (the chip goes on to the block's end).
  const int64_t per_block = 32 / dtype_bytes(d.dtype);
  const int64_t lanes = (2 * k + per_block - 1) / per_block * per_block;
  write_sorted(d, e, std::min(lanes / 2, entries_of(d)));
}

/// MrgSort's order: descending score, NaN first; equal scores keep their input order (the
/// queue with the lower number first, then position in the queue), whatever their stored
/// indices (AscendC MrgSort, atlasascendc_api_07_0232: the queues are Sort32's 8-byte (score,
/// index) structures, merged by score). The entries move as they are, all 8 bytes.
bool score_before(const Entry& a, const Entry& b) {
  bool an = std::isnan(a.score), bn = std::isnan(b.score);
  if (an != bn) return an;
  return !an && a.score > b.score;
}

void merge_sort(const TileOpNode& n, Core& c) {
  TileRef d = c.operand(n, "dst");
  if (d.dtype != DType::Float32)  // the verifier's vector-dtype rule; hand-built IR gets here
    c.fail(fmt::format("T.merge_sort merges float32 (score, index) queues, got {}",
                       dtype_name(d.dtype)));
  std::vector<Entry> all;
  std::vector<uint8_t> bytes;
  for (const char* name : {"src0", "src1", "src2", "src3"}) {
    if (!c.has_operand(n, name)) continue;
    TileRef s = c.operand(n, name);
    load_bytes(s, bytes);
    const int64_t count = entries_of(s);
    std::vector<Entry> e(count);
    for (int64_t i = 0; i < count; ++i) {
      std::memcpy(&e[i].score, &bytes[i * 8], 4);
      std::memcpy(&e[i].lanes, &bytes[i * 8], 8);
    }
    if (!std::is_sorted(e.begin(), e.end(), score_before))
      c.fail(fmt::format("T.merge_sort: queue '{}' ({}) is not sorted in descending order", name,
                         s.buffer->name));
    all.insert(all.end(), e.begin(), e.end());
  }
  std::stable_sort(all.begin(), all.end(), score_before);
  if (entries_of(d) < static_cast<int64_t>(all.size()))
    c.fail(fmt::format("T.merge_sort: 'dst' holds {} entries, the queues have {}", entries_of(d),
                       all.size()));
  for (size_t i = 0; i < all.size(); ++i) {
    std::memcpy(d.at_flat(static_cast<int64_t>(2 * i)), &all[i].lanes, 4);
    std::memcpy(d.at_flat(static_cast<int64_t>(2 * i + 1)),
                reinterpret_cast<const uint8_t*>(&all[i].lanes) + 4, 4);
  }
}

/// TileLang-Ascend's InitSortBuf: score lanes -inf (or `value`), index lanes all ones (int32 -1,
/// a NaN if read as a float), in float32 (8-byte entries, MrgSort's queue format).
void init_sort_buf(const TileOpNode& n, Core& c) {
  TileRef d = c.operand(n, "dst");
  if (d.dtype != DType::Float32)
    c.fail(fmt::format("T.init_sort_buf fills float32 (score, index) entries, got {}",
                       dtype_name(d.dtype)));
  int64_t num = c.eval_int(op_operand(n, "num")->scalar);
  double v = c.has_operand(n, "value") ? c.eval_float(op_operand(n, "value")->scalar)
                                       : -std::numeric_limits<double>::infinity();
  if (num < 0) c.fail(fmt::format("T.init_sort_buf: num = {} entries; it must be >= 0", num));
  if (num > entries_of(d))
    c.fail(fmt::format("T.init_sort_buf: num = {} entries exceeds 'dst' ({} entries)", num,
                       entries_of(d)));
  const float score = static_cast<float>(round_value(DType::Float32, v));
  const uint32_t ones = 0xffffffffu;
  for (int64_t i = 0; i < num; ++i) {
    std::memcpy(d.at_flat(2 * i), &score, 4);
    std::memcpy(d.at_flat(2 * i + 1), &ones, 4);
  }
}

}  // namespace

std::vector<ExecEntry> reduce_sort_execs() {
  return {{&ops::reduce_sum(), reduce_sum},
          {&ops::reduce_max(), reduce_max},
          {&ops::reduce_min(), reduce_min},
          {&ops::sort(), sort},
          {&ops::topk(), topk},
          {&ops::merge_sort(), merge_sort},
          {&ops::init_sort_buf(), init_sort_buf}};
}

}  // namespace tl::npu
