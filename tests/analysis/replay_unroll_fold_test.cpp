// The unroll's folded loops (tl/replay.h, Stream; docs/compiler.md, "Compile latency", the
// eighth round): a loop's middle iterations, proven alike, are stored once with their count.
// The streams must be the unfolded ones event for event (the same kinds, pipes, flags,
// statements and spans), but for the spans of GM tensors no op writes, which the folded
// iteration holds as the whole tensor (no replay reads them), and every replay must answer as
// on the unfolded streams. Kernels at trip counts around the fold's threshold (1, 7, 8, 33),
// tails (a last kv tile of its own, a K panel count that is odd), and long loops (where the
// stored events must not grow with the trip count).
#include <gtest/gtest.h>

#include <array>
#include <map>
#include <string>
#include <vector>

#include "tl/ir_functor.h"
#include "tl/kernel_registry.h"
#include "tl/pass.h"
#include "tl/replay.h"

namespace tl {
namespace {

struct Case {
  std::string kernel;
  std::map<std::string, std::string> sets;
};

const KernelNode* scopes(const PrimFunc& f, std::array<Stmt, 2>& bodies) {
  const KernelNode* k = nullptr;
  pre_order_visit(f->body, [&](const Stmt& s) {
    if (auto* n = s.as<KernelNode>()) k = n;
  });
  if (k)
    pre_order_visit(k->body, [&](const Stmt& s) {
      if (auto* sc = s.as<ScopeNode>()) bodies[sc->core == CoreKind::Cube ? 0 : 1] = sc->body;
    });
  return k;
}

bool same_span(const replay::Span& a, const replay::Span& b) {
  return a.mem == b.mem && a.base == b.base && a.lo == b.lo && a.hi == b.hi && a.write == b.write;
}

/// Compares folded `f` with unfolded `u` event by event; returns how many stored events `f`
/// saves.
size_t expect_same(const replay::Streams& f, const replay::Streams& u, const std::string& what) {
  std::vector<uint64_t> written;
  for (const auto& s : u)
    for (const auto& e : s.stored())
      for (const auto& sp : e.spans)
        if (sp.write) written.push_back(sp.mem);
  size_t saved = 0;
  for (int c = 0; c < 3; ++c) {
    EXPECT_EQ(f[c].size(), u[c].size()) << what << " core " << c;
    if (f[c].size() != u[c].size()) continue;
    EXPECT_TRUE(u[c].runs().empty());
    saved += f[c].size() - f[c].stored().size();
    for (size_t i = 0; i < u[c].size(); ++i) {
      const replay::Event &x = f[c][i], &y = u[c][i];
      const bool same = x.kind == y.kind && x.pipe == y.pipe && x.dst == y.dst && x.id == y.id &&
                        x.channel == y.channel && x.push == y.push && x.first == y.first &&
                        x.sync == y.sync && x.spans.size() == y.spans.size();
      EXPECT_TRUE(same) << what << " core " << c << " event " << i;
      if (!same) return saved;
      for (size_t j = 0; j < x.spans.size(); ++j) {
        if (same_span(x.spans[j], y.spans[j])) continue;
        // Only a read of a GM tensor no op writes, stored as the whole tensor.
        const replay::Span &a = x.spans[j], &b = y.spans[j];
        EXPECT_TRUE(a.mem == b.mem && (a.mem >> 63) && !a.write && !b.write && a.base == -1 &&
                    a.lo == 0 && a.hi == INT64_MAX &&
                    std::find(written.begin(), written.end(), a.mem) == written.end())
            << what << " core " << c << " event " << i << " span " << j;
      }
    }
  }
  return saved;
}

std::vector<replay::Streams> unroll(const KernelNode& k, const std::array<Stmt, 2>& b, bool acc,
                                    bool fold) {
  replay::set_fold_loops(fold);
  auto out = replay::unroll_blocks(k, b[0], b[1], default_target(), {}, acc, 64);
  replay::set_fold_loops(true);
  return out;
}

TEST(ReplayUnrollFold, TheSameStreamsAndAnswersAsEveryIterationWalked) {
  const std::vector<Case> cases = {
      {"flash_attention_dev", {{"S", "256"}}},                          // 1 kv pair
      {"flash_attention_dev", {{"S", "1024"}}},                         // 7: walked
      {"flash_attention_dev", {{"S", "1152"}}},                         // 8: folded
      {"flash_attention_dev", {{"S", "4352"}}},                         // 33
      {"flash_attention_dev", {{"S", "1000"}, {"num_stages", "3"}}},    // a tail kv tile
      {"flash_attention_dev", {{"S", "4097"}, {"H", "2"}}},             // a tail of 1 row
      {"gemm_dev", {{"M", "512"}, {"N", "512"}, {"K", "65536"}}},       // 128 K panel pairs
      {"gemm_dev", {{"M", "1000"}, {"N", "777"}, {"K", "4097"}}},       // odd panels, tails
      {"matmul_add_dev", {{"M", "100"}, {"N", "300"}, {"K", "7000"}}},  //
  };
  for (const Case& c : cases) {
    const std::string what = c.kernel + (c.sets.count("S") ? " S=" + c.sets.at("S") : "") +
                             (c.sets.count("K") ? " K=" + c.sets.at("K") : "");
    PrimFunc f = lower(build_kernel(find_kernel(c.kernel), c.sets), default_target());
    std::array<Stmt, 2> b;
    const KernelNode* k = scopes(f, b);
    ASSERT_NE(k, nullptr);
    for (bool acc : {false, true}) {
      auto folded = unroll(*k, b, acc, true), walked = unroll(*k, b, acc, false);
      ASSERT_EQ(folded.size(), walked.size()) << what;
      ASSERT_FALSE(folded.empty()) << what;
      size_t saved = 0;
      for (size_t s = 0; s < folded.size(); ++s) saved += expect_same(folded[s], walked[s], what);
      const bool long_loop = c.sets.count("K") ? c.kernel == "gemm_dev" && c.sets.at("K") == "65536"
                                               : std::stoi(c.sets.at("S")) >= 1152;
      if (long_loop) {
        EXPECT_GT(saved, 0u) << what;
      }
      if (c.sets.count("S") && std::stoi(c.sets.at("S")) <= 1024) {
        EXPECT_EQ(saved, 0u) << what;
      }
      replay::Query q;
      q.accesses = acc;
      q.balanced = true;
      for (size_t s = 0; s < folded.size(); ++s)
        EXPECT_EQ(replay::replay(folded[s], {}, q), replay::replay(walked[s], {}, q)) << what;
    }
  }
}

TEST(ReplayUnrollFold, StoredEventsDoNotGrowWithTheTripCount) {
  // flash_attention_dev's kv loop at 511 and 1023 pairs: twice the events, about the same
  // stored (a vector op's instructions per tile differ a little between the two shapes).
  std::vector<size_t> stored, events;
  for (const char* s : {"65536", "131072"}) {
    PrimFunc f = lower(build_kernel(find_kernel("flash_attention_dev"), {{"H", "12"}, {"S", s}}),
                       default_target());
    std::array<Stmt, 2> b;
    const KernelNode* k = scopes(f, b);
    ASSERT_NE(k, nullptr);
    auto sets = unroll(*k, b, true, true);
    ASSERT_EQ(sets.size(), 1u);
    size_t n = 0, v = 0;
    for (const auto& st : sets[0]) {
      EXPECT_EQ(st.runs().size(), 1u);
      n += st.stored().size(), v += st.size();
    }
    stored.push_back(n);
    events.push_back(v);
  }
  EXPECT_GT(events[1], events[0] * 19 / 10);
  EXPECT_LT(stored[1], stored[0] * 12 / 10);
  EXPECT_LT(stored[1], 1000u);
}

TEST(ReplayUnrollFold, RemoveIfKeepsTheRuns) {
  // elide_channel_credits filters a credit's events out of folded streams.
  replay::Stream s;
  auto ev = [](replay::Event::Kind k, int id) {
    replay::Event e;
    e.kind = k;
    e.id = id;
    return e;
  };
  s.push_back(ev(replay::Event::Set, 0));
  s.push_back(ev(replay::Event::WaitCross, 1));
  s.push_back(ev(replay::Event::Set, 2));
  s.repeat(1, 5);  // [Set0] ([WaitCross1, Set2] x 5)
  s.push_back(ev(replay::Event::WaitCross, 1));
  s.push_back(ev(replay::Event::Wait, 3));
  ASSERT_EQ(s.size(), 13u);
  s.remove_if([](const replay::Event& e) { return e.kind == replay::Event::WaitCross; });
  ASSERT_EQ(s.size(), 7u);
  const int ids[] = {0, 2, 2, 2, 2, 2, 3};
  for (size_t i = 0; i < 7; ++i) EXPECT_EQ(s[i].id, ids[i]) << i;
  s.remove_if([](const replay::Event& e) { return e.id == 2; });
  ASSERT_EQ(s.size(), 2u);
  EXPECT_TRUE(s.runs().empty());
  EXPECT_EQ(s[1].id, 3);
}

}  // namespace
}  // namespace tl
