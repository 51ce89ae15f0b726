// The pass registry (tl/pass_registry.h): the table of contents of the compiler, one row per
// pass in pipeline order with why it sits where it does, and one row per developer-mode
// switch. The ordering rules themselves are documented on each pass in tl/pass.h, as is each
// pass's output invariant (its `ensures`). lower.cpp runs the rows; DeveloperOptions'
// validation and fingerprint, tlc's --off/--on, the Python extension's developer options and
// tl_ascend.PassConfigKey read the switch rows.
#include "developer.h"
#include "reuse_order.h"
#include "tl/ir_functor.h"
#include "tl/pass.h"

namespace tl {

const std::vector<Switch>& switch_registry() {
  using D = DeveloperOptions;
  // The order is the fingerprint's (the JIT cache key): append new switches at the end.
  // One row per switch, kept as a table (clang-format would put each field on a line).
  // clang-format off
  static const std::vector<Switch> switches = {
      {"infer_scopes", &D::infer_scopes, {}, {"tl.dev.infer_scopes"}, false,
       "place shared/fragment tiles in L1/L0A/L0B/L0C/UB"},
      {"lower_cube_ops", &D::lower_cube_ops, {"infer_scopes"}, {"tl.dev.lower_cube_ops"}, false,
       "gemm -> L1 -> L0A/L0B loads + mma"},
      {"mask_tails", &D::mask_tails, {"infer_scopes"}, {"tl.dev.mask_tails"}, false,
       "the stale part of clipped tiles kept out of results"},
      {"legalize_copies", &D::legalize_copies, {"infer_scopes"}, {"tl.dev.legalize_copies"}, false,
       "tails, padded rows, partial L1 panels"},
      {"split_cube_vector", &D::split_cube_vector, {"infer_scopes", "lower_cube_ops"},
       {"tl.dev.split_cube_vector"}, false, "Cube and Vector scopes"},
      {"vectorize", &D::vectorize, {"split_cube_vector"}, {"tl.dev.vectorize"}, false,
       "Parallel element loops -> vector ops"},
      {"insert_syncs", &D::insert_syncs, {"split_cube_vector"}, {"tl.dev.insert_syncs"}, false,
       "flags and barriers, intra- and cross-core"},
      {"pipeline_loops", &D::pipeline_loops, {}, {"tl.dev.pipeline_loops"}, false,
       "T.Pipelined loops overlap neighbouring iterations (off: serial loops)"},
      {"split_aiv", &D::split_aiv, {}, {"tl.dev.split_aiv"}, false,
       "a threads = 2 kernel's two AIVs take half the vector work each"},
      {"minimise_syncs", &D::minimise_syncs, {}, {"tl.dev.minimise_syncs"}, false,
       "drop the syncs the others imply"},
      // Its pass runs only where minimise_syncs is on (Gate::DeveloperMinimise): alone it
      // would be a switch that does nothing, so it needs minimise_syncs (an error otherwise).
      {"merge_flags", &D::merge_flags, {"minimise_syncs"}, {"tl.dev.merge_flags"}, false,
       "two neighbouring flags of a pipe pair become one (fewer syncs, possibly more cycles)"},
      {"scalar_fallback", &D::scalar_fallback, {"vectorize"}, {"tl.dev.scalar_fallback"}, true,
       "developer mode: run element loops that cannot be vectorised on the scalar unit (a "
       "remark each)"},
      // On by default (as on the chip), so it needs nothing: with vectorize off it does nothing,
      // and `--off vectorize` alone must stay valid. Off (`tlc --off allow_inexact_math`,
      // TL_DEV_ALLOW_INEXACT_MATH: False) asks for exact math.
      {"allow_inexact_math", &D::allow_inexact_math, {}, {"tl.dev.allow_inexact_math"},
       true,
       "developer mode: element loops use the vector unit's exp/log/sigmoid/rsqrt (last-bit "
       "differences, as on the chip) and, on 950, its subnormal-flushing div/sqrt (a remark "
       "each); on by default, --off allow_inexact_math asks for exact math"},
      {"auto_sync", &D::auto_sync, {"insert_syncs"},
       {"tl.dev.auto_sync", "tl.ascend_auto_sync", "tl.ascend.auto_sync"}, false,
       "expert kernels too: the compiler writes the syncs of each scope without syncs of its own"},
      {"auto_cv_combine", &D::auto_cv_combine, {},
       {"tl.dev.auto_cv_combine", "tl.ascend_auto_cv_combine", "tl.ascend.auto_cv_combine"},
       false, "an expert kernel without T.Scope: a vector-only body becomes the Vector scope"},
      {"group_vector_ops", &D::group_vector_ops, {}, {"tl.dev.group_vector_ops"}, false,
       "vector ops reordered so that dependent ones share barriers (off: the author's order)"},
      {"auto_cv_sync", &D::auto_cv_sync, {},
       {"tl.dev.auto_cv_sync", "tl.ascend_auto_cross_core_sync", "tl.ascend.auto_cv_sync"},
       false, "a hybrid kernel split by auto_cv_combine: cross-core flags on its workspaces"},
      {"bank_groups", &D::bank_groups, {}, {"tl.dev.bank_groups"}, false,
       "plan_memory puts two-source vector ops' UB sources in opposite bank groups, expert "
       "kernels too (off: the default layout)"},
  };
  // clang-format on
  return switches;
}

const Switch* find_switch(std::string_view name) {
  for (const auto& s : switch_registry()) {
    if (s.name == name) return &s;
    for (auto k : s.keys)
      if (k == name) return &s;
  }
  return nullptr;
}

void DeveloperOptions::validate() const {
  for (const auto& s : switch_registry())
    for (auto need : s.needs)
      if (this->*s.field && !(this->*find_switch(need)->field))
        throw Error(fmt::format(
            "CompileOptions::dev: '{}' is on but needs '{}', which is off; switch '{}' off "
            "too, or '{}' on (docs/developer_mode.md, \"Options\")",
            s.name, need, s.name, need));
}

std::string DeveloperOptions::fingerprint() const {
  std::string out;
  for (const auto& s : switch_registry())
    out += fmt::format("{}{}={:d}", out.empty() ? "" : ",", s.name, this->*s.field);
  return out;
}

std::string_view gate_name(Gate g) {
  switch (g) {
    case Gate::Always:
      return "always";
    case Gate::Developer:
      return "developer";
    case Gate::DeveloperTwoAivs:
      return "developer, threads = 2";
    case Gate::DeveloperMinimise:
      return "developer, minimise_syncs";
    case Gate::Synced:
      return "developer, or auto_sync";
    case Gate::CrossSynced:
      return "developer, or auto_cv_sync";
  }
  return "?";
}

namespace {

using Ctx = PassContext;
/// A row's function for a pass that takes only the kernel and the target.
auto plain(PrimFunc (*pass)(const PrimFunc&, const Target&)) {
  return [pass](const PrimFunc& g, const Target& t, const Ctx&) { return pass(g, t); };
}

// Phase invariants (PassDef::phase) of the lowering passes whose output is no expert kernel
// yet; the others state an expert or planned spec (PassDef::ensures).

/// infer_scopes: every tile placed in a physical memory.
std::string no_developer_scopes(const PrimFunc& f) {
  std::string out;
  pre_order_visit(f->body, [&](const Stmt& s) {
    auto* a = s.as<AllocateNode>();
    if (out.empty() && a &&
        (a->buffer->scope == MemScope::Shared || a->buffer->scope == MemScope::Fragment))
      out = fmt::format("buffer {} is still in scope '{}'", dev::describe(a->buffer),
                        scope_name(a->buffer->scope));
  });
  return out;
}

/// split_cube_vector: an expert kernel (cid, vid) but for its T.Parallel loops.
std::string split_into_scopes(const PrimFunc& f) {
  const KernelNode* k = dev::find_kernel(f);
  return k && k->developer() ? "the kernel is still a developer kernel (it binds no vid)" : "";
}

/// vectorize_parallel: no T.Parallel loop left in a Vector scope.
std::string no_parallel_loops(const PrimFunc& f) {
  std::string out;
  pre_order_visit(f->body, [&](const Stmt& s) {
    auto* scope = s.as<ScopeNode>();
    if (!out.empty() || !scope || scope->core != CoreKind::Vector) return;
    pre_order_visit(scope->body, [&](const Stmt& x) {
      auto* loop = x.as<ForNode>();
      if (out.empty() && loop && loop->for_kind == ForKind::Parallel)
        out = fmt::format("a T.Parallel loop is left in the Vector scope: {}", dev::describe(x));
    });
  });
  return out;
}

}  // namespace

const std::vector<PassDef>& pass_registry() {
  static const std::vector<PassDef> passes = {
      // Before the verifier: a TileLang-Ascend hybrid kernel (no T.Scope) becomes the expert
      // kernel it stands for, which the verifier then checks at the author's lines.
      {"combine_cv",
       [](const PrimFunc& g, const Target& t, const Ctx& ctx) {
         return combine_cv(g, t, ctx.opt.dev.auto_cv_sync);
       },
       Gate::Always, "auto_cv_combine"},
      // Before the verifier too: an expert kernel's alloc_shared / alloc_fragment tiles get the
      // memory of the T.Scope that uses them (TileLang-Ascend infers it), then are checked.
      {"place_expert_tiles", plain(place_expert_tiles), Gate::Always},
      // First: every later pass may assume a well-formed expert-mode kernel, and the user
      // gets all violations against the source as written.
      {"verify", plain(verify_pass), Gate::Always, "", {}, Spec::Expert},
      // Early: fold the index arithmetic the DSL and generators leave behind, so later
      // analyses (and the printed IR) see constants where there are constants.
      {"simplify",
       [](const PrimFunc& g, const Target&, const Ctx&) { return simplify(g); },
       Gate::Always,
       "",
       {},
       Spec::Expert},

      // Developer mode (docs/developer_mode.md): each pass returns expert kernels unchanged.
      // Placement first: every later pass reasons about physical memories.
      {"infer_scopes",
       plain(infer_scopes),
       Gate::Always,
       "infer_scopes",
       {},
       {},
       no_developer_scopes},
      // Needs L1/L0C placements; creates L0A/L0B buffers, so before plan_memory.
      {"lower_cube_ops", plain(lower_cube_ops), Gate::Always, "lower_cube_ops", {"infer_scopes"}},
      // The stale part of clipped tiles kept out of every result: needs UB placements, and the
      // copies as the author wrote them (it clips them as legalize_copies will, to reason about
      // the valid part), so before legalize_copies; before vectorize_parallel, which vectorises
      // the element loops it narrows or masks.
      {"mask_tails", plain(mask_tails), Gate::Always, "mask_tails", {"infer_scopes"}},
      // Tails and padded rows: needs physical scopes (L1 tiles are cleared, UB rows padded) and
      // runs before vectorize_parallel, which vectorises the widened element loops.
      {"legalize_copies",
       plain(legalize_copies),
       Gate::Always,
       "legalize_copies",
       {"infer_scopes"}},
      // An expert kernel's tails, as TileLang-Ascend's DataCopyPad lowering makes them (issue
      // 29): before vectorize_parallel and plan_memory, which see the clipped copies.
      {"clip_expert_copies", plain(clip_expert_copies), Gate::Always},
      // From here on the kernel is an expert one (cid, vid, scopes), but for its Parallel loops.
      // Each core gets its work, its share of the scalar GM stores and the scalar work it needs.
      {"split_cube_vector",
       plain(split_cube_vector),
       Gate::Always,
       "split_cube_vector",
       {"infer_scopes", "lower_cube_ops"},
       {},
       split_into_scopes},
      // Element loops on UB tiles (in the Vector scope) -> vector tile ops, bit-identical to
      // the scalar loop or an error naming the reason; element loops over GM staged through UB
      // tiles or left to the scalar unit, whichever costs fewer cycles. (No spec: T.Pipelined
      // loops remain.) Expert kernels too: their T.Parallel loops in T.Scope("V") (issue 29).
      {"vectorize_parallel",
       [](const PrimFunc& g, const Target& t, const Ctx& c) {
         return vectorize_parallel(
             g, t,
             VectorizeOptions{.scalar_fallback = c.opt.dev.scalar_fallback,
                              .allow_inexact_math = c.opt.dev.allow_inexact_math,
                              .remark = c.opt.remark});
       },
       Gate::Always,
       "vectorize",
       {"split_cube_vector"},
       {},
       no_parallel_loops},
      // Halves the vector work between the two AIVs (threads = 2): on vector tile ops, so after
      // vectorize_parallel; before pipeline_loops, whose slots copy the halved ops.
      {"split_aiv",
       [](const PrimFunc& g, const Target& t, const Ctx& c) {
         return split_aiv(g, t, c.opt.remark);
       },
       Gate::DeveloperTwoAivs, "split_aiv"},
      // Versions buffers and channels and unrolls the schedule: after every pass that creates
      // tile ops and buffers (it must see all of them), before plan_memory places the slots.
      // An expert kernel's T.Pipelined loops become serial loops (their buffers and syncs are
      // the author's: versioning them would break both).
      {"pipeline_loops",
       [](const PrimFunc& g, const Target& t, const Ctx& c) {
         return pipeline_loops(g, t, c.opt.dev.pipeline_loops);
       },
       Gate::Always,
       "",
       {},
       Spec::Expert},
      // Lowering leaves index arithmetic behind, and the developer kernel met only the
      // developer rules: check the expert ones, at the user's lines.
      {"simplify_lowered",
       [](const PrimFunc& g, const Target&, const Ctx&) { return simplify(g); },
       Gate::Developer,
       "",
       {},
       Spec::Expert},
      {"verify_lowered",
       plain(verify_pass),
       Gate::Developer,
       "",
       {"split_cube_vector", "vectorize_parallel", "pipeline_loops"},
       Spec::Expert},
      // Reorders tile ops, so before plan_memory (lifetimes) and the sync passes (which order
      // the program as it then stands; insert_channel_syncs puts each cross-core wait right
      // before its receiving copy).
      {"hoist_above_channel_waits",
       plain(hoist_above_channel_waits),
       Gate::DeveloperMinimise,
       "",
       {},
       Spec::Expert},
      // Reorders vector ops so that dependent ones share barriers: on the final program order
      // of each run, before insert_syncs places the barriers.
      {"group_vector_ops",
       plain(group_vector_ops),
       Gate::DeveloperMinimise,
       "group_vector_ops",
       {},
       Spec::Expert},

      // Last of the buffer passes: addresses are final only once no pass adds, resizes or
      // moves a use of an on-chip buffer. In an expert kernel it shares bytes only where the
      // author's syncs order the two buffers; in a developer kernel insert_syncs runs next,
      // on the final addresses, and orders whatever it shares.
      {"plan_memory",
       [](const PrimFunc& g, const Target& t, const Ctx& c) {
         return plan_memory(g, t, c.syncs_follow && c.syncs_follow(g), c.opt.dev.bank_groups,
                            c.channel_syncs_follow && c.channel_syncs_follow(g));
       },
       Gate::Always,
       "",
       {},
       Spec::Planned},
      // On final addresses, so bytes plan_memory shares between buffers are ordered too; first
      // the dcci the scalar unit's GM accesses need, which the walk then orders like any access.
      // Developer kernels, and expert ones with auto_sync: otherwise an expert kernel's syncs
      // are the author's.
      {"insert_syncs",
       [](const PrimFunc& g, const Target& t, const Ctx& c) {
         return insert_syncs(g, t, c.opt.dev.minimise_syncs);
       },
       Gate::Synced,
       "insert_syncs",
       {"split_cube_vector", "plan_memory"},
       Spec::Planned},
      // On insert_syncs' output: its loop credits, moved out of an enclosing tile loop.
      {"hoist_slot_credits",
       plain(hoist_slot_credits),
       Gate::DeveloperMinimise,
       "",
       {},
       Spec::Planned},
      // Cross-core: after insert_syncs, which orders each core's own pipes and knows nothing of
      // the other core.
      // Also on a hybrid kernel's workspaces (combine_cv marks them channels) with auto_cv_sync.
      // Then the reuses plan_memory proved with these flags are proved again on them.
      {"insert_channel_syncs",
       [](const PrimFunc& g, const Target& t, const Ctx& c) {
         PrimFunc h = insert_channel_syncs(g, t);
         if (h != g && !(c.syncs_follow && c.syncs_follow(g))) check_shared_bytes(h, t);
         return h;
       },
       Gate::CrossSynced,
       "insert_syncs",
       {"split_cube_vector"},
       Spec::Planned},
      // On the whole protocol: a credit is implied only by the other core's flags.
      {"elide_channel_credits",
       plain(elide_channel_credits),
       Gate::DeveloperMinimise,
       "",
       {},
       Spec::Planned},
      // Last: on every flag the kernel will run with, both cores' (one core's flag is often
      // implied by the other core's).
      {"elide_implied_syncs",
       plain(elide_implied_syncs),
       Gate::DeveloperMinimise,
       "",
       {},
       Spec::Planned},
      // After the drops: two flags merge only where both stay.
      {"merge_flags",
       plain(merge_flags),
       Gate::DeveloperMinimise,
       "merge_flags",
       {},
       Spec::Planned},
      // On the final flags: a merged credit is guarded once.
      {"guard_loop_credits",
       plain(guard_loop_credits),
       Gate::DeveloperMinimise,
       "",
       {},
       Spec::Planned},
  };
  return passes;
}

const PassDef* find_pass(std::string_view name) {
  for (const auto& p : pass_registry())
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace tl
