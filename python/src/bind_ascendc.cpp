// tl_ascend._core.emit_ascendc: the AscendC backend (tl/ascendc.h, docs/ascendc.md) for the
// Python front end. JITKernel.get_kernel_source() returns its text for the lowered kernel, as
// TileLang-Ascend's get_kernel_source() returns the AscendC its compiler generated; a kernel
// with a construct the emitter has no form for raises tl_ascend.Error naming it and its line.
#include "bindings.h"
#include "tl/ascendc.h"

namespace tl::python {

void bind_ascendc(nb::module_& m) {
  m.def(
      "emit_ascendc",
      [](const PrimFunc& lowered, const std::string& target, bool host_stub) {
        return ascendc::emit(lowered, get_target(target), {.host_stub = host_stub});
      },
      "lowered"_a, "target"_a = "A2", "host_stub"_a = true,
      "The AscendC source of a lowered kernel (CompiledKernel.lowered): one C++ file.");
}

}  // namespace tl::python
