// The pass pipeline: a table of contents of the compiler. One line per pass, in order, with
// why it sits where it does; the ordering rules themselves are documented on each pass in
// tl/pass.h, as is each pass's output invariant (the verifier spec its output meets, the third
// field below). run_passes (pass_manager.cpp) adds the debug knobs: --print-after-all,
// --print-after=NAME, --time-passes, verify_each and their TL_* environment variables.
#include <algorithm>

#include "developer.h"
#include "tl/pass.h"

namespace tl {
namespace {

bool disabled(const PassOptions& opt, std::string_view pass) {
  return std::find(opt.disabled_passes.begin(), opt.disabled_passes.end(), pass) != opt.disabled_passes.end();
}

/// Developer-mode passes that need an earlier one: switching the earlier one off while the
/// later stays on is an error, not a half-lowered kernel (tilelang-ascend issue 1825: options
/// that silently depended on each other).
void check_developer_dependencies(const PassOptions& opt) {
  static const std::pair<const char*, std::vector<const char*>> kNeeds[] = {
      {"lower_cube_ops", {"infer_scopes"}},
      {"mask_tails", {"infer_scopes"}},
      {"legalize_copies", {"infer_scopes"}},
      {"split_cube_vector", {"infer_scopes", "lower_cube_ops"}},
      {"vectorize_parallel", {"split_cube_vector"}},
      {"verify_lowered", {"split_cube_vector", "vectorize_parallel", "pipeline_loops"}},
      {"insert_syncs", {"split_cube_vector", "plan_memory"}},
      {"insert_channel_syncs", {"split_cube_vector"}},
  };
  auto off = [&](std::string_view n) { return disabled(opt, n); };
  for (const auto& [pass, needs] : kNeeds)
    for (const char* need : needs)
      if (!off(pass) && off(need))
        throw Error(fmt::format("disabled passes: '{}' is off but '{}', which lowers what it leaves, is on; switch "
                                "'{}' off too, or keep '{}' (docs/developer_mode.md)",
                                need, pass, pass, need));
}

}  // namespace

PrimFunc lower(const PrimFunc& f, const Target& target, const PassOptions& opt) {
  const bool developer = dev::is_developer(f);
  // The AIV:AIC ratio the author asked for (split_cube_vector makes an expert kernel, which has
  // no such field).
  const int threads = developer ? dev::find_kernel(f)->threads : 0;
  if (developer) check_developer_dependencies(opt);
  // Passes that only lowered developer kernels need (expert kernels were checked by "verify").
  auto if_lowered = [developer](PrimFunc (*pass)(const PrimFunc&, const Target&)) {
    return [developer, pass](const PrimFunc& g, const Target& t) { return developer ? pass(g, t) : g; };
  };
  std::vector<Pass> passes = {
      // First: every later pass may assume a well-formed expert-mode kernel, and the user
      // gets all violations against the source as written.
      {"verify", verify_pass, Spec::Expert},
      // Early: fold the index arithmetic the DSL and generators leave behind, so later
      // analyses (and the printed IR) see constants where there are constants.
      {"simplify", [](const PrimFunc& g, const Target&) { return simplify(g); }, Spec::Expert},

      // Developer mode (docs/developer_mode.md): each pass returns expert kernels unchanged.
      // Placement first: every later pass reasons about physical memories.
      {"infer_scopes", infer_scopes},
      // Needs L1/L0C placements; creates L0A/L0B buffers, so before plan_memory.
      {"lower_cube_ops", lower_cube_ops},
      // The stale part of clipped tiles kept out of every result: needs UB placements, and the
      // copies as the author wrote them (it clips them as legalize_copies will, to reason about
      // the valid part), so before legalize_copies; before vectorize_parallel, which vectorises
      // the element loops it narrows or masks.
      {"mask_tails", mask_tails},
      // Tails and padded rows: needs physical scopes (L1 tiles are cleared, UB rows padded) and
      // runs before vectorize_parallel, which vectorises the widened element loops.
      {"legalize_copies", legalize_copies},
      // From here on the kernel is an expert one (cid, vid, scopes), but for its Parallel loops.
      // Each core gets its work, its share of the scalar GM stores and the scalar work it needs.
      {"split_cube_vector", split_cube_vector},
      // Element loops on UB tiles (in the Vector scope) -> vector tile ops, bit-identical to
      // the scalar loop or an error naming the reason; element loops over GM staged through UB
      // tiles or left to the scalar unit, whichever costs fewer cycles. (No spec: T.Pipelined
      // loops remain.)
      {"vectorize_parallel",
       [developer, &opt](const PrimFunc& g, const Target& t) { return developer ? vectorize_parallel(g, t, opt.vectorize) : g; }},
      // Halves the vector work between the two AIVs (threads = 2): on vector tile ops, so after
      // vectorize_parallel; before pipeline_loops, whose slots copy the halved ops.
      {"split_aiv",
       [threads, &opt](const PrimFunc& g, const Target& t) {
         return threads == 2 && opt.split_aiv ? split_aiv(g, t, opt.remark) : g;
       }},
      // Versions buffers and channels and unrolls the schedule: after every pass that creates
      // tile ops and buffers (it must see all of them), before plan_memory places the slots.
      {"pipeline_loops",
       [developer, &opt](const PrimFunc& g, const Target& t) { return developer ? pipeline_loops(g, t, opt.pipeline) : g; },
       Spec::Expert},
      // Lowering leaves index arithmetic behind, and the developer kernel met only the
      // developer rules: check the expert ones, at the user's lines.
      {"simplify_lowered", if_lowered([](const PrimFunc& g, const Target&) { return simplify(g); }), Spec::Expert},
      {"verify_lowered", if_lowered(verify_pass), Spec::Expert},
      // Reorders tile ops, so before plan_memory (lifetimes) and the sync passes (which order
      // the program as it then stands; insert_channel_syncs puts each cross-core wait right
      // before its receiving copy).
      {"hoist_above_channel_waits",
       [developer, &opt](const PrimFunc& g, const Target& t) {
         return developer && opt.minimise_syncs ? hoist_above_channel_waits(g, t) : g;
       },
       Spec::Expert},
      // Reorders vector ops so that dependent ones share barriers: on the final program order
      // of each run, before insert_syncs places the barriers.
      {"group_vector_ops",
       [developer, &opt](const PrimFunc& g, const Target& t) {
         return developer && opt.minimise_syncs ? group_vector_ops(g, t) : g;
       },
       Spec::Expert},

      // Last of the buffer passes: addresses are final only once no pass adds, resizes or
      // moves a use of an on-chip buffer. In an expert kernel it shares bytes only where the
      // author's syncs order the two buffers; in a developer kernel insert_syncs runs next,
      // on the final addresses, and orders whatever it shares.
      {"plan_memory",
       [syncs_follow = developer && !disabled(opt, "insert_syncs")](const PrimFunc& g, const Target& t) {
         return plan_memory(g, t, syncs_follow);
       },
       Spec::Planned},
      // On final addresses, so bytes plan_memory shares between buffers are ordered too; first
      // the dcci the scalar unit's GM accesses need, which the walk then orders like any access.
      // Developer kernels only: an expert kernel's syncs are the author's.
      {"insert_syncs",
       [developer, &opt](const PrimFunc& g, const Target& t) {
         return developer ? insert_syncs(g, t, opt.minimise_syncs) : g;
       },
       Spec::Planned},
      // On insert_syncs' output: its loop credits, moved out of an enclosing tile loop.
      {"hoist_slot_credits",
       [developer, &opt](const PrimFunc& g, const Target& t) {
         return developer && opt.minimise_syncs ? hoist_slot_credits(g, t) : g;
       },
       Spec::Planned},
      // Cross-core: after insert_syncs, which orders each core's own pipes and knows nothing of
      // the other core.
      {"insert_channel_syncs", if_lowered(insert_channel_syncs), Spec::Planned},
      // On the whole protocol: a credit is implied only by the other core's flags.
      {"elide_channel_credits",
       [developer, &opt](const PrimFunc& g, const Target& t) {
         return developer && opt.minimise_syncs ? elide_channel_credits(g, t) : g;
       },
       Spec::Planned},
      // Last: on every flag the kernel will run with, both cores' (one core's flag is often
      // implied by the other core's).
      {"elide_implied_syncs",
       [developer, &opt](const PrimFunc& g, const Target& t) {
         return developer && opt.minimise_syncs ? elide_implied_syncs(g, t) : g;
       },
       Spec::Planned},
      // After the drops: two flags merge only where both stay.
      {"merge_flags",
       [developer, &opt](const PrimFunc& g, const Target& t) {
         return developer && opt.minimise_syncs ? merge_flags(g, t) : g;
       },
       Spec::Planned},
      // On the final flags: a merged credit is guarded once.
      {"guard_loop_credits",
       [developer, &opt](const PrimFunc& g, const Target& t) {
         return developer && opt.minimise_syncs ? guard_loop_credits(g, t) : g;
       },
       Spec::Planned},
  };
  return run_passes(f, target, passes, opt);
}

}  // namespace tl
