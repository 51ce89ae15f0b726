// The hazard checker run while a launch runs (tl::npu::HazardStream, src/npu/hazard.cpp): each
// block checked once its cores finished, then retired (its events freed, its on-chip shadows
// dropped, the GM accesses later blocks may meet kept as copies). Its findings must be exactly
// those of the checker on the whole trace after the launch: the same hazards in the same order
// with the same counts, the same duplicate-store remarks and flag issues, on random traces fed in
// any order, across the retirement of the block that made the first access, and on launches of
// the expert examples and of every single-sync deletion of them (TL_HAZARD_RETIRE=1 against 0).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <random>

#include "npu/example_cases.h"
#include "npu/random_trace.h"
#include "npu/sync_mutations.h"
#include "tl/npu/hazard.h"
#include "tl/npu/npu.h"

namespace tl::npu {
namespace {

void expect_same_sides(const HazardSide& a, const HazardSide& b, const std::string& what) {
  EXPECT_EQ(a.op, b.op) << what;
  EXPECT_EQ(a.core, b.core) << what;
  EXPECT_EQ(a.buffer, b.buffer) << what;
  EXPECT_EQ(a.where, b.where) << what;
  EXPECT_EQ(a.start, b.start) << what;
  EXPECT_EQ(a.end, b.end) << what;
  EXPECT_EQ(a.core_index, b.core_index) << what;
  EXPECT_EQ(a.event, b.event) << what;
  EXPECT_EQ(a.loc.str(), b.loc.str()) << what;
}

void expect_same_hazards(const std::vector<Hazard>& a, const std::vector<Hazard>& b,
                         const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].str(), b[i].str()) << what;
    EXPECT_EQ(a[i].count, b[i].count) << what;
    expect_same_sides(a[i].first, b[i].first, what);
    expect_same_sides(a[i].second, b[i].second, what);
  }
}

/// Checks `t` whole, then a copy streamed block by block in `order` (each block fed once its
/// turn comes: HazardStream checks them in block order whatever order they finish in), and
/// compares everything the two report. Returns the number of hazards.
size_t expect_streamed_same(const Trace& t, const std::vector<int64_t>& order,
                            const std::string& what) {
  const Target& target = default_target();
  std::vector<std::string> r_whole, r_stream;
  const std::string m_whole = hazard_report(t, target, &r_whole);
  const auto h_whole = check_hazards(t, target);
  const auto d_whole = duplicate_stores(t, target);
  const auto f_whole = check_flags(t, target.max_pending_cross_sets);
  Trace copy = t;
  HazardStream s(copy, target);
  for (int64_t b : order) s.block_done(b);
  for (const auto& c : copy.cores) EXPECT_TRUE(c.events.empty()) << what << ": not retired";
  EXPECT_EQ(s.report(&r_stream), m_whole) << what;
  EXPECT_EQ(r_stream, r_whole) << what;
  expect_same_hazards(s.hazards(), h_whole, what);
  expect_same_hazards(s.duplicates(), d_whole, what);
  const auto& f = s.flag_issues();
  EXPECT_EQ(f.size(), f_whole.size()) << what;
  for (size_t i = 0; i < std::min(f.size(), f_whole.size()); ++i)
    EXPECT_EQ(f[i].str(), f_whole[i].str()) << what;
  return h_whole.size();
}

TEST(HazardStream, RandomTracesGiveTheWholeTracesFindings) {
  std::mt19937_64 rng(4097);
  int with_hazards = 0, with_issues = 0;
  for (int round = 0; round < 200; ++round) {
    const int blocks = 1 + static_cast<int>(rng() % 6);
    const Trace t = random_trace(rng, blocks, /*sync_all=*/false, /*inputs=*/round % 2 == 1);
    std::vector<int64_t> order(static_cast<size_t>(blocks));
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    with_hazards += expect_streamed_same(t, order, "round " + std::to_string(round)) > 0;
    with_issues += !check_flags(t).empty();
  }
  EXPECT_GT(with_hazards, 150);
  EXPECT_GT(with_issues, 50);
}

// Block 0's store of n strided rows is checked and retired (its events freed) before block 1
// runs; block 1's read of the last row still races with it, named as the whole-trace checker
// names it (op, core, tensor elements, line), and a read of the gap between the rows does not.
TEST(HazardStream, ARetiredStoreStillRacesWithALaterBlocksRead) {
  for (const int64_t n : {1, 7, 33, 1000, 4097}) {
    Trace t;
    t.kernel = "retired";
    t.num_blocks = t.physical_blocks = 2;
    t.cores.resize(6);
    const uint64_t base = 0x100000;
    for (size_t ci = 0; ci < 6; ++ci) {
      t.cores[ci].block = static_cast<int64_t>(ci / 3);
      t.cores[ci].gm["Y"] = GmTensor{base, 4, {n, 64}, {64, 1}};
    }
    auto op = [](const char* name, Pipe p, MemoryId mem, uint64_t start, uint64_t len,
                 uint64_t count, bool write, int line) {
      TraceEvent e;
      e.pipe = p;
      e.name = name;
      e.loc = SourceLoc{"k.py", line};
      e.accesses.push_back({.mem = mem,
                            .start = start,
                            .len = len,
                            .pitch = count > 1 ? 256u : 0u,
                            .count = count,
                            .write = write,
                            .buffer = mem.scope == MemScope::GM ? "Y" : "y_ub"});
      return e;
    };
    const MemoryId ub0{MemScope::UB, 0, 1}, ub1{MemScope::UB, 1, 1}, gm{};
    const auto rows = static_cast<uint64_t>(n);
    // Columns 0-31 of every row (128 of each row's 256 bytes).
    t.cores[1].events.push_back(op("tile.exp", Pipe::V, ub0, 0, 128 * rows, 1, true, 1));
    t.cores[1].events.push_back(op("copy", Pipe::MTE3, gm, base, 128, rows, true, 2));
    // The last row's columns 32-63 (never written), then its columns 0-31.
    const uint64_t last = base + (rows - 1) * 256;
    t.cores[4].events.push_back(op("copy", Pipe::MTE2, gm, last + 128, 128, 1, false, 3));
    t.cores[4].events.push_back(op("copy", Pipe::MTE2, gm, last, 128, 1, false, 4));
    t.cores[4].events.push_back(op("tile.exp", Pipe::V, ub1, 0, 128, 1, true, 5));
    const std::string what = "n = " + std::to_string(n);
    ASSERT_EQ(expect_streamed_same(t, {0, 1}, what), 1u) << what;

    Trace copy = t;
    HazardStream s(copy, default_target());
    s.block_done(0);
    for (size_t ci = 0; ci < 3; ++ci) EXPECT_TRUE(copy.cores[ci].events.empty()) << what;
    EXPECT_FALSE(copy.cores[4].events.empty()) << what;
    s.block_done(1);
    const auto& h = s.hazards();
    ASSERT_EQ(h.size(), 1u) << what;
    EXPECT_EQ(h[0].kind, "RAW") << what;
    EXPECT_EQ(h[0].first.core, "block 0 AIV0") << what;
    EXPECT_EQ(h[0].first.loc.line, 2) << what;
    EXPECT_EQ(h[0].second.core, "block 1 AIV0") << what;
    EXPECT_EQ(h[0].second.loc.line, 4) << what;
    EXPECT_EQ(h[0].first.where, fmt::format("Y elements [0, 0] to [{}, 31]", n - 1)) << what;
  }
}

/// A launch's report and remarks with the checker while it runs (TL_HAZARD_RETIRE=1) or after.
std::string launch_report(const PrimFunc& f, const ArgsFn& args, bool retire) {
  ::setenv("TL_HAZARD_RETIRE", retire ? "1" : "0", 1);
  std::vector<std::string> remarks;
  std::string out;
  try {
    Device dev;
    auto g = std::make_shared<PrimFuncNode>(*f);
    g->lowered_from_developer = 0;  // keep the deletion (hazard_mutation_test.cpp)
    auto kern = compile(PrimFunc(g), default_target(), {.cache = false});
    kern.launch(dev, args(dev), {.threads = 2, .check_hazards = true, .hazard_remarks = &remarks});
  } catch (const Error& e) {
    out = e.what();
  }
  ::unsetenv("TL_HAZARD_RETIRE");
  for (const auto& r : remarks) out += "\n" + r;
  return out;
}

/// The example and each of its single-sync deletions; how many reported something.
int compare_launches(const ExampleCase& c) {
  int reported = 0;
  auto run = [&](const PrimFunc& f, const std::string& label) {
    const std::string on = launch_report(f, c.args, true);
    EXPECT_EQ(on, launch_report(f, c.args, false)) << f->name << " " << label;
    reported += !on.empty();
  };
  run(c.f, "unmodified");
  for (const auto& m : mutations(c.f)) run(without(c.f, m), m.label);
  return reported;
}

TEST(HazardStream, LaunchesOfTheExamplesAndTheirSyncDeletionsReportTheSame) {
  EXPECT_GT(compare_launches(minicv_case()), 0);
  EXPECT_GT(compare_launches(flash_attention_case()), 0);
  EXPECT_GT(compare_launches(rms_norm_case(2)), 0);
  EXPECT_GT(compare_launches(flash_attention_pipelined_case()), 0);
  EXPECT_GT(compare_launches(gemm_pipelined_case()), 0);
}

}  // namespace
}  // namespace tl::npu
