// Per-primitive tests of the sort family on the virtual NPU: T::sort, T::topk, T::merge_sort
// (2-4 queues) and T::init_sort_buf. Entries are 8 bytes: the score (fp32, or fp16 followed
// by 2 zero bytes) then the uint32 index. Order: descending score, equal scores with the
// smaller index first; sort pads actual_num up to a multiple of 32 with -inf entries.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "npu/op_harness.h"
#include "tl/op.h"

namespace tl {
namespace {

using namespace optest;

struct Entry {
  double score;
  uint32_t index;
  bool operator==(const Entry& o) const {
    return index == o.index && (score == o.score || (std::isnan(score) && std::isnan(o.score)));
  }
};
bool before(const Entry& a, const Entry& b) {
  bool an = std::isnan(a.score), bn = std::isnan(b.score);
  if (an != bn) return an;
  if (!an && a.score != b.score) return a.score > b.score;
  return a.index < b.index;
}
/// MrgSort's reference order: by score only, so a stable sort of the concatenated queues keeps
/// ties in input position (queue, then place in the queue), whatever their indices.
bool score_before(const Entry& a, const Entry& b) {
  bool an = std::isnan(a.score), bn = std::isnan(b.score);
  if (an != bn) return an;
  return !an && a.score > b.score;
}

std::vector<Entry> read_entries(const Tensor& t, int64_t count) {
  auto b = bytes_of(t);
  std::vector<Entry> e(count);
  for (int64_t i = 0; i < count; ++i) {
    e[i].score = npu::to_double(t.dtype(), &b[i * 8]);
    std::memcpy(&e[i].index, &b[i * 8 + 4], 4);
  }
  return e;
}
void write_entries(const Tensor& t, const std::vector<Entry>& e) {
  for (size_t i = 0; i < e.size(); ++i) {
    std::memset(t.data() + i * 8, 0, 8);
    npu::from_double(t.dtype(), e[i].score, t.data() + i * 8);
    std::memcpy(t.data() + i * 8 + 4, &e[i].index, 4);
  }
}
std::string describe(const std::vector<Entry>& got, const std::vector<Entry>& want) {
  if (got.size() != want.size()) return fmt::format("{} entries, want {}", got.size(), want.size());
  std::string s;
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (!(got[i] == want[i]) && bad++ < 6)
      s += fmt::format("[{}] got ({}, {}) want ({}, {}); ", i, got[i].score, got[i].index, want[i].score, want[i].index);
  if (bad) s += fmt::format("({} differ)", bad);
  return s;
}

/// The dtypes A2 allows for `op` (its definition's list).
const std::vector<DType>& legal(const char* op) { return *find_op(op)->dtypes.on(default_target()); }
/// Elements of dtype t per 8-byte entry.
int64_t per_entry(DType t) { return 8 / dtype_bytes(t); }

/// Scores with many ties: small integers and halves, plus a few negatives.
std::vector<double> tie_scores(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<double> v(n);
  for (auto& x : v) x = static_cast<int>(rng() % 7) * 0.5 - 1;
  return v;
}

std::vector<Entry> ref_sorted(const std::vector<double>& src, int64_t actual) {
  int64_t padded = (actual + 31) / 32 * 32;
  std::vector<Entry> e(padded);
  for (int64_t i = 0; i < padded; ++i)
    e[i] = {i < actual ? src[i] : -std::numeric_limits<double>::infinity(), static_cast<uint32_t>(i)};
  std::stable_sort(e.begin(), e.end(), before);
  return e;
}

TEST(SortOps, SortTiesDescendingAndPadding) {
  for (DType t : legal("sort"))
    for (int64_t actual : {64, 40, 1, 0}) {
      SCOPED_TRACE(fmt::format("sort {} actual_num {}", dtype_name(t), actual));
      const int64_t n = 64, dn = n * per_entry(t) + 32 / dtype_bytes(t);  // a sentinel row after the entries
      auto sv = tie_scores(n, 17);
      if (t == DType::Float32) sv[5] = 1e30, sv[6] = -1e30;
      Device dev;
      Tensor s = from_vector(dev, {n}, t, sv), d = full(dev, {dn}, t, 7);
      run_one_op(dev, {{"d", {dn}, t}, {"s", {n}, t}}, {{"actual", DType::Int32}},
                 [&](const std::vector<Buffer>& ub, const std::vector<Var>& a) { T::sort(ub[0], ub[1], a[0]); },
                 {d, s, static_cast<int>(actual)});
      auto want = ref_sorted(s.to_vector(), actual);
      EXPECT_EQ(describe(read_entries(d, static_cast<int64_t>(want.size())), want), "");
      // Entries beyond the padded count keep the sentinel.
      auto dv = d.to_vector();
      for (int64_t i = static_cast<int64_t>(want.size()) * per_entry(t); i < dn; ++i) ASSERT_EQ(dv[i], 7.0) << i;
      if (t == DType::Float16) {  // the 2 bytes after an fp16 score are zero
        for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(dv[i * 4 + 1], 0.0) << i;
      }
    }
}

TEST(SortOps, SortNaNFirstAndInfinities) {
  const int64_t n = 32;
  std::vector<double> sv(n);
  for (int64_t i = 0; i < n; ++i) sv[i] = static_cast<double>(i % 5);
  sv[3] = NAN, sv[9] = INFINITY, sv[10] = -INFINITY, sv[11] = -0.0, sv[12] = 0.0;
  Device dev;
  Tensor s = from_vector(dev, {n}, DType::Float32, sv), d = Tensor::empty(dev, {2 * n}, DType::Float32);
  run_one_op(dev, {{"d", {2 * n}, DType::Float32}, {"s", {n}, DType::Float32}}, {},
             [&](const std::vector<Buffer>& ub, const std::vector<Var>&) { T::sort(ub[0], ub[1], 32); }, {d, s});
  auto want = ref_sorted(sv, n);
  EXPECT_EQ(describe(read_entries(d, n), want), "");
  auto got = read_entries(d, n);
  EXPECT_TRUE(std::isnan(got[0].score));
  EXPECT_EQ(got[1].score, INFINITY);
  EXPECT_EQ(got[n - 1].index, 10u);
}

TEST(SortOps, TopK) {
  for (DType t : legal("topk"))
    for (auto [k, actual] : std::vector<std::pair<int, int>>{{10, 64}, {16, 50}, {40, 33}, {1, 64}}) {
      SCOPED_TRACE(fmt::format("topk {} k {} actual_num {}", dtype_name(t), k, actual));
      const int64_t n = 64, dn = 64 * per_entry(t);
      Device dev;
      Tensor s = from_vector(dev, {n}, t, tie_scores(n, 23)), d = full(dev, {dn}, t, 7);
      run_one_op(dev, {{"d", {dn}, t}, {"s", {n}, t}}, {},
                 [&](const std::vector<Buffer>& ub, const std::vector<Var>&) { T::topk(ub[0], ub[1], k, actual); }, {d, s});
      auto want = ref_sorted(s.to_vector(), actual);
      want.resize(k);
      EXPECT_EQ(describe(read_entries(d, k), want), "");
      auto dv = d.to_vector();
      for (int64_t i = k * per_entry(t); i < dn; ++i) ASSERT_EQ(dv[i], 7.0) << i;
    }
}

TEST(SortOps, MergeSortTwoToFourQueuesWithTies) {
  for (DType t : legal("merge_sort"))
    for (int ways : {2, 3, 4}) {
      SCOPED_TRACE(fmt::format("merge_sort {} {} ways", dtype_name(t), ways));
      // Queues of different lengths (multiples of 4 entries: 32-byte rows), ties across
      // queues with interleaved indices, a -inf tail in one queue.
      const std::vector<int64_t> lens = {8, 12, 4, 16};
      Device dev;
      std::vector<Tensor> qs;
      std::vector<Entry> all;
      uint32_t next = 0;
      for (int w = 0; w < ways; ++w) {
        std::mt19937 rng(31 + w);
        std::vector<Entry> e(lens[w]);
        for (auto& x : e) x = {static_cast<int>(rng() % 4) * 0.5, (next += 1 + rng() % 3)};
        if (w == 1) e.back().score = -std::numeric_limits<double>::infinity();
        std::stable_sort(e.begin(), e.end(), before);
        Tensor q = Tensor::empty(dev, {lens[w] * per_entry(t)}, t);
        write_entries(q, e);
        qs.push_back(q);
        all.insert(all.end(), e.begin(), e.end());
      }
      std::stable_sort(all.begin(), all.end(), score_before);
      const int64_t total = static_cast<int64_t>(all.size()), dn = (total + 4) * per_entry(t);
      Tensor d = full(dev, {dn}, t, 7);
      std::vector<BufSpec> bufs = {{"d", {dn}, t}};
      std::vector<Arg> args = {d};
      for (int w = 0; w < ways; ++w) {
        bufs.push_back({fmt::format("q{}", w), {lens[w] * per_entry(t)}, t});
        args.emplace_back(qs[w]);
      }
      run_one_op(dev, bufs, {},
                 [&](const std::vector<Buffer>& ub, const std::vector<Var>&) {
                   std::vector<TileArg> srcs(ub.begin() + 1, ub.end());
                   T::merge_sort(ub[0], srcs);
                 },
                 args);
      EXPECT_EQ(describe(read_entries(d, total), all), "");
      auto dv = d.to_vector();
      for (int64_t i = total * per_entry(t); i < dn; ++i) ASSERT_EQ(dv[i], 7.0) << i;
    }
}

TEST(SortOps, MergeSortTiesGoByQueueNotByIndex) {
  // Fidelity issue, item 10: queue 0 holds (5, index 9), queue 1 (5, index 1). MrgSort keeps
  // input order on ties: index 9 first (the model used to order ties by index).
  Device dev;
  Tensor q0 = Tensor::empty(dev, {8}, DType::Float32), q1 = Tensor::empty(dev, {8}, DType::Float32);
  const double inf = std::numeric_limits<double>::infinity();
  write_entries(q0, {{5.0, 9}, {1.0, 4}, {-inf, 0}, {-inf, 0}});
  write_entries(q1, {{5.0, 1}, {2.0, 7}, {-inf, 0}, {-inf, 0}});
  Tensor d = Tensor::empty(dev, {16}, DType::Float32);
  run_one_op(dev, {{"d", {16}, DType::Float32}, {"q0", {8}, DType::Float32}, {"q1", {8}, DType::Float32}}, {},
             [&](const std::vector<Buffer>& ub, const std::vector<Var>&) { T::merge_sort(ub[0], {ub[1], ub[2]}); },
             {d, q0, q1});
  auto e = read_entries(d, 4);
  EXPECT_EQ(e[0].index, 9u);
  EXPECT_EQ(e[1].index, 1u);
  EXPECT_EQ(e[2].index, 7u);
  EXPECT_EQ(e[3].index, 4u);
}

TEST(SortOps, SortThenMergeInOneKernel) {
  // Two 32-element halves sorted separately then merged equal a 64-element sort.
  const int64_t n = 64;
  auto sv = tie_scores(n, 41);
  Device dev;
  Tensor s = from_vector(dev, {n}, DType::Float32, sv), d = Tensor::empty(dev, {2 * n}, DType::Float32);
  Tensor q0 = Tensor::empty(dev, {n}, DType::Float32), q1 = Tensor::empty(dev, {n}, DType::Float32);
  run_one_op(dev,
             {{"d", {2 * n}, DType::Float32}, {"s", {n}, DType::Float32}, {"q0", {n}, DType::Float32},
              {"q1", {n}, DType::Float32}},
             {},
             [&](const std::vector<Buffer>& ub, const std::vector<Var>&) {
               T::sort(ub[2], ub[1].region({0}, {32}), 32);
               T::sort(ub[3], ub[1].region({32}, {32}), 32);
               T::pipe_barrier(Pipe::V);
               T::merge_sort(ub[0], {ub[2], ub[3]});
             },
             {d, s, q0, q1});
  // The second sort numbers its entries 0..31 again; MrgSort resolves ties by input position
  // (the first queue's entry first), not by those indices.
  std::vector<Entry> want;
  for (int h = 0; h < 2; ++h) {
    std::vector<double> half(sv.begin() + h * 32, sv.begin() + h * 32 + 32);
    auto e = ref_sorted(half, 32);
    want.insert(want.end(), e.begin(), e.end());
  }
  std::stable_sort(want.begin(), want.end(), score_before);
  EXPECT_EQ(describe(read_entries(d, n), want), "");
}

TEST(SortOps, InitSortBufCountsEntries) {
  // init_sort_buf(dst, num[, value]) fills `num` (value, index) entries (docs/language.md and
  // the verifier's capacity rule): score -inf (or value), index 0xffffffff.
  for (DType t : legal("init_sort_buf"))
    for (bool with_value : {false, true}) {
      SCOPED_TRACE(fmt::format("init_sort_buf {} value {}", dtype_name(t), with_value));
      const int64_t num = 8, dn = 16 * per_entry(t);
      Device dev;
      Tensor d = full(dev, {dn}, t, 7);
      run_one_op(dev, {{"d", {dn}, t}}, {},
                 [&](const std::vector<Buffer>& ub, const std::vector<Var>&) {
                   if (with_value) T::init_sort_buf(ub[0], static_cast<int>(num), 2.5);
                   else T::init_sort_buf(ub[0], static_cast<int>(num));
                 },
                 {d});
      std::vector<Entry> want(num, Entry{with_value ? 2.5 : -std::numeric_limits<double>::infinity(), 0xffffffffu});
      EXPECT_EQ(describe(read_entries(d, num), want), "");
      auto dv = d.to_vector();
      for (int64_t i = num * per_entry(t); i < dn; ++i) ASSERT_EQ(dv[i], 7.0) << "element " << i;
    }
}

}  // namespace
}  // namespace tl
