// tl::compile: lower a kernel through the pass pipeline and build its executable form.
#include "../npu/program.h"
#include "tl/npu/npu.h"
#include "tl/pass.h"
#include "tl/verifier.h"

namespace tl {

CompiledKernel compile(const PrimFunc& f, const Target& target, const CompileOptions& opt) {
  PrimFunc lowered = opt.verify ? lower(f, target) : f;
  return CompiledKernel(npu::build_program(lowered, target));
}

}  // namespace tl
