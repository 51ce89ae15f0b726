// Timed mode computes the data in simulated-time order (src/npu/replay.cpp): an instruction
// reads its operands at its start cycle and its writes land at its end cycle (a reader racing a
// later writer reads what the writer leaves). Shown here:
//   - every example gives bit-identical outputs in timed mode and in fast (program-order) mode,
//     with 1 and 2 host threads, and reports no time-order effects;
//   - deleting a synchronisation the hazard checker reports makes the timed result wrong (or
//     the launch deadlock), as on hardware, while fast mode still computes the right numbers.
#include <gtest/gtest.h>

#include <cmath>

#include "example_cases.h"
#include "load_exp_store.h"
#include "tl/kernel_registry.h"
#include "tl/lang.h"
#include "tl/npu/hazard.h"
#include "tl/npu/npu.h"
#include "tl/npu/stale.h"
#include "tl/npu/timing.h"
#include "tl/npu/trace.h"

namespace tl {
namespace {

struct Result {
  std::vector<std::vector<double>> tensors;  // every tensor argument after the launch
  std::vector<std::string> effects;          // Profile::time_order_effects
  std::string error;                         // the launch's tl::Error, if any
};

Result launch(const PrimFunc& f, const ArgsFn& make, bool timed, int threads = 2) {
  Device dev;
  Result r;
  auto args = make(dev);
  try {
    auto kern = compile(f, default_target(), {.cache = false});
    npu::Profile prof;
    kern.launch(dev, args, {.threads = threads, .profile = timed ? &prof : nullptr});
    r.effects = prof.time_order_effects;
  } catch (const Error& e) {
    r.error = e.what();
    return r;
  }
  for (auto& a : args)
    if (auto* t = std::get_if<Tensor>(&a.value)) r.tensors.push_back(t->to_vector());
  return r;
}

// ---- small hand-written kernels -------------------------------------------------------------

constexpr int R = 8, C = 64;

TEST(TimedData, ReadBeforeTheCopyLandsSeesStaleData) {
  auto args = [](Device& dev) -> std::vector<Arg> {
    return {uniform(dev, {2 * R, C}, f32, 1), full(dev, {2 * R, C}, f32, 0)};
  };
  Result right = launch(load_exp_store(R, C, true), args, false);
  ASSERT_EQ(right.error, "");
  // Program order hides the missing flag; simulated-time order does not: exp reads x_ub
  // before the copy has written it (a timed launch starts from poisoned memory: NaN).
  Result fast = launch(load_exp_store(R, C, false), args, false),
         timed = launch(load_exp_store(R, C, false), args, true);
  EXPECT_TRUE(fast.tensors == right.tensors);
  ASSERT_EQ(timed.error, "");
  EXPECT_FALSE(timed.tensors == right.tensors);
  EXPECT_TRUE(std::isnan(timed.tensors[1][0])) << timed.tensors[1][0];
  ASSERT_EQ(timed.effects.size(), 1u);
  EXPECT_NE(timed.effects[0].find("Y[0, 0]:"), std::string::npos) << timed.effects[0];
  EXPECT_NE(timed.effects[0].find("in simulated-time order (1024 of 1024 elements differ)"),
            std::string::npos)
      << timed.effects[0];
  // With the flag, timed mode computes exactly what program order does.
  Result synced = launch(load_exp_store(R, C, true), args, true);
  EXPECT_TRUE(synced.tensors == right.tensors);
  EXPECT_TRUE(synced.effects.empty());
}

TEST(TimedData, ALaunchStartsFromPoisonNotFromWhatThePreviousLaunchLeft) {
  // The synchronised kernel runs first and leaves the right x values in UB; the kernel without
  // its MTE2 -> V flag then runs timed on the same device. Had UB kept the first launch's
  // data, exp would read right-but-stale values and the missing flag would go unnoticed.
  Device dev;
  Tensor X = uniform(dev, {2 * R, C}, f32, 1), Y = full(dev, {2 * R, C}, f32, 0);
  compile(load_exp_store(R, C, true), default_target(), {.cache = false})
      .launch(dev, {X, Y}, {.threads = 1});
  std::vector<double> right = Y.to_vector();
  Tensor Y2 = full(dev, {2 * R, C}, f32, 0);
  npu::Profile prof;
  compile(load_exp_store(R, C, false), default_target(), {.cache = false})
      .launch(dev, {X, Y2}, {.threads = 1, .profile = &prof});
  std::vector<double> got = Y2.to_vector();
  EXPECT_NE(got, right);
  EXPECT_TRUE(std::isnan(got[0])) << got[0];
  ASSERT_EQ(prof.time_order_effects.size(), 1u);
}

TEST(TimedData, AFastLaunchCanStartFromPoisonToo) {
  // LaunchOptions::poison: a fast launch of the kernel missing its MTE2 -> V flag computes the
  // right numbers in program order anyway, but a kernel that reads UB it never wrote shows NaN
  // (a fresh device's memories are zero otherwise).
  auto kernel = [] {
    auto Y = T::Tensor("Y", {C}, f32);
    return T::prim_func("reads_unwritten", {Y}, [&] {
      T::Kernel(1, [&](Expr, Expr vid) {
        T::Scope(Core::Vector, [&] {
          auto u = T::alloc_ub("u_ub", {C}, f32);
          T::If(vid == 0, [&] { T::copy(u, Y.at({0})); });
        });
      });
    });
  };
  std::vector<npu::StaleFinding> stale;
  auto first = [&](bool poison) {
    Device dev;
    Tensor Y = full(dev, {C}, f32, 1);
    compile(kernel(), default_target(), {.cache = false})
        .launch(dev, {Y},
                {.threads = 1, .poison = poison, .check_stale = true, .stale_findings = &stale});
    // Whatever the bytes, the stale-data checker sees the read of UB never written.
    EXPECT_EQ(stale.size(), 1u);
    return Y.to_vector()[0];
  };
  EXPECT_EQ(first(false), 0.0);
  EXPECT_TRUE(std::isnan(first(true)));
}

/// The scalar unit reads a UB value a vector op writes and branches on it; `sync` toggles the
/// V -> S flag between them.
PrimFunc branch_on_ub(bool sync) {
  auto Y = T::Tensor("Y", {C}, f32);
  return T::prim_func("branch_on_ub", {Y}, [&] {
    T::Kernel(1, [&](Expr, Expr vid) {
      T::Scope(Core::Vector, [&] {
        auto u = T::alloc_ub("u_ub", {C}, f32);
        T::tile::fill(u, 1.0);
        if (sync) {
          T::set_flag(Pipe::V, Pipe::S, 0);
          T::wait_flag(Pipe::V, Pipe::S, 0);
        }
        Var x = T::let("x", u.load({Expr(0)}));
        T::If(x > 0.5 && vid == 0, [&] {
          T::set_flag(Pipe::S, Pipe::MTE3, 0);
          T::wait_flag(Pipe::S, Pipe::MTE3, 0);
          T::copy(u, Y.at({0}));
        });
      });
    });
  });
}

TEST(TimedData, ControlFlowOnUnsynchronisedDataIsReported) {
  auto args = [](Device& dev) -> std::vector<Arg> { return {full(dev, {C}, f32, 0)}; };
  Result ok = launch(branch_on_ub(true), args, true);
  ASSERT_EQ(ok.error, "");
  EXPECT_EQ(ok.tensors[0][5], 1.0);
  // Without the flag the scalar load runs before the fill lands, reads 0 and skips the branch
  // it took in program order: the replay names the core and the instruction.
  Result bad = launch(branch_on_ub(false), args, true);
  std::printf("  %s\n", bad.error.c_str());
  EXPECT_NE(bad.error.find("block 0 AIV0 took a different path in simulated-time order"),
            std::string::npos)
      << bad.error;
  EXPECT_EQ(launch(branch_on_ub(false), args, false).error, "");
}

std::vector<ExampleCase> cases() {
  return {gemm_case(),          minicv_case(),    flash_attention_case(),
          rms_norm_case(2),     rms_norm_case(1), flash_attention_pipelined_case(),
          gemm_pipelined_case()};
}

TEST(TimedData, ExamplesMatchProgramOrder) {
  for (const auto& c : cases()) {
    const std::string& name = c.name;
    SCOPED_TRACE(name);
    Result fast = launch(c.f, c.args, false), timed1 = launch(c.f, c.args, true, 1),
           timed2 = launch(c.f, c.args, true, 2);
    ASSERT_EQ(fast.error, "");
    ASSERT_EQ(timed1.error, "");
    EXPECT_EQ(timed1.effects, std::vector<std::string>{});
    EXPECT_TRUE(timed1.tensors == fast.tensors)
        << name << ": timed mode differs from program order";
    EXPECT_TRUE(timed1.tensors == timed2.tensors)
        << name << ": timed mode differs between 1 and 2 threads";
  }
}

/// Whether the simulated intervals of the two instructions of every hazard the checker
/// reports are disjoint (the timing happened to order the unsynchronised pair).
bool hazards_ordered_by_timing(const npu::Trace& trace, const npu::Profile& prof,
                               std::string* why) {
  std::map<std::pair<int, size_t>, const npu::TimedInstr*> at;
  for (const auto& ti : prof.instrs) at[{ti.core, static_cast<size_t>(ti.event)}] = &ti;
  auto hazards = npu::check_hazards(trace);
  if (hazards.empty()) {
    *why = "no hazard reported";
    return false;
  }
  for (const auto& h : hazards) {
    auto a = at.find({h.first.core_index, h.first.event}),
         b = at.find({h.second.core_index, h.second.event});
    if (a == at.end() || b == at.end())
      continue;  // a side without a timed span (never the case today)
    if (a->second->end > b->second->start && b->second->end > a->second->start) {
      *why =
          fmt::format("{} overlaps in simulated time: {} [{:.0f}, {:.0f}) and {} [{:.0f}, {:.0f})",
                      h.str(), a->second->name, a->second->start, a->second->end, b->second->name,
                      b->second->start, b->second->end);
      return false;
    }
  }
  return true;
}

/// "wrong data", "right data (timing ordered the pair)", "deadlock", "flag set twice",
/// "diverged", or what went wrong.
std::string timed_outcome(const ExampleCase& c, const PrimFunc& mutated, const Result& right) {
  Result r = launch(mutated, c.args, true);
  if (r.error.find("deadlock") != std::string::npos) return "deadlock";
  if (r.error.find("already set") != std::string::npos) return "flag set twice";
  if (r.error.find("different path") != std::string::npos) return "diverged";
  if (r.error.find("flags left pending") != std::string::npos) return "flags left pending";
  if (!r.error.empty()) return "error: " + r.error.substr(0, 200);
  if (r.tensors != right.tensors) return "wrong data";
  // Right numbers: only acceptable if every unsynchronised pair happened not to overlap.
  Device dev;
  auto args = c.args(dev);
  npu::Trace trace;
  npu::Profile prof;
  compile(mutated, default_target(), {.cache = false})
      .launch(dev, args, {.threads = 2, .trace = &trace, .profile = &prof});
  std::string why;
  return hazards_ordered_by_timing(trace, prof, &why) ? "right data (timing ordered the pair)"
                                                      : "right data, but " + why;
}

// Every deletion the hazard checker reports (hazard_mutation_test.cpp) either deadlocks, trips
// the flag bookkeeping, computes wrong data in simulated-time order, or changes a core's
// control flow (an error naming it) -- unless, in this run,
// the timing model happened to finish one instruction of each unsynchronised pair before the
// other began, in which case hardware with these timings would compute the right numbers too
// (the checker still reports it: other sizes or timings expose it). Fast mode's program order
// would have computed the right numbers for all of them.
//
// Two deletions overlap their pair in simulated time and still give the right numbers, because
// of the values involved: in flash_attention_pipelined, without pipe_barrier(V) #1 the
// tile.max(mj, mj, m) of the first kv step starts before reduce_max has written mj, and
// without #2 the row_expand_sub reads mj before tile.max has written it. Both overlaps happen
// only in the first kv step (later steps are spaced by their MTE2 waits), where the running max
// m is still -inf, so max(mj, m) = mj and the update the race loses changes nothing. Hardware
// with this timing would compute the right numbers too.
//
// Without cross flag 5's set and waits, the AIVs' read of WS_O (P V) starts 70 cycles before the
// fixpipe's write of it ends, but a GM read spends its first ~729 cycles in GM latency: its data
// moves after the write has ended, so hardware with this timing would read the right numbers
// too. (The 32-deep pipe queues and scalar costs, issue 12, moved the two that close.)
const std::set<std::string> kHarmless = {"flash_attention_pipelined pipe_barrier(V) #1",
                                         "flash_attention_pipelined pipe_barrier(V) #2",
                                         "flash_attention_pipelined cross 5: set+waits"};

TEST(TimedData, MissingSyncsGiveWrongData) {
  std::map<std::string, int> tally;
  for (const auto& c : cases()) {
    const std::string& name = c.name;
    Result right = launch(c.f, c.args, false);
    for (const auto& m : mutations(c.f)) {
      if (c.redundant.count(m.label)) continue;
      std::string o = timed_outcome(c, without(c.f, m), right);
      std::printf("  %-26s %-34s %s\n", name.c_str(), m.label.c_str(), o.substr(0, 300).c_str());
      ++tally[o];
      const bool harmless = kHarmless.count(name + " " + m.label) > 0;
      EXPECT_TRUE(o == "wrong data" || o == "deadlock" || o == "flag set twice" ||
                  o == "diverged" || o == "flags left pending" ||
                  o == "right data (timing ordered the pair)" ||
                  (harmless && o.rfind("right data", 0) == 0))
          << name << " " << m.label << ": " << o;
    }
  }
  for (const auto& [o, n] : tally) std::printf("  %3d  %s\n", n, o.c_str());
  EXPECT_GE(tally["wrong data"], 70);
}

}  // namespace
}  // namespace tl
