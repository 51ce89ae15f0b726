// The pass pipeline: a table of contents of the compiler. One line per pass, in order, with
// why it sits where it does; the ordering rules themselves are documented on each pass in
// tl/pass.h, as is each pass's output invariant (the verifier spec its output meets, the third
// field below). run_passes (pass_manager.cpp) adds the debug knobs: --print-after-all,
// --print-after=NAME, --time-passes, verify_each and their TL_* environment variables.
#include "tl/pass.h"

namespace tl {

PrimFunc lower(const PrimFunc& f, const Target& target, const PassOptions& opt) {
  std::vector<Pass> passes = {
      // First: every later pass may assume a well-formed expert-mode kernel, and the user
      // gets all violations against the source as written.
      {"verify", verify_pass, Spec::Expert},
      // Early: fold the index arithmetic the DSL and generators leave behind, so later
      // analyses (and the printed IR) see constants where there are constants.
      {"simplify", [](const PrimFunc& g, const Target&) { return simplify(g); }, Spec::Expert},

      // Developer-mode passes slot in here, lowering to expert-mode IR (DESIGN.md 5):
      // infer scopes, legalize copies, vectorize Parallel, lower reduce/gemm, split
      // Cube/Vector, split across the two AIVs, pipeline (multi-buffer). They create and
      // resize buffers, so they must run before plan_memory.

      // Last of the buffer passes: addresses are final only once no pass adds, resizes or
      // moves a use of an on-chip buffer. It shares bytes only where the syncs already in the
      // kernel order the two buffers; insert_syncs (future) runs after it, on final addresses.
      {"plan_memory", plan_memory, Spec::Planned},
  };
  return run_passes(f, target, passes, opt);
}

}  // namespace tl
