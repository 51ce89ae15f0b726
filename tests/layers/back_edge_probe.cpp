// A probe for the layer rule (docs/architecture.md, tests/layers/CMakeLists.txt): one function
// that plays a source file of the ir module, linked as a shared library with only what ir may
// link (support) and -Wl,--no-undefined. Built plainly it uses ir and support and links; built
// with TL_PROBE_BACK_EDGE it calls up into the npu module, and the link must fail, which is
// what shows that a back edge cannot slip into the build.
#include "tl/ir.h"
#ifdef TL_PROBE_BACK_EDGE
#include "tl/npu/npu.h"
#endif

namespace tl {

int layer_probe();
int layer_probe() {
#ifdef TL_PROBE_BACK_EDGE
  return (void)npu_backend(), 1;  // ir -> npu: a back edge
#else
  return static_cast<int>(scope_name(MemScope::UB).size()) + dtype_bits(DType::Float16);
#endif
}

}  // namespace tl
