// tl_ascend._core: cann_ops_tilelang's FlashAttention forward and backward
// (include/cann_ops_tilelang/attention.h), for the Python package
// (python/cann_ops_tilelang/_ops.py) and the twin tests (python/tests/test_opslib_attention.py,
// test_opslib_attention_bwd.py). As bind_ops_gategemm.cpp does: the public function
// takes launch's tensor tuples, sets the Python caller's file:line with a ScopedCaller and
// releases the GIL around the launch; the generator's key crosses as a dict of its fields,
// every field required.
#include "bindings.h"
#include "cann_ops_tilelang/attention.h"

namespace tl::python {

namespace {

namespace ops = cann_ops_tilelang;

ops::AttentionLayout to_layout(const std::string& s) {
  if (s == "BSHD") return ops::AttentionLayout::BSHD;
  if (s == "BHSD") return ops::AttentionLayout::BHSD;
  throw Error(fmt::format("layout must be \"BSHD\" or \"BHSD\", got \"{}\"", s));
}

nb::dict fa_key_dict(const ops::FlashAttentionKey& k) {
  nb::dict d;
  d["dtype"] = std::string(dtype_name(k.dtype));
  d["heads"] = k.heads;
  d["dim"] = k.dim;
  d["causal"] = k.causal;
  d["layout"] = std::string(k.layout == ops::AttentionLayout::BSHD ? "BSHD" : "BHSD");
  d["scale"] = k.scale;
  d["block_m"] = k.block_m;
  d["block_n"] = k.block_n;
  d["stages"] = k.stages;
  d["skew"] = k.skew;
  d["blocks"] = k.blocks;
  return d;
}

ops::FlashAttentionKey fa_key(const nb::dict& d) {
  const char* w = "a FlashAttention";
  ops::FlashAttentionKey k;
  k.dtype = to_dtype(key_field(d, "dtype", w));
  k.heads = nb::cast<int64_t>(key_field(d, "heads", w));
  k.dim = nb::cast<int64_t>(key_field(d, "dim", w));
  k.causal = nb::cast<bool>(key_field(d, "causal", w));
  k.layout = to_layout(nb::cast<std::string>(key_field(d, "layout", w)));
  k.scale = nb::cast<double>(key_field(d, "scale", w));
  k.block_m = nb::cast<int64_t>(key_field(d, "block_m", w));
  k.block_n = nb::cast<int64_t>(key_field(d, "block_n", w));
  k.stages = nb::cast<int64_t>(key_field(d, "stages", w));
  k.skew = nb::cast<int64_t>(key_field(d, "skew", w));
  k.blocks = nb::cast<int64_t>(key_field(d, "blocks", w));
  if (k.heads <= 0 || k.dim <= 0 || k.block_m <= 0 || k.block_n <= 0 || k.stages <= 0 ||
      k.skew <= 0 || k.blocks <= 0 || !(k.scale > 0))
    throw Error(
        fmt::format("a FlashAttention key needs every size and the scale > 0, got {}", k.str()));
  return k;
}

}  // namespace

void bind_ops_attention(nb::module_& m) {
  // ops_flash_attention(dev, q, k, v, causal, layout, scale, numpy, loc) -> (o, lse).
  m.def(
      "ops_flash_attention",
      [](Device& dev, nb::handle q, nb::handle k, nb::handle v, bool causal,
         const std::string& layout, std::optional<double> scale, bool numpy, nb::handle loc) {
        ops::ScopedCaller at(to_loc(loc).loc());
        const ops::FlashAttentionConfig cfg{
            .causal = causal, .layout = to_layout(layout), .scale = scale};
        Tensor qt = wrap_tensor(dev, q), kt = wrap_tensor(dev, k), vt = wrap_tensor(dev, v);
        ops::FlashAttentionResult r;
        {
          nb::gil_scoped_release release;
          r = ops::flash_attention(qt, kt, vt, cfg);
        }
        return nb::make_tuple(ops_to_array(r.o, numpy), ops_to_array(r.lse, numpy));
      },
      "device"_a, "q"_a, "k"_a, "v"_a, "causal"_a, "layout"_a, "scale"_a.none(), "numpy"_a,
      "loc"_a.none());
  m.def(
      "ops_flash_attention_key",
      [](nb::handle dtype, int64_t heads, int64_t dim, bool causal, const std::string& layout,
         double scale, const std::string& target, int64_t seq) {
        return fa_key_dict(ops::flash_attention_key(to_dtype(dtype), heads, dim, causal,
                                                    to_layout(layout), scale, get_target(target),
                                                    seq));
      },
      "dtype"_a, "heads"_a, "dim"_a, "causal"_a, "layout"_a, "scale"_a, "target"_a = "A2",
      "seq"_a = 0);
  m.def("ops_flash_attention_kernel",
        [](const nb::dict& key) { return ops::flash_attention_kernel(fa_key(key)); });

  // The backward (docs/ops.md "FlashAttention backward"):
  // ops_flash_attention_backward(dev, dout, q, k, v, o, lse, causal, layout, scale, numpy, loc)
  // -> (dq, dk, dv).
  m.def(
      "ops_flash_attention_backward",
      [](Device& dev, nb::handle dout, nb::handle q, nb::handle k, nb::handle v, nb::handle o,
         nb::handle lse, nb::handle dlse, bool causal, const std::string& layout,
         std::optional<double> scale, bool numpy, nb::handle loc) {
        ops::ScopedCaller at(to_loc(loc).loc());
        const ops::FlashAttentionConfig cfg{
            .causal = causal, .layout = to_layout(layout), .scale = scale};
        Tensor dt = wrap_tensor(dev, dout), qt = wrap_tensor(dev, q), kt = wrap_tensor(dev, k),
               vt = wrap_tensor(dev, v), ot = wrap_tensor(dev, o), lt = wrap_tensor(dev, lse);
        std::optional<Tensor> dlt;
        if (!dlse.is_none()) dlt = wrap_tensor(dev, dlse);
        ops::FlashAttentionGrads g;
        {
          nb::gil_scoped_release release;
          g = ops::flash_attention_backward(dt, qt, kt, vt, ot, lt, cfg, dlt);
        }
        return nb::make_tuple(ops_to_array(g.dq, numpy), ops_to_array(g.dk, numpy),
                              ops_to_array(g.dv, numpy));
      },
      "device"_a, "dout"_a, "q"_a, "k"_a, "v"_a, "o"_a, "lse"_a, "dlse"_a.none(), "causal"_a,
      "layout"_a, "scale"_a.none(), "numpy"_a, "loc"_a.none());
  m.def(
      "ops_flash_attention_bwd_key",
      [](nb::handle dtype, int64_t heads, int64_t dim, bool causal, const std::string& layout,
         double scale, const std::string& target) {
        return fa_key_dict(ops::flash_attention_bwd_key(
            to_dtype(dtype), heads, dim, causal, to_layout(layout), scale, get_target(target)));
      },
      "dtype"_a, "heads"_a, "dim"_a, "causal"_a, "layout"_a, "scale"_a, "target"_a = "A2");
  m.def(
      "ops_flash_attention_bwd_dq_kernel",
      [](const nb::dict& key, bool dlse) {
        return ops::flash_attention_bwd_dq_kernel(fa_key(key), dlse);
      },
      "key"_a, "dlse"_a = false);
  m.def("ops_flash_attention_bwd_cast_kernel",
        [](const nb::dict& key) { return ops::flash_attention_bwd_cast_kernel(fa_key(key)); });
  m.def("ops_flash_attention_bwd_dkdv_kernel",
        [](const nb::dict& key) { return ops::flash_attention_bwd_dkdv_kernel(fa_key(key)); });
}

}  // namespace tl::python
