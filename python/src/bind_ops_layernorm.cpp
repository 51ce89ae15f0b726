// tl_ascend._core: cann_ops_tilelang's LayerNorm backward and the LayerNorm kernel generators
// and keys (include/cann_ops_tilelang/norm.h), for the Python package
// (python/cann_ops_tilelang/_ops.py) and the twin test (python/tests/test_opslib_layernorm.py).
// As bind_ops.cpp does for RMSNorm: the public function takes launch's tensor tuples, sets the
// Python caller's file:line with a ScopedCaller and releases the GIL around the launches; the
// generators and keys cross as dicts of the key's fields, every field required. The forward's
// public function is bound in bind_ops.cpp (ops_layer_norm).
#include "bindings.h"
#include "cann_ops_tilelang/norm.h"

namespace tl::python {

namespace {

namespace ops = cann_ops_tilelang;

nb::dict fwd_key_dict(const ops::LayerNormKey& k) {
  nb::dict d;
  d["dtype"] = std::string(dtype_name(k.dtype));
  d["hidden"] = k.hidden;
  d["rows_per_tile"] = k.rows_per_tile;
  d["blocks"] = k.blocks;
  d["weight"] = k.weight;
  d["bias"] = k.bias;
  d["stats"] = k.stats;
  return d;
}

ops::LayerNormKey fwd_key(const nb::dict& d) {
  const char* w = "a LayerNorm";
  const char* fields = "dtype, hidden, rows_per_tile, blocks, weight, bias, stats";
  ops::LayerNormKey k;
  k.dtype = to_dtype(key_field(d, "dtype", w, fields));
  k.hidden = nb::cast<int64_t>(key_field(d, "hidden", w, fields));
  k.rows_per_tile = nb::cast<int64_t>(key_field(d, "rows_per_tile", w, fields));
  k.blocks = nb::cast<int64_t>(key_field(d, "blocks", w, fields));
  k.weight = nb::cast<bool>(key_field(d, "weight", w, fields));
  k.bias = nb::cast<bool>(key_field(d, "bias", w, fields));
  k.stats = nb::cast<bool>(key_field(d, "stats", w, fields));
  if (k.hidden <= 0 || k.rows_per_tile <= 0 || k.blocks <= 0)
    throw Error(
        fmt::format("a LayerNorm key needs hidden, rows_per_tile, blocks > 0, got {}", k.str()));
  return k;
}

nb::dict bwd_key_dict(const ops::LayerNormBwdKey& k) {
  nb::dict d;
  d["dtype"] = std::string(dtype_name(k.dtype));
  d["hidden"] = k.hidden;
  d["rows_per_tile"] = k.rows_per_tile;
  d["chunk"] = k.chunk;
  d["blocks"] = k.blocks;
  d["slots"] = k.slots;
  return d;
}

ops::LayerNormBwdKey bwd_key(const nb::dict& d) {
  const char* w = "a LayerNorm backward";
  const char* fields = "dtype, hidden, rows_per_tile, chunk, blocks (slots: optional)";
  ops::LayerNormBwdKey k;
  k.dtype = to_dtype(key_field(d, "dtype", w, fields));
  k.hidden = nb::cast<int64_t>(key_field(d, "hidden", w, fields));
  k.rows_per_tile = nb::cast<int64_t>(key_field(d, "rows_per_tile", w, fields));
  k.chunk = nb::cast<int64_t>(key_field(d, "chunk", w, fields));
  k.blocks = nb::cast<int64_t>(key_field(d, "blocks", w, fields));
  if (d.contains("slots")) k.slots = nb::cast<int64_t>(d["slots"]);
  // A chunk that does not divide hidden is the ragged schedule (layer_norm_bwd_kernel.cpp);
  // chunk 0 the whole-row one (layer_norm_bwd_rows.cpp: hidden a multiple of 32, odd slots >= 3,
  // fp32 three).
  const bool rows = k.chunk == 0 && k.hidden % 32 == 0 && k.slots >= 3 && k.slots % 2 == 1 &&
                    (k.dtype != tl::DType::Float32 || k.slots == 3);
  if (k.hidden <= 0 || k.rows_per_tile <= 0 || k.blocks <= 0 ||
      (!rows && (k.chunk <= 0 || k.chunk * tl::dtype_bytes(k.dtype) % 32 != 0)))
    throw Error(fmt::format(
        "a LayerNorm backward key needs hidden, rows_per_tile, blocks > 0 and a chunk of whole "
        "32-byte blocks, or chunk 0 with hidden a multiple of 32 and odd slots >= 3 (fp32: 3), "
        "got {}",
        k.str()));
  return k;
}

}  // namespace

void bind_ops_layernorm(nb::module_& m) {
  m.def(
      "ops_layer_norm_backward",
      [](Device& dev, nb::handle dy, nb::handle x, nb::handle weight, double eps, bool numpy,
         nb::handle loc) {
        ops::ScopedCaller at(to_loc(loc).loc());
        Tensor dyt = wrap_tensor(dev, dy), xt = wrap_tensor(dev, x), wt = wrap_tensor(dev, weight);
        ops::LayerNormGrads g;
        {
          nb::gil_scoped_release release;
          g = ops::layer_norm_backward(dyt, xt, wt, eps);
        }
        return nb::make_tuple(ops_to_array(g.dx, numpy), ops_to_array(g.dw, numpy),
                              ops_to_array(g.db, numpy));
      },
      "device"_a, "dy"_a, "x"_a, "weight"_a, "eps"_a, "numpy"_a, "loc"_a.none());

  m.def(
      "ops_layer_norm_key",
      [](nb::handle dtype, int64_t hidden, bool weight, bool bias, bool stats,
         const std::string& target) {
        ops::Checker check("layer_norm", tl::Loc::current());
        return fwd_key_dict(ops::layer_norm_key(to_dtype(dtype), hidden, weight, bias, stats,
                                                get_target(target), check));
      },
      "dtype"_a, "hidden"_a, "weight"_a, "bias"_a, "stats"_a, "target"_a = "A2");
  m.def("ops_layer_norm_kernel",
        [](const nb::dict& key) { return ops::layer_norm_kernel(fwd_key(key)); });
  m.def(
      "ops_layer_norm_bwd_key",
      [](nb::handle dtype, int64_t hidden, const std::string& target) {
        ops::Checker check("layer_norm_backward", tl::Loc::current());
        return bwd_key_dict(
            ops::layer_norm_bwd_key(to_dtype(dtype), hidden, get_target(target), check));
      },
      "dtype"_a, "hidden"_a, "target"_a = "A2");
  m.def("ops_layer_norm_bwd_kernel",
        [](const nb::dict& key) { return ops::layer_norm_bwd_kernel(bwd_key(key)); });
  // The partials reduction's key (an RMSNorm dW reduction over 2H columns), as a dict for
  // ops_rms_norm_dw_reduce_kernel.
  m.def("ops_layer_norm_dwb_reduce_key", [](const nb::dict& key) {
    const auto r = ops::layer_norm_dwb_reduce_key(bwd_key(key));
    nb::dict d;
    d["dtype"] = std::string(dtype_name(r.dtype));
    d["hidden"] = r.hidden;
    d["rows_per_tile"] = r.rows_per_tile;
    d["chunk"] = r.chunk;
    d["blocks"] = r.blocks;
    d["residual"] = r.residual;
    d["rstd"] = r.rstd;
    d["resident"] = r.resident;
    return d;
  });
}

}  // namespace tl::python
