// The hazard checker's interval indexes (include/tl/npu/range_index.h, src/npu/hazard.cpp) give
// exactly the findings of the linear scan they replaced (tests/npu/hazard_linear.h): the same
// hazards in the same order with the same counts, the same duplicate-store remarks and flag
// issues, on random traces (strided GM and UB accesses of several blocks, flags, barriers,
// sync_all, scalar GM accesses and dccis, atomic and duplicate stores) and on the traces of
// every single-sync deletion of the expert examples (the mutation suite's kernels), also where
// GM reads read inputs no access writes (the reads the checker skips). And the
// index itself answers exactly what a scan of all its entries answers.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <tuple>

#include "npu/example_cases.h"
#include "npu/hazard_linear.h"
#include "npu/random_trace.h"
#include "npu/sync_mutations.h"
#include "tl/npu/hazard.h"
#include "tl/npu/npu.h"
#include "tl/npu/range_index.h"
#include "tl/ops.h"

namespace tl::npu {
namespace {

TEST(RangeIndex, AnswersWhatAScanOfAllEntriesAnswers) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 20; ++round) {
    RangeIndex ix;
    struct E {
      uint64_t start, end, seq;
      uint32_t id;
    };
    std::vector<E> all;
    uint64_t seq = 0;
    // Lengths from 0 to 2^20 bytes (every class), starts in a small space so ranges meet.
    auto rnd_range = [&]() {
      uint64_t s = rng() % 5000;
      int cls = static_cast<int>(rng() % 21);
      uint64_t len = cls == 0 ? 0 : (uint64_t{1} << (cls - 1)) + rng() % (uint64_t{1} << (cls - 1));
      if (rng() % 3 == 0) len %= 64;
      return std::pair{s, s + len};
    };
    for (int step = 0; step < 600; ++step) {
      if (!all.empty() && rng() % 3 == 0) {
        size_t k = rng() % all.size();
        EXPECT_TRUE(ix.erase(all[k].start, all[k].end, all[k].seq));
        all.erase(all.begin() + static_cast<std::ptrdiff_t>(k));
      } else {
        auto [s, e] = rnd_range();
        auto id = static_cast<uint32_t>(seq);
        ix.insert(s, e, seq, id);
        all.push_back({s, e, seq++, id});
      }
      ASSERT_EQ(ix.size(), all.size());
      auto [lo, hi] = rnd_range();
      std::set<uint32_t> got_o, want_o, got_i, want_i;
      ix.overlapping(lo, hi, [&](uint32_t id, uint64_t, uint64_t) {
        EXPECT_TRUE(got_o.insert(id).second) << "visited twice";
      });
      ix.inside(lo, hi, [&](uint32_t id, uint64_t, uint64_t) {
        EXPECT_TRUE(got_i.insert(id).second) << "visited twice";
      });
      for (const auto& x : all) {
        if (x.start < hi && x.end > lo) want_o.insert(x.id);
        if (x.start >= lo && x.start < hi && x.end <= hi) want_i.insert(x.id);
      }
      ASSERT_EQ(got_o, want_o) << "overlapping [" << lo << ", " << hi << ")";
      ASSERT_EQ(got_i, want_i) << "inside [" << lo << ", " << hi << ")";
    }
    EXPECT_FALSE(ix.erase(1u << 30, (1u << 30) + 1, 1u << 30));
  }
}

/// Both checkers on one trace: report, remarks and flag issues must be identical. Returns the
/// numbers of hazards and remarks.
std::pair<size_t, size_t> expect_same_findings(const Trace& t, const std::string& what) {
  const Target& target = default_target();
  std::vector<std::string> r_new, r_old;
  std::string m_new = hazard_report(t, target, &r_new);
  std::string m_old = linear::hazard_report(t, target, &r_old);
  EXPECT_EQ(m_new, m_old) << what;
  EXPECT_EQ(r_new, r_old) << what;
  auto h_new = check_hazards(t, target), h_old = linear::check_hazards(t, target);
  EXPECT_EQ(h_new.size(), h_old.size()) << what;
  for (size_t i = 0; i < std::min(h_new.size(), h_old.size()); ++i) {
    EXPECT_EQ(h_new[i].count, h_old[i].count) << what;
    EXPECT_EQ(h_new[i].first.event, h_old[i].first.event) << what;
    EXPECT_EQ(h_new[i].second.event, h_old[i].second.event) << what;
    EXPECT_EQ(h_new[i].first.core_index, h_old[i].first.core_index) << what;
  }
  return {h_new.size(), r_new.size()};
}

TEST(HazardIndex, RandomTracesGiveTheLinearScansFindings) {
  std::mt19937_64 rng(2026);
  int with_hazards = 0, with_remarks = 0;
  for (int round = 0; round < 150; ++round) {
    const int blocks = 1 + static_cast<int>(rng() % 4);
    Trace t = random_trace(rng, blocks, round % 3 == 0);
    auto [hazards, remarks] = expect_same_findings(t, "round " + std::to_string(round));
    with_hazards += hazards > 0;
    with_remarks += remarks > 0;
  }
  // The traces exercise what they are meant to (not only clean traces).
  EXPECT_GT(with_hazards, 100);
  EXPECT_GT(with_remarks, 10);
}

TEST(HazardIndex, ReadOnlyGmInputsGiveTheLinearScansFindings) {
  std::mt19937_64 rng(29);
  int with_hazards = 0;
  for (int round = 0; round < 150; ++round) {
    const int blocks = 1 + static_cast<int>(rng() % 4);
    Trace t = random_trace(rng, blocks, round % 3 == 0, /*inputs=*/true);
    with_hazards += expect_same_findings(t, "round " + std::to_string(round)).first > 0;
  }
  EXPECT_GT(with_hazards, 100);
}

// A GM read is skipped only when no write's bounding range meets it: reads just below and just
// above a store, and a strided read whose rows straddle it, are clean; one sharing the store's
// last byte is a RAW or WAR pair whichever block the replay meets first.
TEST(HazardIndex, ReadsMeetingAStoreByOneByteAreStillChecked) {
  Trace t;
  t.kernel = "edges";
  t.num_blocks = t.physical_blocks = 2;
  t.cores.resize(6);
  for (size_t ci = 0; ci < 6; ++ci) t.cores[ci].block = static_cast<int64_t>(ci / 3);
  auto op = [](Pipe p, uint64_t start, uint64_t len, uint64_t count, uint64_t pitch, bool write,
               int line) {
    TraceEvent e;
    e.pipe = p;
    e.name = write ? "copy_out" : "copy_in";
    e.loc = SourceLoc{"k.py", line};
    e.accesses.push_back({.mem = {},
                          .start = start,
                          .len = len,
                          .pitch = pitch,
                          .count = count,
                          .write = write,
                          .buffer = "Y"});
    return e;
  };
  t.cores[1].events.push_back(op(Pipe::MTE3, 0x1000, 0x40, 1, 0, true, 1));
  t.cores[4].events.push_back(op(Pipe::MTE2, 0xFC0, 0x40, 1, 0, false, 2));      // just below
  t.cores[4].events.push_back(op(Pipe::MTE2, 0x1040, 0x40, 1, 0, false, 3));     // just above
  t.cores[4].events.push_back(op(Pipe::MTE2, 0xF80, 0x10, 2, 0x100, false, 4));  // straddles
  t.cores[4].events.push_back(op(Pipe::MTE2, 0x103F, 0x11, 1, 0, false, 5));     // last byte
  const auto hs = check_hazards(t);
  ASSERT_EQ(hs.size(), 1u);
  EXPECT_EQ(hs[0].first.loc.line, 1);
  EXPECT_EQ(hs[0].second.loc.line, 5);
  EXPECT_EQ(hs[0].kind, "RAW");
  expect_same_findings(t, "edges");
}

/// The traces of an example and of each of its single-sync deletions; how many of them have
/// hazards.
int compare_mutations(const ExampleCase& c) {
  int with_hazards = 0;
  auto run = [&](const PrimFunc& f, const std::string& label) {
    Device dev;
    auto g = std::make_shared<PrimFuncNode>(*f);
    g->lowered_from_developer = 0;
    Trace trace;
    try {
      auto kern = compile(PrimFunc(g), default_target(), {.cache = false});
      kern.launch(dev, c.args(dev), {.threads = 2, .trace = &trace});
    } catch (const Error&) {
      return;  // a deadlock functional mode stops on: no whole trace
    }
    if (expect_same_findings(trace, f->name + " " + label).first > 0) ++with_hazards;
  };
  run(c.f, "unmodified");
  for (const auto& m : mutations(c.f)) run(without(c.f, m), m.label);
  return with_hazards;
}

TEST(HazardIndex, SyncDeletionsOfTheExamplesGiveTheLinearScansFindings) {
  // gemm's deletions are all redundant (example_cases.h): its traces are clean.
  compare_mutations(gemm_case());
  EXPECT_GT(compare_mutations(minicv_case()), 0);
  EXPECT_GT(compare_mutations(flash_attention_case()), 0);
  EXPECT_GT(compare_mutations(rms_norm_case(2)), 0);
  EXPECT_GT(compare_mutations(flash_attention_pipelined_case()), 0);
  EXPECT_GT(compare_mutations(gemm_pipelined_case()), 0);
}

}  // namespace
}  // namespace tl::npu
