// tl_ascend._core: cann_ops_tilelang's top-k gate backward (include/cann_ops_tilelang/moe.h,
// topk_gate_backward), for the Python package (python/cann_ops_tilelang/_ops.py, the torch
// op's autograd in torch_ops.py). As bind_ops_gategemm.cpp does for the forward: tensors in,
// the Python caller's file:line through a ScopedCaller, the GIL released around the launch.
#include "bindings.h"
#include "cann_ops_tilelang/moe.h"

namespace tl::python {

namespace ops = cann_ops_tilelang;

void bind_ops_gate_bwd(nb::module_& m) {
  m.def(
      "ops_topk_gate_backward",
      [](Device& dev, nb::handle dweights, nb::handle logits, nb::handle indices, int64_t k,
         int scoring, bool normalize, double route_scale, bool numpy, nb::handle loc) {
        ops::ScopedCaller at(to_loc(loc).loc());
        Tensor dwt = wrap_tensor(dev, dweights), zt = wrap_tensor(dev, logits),
               it = wrap_tensor(dev, indices), dz;
        {
          nb::gil_scoped_release release;
          dz = ops::topk_gate_backward(dwt, zt, it,
                                       {.k = k,
                                        .scoring = static_cast<ops::GateScoring>(scoring),
                                        .normalize = normalize,
                                        .route_scale = route_scale});
        }
        return ops_to_array(dz, numpy);
      },
      "device"_a, "dweights"_a, "logits"_a, "indices"_a, "k"_a, "scoring"_a, "normalize"_a,
      "route_scale"_a, "numpy"_a, "loc"_a.none());
}

}  // namespace tl::python
