// insert_syncs against the hand-written synchronisation of every expert example: lower the
// example (plan_memory places its buffers under the author's syncs), delete every intra-core
// sync (set/wait_flag, pipe_barrier, barrier_all), mark the cross-core flags as the compiler's
// (the channel protocol that will write them is future work: here they stand in for it), run
// insert_syncs and launch with the hazard and flag checkers. Property: no unordered access
// pair, no deadlock, flags balanced, outputs bit-identical to the original in program order,
// and no output that differs in simulated-time order (timed mode: a missing sync shows as
// wrong data there). Prints the dynamic sync count per block and the simulated time of the
// original against the inserted version.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <set>

#include "example_cases.h"
#include "tl/ir_functor.h"
#include "tl/npu/timing.h"
#include "tl/npu/trace.h"
#include "tl/pass.h"
#include "tl/printer.h"

namespace tl {
namespace {

/// Deletes the intra-core syncs; marks the others (cross-core flags, sync_all) Auto.
struct Strip : IRMutator {
  Stmt mutate_(const SyncNode* n, const Stmt&) override {
    switch (n->sync_kind) {
      case SyncKind::SetFlag:
      case SyncKind::WaitFlag:
      case SyncKind::PipeBarrier:
      case SyncKind::BarrierAll:
        return Stmt();
      default:
        return SyncNode::make(n->sync_kind, n->src, n->dst, n->event_id, n->mode, n->loc,
                              SyncOrigin::Auto);
    }
  }
};

struct Run {
  std::vector<std::vector<double>> tensors;
  double syncs_per_block = 0;  // set_flag, wait_flag, pipe_barrier, barrier_all events
  double us = 0;
  std::vector<std::string> time_order_effects;
};

Run run(const PrimFunc& f, const ArgsFn& args_fn) {
  Run r;
  {
    Device dev;
    auto args = args_fn(dev);
    npu::Trace trace;
    compile(f, default_target(), {.cache = false})
        .launch(dev, args, {.threads = 2, .trace = &trace, .check_hazards = true});
    for (const auto& a : args)
      if (auto* t = std::get_if<Tensor>(&a.value)) r.tensors.push_back(t->to_vector());
    int64_t n = 0;
    for (const auto& c : trace.cores)
      for (const auto& e : c.events)
        n += e.name == "set_flag" || e.name == "wait_flag" || e.name == "pipe_barrier" ||
             e.name == "barrier_all";
    r.syncs_per_block =
        static_cast<double>(n) / static_cast<double>(std::max<int64_t>(trace.num_blocks, 1));
  }
  Device dev;
  auto args = args_fn(dev);
  npu::Profile prof;
  compile(f, default_target(), {.cache = false})
      .launch(dev, args, {.threads = 2, .profile = &prof});
  r.us = prof.total_us;
  r.time_order_effects = prof.time_order_effects;
  return r;
}

int static_syncs(const PrimFunc& f) {
  int n = 0;
  pre_order_visit(f->body, [&](const Stmt& s) {
    if (auto* y = s.as<SyncNode>())
      n += y->sync_kind == SyncKind::SetFlag || y->sync_kind == SyncKind::WaitFlag ||
           y->sync_kind == SyncKind::PipeBarrier || y->sync_kind == SyncKind::BarrierAll;
  });
  return n;
}

void check(const ExampleCase& c) {
  SCOPED_TRACE(c.name);
  PrimFunc planned = lower(c.f, default_target());
  PrimFunc stripped = with_body(planned, Strip().mutate(planned->body));
  PrimFunc mine = insert_syncs(stripped, default_target());
  ASSERT_EQ(static_syncs(stripped), 0);
  Run want = run(planned, c.args);
  Run got;
  try {
    got = run(mine, c.args);
  } catch (const Error& e) {
    FAIL() << e.what() << "\n" << print(mine);
  }
  ASSERT_EQ(got.tensors.size(), want.tensors.size());
  for (size_t i = 0; i < want.tensors.size(); ++i)
    EXPECT_EQ(got.tensors[i], want.tensors[i]) << "tensor argument " << i;
  EXPECT_EQ(got.time_order_effects, want.time_order_effects);
  std::printf(
      "  %-28s static %3d -> %3d   per block %7.1f -> %7.1f   timed %9.2f us -> %9.2f us (%.2fx)\n",
      c.name.c_str(), static_syncs(planned), static_syncs(mine), want.syncs_per_block,
      got.syncs_per_block, want.us, got.us, got.us / want.us);
}

/// The examples example_cases.h does not have (no flags worth mutating one by one there).
std::vector<ExampleCase> more_cases() {
  std::vector<ExampleCase> out;
  out.push_back({"elementwise_add",
                 build_kernel(find_kernel("elementwise_add"),
                              sizes({{"M", 8}, {"N", 1024}, {"tile", 256}, {"blocks", 2}})),
                 [](Device& dev) -> std::vector<Arg> {
                   return {uniform(dev, {8, 1024}, f16, 1), uniform(dev, {8, 1024}, f16, 2),
                           Tensor::empty(dev, {8, 1024}, f16)};
                 },
                 {}});
  out.push_back({"gelu",
                 build_kernel(find_kernel("gelu"),
                              sizes({{"M", 8}, {"N", 1024}, {"tile", 256}, {"blocks", 2}})),
                 [](Device& dev) -> std::vector<Arg> {
                   return {uniform(dev, {8, 1024}, f32, 3), Tensor::empty(dev, {8, 1024}, f32)};
                 },
                 {}});
  out.push_back({"rms_norm_dynamic",
                 build_kernel(find_kernel("rms_norm_dynamic"),
                              sizes({{"N", 256}, {"rM", 8}, {"bN", 128}, {"blocks", 2}})),
                 [](Device& dev) -> std::vector<Arg> {
                   // 37 rows: full 8-row tiles and a tail.
                   return {randn(dev, {37, 256}, bf16, 3), uniform(dev, {256}, bf16, 4, 0.5, 1.5),
                           Tensor::empty(dev, {37, 256}, bf16), 1e-6};
                 },
                 {}});
  out.push_back(
      {"copy_gm_ub",
       build_kernel(find_kernel("copy_gm_ub"),
                    sizes({{"M", 128}, {"N", 1024}, {"tM", 32}, {"tN", 256}, {"blocks", 2}})),
       [](Device& dev) -> std::vector<Arg> {
         return {uniform(dev, {128, 1024}, f16, 5)};
       },
       {}});
  // Slots: a copy reuses a slot only after the pipe_barrier that follows a round of them.
  out.push_back(
      {"copy_gm_l1",
       build_kernel(
           find_kernel("copy_gm_l1"),
           sizes({{"M", 128}, {"N", 1024}, {"tM", 32}, {"tN", 256}, {"blocks", 2}, {"slots", 2}})),
       [](Device& dev) -> std::vector<Arg> {
         return {uniform(dev, {128, 1024}, f16, 5)};
       },
       {}});
  // A GM workspace written before a sync_all and read across blocks after it; 33 rows over 10
  // workers, rows not whole 32-byte blocks.
  out.push_back(
      {"ring_sum",
       build_kernel(find_kernel("ring_sum"), sizes({{"M", 33}, {"N", 33}, {"blocks", 5}})),
       [](Device& dev) -> std::vector<Arg> {
         return {uniform(dev, {33, 33}, f16, 6), Tensor::empty(dev, {33, 33}, f16)};
       },
       {}});
  return out;
}

std::vector<ExampleCase> all_cases() {
  std::vector<ExampleCase> cs = {
      gemm_case(),          minicv_case(),    flash_attention_case(),
      rms_norm_case(2),     rms_norm_case(1), flash_attention_pipelined_case(),
      gemm_pipelined_case()};
  for (auto& c : more_cases()) cs.push_back(std::move(c));
  return cs;
}

/// True for a developer-mode example (T::Kernel without vid): every sync of it is the
/// compiler's already (tests/examples/developer_examples_test.cpp).
bool is_developer_example(const KernelEntry& k) {
  PrimFunc f = build_kernel(k);
  bool developer = false;
  pre_order_visit(f->body, [&](const Stmt& s) {
    if (auto* n = s.as<KernelNode>()) developer = n->developer();
  });
  return developer;
}

// Every registered expert example is covered: a new one must get a case here.
TEST(InsertSyncsExamples, EveryExampleHasACase) {
  std::set<std::string> covered;
  for (const auto& c : all_cases()) covered.insert(c.f->name);
  for (const KernelEntry* k : registered_kernels())
    if (!is_developer_example(*k)) {
      EXPECT_TRUE(covered.count(k->name)) << k->name;
    }
}

TEST(InsertSyncsExamples, StrippedAndReinsertedMatchesTheExpertOriginal) {
  for (const auto& c : all_cases()) check(c);
}

}  // namespace
}  // namespace tl
