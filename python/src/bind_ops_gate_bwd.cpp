// tl_ascend._core: cann_ops_tilelang's top-k gate backward (include/cann_ops_tilelang/moe.h,
// topk_gate_backward), for the Python package (python/cann_ops_tilelang/_ops.py, the torch
// op's autograd in torch_ops.py). As bind_ops_gategemm.cpp does for the forward: tensors in,
// the Python caller's file:line through a ScopedCaller, the GIL released around the launch.
#include "bindings.h"
#include "cann_ops_tilelang/moe.h"

namespace tl::python {

namespace ops = cann_ops_tilelang;

namespace {

// The forward's key dict (bind_ops_gategemm.cpp's fields): the backward uses the same key.
ops::TopkGateKey bwd_key(const nb::dict& d) {
  const char* w = "a top-k gate backward";
  ops::TopkGateKey k;
  k.dtype = to_dtype(key_field(d, "dtype", w));
  k.experts = nb::cast<int64_t>(key_field(d, "experts", w));
  k.k = nb::cast<int64_t>(key_field(d, "k", w));
  k.rows_per_tile = nb::cast<int64_t>(key_field(d, "rows_per_tile", w));
  k.blocks = nb::cast<int64_t>(key_field(d, "blocks", w));
  const int s = nb::cast<int>(key_field(d, "scoring", w));
  k.bias = nb::cast<bool>(key_field(d, "bias", w));
  k.normalize = nb::cast<bool>(key_field(d, "normalize", w));
  if (k.experts <= 0 || k.k <= 0 || k.k > k.experts || k.rows_per_tile <= 0 || k.blocks <= 0 ||
      s < 0 || s > 2)
    throw Error(
        fmt::format("a top-k gate backward key needs experts, k, rows_per_tile, blocks > 0, "
                    "k <= experts and scoring 0, 1 or 2, got {} (scoring {})",
                    k.str(), s));
  k.scoring = static_cast<ops::GateScoring>(s);
  return k;
}

}  // namespace

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
  m.def(
      "ops_topk_gate_bwd_key",
      [](nb::handle dtype, int64_t experts, int64_t k, int scoring, bool normalize,
         const std::string& target) {
        ops::Checker check("topk_gate_backward", tl::Loc::current());
        if (scoring < 0 || scoring > 2)
          throw Error(fmt::format("scoring must be 0, 1 or 2, got {}", scoring));
        auto key = ops::topk_gate_bwd_key(to_dtype(dtype), experts, k,
                                          static_cast<ops::GateScoring>(scoring), normalize,
                                          get_target(target), check);
        nb::dict d;
        d["dtype"] = std::string(dtype_name(key.dtype));
        d["experts"] = key.experts;
        d["k"] = key.k;
        d["rows_per_tile"] = key.rows_per_tile;
        d["blocks"] = key.blocks;
        d["scoring"] = static_cast<int>(key.scoring);
        d["bias"] = key.bias;
        d["normalize"] = key.normalize;
        return d;
      },
      "dtype"_a, "experts"_a, "k"_a, "scoring"_a, "normalize"_a, "target"_a = "A2");
  m.def("ops_topk_gate_bwd_kernel",
        [](const nb::dict& key) { return ops::topk_gate_bwd_kernel(bwd_key(key)); });
}

}  // namespace tl::python
