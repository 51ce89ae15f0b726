// The instruction trace records every core's instructions with pipes and byte-exact accesses.
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <thread>

#include "tl/kernel_registry.h"
#include "tl/npu/npu.h"
#include "tl/npu/trace.h"

namespace tl {
namespace {

TEST(Trace, GemmRecordsPipesAndAccesses) {
  Device dev;
  auto kern =
      compile(build_kernel(find_kernel("gemm"), {{"M", "256"}, {"N", "256"}, {"K", "128"}}));
  Tensor A = uniform(dev, {256, 128}, f16, 1), B = uniform(dev, {128, 256}, f16, 2),
         C = Tensor::empty(dev, {256, 256}, f16);
  npu::Trace trace;
  kern.launch(dev, {A, B, C}, {.trace = &trace});
  ASSERT_EQ(trace.num_blocks, 2);
  ASSERT_EQ(trace.cores.size(), 6u);
  const auto& aic = trace.cores[0];
  EXPECT_EQ(aic.kind, CoreKind::Cube);
  int copies = 0, mmads = 0, flags = 0;
  for (const auto& e : aic.events) {
    if (e.name == "copy") {
      ++copies;
      EXPECT_FALSE(e.accesses.empty());
    }
    if (e.name == "gemm_v0.mmad") {
      ++mmads;
      EXPECT_EQ(e.pipe, Pipe::M);
      EXPECT_EQ(e.m, 128);
      EXPECT_EQ(e.n, 256);
      EXPECT_EQ(e.k, 64);
    }
    if (e.kind == npu::EventKind::SetFlag) ++flags;
  }
  EXPECT_EQ(copies, 2 * 2 + 1);  // A and B panels for 2 K steps, then the fixpipe
  EXPECT_EQ(mmads, 2);
  EXPECT_EQ(flags, 2 * 2 + 1);
  EXPECT_TRUE(trace.cores[1].events.empty());  // the AIVs have nothing to do in a cube kernel
  // The first A panel read covers 128 rows of 64 fp16 (128 bytes) at a row pitch of 256 bytes.
  const auto& a_copy = aic.events[0];
  ASSERT_EQ(a_copy.name, "copy");
  EXPECT_EQ(a_copy.pipe, Pipe::MTE2);
  EXPECT_EQ(a_copy.accesses[0].count, 128u);
  EXPECT_EQ(a_copy.accesses[0].len, 128u);
  EXPECT_EQ(a_copy.accesses[0].pitch, 256u);
}

TEST(Trace, OverlapOfStridedAccesses) {
  npu::Access a{{}, 0, 16, 64, 4, false, false, false, "a"},
      b{{}, 16, 16, 64, 4, true, false, false, "b"}, c{{}, 60, 4, 0, 1, true, false, false, "c"};
  EXPECT_FALSE(npu::overlaps(a, b));  // interleaved columns of the same rows
  EXPECT_FALSE(npu::overlaps(a, c));  // ends where the second run starts
  EXPECT_TRUE(npu::overlaps(b, npu::Access{{}, 24, 4, 0, 1, false, false, false, "d"}));
  EXPECT_TRUE(npu::overlaps(a, npu::Access{{}, 130, 2, 0, 1, false, false, false, "e"}));
}

/// overlaps() against a byte-by-byte reference on random strided accesses, including many
/// more than 4096 runs (an earlier version stopped walking there and answered "overlaps").
TEST(Trace, OverlapIsExactForAnyNumberOfRuns) {
  std::mt19937_64 rng(7);
  auto random_access = [&](uint64_t max_runs) {
    npu::Access a;
    a.len = 1 + rng() % 8;
    a.count = 1 + rng() % max_runs;
    a.pitch = rng() % 3 == 0 ? a.len : a.len + rng() % 12;  // contiguous or with gaps
    a.start = rng() % 64;
    return a;
  };
  auto brute = [](const npu::Access& a, const npu::Access& b) {
    std::set<uint64_t> bytes;
    for (uint64_t i = 0; i < a.count; ++i)
      for (uint64_t k = 0; k < a.len; ++k) bytes.insert(a.start + i * a.pitch + k);
    for (uint64_t i = 0; i < b.count; ++i)
      for (uint64_t k = 0; k < b.len; ++k)
        if (bytes.count(b.start + i * b.pitch + k)) return true;
    return false;
  };
  for (int it = 0; it < 3000; ++it) {
    npu::Access a = random_access(it % 10 == 0 ? 6000 : 40), b = random_access(40);
    ASSERT_EQ(npu::overlaps(a, b), brute(a, b)) << it;
    ASSERT_EQ(npu::overlaps(b, a), brute(a, b)) << it;
  }
  // Interleaved halves of 5000 rows never touch; the last row of one touches the other.
  npu::Access even{{}, 0, 16, 32, 5000, false, false, false, "even"},
      odd{{}, 16, 16, 32, 5000, true, false, false, "odd"};
  EXPECT_FALSE(npu::overlaps(even, odd));
  npu::Access tail{{}, 4999 * 32 + 8, 4, 0, 1, true, false, false, "tail"};
  EXPECT_TRUE(npu::overlaps(even, tail));
  npu::Access late{{}, 4999 * 32 + 8, 16, 32, 5000, true, false, false, "late"};
  EXPECT_TRUE(npu::overlaps(even, late));
}

/// Two strided accesses with one pitch (rows of one buffer) take an O(1) test: the same
/// answers as the byte reference, for row counts 1, 7, 33, 1000 and 4097, runs before, after,
/// inside and straddling the other's, and negative row offsets between them.
TEST(Trace, OverlapOfRunsWithOnePitchIsExact) {
  std::mt19937_64 rng(29);
  auto brute = [](const npu::Access& a, const npu::Access& b) {
    std::set<uint64_t> bytes;
    for (uint64_t i = 0; i < a.count; ++i)
      for (uint64_t k = 0; k < a.len; ++k) bytes.insert(a.start + i * a.pitch + k);
    for (uint64_t i = 0; i < b.count; ++i)
      for (uint64_t k = 0; k < b.len; ++k)
        if (bytes.count(b.start + i * b.pitch + k)) return true;
    return false;
  };
  const uint64_t counts[] = {1, 7, 33, 1000, 4097};
  int hits = 0, misses = 0;
  for (int it = 0; it < 4000; ++it) {
    const uint64_t pitch = 2 + rng() % 40;
    npu::Access a, b;
    a.pitch = b.pitch = pitch;
    a.len = 1 + rng() % (pitch - 1);  // strided: gaps between the runs
    b.len = 1 + rng() % (pitch - 1);
    const bool big = it % 50 == 0;
    a.count = counts[rng() % (big ? 5 : 3)];
    b.count = counts[rng() % (big ? 5 : 3)];
    a.start = 1000000 + rng() % (3 * pitch);
    b.start = a.start + rng() % (pitch * (a.count + 2));  // inside, straddling or past a
    if (rng() % 2) std::swap(a.start, b.start);           // and before it
    const bool want = brute(a, b);
    ASSERT_EQ(npu::overlaps(a, b), want) << it;
    ASSERT_EQ(npu::overlaps(b, a), want) << it;
    (want ? hits : misses)++;
  }
  EXPECT_GT(hits, 400);
  EXPECT_GT(misses, 400);
  // Interleaved columns of 4097 rows never touch; shifted by one row they still do not.
  npu::Access left{{}, 0, 16, 64, 4097, false, false, false, "left"},
      right{{}, 16, 48, 64, 4097, true, false, false, "right"};
  EXPECT_FALSE(npu::overlaps(left, right));
  right.start += 64;
  EXPECT_FALSE(npu::overlaps(left, right));
  right.start -= 1;  // one byte earlier: each of its runs meets the last byte of a left run
  EXPECT_TRUE(npu::overlaps(left, right));
}

// Events hold interned names and locations (tl/npu/trace.h): each distinct value once per
// process, the same pointer whichever thread interned it first, reading back what was given.
TEST(Trace, NamesAndLocationsAreInternedOncePerValueAcrossThreads) {
  constexpr int kValues = 1000;
  std::vector<const std::string*> names[2];
  std::vector<const SourceLoc*> locs[2];
  auto work = [&](int t) {
    for (int i = 0; i < kValues; ++i) {
      const int v = t == 0 ? i : kValues - 1 - i;  // the other thread meets them in reverse
      names[t].push_back(npu::intern_string("interned_" + std::to_string(v)));
      locs[t].push_back(npu::intern_loc(
          SourceLoc("interned_file_name_longer_than_sso.py", v + 1, v % 2 ? "helper.py:3" : "")));
    }
  };
  std::thread a(work, 0), b(work, 1);
  a.join();
  b.join();
  for (int i = 0; i < kValues; ++i) {
    EXPECT_EQ(names[0][i], names[1][kValues - 1 - i]);
    EXPECT_EQ(locs[0][i], locs[1][kValues - 1 - i]);
    EXPECT_EQ(*names[0][i], "interned_" + std::to_string(i));
    EXPECT_EQ(locs[0][i]->line, i + 1);
    EXPECT_EQ(locs[0][i]->via, i % 2 ? "helper.py:3" : "");
  }
  EXPECT_NE(names[0][0], names[0][1]);
  // A location differing only in `via` is another value.
  EXPECT_NE(npu::intern_loc(SourceLoc("f.py", 1, "")), npu::intern_loc(SourceLoc("f.py", 1, "g")));
  npu::TraceEvent e;
  e.name = std::string("tile.exp");
  e.loc = SourceLoc("k.py", 7);
  EXPECT_EQ(e.name, "tile.exp");
  EXPECT_EQ(fmt::format("{} at {}", e.name, e.loc.str()), "tile.exp at k.py:7");
  npu::TraceEvent f = e;
  EXPECT_TRUE(f.name == e.name);
  EXPECT_EQ(e.loc->line, 7);
}

}  // namespace
}  // namespace tl
