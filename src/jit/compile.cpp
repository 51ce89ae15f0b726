// tl::compile(backend, f, target, options): look the kernel up in the JIT cache (cache.cpp);
// on a miss, prepare the IR as the options say (the pass pipeline, the verifier, or neither)
// and hand it to the backend.
#include "tl/jit.h"
#include "tl/pass.h"
#include "tl/verifier.h"

namespace tl {
namespace jit {

PrimFunc prepare(const PrimFunc& f, const Target& target, const CompileOptions& opt) {
  if (opt.lower) {
    // lower() validates the switches and leaves out the passes they switch off.
    PassOptions passes;
    if (!opt.verify) passes.disabled_passes = {"verify"};
    passes.dev = opt.dev;
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

std::shared_ptr<const Artifact> compile(const Backend& backend, const PrimFunc& f, const Target& target,
                                        const CompileOptions& opt) {
  return jit::compile_cached(backend, f, target, opt);
}

}  // namespace tl
