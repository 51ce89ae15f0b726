// Semantics of reductions and the sort family on the virtual NPU.
//
// Reductions reduce axis `dim` of the region: viewed as [outer, R, inner] (the extents before
// dim, dim's, the extents after it), each of the outer x inner outputs reduces R values. The
// last axis is ReduceSum/Max/Min's "AR" pattern (each row), another axis the "RA" pattern (each
// column of a [R, inner] slab), once per outer index; the verifier's reduce-shape rule is the
// same axis semantics. Sums accumulate in fp32: a binary tree inside each 256-byte repeat,
// then the repeat results in order.
//
// Sort entries are 8 bytes: the score in the low bytes (fp32, or fp16 followed by 2 bytes
// of padding) and the uint32 index in the high 4 bytes (Sort32's format). Order: descending
// score; equal scores keep the smaller index first (Sort32), or their input position
// (MrgSort); NaN sorts as the largest score.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "exec.h"
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

float tree_sum(const float* x, int64_t n, int64_t per_repeat) {
  float total = 0;
  std::array<float, kRepeatBytes> buf;  // on the stack: this runs once per repeat of every row
  for (int64_t s = 0; s < n; s += per_repeat) {
    int64_t m = std::min(per_repeat, n - s);
    if (m == 64) total += full_repeat_tree<64>(x + s);  // fp32 sources
    else if (m == 128) total += full_repeat_tree<128>(x + s);  // fp16 / bf16 sources
    else total += repeat_tree(x + s, m, buf.data());
  }
  return total;
}

enum class Red { Sum, Max, Min };

void reduce(const TileOpNode& n, Core& c, Red kind) {
  TileRef s = c.operand(n, "src"), d = c.operand(n, "dst");
  int64_t dim = n.attr_int("dim");
  bool clear = n.attr_bool("clear");
  const int64_t nd = static_cast<int64_t>(s.extent.size());
  if (dim < 0) dim += nd;
  if (dim < 0 || dim >= nd) c.fail(fmt::format("T.{}: dim {} of a {}-D source", n.op->name, n.attr_int("dim"), nd));
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < dim; ++i) outer *= s.extent[i];
  for (int64_t i = dim + 1; i < nd; ++i) inner *= s.extent[i];
  const int64_t R = s.extent[dim], C = s.cols();
  const bool rows = dim == nd - 1;
  const int64_t outn = outer * inner;
  if (d.numel() != outn)
    c.fail(fmt::format("T.{}: 'dst' has {} elements; reducing {} ({} elements) over dim {} gives {}", n.op->name,
                       d.numel(), s.buffer->name, s.numel(), dim, outn));
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
    } else {
      v = kind == Red::Max ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
      for (int64_t i = 0; i < len; ++i) {
        if (std::isnan(p[i])) { v = p[i]; break; }
        v = kind == Red::Max ? std::max(v, p[i]) : std::min(v, p[i]);
      }
      if (!clear) v = kind == Red::Max ? std::max(v, g_dst[o]) : std::min(v, g_dst[o]);
    }
    g_dst[o] = v;
  }
  store_f32(d, g_dst);
}
void reduce_sum(const TileOpNode& n, Core& c) { reduce(n, c, Red::Sum); }
void reduce_max(const TileOpNode& n, Core& c) { reduce(n, c, Red::Max); }
void reduce_min(const TileOpNode& n, Core& c) { reduce(n, c, Red::Min); }

struct Entry {
  float score;
  uint32_t index;
};
bool before(const Entry& a, const Entry& b) {
  bool an = std::isnan(a.score), bn = std::isnan(b.score);
  if (an != bn) return an;
  if (!an && a.score != b.score) return a.score > b.score;
  return a.index < b.index;
}

int64_t entries_of(const TileRef& t) { return t.numel() * dtype_bytes(t.dtype) / 8; }

std::vector<Entry> read_entries(const TileRef& t, int64_t count) {
  std::vector<uint8_t> bytes;
  load_bytes(t, bytes);
  std::vector<Entry> e(count);
  for (int64_t i = 0; i < count; ++i) {
    e[i].score = static_cast<float>(load_value(t.dtype, &bytes[i * 8]));
    std::memcpy(&e[i].index, &bytes[i * 8 + 4], 4);
  }
  return e;
}
void write_entries(const TileRef& t, const std::vector<Entry>& e) {
  std::vector<uint8_t> bytes;
  load_bytes(t, bytes);
  for (size_t i = 0; i < e.size(); ++i) {
    std::memset(&bytes[i * 8], 0, 4);
    store_value(t.dtype, &bytes[i * 8], e[i].score);
    std::memcpy(&bytes[i * 8 + 4], &e[i].index, 4);
  }
  store_bytes(t, bytes);
}

std::vector<Entry> sorted_source(const TileOpNode& n, Core& c, const TileRef& s, int64_t actual) {
  if (actual < 0 || actual > s.numel())
    c.fail(fmt::format("T.{}: actual_num {} is outside [0, {}] (elements of 'src')", n.op->name, actual, s.numel()));
  load_f32(s, g_src);
  // Sort32 works on whole repeats of 32: the unused tail is padded with -inf.
  int64_t padded = (actual + 31) / 32 * 32;
  std::vector<Entry> e(padded);
  for (int64_t i = 0; i < padded; ++i)
    e[i] = {i < actual ? g_src[i] : -std::numeric_limits<float>::infinity(), static_cast<uint32_t>(i)};
  std::stable_sort(e.begin(), e.end(), before);
  return e;
}

void sort(const TileOpNode& n, Core& c) {
  TileRef d = c.operand(n, "dst"), s = c.operand(n, "src");
  int64_t actual = c.eval_int(op_operand(n, "actual_num")->scalar);
  auto e = sorted_source(n, c, s, actual);
  if (entries_of(d) < static_cast<int64_t>(e.size()))
    c.fail(fmt::format("T.sort: 'dst' holds {} (value, index) entries, {} are needed (actual_num {} rounded up to 32)",
                       entries_of(d), e.size(), actual));
  write_entries(d, e);
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
  e.resize(k);
  write_entries(d, e);
}

/// MrgSort's order: descending score, NaN first; equal scores keep their input order (the
/// queue with the lower number first, then position in the queue), whatever their stored
/// indices (AscendC MrgSort: ties resolve by input position).
bool score_before(const Entry& a, const Entry& b) {
  bool an = std::isnan(a.score), bn = std::isnan(b.score);
  if (an != bn) return an;
  return !an && a.score > b.score;
}

void merge_sort(const TileOpNode& n, Core& c) {
  TileRef d = c.operand(n, "dst");
  std::vector<Entry> all;
  for (const char* name : {"src0", "src1", "src2", "src3"}) {
    if (!c.has_operand(n, name)) continue;
    TileRef s = c.operand(n, name);
    auto e = read_entries(s, entries_of(s));
    if (!std::is_sorted(e.begin(), e.end(), score_before))
      c.fail(fmt::format("T.merge_sort: queue '{}' ({}) is not sorted in descending order", name, s.buffer->name));
    all.insert(all.end(), e.begin(), e.end());
  }
  std::stable_sort(all.begin(), all.end(), score_before);
  if (entries_of(d) < static_cast<int64_t>(all.size()))
    c.fail(fmt::format("T.merge_sort: 'dst' holds {} entries, the queues have {}", entries_of(d), all.size()));
  write_entries(d, all);
}

void init_sort_buf(const TileOpNode& n, Core& c) {
  TileRef d = c.operand(n, "dst");
  int64_t num = c.eval_int(op_operand(n, "num")->scalar);
  double v = c.has_operand(n, "value") ? c.eval_float(op_operand(n, "value")->scalar)
                                        : -std::numeric_limits<double>::infinity();
  int64_t count = num;  // entries (docs/language.md; the verifier's sort-buffer-size rule)
  if (count < 0)  // sized a vector with it: std::length_error
    c.fail(fmt::format("T.init_sort_buf: num = {} entries; it must be >= 0", num));
  if (count > entries_of(d))
    c.fail(fmt::format("T.init_sort_buf: num = {} entries exceeds 'dst' ({} entries)", num, entries_of(d)));
  std::vector<Entry> e(count, Entry{static_cast<float>(v), 0xffffffffu});
  write_entries(d, e);
}

}  // namespace

std::vector<ExecEntry> reduce_sort_execs() {
  return {{"reduce_sum", reduce_sum}, {"reduce_max", reduce_max}, {"reduce_min", reduce_min},
          {"sort", sort},             {"topk", topk},             {"merge_sort", merge_sort},
          {"init_sort_buf", init_sort_buf}};
}

}  // namespace tl::npu
