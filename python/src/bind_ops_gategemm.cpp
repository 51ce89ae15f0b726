// tl_ascend._core: cann_ops_tilelang's MoE top-k gate and GEMM (include/cann_ops_tilelang/
// moe.h, gemm.h), for the Python package (python/cann_ops_tilelang/_ops.py) and the twin test.
// As bind_ops.cpp does for RMSNorm: the public functions take launch's tensor tuples, set the
// Python caller's file:line with a ScopedCaller and release the GIL around the launch; the
// generators and keys cross as dicts of the key's fields, every field required.
#include "bindings.h"
#include "cann_ops_tilelang/gemm.h"
#include "cann_ops_tilelang/moe.h"

namespace tl::python {

namespace {

namespace ops = cann_ops_tilelang;

nb::dict gate_key_dict(const ops::TopkGateKey& k) {
  nb::dict d;
  d["dtype"] = std::string(dtype_name(k.dtype));
  d["experts"] = k.experts;
  d["k"] = k.k;
  d["rows_per_tile"] = k.rows_per_tile;
  d["blocks"] = k.blocks;
  d["scoring"] = static_cast<int>(k.scoring);
  d["bias"] = k.bias;
  d["normalize"] = k.normalize;
  return d;
}

ops::TopkGateKey gate_key(const nb::dict& d) {
  const char* w = "a top-k gate";
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
        fmt::format("a top-k gate key needs experts, k, rows_per_tile, blocks > 0, "
                    "k <= experts and scoring 0, 1 or 2, got {} (scoring {})",
                    k.str(), s));
  k.scoring = static_cast<ops::GateScoring>(s);
  return k;
}

nb::dict gemm_key_dict(const ops::GemmKey& k) {
  nb::dict d;
  d["dtype"] = std::string(dtype_name(k.dtype));
  d["out_dtype"] = std::string(dtype_name(k.out_dtype));
  d["n"] = k.n;
  d["k"] = k.k;
  d["trans_a"] = k.trans_a;
  d["trans_b"] = k.trans_b;
  d["block_m"] = k.block_m;
  d["block_n"] = k.block_n;
  d["block_k"] = k.block_k;
  d["stages"] = k.stages;
  d["blocks"] = k.blocks;
  return d;
}

ops::GemmKey gemm_key(const nb::dict& d) {
  const char* w = "a GEMM";
  ops::GemmKey k;
  k.dtype = to_dtype(key_field(d, "dtype", w));
  k.out_dtype = to_dtype(key_field(d, "out_dtype", w));
  k.n = nb::cast<int64_t>(key_field(d, "n", w));
  k.k = nb::cast<int64_t>(key_field(d, "k", w));
  k.trans_a = nb::cast<bool>(key_field(d, "trans_a", w));
  k.trans_b = nb::cast<bool>(key_field(d, "trans_b", w));
  k.block_m = nb::cast<int64_t>(key_field(d, "block_m", w));
  k.block_n = nb::cast<int64_t>(key_field(d, "block_n", w));
  k.block_k = nb::cast<int64_t>(key_field(d, "block_k", w));
  k.stages = nb::cast<int64_t>(key_field(d, "stages", w));
  k.blocks = nb::cast<int64_t>(key_field(d, "blocks", w));
  if (k.n <= 0 || k.k <= 0 || k.block_m <= 0 || k.block_n <= 0 || k.block_k <= 0 || k.stages <= 0 ||
      k.blocks <= 0)
    throw Error(fmt::format("a GEMM key needs every size > 0, got {}", k.str()));
  return k;
}

}  // namespace

void bind_ops_gategemm(nb::module_& m) {
  m.def(
      "ops_topk_gate",
      [](Device& dev, nb::handle logits, nb::handle bias, int64_t k, int scoring, bool normalize,
         double route_scale, bool numpy, nb::handle loc) {
        ops::ScopedCaller at(to_loc(loc).loc());
        Tensor zt = wrap_tensor(dev, logits), bt;
        if (!bias.is_none()) bt = wrap_tensor(dev, bias);
        ops::TopkGateResult r;
        {
          nb::gil_scoped_release release;
          r = ops::topk_gate(zt, bt,
                             {.k = k,
                              .scoring = static_cast<ops::GateScoring>(scoring),
                              .normalize = normalize,
                              .route_scale = route_scale});
        }
        return nb::make_tuple(ops_to_array(r.weights, numpy), ops_to_array(r.indices, numpy));
      },
      "device"_a, "logits"_a, "bias"_a.none(), "k"_a, "scoring"_a, "normalize"_a, "route_scale"_a,
      "numpy"_a, "loc"_a.none());
  m.def(
      "ops_gemm",
      [](Device& dev, nb::handle a, nb::handle b, bool trans_a, bool trans_b, nb::handle out_dtype,
         bool numpy, nb::handle loc) {
        ops::ScopedCaller at(to_loc(loc).loc());
        Tensor at_ = wrap_tensor(dev, a), bt = wrap_tensor(dev, b);
        ops::GemmConfig cfg{.trans_a = trans_a, .trans_b = trans_b};
        if (!out_dtype.is_none()) cfg.out_dtype = to_dtype(out_dtype);
        Tensor c;
        {
          nb::gil_scoped_release release;
          c = ops::gemm(at_, bt, cfg);
        }
        return ops_to_array(c, numpy);
      },
      "device"_a, "a"_a, "b"_a, "trans_a"_a, "trans_b"_a, "out_dtype"_a.none(), "numpy"_a,
      "loc"_a.none());

  m.def(
      "ops_topk_gate_key",
      [](nb::handle dtype, int64_t experts, int64_t k, int scoring, bool bias, bool normalize,
         const std::string& target) {
        ops::Checker check("topk_gate", tl::Loc::current());
        if (scoring < 0 || scoring > 2)
          throw Error(fmt::format("scoring must be 0, 1 or 2, got {}", scoring));
        return gate_key_dict(ops::topk_gate_key(to_dtype(dtype), experts, k,
                                                static_cast<ops::GateScoring>(scoring), bias,
                                                normalize, get_target(target), check));
      },
      "dtype"_a, "experts"_a, "k"_a, "scoring"_a, "bias"_a, "normalize"_a, "target"_a = "A2");
  m.def("ops_topk_gate_kernel",
        [](const nb::dict& key) { return ops::topk_gate_kernel(gate_key(key)); });
  m.def(
      "ops_gemm_key",
      [](nb::handle dtype, nb::handle out_dtype, int64_t n, int64_t k, bool trans_a, bool trans_b,
         const std::string& target) {
        ops::Checker check("gemm", tl::Loc::current());
        return gemm_key_dict(ops::gemm_key(to_dtype(dtype), to_dtype(out_dtype), n, k, trans_a,
                                           trans_b, get_target(target), check));
      },
      "dtype"_a, "out_dtype"_a, "n"_a, "k"_a, "trans_a"_a, "trans_b"_a, "target"_a = "A2");
  m.def("ops_gemm_kernel", [](const nb::dict& key) { return ops::gemm_kernel(gemm_key(key)); });
}

}  // namespace tl::python
