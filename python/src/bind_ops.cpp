// tl_ascend._core: the operator library cann_ops_tilelang (include/cann_ops_tilelang/), for the
// Python package of the same name (python/cann_ops_tilelang/, docs/ops.md). Two groups:
//
//  * the public functions (ops_rms_norm, ops_rms_norm_backward): tensors come as launch's
//    (array, dtype or None, name) tuples, viewed in GM without a copy; the outputs the library
//    allocates in the Device's GM go back as DLPack arrays that own their tl::Tensor (no copy
//    either; torch.from_dlpack / numpy.from_dlpack take them). The Python caller's file:line is
//    set with a ScopedCaller, so a validation error names the user's line, not this file's.
//  * the kernel generators and the launch parameters they are called with (ops_rms_norm_*_key,
//    ops_rms_norm_*_kernel), for the Python twin's test: the twin must print the same IR.
//
// A key crosses as a dict {dtype, hidden, rows_per_tile, chunk, blocks, residual, rstd}, the
// fields of cann_ops_tilelang::RmsNormKey.

#include "bindings.h"
#include "cann_ops_tilelang/activation.h"
#include "cann_ops_tilelang/norm.h"
#include "cann_ops_tilelang/softmax.h"

namespace tl::python {
namespace {

namespace ops = cann_ops_tilelang;

/// A library output as a DLPack array that keeps the tensor (and so its GM storage) alive.
/// `numpy`: a numpy array (else a DLPack capsule, which torch.from_dlpack takes); numpy has no
/// bfloat16, so a bfloat16 tensor goes out as its uint16 bits, which the Python side views as
/// ml_dtypes.bfloat16 (as tl_ascend's launcher does on the way in).
nb::object to_array(const Tensor& t, bool numpy) {
  if (!t.defined()) return nb::none();
  DLView v = t.dlpack();
  if (numpy && t.dtype() == DType::BFloat16)
    v.dtype_code = static_cast<uint8_t>(nb::dlpack::dtype_code::UInt);
  auto* owner_tensor = new Tensor(t);
  nb::capsule owner(owner_tensor, [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  std::vector<size_t> shape(t.shape().begin(), t.shape().end());
  nb::dlpack::dtype dt{v.dtype_code, v.dtype_bits, v.dtype_lanes};
  if (numpy)
    return nb::cast(nb::ndarray<nb::numpy>(t.data(), shape.size(), shape.data(), owner,
                                           t.strides().data(), dt, nb::device::cpu::value, 0));
  return nb::cast(nb::ndarray<>(t.data(), shape.size(), shape.data(), owner, t.strides().data(), dt,
                                nb::device::cpu::value, 0));
}

nb::dict key_dict(const ops::RmsNormKey& k) {
  nb::dict d;
  d["dtype"] = std::string(dtype_name(k.dtype));
  d["hidden"] = k.hidden;
  d["rows_per_tile"] = k.rows_per_tile;
  d["chunk"] = k.chunk;
  d["blocks"] = k.blocks;
  d["residual"] = k.residual;
  d["rstd"] = k.rstd;
  d["resident"] = k.resident;
  return d;
}

/// A key from a dict of its fields; every field is required, so a twin test cannot pass by
/// leaving one at a default the two sides read differently.
ops::RmsNormKey to_key(const nb::dict& d) {
  auto field = [&](const char* name) {
    return key_field(d, name, "an RMSNorm",
                     "dtype, hidden, rows_per_tile, chunk, blocks, residual, rstd, resident");
  };
  ops::RmsNormKey k;
  k.dtype = to_dtype(field("dtype"));
  k.hidden = nb::cast<int64_t>(field("hidden"));
  k.rows_per_tile = nb::cast<int64_t>(field("rows_per_tile"));
  k.chunk = nb::cast<int64_t>(field("chunk"));
  k.blocks = nb::cast<int64_t>(field("blocks"));
  k.residual = nb::cast<bool>(field("residual"));
  k.rstd = nb::cast<bool>(field("rstd"));
  k.resident = nb::cast<bool>(field("resident"));
  // chunk 0: the backward's whole-row schedule (resident, H a multiple of 16).
  const bool rows = k.resident && k.chunk == 0 && k.hidden % 16 == 0;
  if (k.hidden <= 0 || (!rows && (k.chunk <= 0 || k.hidden % k.chunk != 0)) ||
      k.rows_per_tile <= 0 || k.blocks <= 0)
    throw Error(
        fmt::format("an RMSNorm key needs hidden, chunk, rows_per_tile, blocks > 0 and "
                    "chunk dividing hidden (or chunk 0, resident, hidden a multiple of 16), "
                    "got {}",
                    k.str()));
  return k;
}

/// The Python caller's (file, line) as a SourceLoc (unknown when None).
SourceLoc py_caller(nb::handle loc) {
  return to_loc(loc).loc();
}

// ---- SwiGLU -------------------------------------------------------------------------------------

nb::dict swiglu_key_dict(const ops::SwigluKey& k) {
  nb::dict d;
  d["dtype"] = std::string(dtype_name(k.dtype));
  d["hidden"] = k.hidden;
  d["rows_per_tile"] = k.rows_per_tile;
  d["chunk"] = k.chunk;
  d["blocks"] = k.blocks;
  d["rows"] = k.rows;
  d["clamp"] = k.clamp;
  d["weight"] = k.weight;
  return d;
}

/// A SwiGLU key from a dict of all its fields (as to_key for RMSNorm).
ops::SwigluKey to_swiglu_key(const nb::dict& d) {
  auto field = [&](const char* name) {
    return key_field(d, name, "a SwiGLU",
                     "dtype, hidden, rows_per_tile, chunk, blocks, rows, clamp, weight");
  };
  ops::SwigluKey k;
  k.dtype = to_dtype(field("dtype"));
  k.hidden = nb::cast<int64_t>(field("hidden"));
  k.rows_per_tile = nb::cast<int64_t>(field("rows_per_tile"));
  k.chunk = nb::cast<int64_t>(field("chunk"));
  k.blocks = nb::cast<int64_t>(field("blocks"));
  k.rows = nb::cast<bool>(field("rows"));
  k.clamp = nb::cast<bool>(field("clamp"));
  k.weight = nb::cast<bool>(field("weight"));
  if (k.hidden <= 0 || k.chunk <= 0 || k.hidden % k.chunk != 0 || k.rows_per_tile <= 0 ||
      k.blocks <= 0)
    throw Error(
        fmt::format("a SwiGLU key needs hidden, chunk, rows_per_tile, blocks > 0 and chunk "
                    "dividing hidden, got {}",
                    k.str()));
  return k;
}

ops::SwigluConfig swiglu_config(bool rows, std::optional<double> clamp) {
  return {.split = rows ? ops::SwigluSplit::Rows : ops::SwigluSplit::Columns, .clamp = clamp};
}

void bind_swiglu(nb::module_& m) {
  m.def(
      "ops_swiglu",
      [](Device& dev, nb::handle x, nb::handle weight, bool rows, std::optional<double> clamp,
         bool numpy, nb::handle loc) {
        ops::ScopedCaller at(py_caller(loc));
        Tensor xt = wrap_tensor(dev, x), wt;
        if (!weight.is_none()) wt = wrap_tensor(dev, weight);
        Tensor y;
        {
          nb::gil_scoped_release release;
          y = ops::swiglu(xt, wt, swiglu_config(rows, clamp));
        }
        return to_array(y, numpy);
      },
      "device"_a, "x"_a, "weight"_a.none(), "rows"_a, "clamp"_a.none(), "numpy"_a, "loc"_a.none());
  m.def(
      "ops_swiglu_backward",
      [](Device& dev, nb::handle dy, nb::handle x, nb::handle weight, bool rows,
         std::optional<double> clamp, bool numpy, nb::handle loc) {
        ops::ScopedCaller at(py_caller(loc));
        Tensor dyt = wrap_tensor(dev, dy), xt = wrap_tensor(dev, x), wt;
        if (!weight.is_none()) wt = wrap_tensor(dev, weight);
        ops::SwigluGrads g;
        {
          nb::gil_scoped_release release;
          g = ops::swiglu_backward(dyt, xt, wt, swiglu_config(rows, clamp));
        }
        return nb::make_tuple(to_array(g.dx, numpy), to_array(g.dweight, numpy));
      },
      "device"_a, "dy"_a, "x"_a, "weight"_a.none(), "rows"_a, "clamp"_a.none(), "numpy"_a,
      "loc"_a.none());
  m.def(
      "ops_swiglu_key",
      [](nb::handle dtype, int64_t hidden, bool backward, bool rows, bool clamp, bool weight,
         const std::string& target) {
        ops::Checker check(backward ? "swiglu_backward" : "swiglu", tl::Loc::current());
        return swiglu_key_dict(
            ops::swiglu_key(to_dtype(dtype), hidden, backward,
                            swiglu_config(rows, clamp ? 1.0 : std::optional<double>()), weight,
                            get_target(target), check));
      },
      "dtype"_a, "hidden"_a, "backward"_a, "rows"_a, "clamp"_a, "weight"_a, "target"_a = "A2");
  m.def("ops_swiglu_fwd_kernel",
        [](const nb::dict& key) { return ops::swiglu_fwd_kernel(to_swiglu_key(key)); });
  m.def("ops_swiglu_bwd_kernel",
        [](const nb::dict& key) { return ops::swiglu_bwd_kernel(to_swiglu_key(key)); });
  m.def("ops_swiglu_dw_reduce_kernel", [](const nb::dict& key, int64_t partials) {
    if (partials <= 0) throw Error(fmt::format("partials must be > 0, got {}", partials));
    return ops::swiglu_dw_reduce_kernel(to_swiglu_key(key), partials);
  });
}

}  // namespace

void bind_ops_gategemm(nb::module_& m);   // bind_ops_gategemm.cpp
void bind_ops_rope(nb::module_& m);       // bind_ops_rope.cpp
void bind_ops_attention(nb::module_& m);  // bind_ops_attention.cpp
void bind_ops_gate_bwd(nb::module_& m);   // bind_ops_gate_bwd.cpp

void bind_ops(nb::module_& m) {
  m.def("ops_list", [] {
    nb::list out;
    for (const auto& op : ops::all_ops()) {
      nb::dict d;
      d["name"] = op.name;
      d["summary"] = op.summary;
      d["domain"] = op.domain;
      out.append(d);
    }
    return out;
  });
  m.def("ops_kernel_cache_stats", [] {
    auto s = ops::kernel_cache_stats();
    nb::dict d;
    d["hits"] = s.hits;
    d["misses"] = s.misses;
    return d;
  });

  // The GIL is released around each launch (seconds for large inputs; torch may run other
  // threads meanwhile); the ScopedCaller is thread-local and this thread keeps it.
  m.def(
      "ops_rms_norm",
      [](Device& dev, nb::handle x, nb::handle weight, nb::handle residual, double eps,
         bool return_rstd, bool numpy, nb::handle loc) {
        ops::ScopedCaller at(py_caller(loc));
        Tensor xt = wrap_tensor(dev, x), wt = wrap_tensor(dev, weight), rt;
        if (!residual.is_none()) rt = wrap_tensor(dev, residual);
        ops::RmsNormResult r;
        {
          nb::gil_scoped_release release;
          r = ops::rms_norm(xt, wt, rt, {.eps = eps, .return_rstd = return_rstd});
        }
        return nb::make_tuple(to_array(r.y, numpy), to_array(r.residual, numpy),
                              to_array(r.rstd, numpy));
      },
      "device"_a, "x"_a, "weight"_a, "residual"_a.none(), "eps"_a, "return_rstd"_a, "numpy"_a,
      "loc"_a.none());
  m.def(
      "ops_rms_norm_backward",
      [](Device& dev, nb::handle dy, nb::handle x, nb::handle weight, double eps, bool numpy,
         nb::handle loc) {
        ops::ScopedCaller at(py_caller(loc));
        Tensor dyt = wrap_tensor(dev, dy), xt = wrap_tensor(dev, x), wt = wrap_tensor(dev, weight);
        ops::RmsNormGrads g;
        {
          nb::gil_scoped_release release;
          g = ops::rms_norm_backward(dyt, xt, wt, eps);
        }
        return nb::make_tuple(to_array(g.dx, numpy), to_array(g.dw, numpy));
      },
      "device"_a, "dy"_a, "x"_a, "weight"_a, "eps"_a, "numpy"_a, "loc"_a.none());

  // ---- The generators and their launch parameters (the twin test's C++ side) ----------------
  m.def(
      "ops_rms_norm_fwd_key",
      [](nb::handle dtype, int64_t hidden, bool residual, bool rstd, const std::string& target) {
        ops::Checker check("rms_norm", tl::Loc::current());
        return key_dict(ops::rms_norm_fwd_key(to_dtype(dtype), hidden, residual, rstd,
                                              get_target(target), check));
      },
      "dtype"_a, "hidden"_a, "residual"_a, "rstd"_a, "target"_a = "A2");
  m.def(
      "ops_rms_norm_bwd_key",
      [](nb::handle dtype, int64_t hidden, const std::string& target) {
        ops::Checker check("rms_norm_backward", tl::Loc::current());
        return key_dict(ops::rms_norm_bwd_key(to_dtype(dtype), hidden, get_target(target), check));
      },
      "dtype"_a, "hidden"_a, "target"_a = "A2");
  m.def("ops_rms_norm_fwd_kernel",
        [](const nb::dict& key) { return ops::rms_norm_fwd_kernel(to_key(key)); });
  m.def("ops_rms_norm_bwd_kernel",
        [](const nb::dict& key) { return ops::rms_norm_bwd_kernel(to_key(key)); });
  m.def("ops_rms_norm_dw_reduce_kernel", [](const nb::dict& key, int64_t partials) {
    if (partials <= 0) throw Error(fmt::format("partials must be > 0, got {}", partials));
    return ops::rms_norm_dw_reduce_kernel(to_key(key), partials);
  });
  bind_swiglu(m);
  // ---- softmax / log-softmax (include/cann_ops_tilelang/softmax.h) ---------------------------
  // ops_softmax(dev, x, log, numpy, loc) -> y; ops_softmax_backward(dev, dy, y, log, ...) -> dx.
  m.def(
      "ops_softmax",
      [](Device& dev, nb::handle x, bool log, bool numpy, nb::handle loc) {
        ops::ScopedCaller at(py_caller(loc));
        Tensor xt = wrap_tensor(dev, x), y;
        {
          nb::gil_scoped_release release;
          y = log ? ops::log_softmax(xt) : ops::softmax(xt);
        }
        return to_array(y, numpy);
      },
      "device"_a, "x"_a, "log"_a, "numpy"_a, "loc"_a.none());
  m.def(
      "ops_softmax_backward",
      [](Device& dev, nb::handle dy, nb::handle y, bool log, bool numpy, nb::handle loc) {
        ops::ScopedCaller at(py_caller(loc));
        Tensor dyt = wrap_tensor(dev, dy), yt = wrap_tensor(dev, y), dx;
        {
          nb::gil_scoped_release release;
          dx = log ? ops::log_softmax_backward(dyt, yt) : ops::softmax_backward(dyt, yt);
        }
        return to_array(dx, numpy);
      },
      "device"_a, "dy"_a, "y"_a, "log"_a, "numpy"_a, "loc"_a.none());
  // The key crosses as a dict of SoftmaxKey's fields, every one required.
  m.def(
      "ops_softmax_key",
      [](nb::handle dtype, int64_t cols, bool log, bool backward, const std::string& target) {
        auto k = ops::softmax_key(to_dtype(dtype), cols, log, backward, get_target(target));
        nb::dict d;
        d["dtype"] = std::string(dtype_name(k.dtype));
        d["cols"] = k.cols;
        d["rows_per_tile"] = k.rows_per_tile;
        d["chunk"] = k.chunk;
        d["blocks"] = k.blocks;
        d["log"] = k.log;
        d["backward"] = k.backward;
        d["resident"] = k.resident;
        d["streamed"] = k.streamed;
        d["split"] = k.split;
        return d;
      },
      "dtype"_a, "cols"_a, "log"_a, "backward"_a, "target"_a = "A2");
  m.def("ops_softmax_kernel", [](const nb::dict& d) {
    auto field = [&](const char* name) {
      return key_field(d, name, "a softmax",
                       "dtype, cols, rows_per_tile, chunk, blocks, log, backward, resident, "
                       "streamed, split");
    };
    ops::SoftmaxKey k;
    k.dtype = to_dtype(field("dtype"));
    k.cols = nb::cast<int64_t>(field("cols"));
    k.rows_per_tile = nb::cast<int64_t>(field("rows_per_tile"));
    k.chunk = nb::cast<int64_t>(field("chunk"));
    k.blocks = nb::cast<int64_t>(field("blocks"));
    k.log = nb::cast<bool>(field("log"));
    k.backward = nb::cast<bool>(field("backward"));
    k.resident = nb::cast<bool>(field("resident"));
    k.streamed = nb::cast<bool>(field("streamed"));
    k.split = nb::cast<bool>(field("split"));
    if (k.cols <= 0 || k.chunk <= 0 || k.rows_per_tile <= 0 || k.blocks <= 0)
      throw Error(fmt::format("a softmax key needs cols, chunk, rows_per_tile, blocks > 0, got {}",
                              k.str()));
    return ops::softmax_kernel(k);
  });
  // ---- layer_norm (include/cann_ops_tilelang/norm.h) ----------------------------------------
  m.def(
      "ops_layer_norm",
      [](Device& dev, nb::handle x, nb::handle weight, nb::handle bias, double eps,
         bool return_stats, bool numpy, nb::handle loc) {
        ops::ScopedCaller at(py_caller(loc));
        Tensor xt = wrap_tensor(dev, x), wt, bt;
        if (!weight.is_none()) wt = wrap_tensor(dev, weight);
        if (!bias.is_none()) bt = wrap_tensor(dev, bias);
        ops::LayerNormResult r;
        {
          nb::gil_scoped_release release;
          r = ops::layer_norm(xt, wt, bt, {.eps = eps, .return_stats = return_stats});
        }
        return nb::make_tuple(to_array(r.y, numpy), to_array(r.mean, numpy),
                              to_array(r.rstd, numpy));
      },
      "device"_a, "x"_a, "weight"_a.none(), "bias"_a.none(), "eps"_a, "return_stats"_a, "numpy"_a,
      "loc"_a.none());
  bind_ops_gategemm(m);   // topk_gate, gemm: bind_ops_gategemm.cpp
  bind_ops_rope(m);       // rope, rope_backward: bind_ops_rope.cpp
  bind_ops_layernorm(m);  // layer_norm_backward, LayerNorm keys: bind_ops_layernorm.cpp
  bind_ops_attention(m);  // flash_attention: bind_ops_attention.cpp
  bind_ops_gate_bwd(m);   // topk_gate_backward: bind_ops_gate_bwd.cpp
}

nb::handle key_field(const nb::dict& d, const char* name, std::string_view what,
                     std::string_view fields) {
  if (!d.contains(name))
    throw Error(fmt::format("{} key needs the field '{}'{}, got {}", what, name,
                            fields.empty() ? std::string() : fmt::format(" ({})", fields),
                            nb::cast<std::string>(nb::repr(d))));
  return d[name];
}

nb::object ops_to_array(const Tensor& t, bool numpy) {
  return to_array(t, numpy);
}

}  // namespace tl::python
