// The virtual NPU as a compiler backend (tl/backend.h): its artifact is the executable
// npu::Program (program.h), built from the pipeline's output; and tl::compile(f, target, opt),
// the NPU's convenience form that returns a launchable CompiledKernel.
#include "program.h"
#include "tl/npu/npu.h"

namespace tl {
namespace {

class NpuBackend final : public Backend {
 public:
  std::string_view name() const override { return "npu"; }
  std::shared_ptr<const Artifact> build(const PrimFunc& f, const Target& target) const override {
    return npu::build_program(f, target);
  }
};

}  // namespace

const Backend& npu_backend() {
  static const NpuBackend* backend = new NpuBackend;  // never destroyed: compiles may run at exit
  return *backend;
}

CompiledKernel compile(const PrimFunc& f, const Target& target, const CompileOptions& opt) {
  auto program =
      std::dynamic_pointer_cast<const npu::Program>(compile(npu_backend(), f, target, opt));
  TL_ASSERT(program != nullptr, "the npu backend returned an artifact that is not an npu::Program");
  return CompiledKernel(std::move(program));
}

}  // namespace tl
