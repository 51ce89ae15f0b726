// tl::compile(backend, f, target, options): look the kernel up in the JIT cache (cache.cpp);
// on a miss, prepare the IR as the options say (the pass pipeline, the verifier, or neither)
// and hand it to the backend.
#include <tuple>

#include "tl/jit.h"
#include "tl/pass.h"
#include "tl/verifier.h"

namespace tl {
namespace jit {

PrimFunc prepare(const PrimFunc& f, const Target& target, const CompileOptions& opt) {
  if (opt.lower) {
    opt.dev.validate();
    PassOptions passes;
    if (!opt.verify) passes.disabled_passes = {"verify"};
    const DeveloperOptions& d = opt.dev;
    const std::pair<bool, const char*> off[] = {{d.infer_scopes, "infer_scopes"},
                                                {d.lower_cube_ops, "lower_cube_ops"},
                                                {d.mask_tails, "mask_tails"},
                                                {d.legalize_copies, "legalize_copies"},
                                                {d.split_cube_vector, "split_cube_vector"},
                                                {d.vectorize, "vectorize_parallel"},
                                                {d.insert_syncs, "insert_syncs"}};
    for (const auto& [on, pass] : off)
      if (!on) passes.disabled_passes.push_back(pass);
    if (!d.insert_syncs) passes.disabled_passes.push_back("insert_channel_syncs");
    // The expert re-verify checks a lowered kernel; without the split or the vectoriser the
    // kernel is not one, and the backend says so ("not lowered").
    if (!d.split_cube_vector || !d.vectorize) passes.disabled_passes.push_back("verify_lowered");
    passes.vectorize.scalar_fallback = d.scalar_fallback;
    passes.vectorize.allow_inexact_math = d.allow_inexact_math;
    passes.pipeline = d.pipeline_loops;
    passes.split_aiv = d.split_aiv;
    passes.minimise_syncs = d.minimise_syncs;
    if (!d.merge_flags) passes.disabled_passes.push_back("merge_flags");
    return lower(f, target, passes);
  }
  if (opt.verify) verify_or_throw(f, target);
  return f;
}

std::shared_ptr<const Artifact> compile_uncached(const Backend& backend, const PrimFunc& f, const Target& target,
                                                 const CompileOptions& opt) {
  return backend.build(prepare(f, target, opt), target);
}

std::shared_ptr<const Artifact> compile_cached(const Backend& backend, const PrimFunc& f, const Target& target,
                                               const CompileOptions& opt);  // cache.cpp

}  // namespace jit

void DeveloperOptions::validate() const {
  // What each automation needs: the lowering of what an earlier one leaves (lower.cpp checks
  // the same on pass names).
  const std::tuple<bool, const char*, bool, const char*> needs[] = {
      {lower_cube_ops, "lower_cube_ops", infer_scopes, "infer_scopes"},
      {mask_tails, "mask_tails", infer_scopes, "infer_scopes"},
      {legalize_copies, "legalize_copies", infer_scopes, "infer_scopes"},
      {split_cube_vector, "split_cube_vector", infer_scopes, "infer_scopes"},
      {split_cube_vector, "split_cube_vector", lower_cube_ops, "lower_cube_ops"},
      {vectorize, "vectorize", split_cube_vector, "split_cube_vector"},
      {insert_syncs, "insert_syncs", split_cube_vector, "split_cube_vector"},
      {scalar_fallback, "scalar_fallback", vectorize, "vectorize"},
      {allow_inexact_math, "allow_inexact_math", vectorize, "vectorize"},
  };
  for (const auto& [on, name, need_on, need] : needs)
    if (on && !need_on)
      throw Error(fmt::format("CompileOptions::dev: '{}' is on but needs '{}', which is off; switch '{}' off too, or "
                              "'{}' on (docs/developer_mode.md, \"Options\")",
                              name, need, name, need));
}

std::string DeveloperOptions::fingerprint() const {
  return fmt::format(
      "infer_scopes={:d},lower_cube_ops={:d},mask_tails={:d},legalize_copies={:d},split_cube_vector={:d},vectorize={:d},"
      "insert_syncs={:d},pipeline_loops={:d},split_aiv={:d},minimise_syncs={:d},merge_flags={:d},scalar_fallback={:d},"
      "allow_inexact_math={:d}",
      infer_scopes, lower_cube_ops, mask_tails, legalize_copies, split_cube_vector, vectorize, insert_syncs, pipeline_loops,
      split_aiv, minimise_syncs, merge_flags, scalar_fallback, allow_inexact_math);
}

std::shared_ptr<const Artifact> compile(const Backend& backend, const PrimFunc& f, const Target& target,
                                        const CompileOptions& opt) {
  return jit::compile_cached(backend, f, target, opt);
}

}  // namespace tl
