// The pass pipeline: a loop over the pass registry (src/pass/registry.cpp, the table of
// contents of the compiler: one row per pass with why it sits where it does). Each row's gate
// says which kernels it lowers, its switch leaves it out, its needs reject a half-lowered
// kernel. run_passes (pass_manager.cpp) adds the debug knobs: --print-after-all,
// --print-after=NAME, --time-passes, verify_each and their TL_* environment variables.
#include <algorithm>
#include <set>

#include "developer.h"
#include "tl/pass.h"

namespace tl {
namespace {

/// The passes a developer kernel's lowering leaves out: those the user disabled by name, those
/// whose switch is off, and those that lower the output of a pass a switch left out (what
/// tl::compile always did: insert_syncs off takes insert_channel_syncs, split_cube_vector or
/// vectorize off takes verify_lowered).
std::set<std::string, std::less<>> left_out(const PassOptions& opt) {
  std::set<std::string, std::less<>> by_switch;
  for (const auto& p : pass_registry()) {
    bool off = !p.switch_name.empty() && !(opt.dev.*find_switch(p.switch_name)->field);
    for (auto need : p.needs) off |= by_switch.count(need) > 0;
    if (off) by_switch.insert(std::string(p.name));
  }
  by_switch.insert(opt.disabled_passes.begin(), opt.disabled_passes.end());
  return by_switch;
}

/// Developer-mode passes that need an earlier one: switching the earlier one off while the
/// later stays on is an error, not a half-lowered kernel (tilelang-ascend issue 1825: options
/// that silently depended on each other).
void check_developer_dependencies(const std::set<std::string, std::less<>>& off) {
  for (const auto& p : pass_registry())
    for (auto need : p.needs)
      if (!off.count(p.name) && off.count(need))
        throw Error(fmt::format(
            "disabled passes: '{}' is off but '{}', which lowers what it leaves, is on; switch "
            "'{}' off too, or keep '{}' (docs/developer_mode.md)",
            need, p.name, p.name, need));
}

}  // namespace

PrimFunc lower(const PrimFunc& f, const Target& target, const PassOptions& options) {
  options.dev.validate();
  PassOptions opt = options;
  const auto off = left_out(opt);
  // Whether the kernel is, or was lowered from, a developer kernel is the IR's to say (the
  // kernel's form, then split_cube_vector's PrimFuncNode::lowered_from_developer): each gate
  // reads the kernel its pass gets, as does plan_memory's syncs_follow. auto_sync gives an
  // expert kernel its syncs too.
  if (dev::developer_threads(f) > 0) check_developer_dependencies(off);
  const bool syncs_on = !off.count("insert_syncs");
  const bool auto_sync = opt.dev.auto_sync;
  const bool channels_on = !off.count("insert_channel_syncs");
  const bool auto_cv_sync = opt.dev.auto_cv_sync;
  const PassContext ctx{opt,
                        [syncs_on, auto_sync](const PrimFunc& g) {
                          return syncs_on && (auto_sync || dev::developer_threads(g) > 0);
                        },
                        [channels_on, auto_cv_sync](const PrimFunc& g) {
                          return channels_on && (auto_cv_sync || dev::developer_threads(g) > 0);
                        }};
  auto gated = [&opt](Gate gate, const PrimFunc& g) {
    const int threads = dev::developer_threads(g);
    switch (gate) {
      case Gate::Always:
        return true;
      case Gate::Developer:
        return threads > 0;
      case Gate::DeveloperTwoAivs:
        return threads == 2;
      case Gate::DeveloperMinimise:
        return threads > 0 && opt.dev.minimise_syncs;
      case Gate::Synced:
        return threads > 0 || opt.dev.auto_sync;
      case Gate::CrossSynced:
        return threads > 0 || opt.dev.auto_cv_sync;
    }
    return false;
  };
  opt.disabled_passes.assign(off.begin(), off.end());
  std::vector<Pass> passes;
  for (const PassDef& p : pass_registry()) {
    std::function<std::string(const PrimFunc&)> phase;
    // A phase invariant describes what the pass made: none when the gate skips it (a gated
    // pass leaves the annotation as it found it, so its output answers as its input would).
    if (p.phase)
      phase = [&p, gated](const PrimFunc& g) { return gated(p.gate, g) ? p.phase(g) : ""; };
    passes.push_back({std::string(p.name),
                      [&p, &ctx, gated](const PrimFunc& g, const Target& t) {
                        return gated(p.gate, g) ? p.run(g, t, ctx) : g;
                      },
                      p.ensures, std::move(phase)});
  }
  return run_passes(f, target, passes, opt);
}

PrimFunc run_named_passes(const PrimFunc& f, const Target& target,
                          const std::vector<std::string>& names, const PassOptions& options) {
  options.dev.validate();
  std::vector<Pass> passes;
  for (size_t i = 0; i < names.size(); ++i) {
    const PassDef* p = find_pass(names[i]);
    if (!p) {
      std::string all;
      for (const auto& q : pass_registry()) all += (all.empty() ? "" : ", ") + std::string(q.name);
      throw Error(fmt::format("passes: no pass named '{}' (passes: {})", names[i], all));
    }
    const bool syncs_follow =
        std::find(names.begin() + i, names.end(), "insert_syncs") != names.end();
    const bool channels_follow =
        std::find(names.begin() + i, names.end(), "insert_channel_syncs") != names.end();
    const PassContext ctx{options, [syncs_follow](const PrimFunc&) { return syncs_follow; },
                          [channels_follow](const PrimFunc&) { return channels_follow; }};
    passes.push_back({names[i],
                      [p, ctx](const PrimFunc& g, const Target& t) { return p->run(g, t, ctx); },
                      p->ensures, p->phase});
  }
  return run_passes(f, target, passes, options);
}

}  // namespace tl
