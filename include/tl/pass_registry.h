// The one registry of the compiler's passes and of the developer-mode switches that turn them
// off or change what they do (issue 28, item 4). Each pass is one row: its name, the function,
// when `lower` runs it (its gate), the switch that turns it off, the passes whose output it
// lowers (its needs) and its output invariant. Each switch is one row: its name (the
// DeveloperOptions field, `tlc run --off/--on NAME`), its pass-config keys (`tl.dev.NAME` and
// any alias), what it needs and its help line. `lower` is a loop over the pass rows; the
// switches' validation, the JIT cache fingerprint, `tlc --off/--on`, the Python extension's
// developer options and `tl_ascend.PassConfigKey` all read the switch rows, so a new switch is
// a field of DeveloperOptions (its default) and a row in src/pass/registry.cpp.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tl/ir.h"
#include "tl/target.h"
#include "tl/verifier.h"

namespace tl {

/// Developer-mode automations (docs/developer_mode.md, "Options"): each is on by default
/// unless its comment says otherwise and can be switched; what each does, what it needs and
/// its keys are its row in switch_registry(). One that needs another is rejected when that
/// one is off (tilelang-ascend issue 1825: options that silently depended on each other).
/// Expert kernels are unaffected but by auto_sync and auto_cv_combine (TileLang-Ascend's pass
/// configs, off by default) and bank_groups (their UB layout). Part of the JIT cache key. The
/// default of a switch is the initializer of its field here (the registry reads it from
/// `DeveloperOptions{}`).
struct DeveloperOptions {
  bool infer_scopes = true;    // place shared/fragment tiles in L1/L0A/L0B/L0C/UB
  bool lower_cube_ops = true;  // gemm -> L1 -> L0A/L0B loads + mma; needs infer_scopes
  bool mask_tails =
      true;  // the stale part of clipped tiles kept out of results; needs infer_scopes
  bool legalize_copies = true;    // tails, padded rows, partial L1 panels; needs infer_scopes
  bool split_cube_vector = true;  // Cube and Vector scopes; needs infer_scopes, lower_cube_ops
  bool vectorize = true;          // Parallel element loops -> vector ops; needs split_cube_vector
  bool insert_syncs = true;       // flags and barriers; needs split_cube_vector
  /// T.Pipelined loops overlap neighbouring iterations (slots, skew; pipeline_loops); off: they
  /// run as serial loops.
  bool pipeline_loops = true;
  /// A threads = 2 kernel's two AIVs take half the vector work each (split_aiv); off: AIV 0
  /// does it all.
  bool split_aiv = true;
  /// insert_syncs drops every sync the others already imply; off: it keeps all it planned.
  bool minimise_syncs = true;
  /// Two neighbouring flags of a pipe pair become one, as an expert writes them (merge_flags):
  /// fewer syncs, but the earlier destination waits for the later source, which costs cycles
  /// where that source is on the critical path (docs/developer_mode.md, "Merged flags and
  /// guarded credits"). Off by default: on no developer example does it save a cycle, and it
  /// costs gemm_dev 1.4 % and matmul_add_dev 4.0 %. Needs minimise_syncs.
  bool merge_flags = false;
  /// A loop that cannot be vectorised runs serially on the scalar unit, with a remark (off: an
  /// error naming the reason). Needs vectorize.
  bool scalar_fallback = false;
  /// Element loops may use the vector unit's exp / log / sigmoid / rsqrt, which can differ from
  /// the correctly rounded scalar result in the last bit (a remark each). On by default, as on
  /// the chip, whose vector unit computes them so (TileLang-Ascend's element loops do; issue 29):
  /// off asks for exact math, and such a loop is then an error naming the op (or, with
  /// scalar_fallback, a scalar loop). Only vectorize reads it (no effect with vectorize off).
  bool allow_inexact_math = true;
  /// Expert kernels too: insert_syncs writes the intra-core syncs of each scope that has none of
  /// its own (TileLang-Ascend's tl.ascend_auto_sync; developer kernels always get them, unless
  /// insert_syncs is off). Off by default: an expert kernel's syncs are its author's.
  bool auto_sync = false;
  /// An expert kernel written without T.Scope gets its scope (combine_cv; TileLang-Ascend's
  /// tl.ascend_auto_cv_combine). Off by default: expert work outside a scope is an error.
  bool auto_cv_combine = false;
  /// group_vector_ops orders each run of vector ops by dependence level, so dependent ones share
  /// pipe barriers (runs only with minimise_syncs); off: the author's order.
  bool group_vector_ops = true;
  /// A hybrid kernel split by auto_cv_combine gets cross-core flags on each GM tensor one core
  /// writes and the other reads (insert_channel_syncs; TileLang-Ascend's
  /// tl.ascend_auto_cross_core_sync). Off by default: the author's cross-core flags stand.
  bool auto_cv_sync = false;
  /// plan_memory places the two UB sources of vector instructions in opposite bank groups where
  /// its default layout makes them conflict and the capacity allows (docs/compiler.md,
  /// "plan_memory"), in expert kernels too; off: the default layout, for comparing cycles.
  bool bank_groups = true;

  /// A tl::Error naming both options when an enabled one needs a disabled one.
  void validate() const;
  /// "infer_scopes=1,lower_cube_ops=1,...": every switch in registry order, for the cache key
  /// and messages.
  std::string fingerprint() const;
};

/// One developer-mode switch (a row of switch_registry()).
struct Switch {
  std::string_view name;          // the DeveloperOptions field; `tlc --off/--on NAME`
  bool DeveloperOptions::*field;  // its value; the default is DeveloperOptions{}.*field
  /// Switches that must be on while this one is (by name).
  std::vector<std::string_view> needs;
  /// Pass-config keys (tl_ascend.PassConfigKey): the first is the canonical one
  /// (`tl.dev.NAME`, Python name TL_DEV_NAME); the others are aliases accepted for it (another
  /// project's spelling of the same switch).
  std::vector<std::string_view> keys;
  /// true: tlc has a flag of its own, `--NAME` with dashes (an opt-in that is no automation:
  /// --scalar-fallback); false: it is switched with `--off NAME` / `--on NAME`.
  bool tlc_flag = false;
  std::string_view help;

  bool default_on() const { return DeveloperOptions{}.*field; }
};
/// Every switch, in the order the fingerprint lists them.
const std::vector<Switch>& switch_registry();
/// The switch called `name`, or whose key or alias key is `name`; nullptr when none.
const Switch* find_switch(std::string_view name);

/// When `lower` runs a pass. The developer-mode passes return expert kernels unchanged on their
/// own (Always); the others are only run on what `lower` lowered from a developer kernel.
enum class Gate {
  Always,             // every kernel
  Developer,          // kernels lowered from a developer kernel
  DeveloperTwoAivs,   // ... written with threads = 2
  DeveloperMinimise,  // ... with DeveloperOptions::minimise_syncs on
  Synced,             // developer kernels, and expert ones with DeveloperOptions::auto_sync
  CrossSynced         // developer kernels, and expert ones with DeveloperOptions::auto_cv_sync
};
std::string_view gate_name(Gate g);

struct PassOptions;  // tl/pass.h
/// What a pass's row may read besides the kernel and the target.
struct PassContext {
  const PassOptions& opt;
  /// Whether insert_syncs runs after plan_memory on kernel `g` (`lower`: g was lowered from a
  /// developer kernel, read from its annotation, and insert_syncs is on): plan_memory may share
  /// bytes the syncs then order.
  std::function<bool(const PrimFunc&)> syncs_follow;
  /// Whether insert_channel_syncs runs after plan_memory on kernel `g`: plan_memory may then
  /// prove a reuse with the cross-core flags it will add (and that pass checks the proof on the
  /// flags it added: plan_memory.cpp, check_shared_bytes).
  std::function<bool(const PrimFunc&)> channel_syncs_follow = nullptr;
};

/// One pass (a row of pass_registry()).
struct PassDef {
  std::string_view name;
  std::function<PrimFunc(const PrimFunc&, const Target&, const PassContext&)> run;
  Gate gate = Gate::Always;
  /// The switch that turns the pass off when it is off ("" for none).
  std::string_view switch_name{};
  /// Passes whose output this one lowers: with one of them off in a developer kernel, this
  /// one must be off too (an error otherwise, not a half-lowered kernel).
  std::vector<std::string_view> needs{};
  /// The output invariant (Pass::ensures): checked by verify_each.
  std::optional<Spec> ensures{};
  /// Its phase invariant (Pass::phase), for a pass whose output is no expert kernel yet.
  std::function<std::string(const PrimFunc&)> phase{};
};
/// Every pass of the pipeline, in pipeline order.
const std::vector<PassDef>& pass_registry();
/// The pass called `name`, or nullptr.
const PassDef* find_pass(std::string_view name);

/// Runs the registry's passes `names`, in that order, ungated (the user asked for each: `tlc
/// opt --passes=a,b`), with `opt`'s switches and debug knobs; plan_memory leaves the ordering of
/// shared bytes to insert_syncs when insert_syncs is among the passes after it. An unknown name
/// is a tl::Error listing the passes.
PrimFunc run_named_passes(const PrimFunc& f, const Target& target,
                          const std::vector<std::string>& names, const PassOptions& opt);

}  // namespace tl
