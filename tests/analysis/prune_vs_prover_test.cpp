// insert_syncs' own pruning (minimise_syncs: drop each planned barrier or flag whose absence
// its abstract walk finds harmless) checked against the block replay's prover (tl/replay.h),
// an independent model: the hazard checker's happens-before rules on the unrolled instruction
// streams of all three cores. For every registered developer kernel the pipeline is run up to
// plan_memory as `lower` runs it, then insert_syncs with and without pruning and
// insert_channel_syncs (the cross-core order the replay needs). Where the replay proves the
// unpruned kernel clean (every conflicting pair of accesses ordered, every core finishing,
// every set consumed), it must prove the pruned kernel clean too: the syncs the walk dropped are
// syncs the prover also finds unnecessary. A kernel whose protocol is not static (the replay
// builds no streams) is reported and not counted.
#include <gtest/gtest.h>

#include "tl/ir_functor.h"
#include "tl/kernel_registry.h"
#include "tl/pass.h"
#include "tl/pass_registry.h"
#include "tl/replay.h"

namespace tl {
namespace {

constexpr int64_t kMaxBlocks = 64;     // as the replaying passes
constexpr size_t kBudget = 5'000'000;  // replayed events per kernel

/// The passes `lower` runs on developer kernel `f` with the default options, up to plan_memory.
std::vector<std::string> passes_before_insert_syncs(const KernelNode& k) {
  std::vector<std::string> names;
  for (const PassDef& p : pass_registry()) {
    if (p.name == "insert_syncs") break;
    if (p.gate == Gate::DeveloperTwoAivs && k.threads != 2) continue;
    names.emplace_back(p.name);
  }
  return names;
}

std::array<Stmt, 2> bodies_of(const KernelNode& k) {
  std::array<Stmt, 2> out;
  auto visit = [&](const Stmt& s) {
    if (auto* sc = s.as<ScopeNode>()) out[sc->core == CoreKind::Cube ? 0 : 1] = sc->body;
  };
  if (auto* q = k.body.as<SeqNode>())
    for (const Stmt& s : q->stmts) visit(s);
  else
    visit(k.body);
  return out;
}

/// Intra-core syncs (flags and pipe barriers), what insert_syncs plans and prunes.
int intra_core_syncs(const std::array<Stmt, 2>& bodies) {
  int n = 0;
  for (const Stmt& b : bodies)
    if (b.defined())
      pre_order_visit(b, [&](const Stmt& s) {
        if (auto* y = s.as<SyncNode>();
            y && (y->sync_kind == SyncKind::SetFlag || y->sync_kind == SyncKind::WaitFlag ||
                  y->sync_kind == SyncKind::PipeBarrier))
          ++n;
      });
  return n;
}

/// `body` without any intra-core sync.
Stmt without_syncs(const Stmt& body) {
  struct M : IRMutator {
    using IRMutator::mutate_;
    Stmt mutate_(const SyncNode* n, const Stmt& s) override {
      if (n->sync_kind == SyncKind::SetFlag || n->sync_kind == SyncKind::WaitFlag ||
          n->sync_kind == SyncKind::PipeBarrier)
        return SeqNode::make({}, n->loc);
      return s;
    }
  } m;
  return body.defined() ? m.mutate(body) : body;
}

TEST(PruneVsProver, EveryPrunedSyncIsOneTheReplayProvesUnnecessary) {
  const Target& t = default_target();
  int proven = 0, pruned_total = 0, not_static = 0;
  bool negative_checked = false;
  for (const KernelEntry* e : registered_kernels()) {
    PrimFunc f = build_kernel(*e, {});
    const KernelNode* k0 = kernel_of(f);
    if (!k0 || !k0->developer()) continue;
    SCOPED_TRACE(e->name);
    std::vector<std::string> names = passes_before_insert_syncs(*k0);
    names.push_back("insert_syncs");
    names.push_back("insert_channel_syncs");
    PassOptions full_opt, pruned_opt;
    full_opt.dev.minimise_syncs = false;
    PrimFunc full = run_named_passes(f, t, names, full_opt);
    PrimFunc pruned = run_named_passes(f, t, names, pruned_opt);
    const KernelNode *kf = kernel_of(full), *kp = kernel_of(pruned);
    ASSERT_TRUE(kf && kp);
    if (!kf->vid.defined()) continue;
    auto bf = bodies_of(*kf), bp = bodies_of(*kp);
    const int nf = intra_core_syncs(bf), np = intra_core_syncs(bp);
    EXPECT_LE(np, nf);
    replay::Prover pf(*kf, bf.data(), t, kMaxBlocks, kBudget);
    if (!pf.clean()) {  // no static protocol, or past the replay's limits: nothing to compare
      ++not_static;
      fmt::print("  {:<24} syncs {:>4} -> {:>4}  replay: no verdict\n", e->name, nf, np);
      continue;
    }
    replay::Prover pp(*kp, bp.data(), t, kMaxBlocks, kBudget);
    EXPECT_TRUE(pp.clean()) << e->name << ": insert_syncs pruned " << nf - np
                            << " syncs that the replay finds necessary";
    fmt::print("  {:<24} syncs {:>4} -> {:>4}  replay: pruned kernel {}\n", e->name, nf, np,
               pp.clean() ? "clean" : "NOT CLEAN");
    ++proven;
    pruned_total += nf - np;
    // The prover is not vacuous: without any intra-core sync, a kernel that needed some is
    // not clean.
    if (!negative_checked && np > 0) {
      std::array<Stmt, 2> none{without_syncs(bp[0]), without_syncs(bp[1])};
      EXPECT_FALSE(pf.holds(none.data())) << e->name << " replays clean without its syncs";
      negative_checked = true;
    }
  }
  fmt::print("  {} kernels compared, {} syncs pruned in them, {} without a verdict\n", proven,
             pruned_total, not_static);
  EXPECT_GT(proven, 0);
  EXPECT_GT(pruned_total, 0);  // the comparison covers real pruning
  EXPECT_TRUE(negative_checked);
}

}  // namespace
}  // namespace tl
