// Per-primitive tests of the sort family on the virtual NPU: T::sort, T::topk, T::merge_sort
// (2-4 queues) and T::init_sort_buf. An entry is two lanes of the op's dtype, [score, index
// lane], and the index lane holds the source position as a float, as TileLang-Ascend's sort
// leaves it (index generation with ArithProgression<float>, carried verbatim by Sort32 and
// MrgSort; float16 pairs cast from float32 with RINT, so positions above 2048 round). Order:
// descending score, NaN first, equal scores in source order; sort pads actual_num up to a
// multiple of 32 with -inf entries; topk writes whole 32-byte blocks of pairs.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <random>

#include "npu/op_harness.h"
#include "tl/op.h"
#include "tl/verifier.h"

namespace tl {
namespace {

using namespace optest;

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Entry {
  double score;
  double index;  // the index lane's value (a float of the op's dtype)
  bool operator==(const Entry& o) const {
    return index == o.index && (score == o.score || (std::isnan(score) && std::isnan(o.score)));
  }
};
std::string describe(const std::vector<Entry>& got, const std::vector<Entry>& want) {
  if (got.size() != want.size()) return fmt::format("{} entries, want {}", got.size(), want.size());
  std::string s;
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (!(got[i] == want[i]) && bad++ < 6)
      s += fmt::format("[{}] got ({}, {}) want ({}, {}); ", i, got[i].score, got[i].index,
                       want[i].score, want[i].index);
  if (bad) s += fmt::format("({} differ)", bad);
  return s;
}

/// The first `count` entries of a pair buffer: lanes 2i and 2i + 1, read in its dtype.
std::vector<Entry> read_entries(const Tensor& t, int64_t count) {
  auto v = t.to_vector();
  std::vector<Entry> e(count);
  for (int64_t i = 0; i < count; ++i) e[i] = {v[2 * i], v[2 * i + 1]};
  return e;
}

/// The sort reference: descending, NaN first, ties in source order; padded with -inf to a
/// multiple of 32; index lanes are the positions as values of `t` (float16 rounds above 2048).
std::vector<Entry> ref_sorted(const std::vector<double>& src, int64_t actual, DType t) {
  int64_t padded = (actual + 31) / 32 * 32;
  std::vector<std::pair<double, int64_t>> e(padded);
  for (int64_t i = 0; i < padded; ++i) e[i] = {i < actual ? src[i] : -kInf, i};
  std::stable_sort(e.begin(), e.end(), [](const auto& a, const auto& b) {
    bool an = std::isnan(a.first), bn = std::isnan(b.first);
    if (an != bn) return an;
    return !an && a.first > b.first;
  });
  std::vector<Entry> out;
  for (const auto& [s, i] : e) out.push_back({s, q(t, static_cast<double>(i))});
  return out;
}

/// The dtypes A2 allows for `op` (its definition's list).
const std::vector<DType>& legal(const char* op) {
  return *find_op(op)->dtypes.on(default_target());
}

/// Scores with many ties: small integers and halves, plus a few negatives.
std::vector<double> tie_scores(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<double> v(n);
  for (auto& x : v) x = static_cast<int>(rng() % 7) * 0.5 - 1;
  return v;
}

TEST(SortOps, SortTiesDescendingAndPadding) {
  ASSERT_EQ(legal("sort"), (std::vector<DType>{DType::Float16, DType::Float32}));
  for (DType t : legal("sort"))
    for (int64_t actual : {64, 40, 1, 0}) {
      SCOPED_TRACE(fmt::format("sort {} actual_num {}", dtype_name(t), actual));
      const int64_t n = 64, dn = 2 * n + 32 / dtype_bytes(t);  // a sentinel block after the entries
      auto sv = tie_scores(n, 17);
      if (t == DType::Float32) sv[5] = 1e30, sv[6] = -1e30;
      Device dev;
      Tensor s = from_vector(dev, {n}, t, sv), d = full(dev, {dn}, t, 7);
      run_one_op(dev, {{"d", {dn}, t}, {"s", {n}, t}}, {{"actual", DType::Int32}},
                 [&](const std::vector<Buffer>& ub, const std::vector<Var>& a) {
                   T::sort(ub[0], ub[1], a[0]);
                 },
                 {d, s, static_cast<int>(actual)});
      auto want = ref_sorted(s.to_vector(), actual, t);
      EXPECT_EQ(describe(read_entries(d, static_cast<int64_t>(want.size())), want), "");
      auto dv = d.to_vector();
      for (int64_t i = static_cast<int64_t>(want.size()) * 2; i < dn; ++i)
        ASSERT_EQ(dv[i], 7.0) << i;
    }
}

TEST(SortOps, SortNaNFirstAndInfinities) {
  const int64_t n = 32;
  std::vector<double> sv(n);
  for (int64_t i = 0; i < n; ++i) sv[i] = static_cast<double>(i % 5);
  sv[3] = NAN, sv[9] = INFINITY, sv[10] = -INFINITY, sv[11] = -0.0, sv[12] = 0.0;
  Device dev;
  Tensor s = from_vector(dev, {n}, DType::Float32, sv),
         d = Tensor::empty(dev, {2 * n}, DType::Float32);
  run_one_op(
      dev, {{"d", {2 * n}, DType::Float32}, {"s", {n}, DType::Float32}}, {},
      [&](const std::vector<Buffer>& ub, const std::vector<Var>&) { T::sort(ub[0], ub[1], 32); },
      {d, s});
  auto got = read_entries(d, n);
  EXPECT_EQ(describe(got, ref_sorted(sv, n, DType::Float32)), "");
  EXPECT_TRUE(std::isnan(got[0].score));
  EXPECT_EQ(got[1].score, INFINITY);
  EXPECT_EQ(got[n - 1].index, 10.0);
}

TEST(SortOps, TopKWritesWholeBlocksOfPairs) {
  // TileLang-Ascend's TopK copies 2k lanes rounded up to 32-byte blocks (DataCopy), so the
  // entries after the k-th up to the block's end are the next sorted ones.
  for (DType t : legal("topk"))
    for (auto [k, actual] :
         std::vector<std::pair<int, int>>{{10, 64}, {16, 50}, {40, 33}, {1, 64}, {5, 64}}) {
      SCOPED_TRACE(fmt::format("topk {} k {} actual_num {}", dtype_name(t), k, actual));
      const int64_t n = 64, dn = 128;
      Device dev;
      Tensor s = from_vector(dev, {n}, t, tie_scores(n, 23)), d = full(dev, {dn}, t, 7);
      run_one_op(dev, {{"d", {dn}, t}, {"s", {n}, t}}, {},
                 [&](const std::vector<Buffer>& ub, const std::vector<Var>&) {
                   T::topk(ub[0], ub[1], k, actual);
                 },
                 {d, s});
      const int64_t per_block = 32 / dtype_bytes(t),
                    lanes = (2 * k + per_block - 1) / per_block * per_block;
      auto want = ref_sorted(s.to_vector(), actual, t);
      want.resize(lanes / 2);
      EXPECT_EQ(describe(read_entries(d, lanes / 2), want), "");
      auto dv = d.to_vector();
      for (int64_t i = lanes; i < dn; ++i) ASSERT_EQ(dv[i], 7.0) << i;
    }
}

TEST(SortOps, Float16IndexLanesArePositionsRoundedToHalf) {
  // TileLang-Ascend sorts float16 in float32 and casts the pairs to half (RINT): the chip's
  // index lanes for positions past 2048 are the nearest even half (2049 -> 2048, 2051 -> 2052,
  // 4097 -> 4096). Scores descending from position 0, so entry i is position i.
  const int64_t n = 4128;
  std::vector<double> sv(n);
  for (int64_t i = 0; i < n; ++i) sv[i] = 60000.0 - 16.0 * static_cast<double>(i / 8);  // ties of 8
  Device dev;
  Tensor s = from_vector(dev, {n}, DType::Float16, sv),
         d = Tensor::empty(dev, {2 * n}, DType::Float16);
  run_one_op(
      dev, {{"d", {2 * n}, DType::Float16}, {"s", {n}, DType::Float16}}, {},
      [&](const std::vector<Buffer>& ub, const std::vector<Var>&) { T::sort(ub[0], ub[1], n); },
      {d, s});
  auto e = read_entries(d, n);
  EXPECT_EQ(e[2047].index, 2047.0);
  EXPECT_EQ(e[2048].index, 2048.0);
  EXPECT_EQ(e[2049].index, 2048.0);
  EXPECT_EQ(e[2051].index, 2052.0);
  EXPECT_EQ(e[4097].index, 4096.0);
  EXPECT_EQ(e[4099].index, 4100.0);
  EXPECT_EQ(describe(e, ref_sorted(s.to_vector(), n, DType::Float16)), "");
}

/// The top-k selector of TileLang-Ascend's scripts: topk, the index lanes picked with
/// gather_mask("P1010") into a buffer of the score dtype, then cast to int32 with `mode`.
PrimFunc selector(DType t, int64_t n, int64_t k, const char* mode) {
  auto S = T::Tensor("S", {n}, t);
  auto I = T::Tensor("I", {k}, DType::Int32);
  return T::prim_func("selector", {S, I}, [&] {
    T::Kernel(1, [&](Expr, Expr vid) {
      T::Scope(Core::Vector, [&] {
        T::If(vid == 0, [&] {
          auto s = T::alloc_ub("s", {n}, t), pairs = T::alloc_ub("pairs", {2 * k}, t);
          auto lanes = T::alloc_ub("lanes", {k}, t);
          auto idx = T::alloc_ub("idx", {k}, DType::Int32);
          T::copy(S, s);
          T::set_flag(Pipe::MTE2, Pipe::V, 0);
          T::wait_flag(Pipe::MTE2, Pipe::V, 0);
          T::topk(pairs, s, k, n);
          T::pipe_barrier(Pipe::V);
          T::tile::gather_mask(lanes, pairs, "P1010");
          T::pipe_barrier(Pipe::V);
          T::tile::cast(idx, lanes, mode);
          T::set_flag(Pipe::V, Pipe::MTE3, 0);
          T::wait_flag(Pipe::V, Pipe::MTE3, 0);
          T::copy(idx, I);
        });
      });
    });
  });
}

// Regression, issue 27 item 3: the model stored the uint32 position in the index lanes, so
// gather_mask + CAST_ROUND read denormals (i * 2^-149) and every index came out 0. Before the
// fix, float32: entry 0 (position 4) read 0 (python/tests/test_topk_selector.py's selector read
// 0 for 8192 of 8192 indices); float16 pairs of 8 bytes did not fit the 2k lanes at all.
TEST(SortOps, TopKIndexLanesThroughGatherMaskAndCastAreThePositions) {
  for (DType t : legal("topk")) {
    SCOPED_TRACE(dtype_name(t));
    const int64_t n = 256, k = 64;
    auto sv = tie_scores(n, 5);
    Device dev;
    Tensor S = from_vector(dev, {n}, t, sv), I = Tensor::empty(dev, {k}, DType::Int32);
    compile(selector(t, n, k, "CAST_ROUND")).launch(dev, {S, I}, {.check_hazards = true});
    auto want = ref_sorted(S.to_vector(), n, t);
    auto got = I.to_vector();
    int zeros = 0;
    for (int64_t i = 0; i < k; ++i) {
      zeros += got[i] == 0;
      ASSERT_EQ(got[i], want[i].index) << "entry " << i;
    }
    EXPECT_LE(zeros, 1);
  }
}

TEST(SortOps, IndexLanesReadAsInt32AreTheFloatBitsOfThePositions) {
  // A kernel that views the pairs as int32 (T::view) and picks the odd lanes gets what the chip
  // holds there: the float32 encoding of each position (1.0f is 0x3f800000), not the position.
  const int64_t n = 64;
  auto S = T::Tensor("S", {n}, DType::Float32);
  auto I = T::Tensor("I", {n}, DType::Int32);
  PrimFunc f = T::prim_func("bits", {S, I}, [&] {
    T::Kernel(1, [&](Expr, Expr vid) {
      T::Scope(Core::Vector, [&] {
        T::If(vid == 0, [&] {
          auto s = T::alloc_ub("s", {n}, f32), pairs = T::alloc_ub("pairs", {2 * n}, f32);
          auto idx = T::alloc_ub("idx", {n}, DType::Int32);
          T::copy(S, s);
          T::set_flag(Pipe::MTE2, Pipe::V, 0);
          T::wait_flag(Pipe::MTE2, Pipe::V, 0);
          T::sort(pairs, s, n);
          auto as_int = T::view("as_int", pairs, DType::Int32);
          T::pipe_barrier(Pipe::V);
          T::tile::gather_mask(idx, as_int, "P1010");
          T::set_flag(Pipe::V, Pipe::MTE3, 0);
          T::wait_flag(Pipe::V, Pipe::MTE3, 0);
          T::copy(idx, I);
        });
      });
    });
  });
  Device dev;
  std::vector<double> sv(n);
  for (int64_t i = 0; i < n; ++i) sv[i] = static_cast<double>(n - i);  // entry i is position i
  Tensor s = from_vector(dev, {n}, f32, sv), out = Tensor::empty(dev, {n}, DType::Int32);
  compile(f).launch(dev, {s, out}, {.check_hazards = true});
  auto got = out.to_vector();
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(got[i], static_cast<double>(std::bit_cast<int32_t>(static_cast<float>(i)))) << i;
  EXPECT_EQ(got[1], 0x3f800000);
}

TEST(SortOps, CastOfIntegerIndexBitsIsWhatTheReinterpretationGives) {
  // Where the chip's index lanes hold integer bits (queues a kernel builds itself with uint32
  // indices, init_sort_buf's all-ones lanes), a float -> int cast reads them as floats: uint32
  // i is the denormal i * 2^-149, which CAST_ROUND makes 0 and CAST_CEIL 1 (A2 keeps
  // subnormals in Cast); all ones is a NaN, which becomes 0 (float -> int saturation rule).
  const int64_t n = 16;
  for (const char* mode : {"CAST_ROUND", "CAST_CEIL", "CAST_FLOOR"}) {
    SCOPED_TRACE(mode);
    Device dev;
    Tensor P = Tensor::empty(dev, {2 * n}, f32), I = Tensor::empty(dev, {n}, DType::Int32);
    for (int64_t i = 0; i < n; ++i) {
      float score = static_cast<float>(n - i);
      uint32_t index = i < n - 1 ? static_cast<uint32_t>(i) : 0xffffffffu;
      std::memcpy(P.data() + 8 * i, &score, 4);
      std::memcpy(P.data() + 8 * i + 4, &index, 4);
    }
    run_one_op(dev, {{"p", {2 * n}, f32}, {"i", {n}, DType::Int32}}, {},
               [&](const std::vector<Buffer>& ub, const std::vector<Var>&) {
                 auto f = T::alloc_ub("f", {n}, f32);
                 T::tile::gather_mask(f, ub[0], "P1010");
                 T::pipe_barrier(Pipe::V);
                 T::tile::cast(ub[1], f, mode);
               },
               {P, I});
    auto got = I.to_vector();
    for (int64_t i = 0; i < n; ++i) {
      double want = i == n - 1 ? 0 : std::string(mode) == "CAST_CEIL" && i > 0 ? 1 : 0;
      ASSERT_EQ(got[i], want) << "index " << i;
    }
  }
}

/// Writes float32 entries (score, raw 32-bit index lane) into t.
void write_entries(const Tensor& t, const std::vector<std::pair<double, uint32_t>>& e) {
  for (size_t i = 0; i < e.size(); ++i) {
    float s = static_cast<float>(e[i].first);
    std::memcpy(t.data() + 8 * i, &s, 4);
    std::memcpy(t.data() + 8 * i + 4, &e[i].second, 4);
  }
}
std::vector<std::pair<double, uint32_t>> raw_entries(const Tensor& t, int64_t count) {
  std::vector<std::pair<double, uint32_t>> e(count);
  for (int64_t i = 0; i < count; ++i) {
    float s;
    std::memcpy(&s, t.data() + 8 * i, 4);
    std::memcpy(&e[i].second, t.data() + 8 * i + 4, 4);
    e[i].first = s;
  }
  return e;
}

TEST(SortOps, MergeSortTwoToFourQueuesWithTiesMovesEntriesVerbatim) {
  ASSERT_EQ(legal("merge_sort"), (std::vector<DType>{DType::Float32}));
  for (int ways : {2, 3, 4}) {
    SCOPED_TRACE(fmt::format("merge_sort {} ways", ways));
    // Queues of different lengths (multiples of 4 entries: 32-byte rows), ties across queues
    // with interleaved index lanes of any bits (MrgSort moves the 8 bytes), a -inf tail.
    const std::vector<int64_t> lens = {8, 12, 4, 16};
    Device dev;
    std::vector<Tensor> qs;
    std::vector<std::pair<double, uint32_t>> all;
    uint32_t next = 0;
    for (int w = 0; w < ways; ++w) {
      std::mt19937 rng(31 + w);
      std::vector<std::pair<double, uint32_t>> e(lens[w]);
      for (auto& x : e)
        x = {static_cast<int>(rng() % 4) * 0.5,
             (next += 1 + rng() % 3) | (w == 2 ? 0x7fc00000u : 0)};
      if (w == 1) e.back().first = -kInf;
      std::stable_sort(e.begin(), e.end(),
                       [](const auto& a, const auto& b) { return a.first > b.first; });
      Tensor q = Tensor::empty(dev, {lens[w] * 2}, f32);
      write_entries(q, e);
      qs.push_back(q);
      all.insert(all.end(), e.begin(), e.end());
    }
    std::stable_sort(all.begin(), all.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    const int64_t total = static_cast<int64_t>(all.size()), dn = (total + 4) * 2;
    Tensor d = full(dev, {dn}, f32, 7);
    std::vector<BufSpec> bufs = {{"d", {dn}, f32}};
    std::vector<Arg> args = {d};
    for (int w = 0; w < ways; ++w) {
      bufs.push_back({fmt::format("q{}", w), {lens[w] * 2}, f32});
      args.emplace_back(qs[w]);
    }
    run_one_op(
        dev, bufs, {},
        [&](const std::vector<Buffer>& ub, const std::vector<Var>&) {
          std::vector<TileArg> srcs(ub.begin() + 1, ub.end());
          T::merge_sort(ub[0], srcs);
        },
        args);
    EXPECT_EQ(raw_entries(d, total), all);
    auto dv = d.to_vector();
    for (int64_t i = total * 2; i < dn; ++i) ASSERT_EQ(dv[i], 7.0) << i;
  }
}

TEST(SortOps, MergeSortTiesGoByQueueNotByIndex) {
  // Fidelity issue, item 10: queue 0 holds (5, index 9), queue 1 (5, index 1). MrgSort keeps
  // input order on ties: index 9 first (the model used to order ties by index).
  Device dev;
  Tensor q0 = Tensor::empty(dev, {8}, f32), q1 = Tensor::empty(dev, {8}, f32);
  write_entries(q0, {{5.0, 9}, {1.0, 4}, {-kInf, 0}, {-kInf, 0}});
  write_entries(q1, {{5.0, 1}, {2.0, 7}, {-kInf, 0}, {-kInf, 0}});
  Tensor d = Tensor::empty(dev, {16}, f32);
  run_one_op(dev, {{"d", {16}, f32}, {"q0", {8}, f32}, {"q1", {8}, f32}}, {},
             [&](const std::vector<Buffer>& ub, const std::vector<Var>&) {
               T::merge_sort(ub[0], {ub[1], ub[2]});
             },
             {d, q0, q1});
  auto e = raw_entries(d, 4);
  EXPECT_EQ(e[0].second, 9u);
  EXPECT_EQ(e[1].second, 1u);
  EXPECT_EQ(e[2].second, 7u);
  EXPECT_EQ(e[3].second, 4u);
}

TEST(SortOps, MergeSortOfFloat16QueuesIsAVerifierError) {
  // MrgSort's entries are 8 bytes whatever the score's type; float16 pairs are 4, so the chip
  // would read each queue twice as far (TileLang-Ascend passes elements / 2 as the length).
  auto f = one_op_func(
      {{"d", {64}, DType::Float16}, {"a", {32}, DType::Float16}, {"b", {32}, DType::Float16}}, {},
      [&](const std::vector<Buffer>& ub, const std::vector<Var>&) {
        T::merge_sort(ub[0], {ub[1], ub[2]});
      });
  auto ds = verify(f);
  ASSERT_FALSE(ds.empty());
  EXPECT_EQ(ds[0].rule, "vector-dtype") << format_diagnostics(ds);
  EXPECT_NE(ds[0].message.find("takes {float32}, got float16"), std::string::npos)
      << format_diagnostics(ds);
}

TEST(SortOps, SortThenMergeInOneKernel) {
  // Two 32-element halves sorted separately then merged equal a 64-element sort of the halves'
  // entries: each half numbers its positions from 0, and MrgSort resolves ties by queue.
  const int64_t n = 64;
  auto sv = tie_scores(n, 41);
  Device dev;
  Tensor s = from_vector(dev, {n}, f32, sv), d = Tensor::empty(dev, {2 * n}, f32);
  Tensor q0 = Tensor::empty(dev, {n}, f32), q1 = Tensor::empty(dev, {n}, f32);
  run_one_op(dev, {{"d", {2 * n}, f32}, {"s", {n}, f32}, {"q0", {n}, f32}, {"q1", {n}, f32}}, {},
             [&](const std::vector<Buffer>& ub, const std::vector<Var>&) {
               T::sort(ub[2], ub[1].region({0}, {32}), 32);
               T::sort(ub[3], ub[1].region({32}, {32}), 32);
               T::pipe_barrier(Pipe::V);
               T::merge_sort(ub[0], {ub[2], ub[3]});
             },
             {d, s, q0, q1});
  std::vector<Entry> want;
  for (int h = 0; h < 2; ++h) {
    auto e =
        ref_sorted(std::vector<double>(sv.begin() + h * 32, sv.begin() + h * 32 + 32), 32, f32);
    want.insert(want.end(), e.begin(), e.end());
  }
  std::stable_sort(want.begin(), want.end(),
                   [](const Entry& a, const Entry& b) { return a.score > b.score; });
  EXPECT_EQ(describe(read_entries(d, n), want), "");
}

TEST(SortOps, InitSortBufCountsEntries) {
  // init_sort_buf(dst, num[, value]) fills `num` float32 entries (docs/language.md and the
  // verifier's capacity rule): score -inf (or value), index lane all ones (TileLang-Ascend's
  // InitSortBuf writes int32 -1 there).
  ASSERT_EQ(legal("init_sort_buf"), (std::vector<DType>{DType::Float32}));
  for (bool with_value : {false, true}) {
    SCOPED_TRACE(fmt::format("value {}", with_value));
    const int64_t num = 8, dn = 32;
    Device dev;
    Tensor d = full(dev, {dn}, f32, 7);
    run_one_op(dev, {{"d", {dn}, f32}}, {},
               [&](const std::vector<Buffer>& ub, const std::vector<Var>&) {
                 if (with_value)
                   T::init_sort_buf(ub[0], static_cast<int>(num), 2.5);
                 else
                   T::init_sort_buf(ub[0], static_cast<int>(num));
               },
               {d});
    std::vector<std::pair<double, uint32_t>> want(num, {with_value ? 2.5 : -kInf, 0xffffffffu});
    EXPECT_EQ(raw_entries(d, num), want);
    auto dv = d.to_vector();
    for (int64_t i = num * 2; i < dn; ++i) ASSERT_EQ(dv[i], 7.0) << "element " << i;
  }
}

}  // namespace
}  // namespace tl
