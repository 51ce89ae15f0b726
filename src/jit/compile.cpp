// tl::compile: look the kernel up in the JIT cache (cache.cpp); on a miss, lower it through the
// pass pipeline and build its executable form.
#include "../npu/program.h"
#include "tl/jit.h"
#include "tl/npu/npu.h"
#include "tl/pass.h"
#include "tl/verifier.h"

namespace tl {
namespace jit {

std::shared_ptr<const npu::Program> compile_uncached(const PrimFunc& f, const Target& target,
                                                     const CompileOptions& opt) {
  PrimFunc lowered = opt.verify ? lower(f, target) : f;
  return npu::build_program(lowered, target);
}

std::shared_ptr<const npu::Program> compile_cached(const PrimFunc& f, const Target& target,
                                                   const CompileOptions& opt);  // cache.cpp

}  // namespace jit

CompiledKernel compile(const PrimFunc& f, const Target& target, const CompileOptions& opt) {
  return CompiledKernel(jit::compile_cached(f, target, opt));
}

}  // namespace tl
