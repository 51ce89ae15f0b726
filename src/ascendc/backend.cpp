// The AscendC emitter as a compiler backend (tl/backend.h): its artifact is the source text,
// built from the pipeline's output like the virtual NPU's program, and cached the same way.
#include "tl/ascendc.h"

namespace tl {
namespace {

class AscendCBackend final : public Backend {
 public:
  std::string_view name() const override { return "ascendc"; }
  std::shared_ptr<const Artifact> build(const PrimFunc& f, const Target& target) const override {
    auto src = std::make_shared<ascendc::Source>();
    src->text = ascendc::emit(f, target);
    src->func = f;
    src->target = &target;
    return src;
  }
};

}  // namespace

const Backend& ascendc_backend() {
  static const AscendCBackend* backend = new AscendCBackend;  // never destroyed, as npu_backend
  return *backend;
}

std::string ascendc_source(const PrimFunc& f, const Target& target, const CompileOptions& opt) {
  auto a =
      std::dynamic_pointer_cast<const ascendc::Source>(compile(ascendc_backend(), f, target, opt));
  TL_ASSERT(a != nullptr, "the ascendc backend returned an artifact that is not a Source");
  return a->text;
}

}  // namespace tl
