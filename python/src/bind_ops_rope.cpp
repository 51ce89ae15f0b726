// tl_ascend._core: cann_ops_tilelang's RoPE (include/cann_ops_tilelang/rope.h), for the Python
// package (python/cann_ops_tilelang/_ops.py) and the twin test. As bind_ops.cpp does for RMSNorm:
// the public functions take launch's tensor tuples, set the Python caller's file:line with a
// ScopedCaller and release the GIL around the launch; the key crosses as a dict of its fields,
// every field required.
#include "bindings.h"
#include "cann_ops_tilelang/rope.h"

namespace tl::python {

namespace {

namespace ops = cann_ops_tilelang;

nb::dict rope_key_dict(const ops::RopeKey& k) {
  nb::dict d;
  d["dtype"] = std::string(dtype_name(k.dtype));
  d["heads"] = k.heads;
  d["head_dim"] = k.head_dim;
  d["rot_dim"] = k.rot_dim;
  d["rot_offset"] = k.rot_offset;
  d["interleaved"] = k.interleaved;
  d["backward"] = k.backward;
  d["positions"] = k.positions;
  d["tokens_per_tile"] = k.tokens_per_tile;
  d["heads_per_tile"] = k.heads_per_tile;
  d["blocks"] = k.blocks;
  return d;
}

ops::RopeKey rope_key(const nb::dict& d) {
  const char* w = "a RoPE";
  ops::RopeKey k;
  k.dtype = to_dtype(key_field(d, "dtype", w));
  k.heads = nb::cast<int64_t>(key_field(d, "heads", w));
  k.head_dim = nb::cast<int64_t>(key_field(d, "head_dim", w));
  k.rot_dim = nb::cast<int64_t>(key_field(d, "rot_dim", w));
  k.rot_offset = nb::cast<int64_t>(key_field(d, "rot_offset", w));
  k.interleaved = nb::cast<bool>(key_field(d, "interleaved", w));
  k.backward = nb::cast<bool>(key_field(d, "backward", w));
  k.positions = nb::cast<bool>(key_field(d, "positions", w));
  k.tokens_per_tile = nb::cast<int64_t>(key_field(d, "tokens_per_tile", w));
  k.heads_per_tile = nb::cast<int64_t>(key_field(d, "heads_per_tile", w));
  k.blocks = nb::cast<int64_t>(key_field(d, "blocks", w));
  if (k.heads <= 0 || k.head_dim <= 0 || k.rot_dim <= 0 || k.rot_dim % 2 != 0 ||
      k.rot_dim > k.head_dim || k.rot_offset < 0 || k.rot_offset + k.rot_dim > k.head_dim ||
      k.tokens_per_tile <= 0 || k.heads_per_tile <= 0 || k.heads % k.heads_per_tile != 0 ||
      k.blocks <= 0)
    throw Error(
        fmt::format("a RoPE key needs sizes > 0, an even rot_dim with rot_offset + "
                    "rot_dim <= head_dim and heads_per_tile dividing heads, got {}",
                    k.str()));
  return k;
}

ops::RopeConfig rope_config(const std::string& style, bool rotate_last) {
  if (style != "half" && style != "interleaved")
    throw Error(fmt::format("style must be 'half' or 'interleaved', got '{}'", style));
  return {.style = style == "half" ? ops::RopeStyle::Half : ops::RopeStyle::Interleaved,
          .rotate_last = rotate_last};
}

}  // namespace

void bind_ops_rope(nb::module_& m) {
  m.def(
      "ops_rope",
      [](Device& dev, nb::handle x, nb::handle cos, nb::handle sin, nb::handle positions,
         const std::string& style, bool rotate_last, bool backward, bool numpy, nb::handle loc) {
        ops::ScopedCaller at(to_loc(loc).loc());
        const auto cfg = rope_config(style, rotate_last);
        Tensor xt = wrap_tensor(dev, x), ct = wrap_tensor(dev, cos), st = wrap_tensor(dev, sin), pt;
        if (!positions.is_none()) pt = wrap_tensor(dev, positions);
        Tensor y;
        {
          nb::gil_scoped_release release;
          y = backward ? ops::rope_backward(xt, ct, st, pt, cfg) : ops::rope(xt, ct, st, pt, cfg);
        }
        return ops_to_array(y, numpy);
      },
      "device"_a, "x"_a, "cos"_a, "sin"_a, "positions"_a.none(), "style"_a, "rotate_last"_a,
      "backward"_a, "numpy"_a, "loc"_a.none());
  m.def(
      "ops_rope_key",
      [](nb::handle dtype, int64_t heads, int64_t head_dim, int64_t rot_dim,
         const std::string& style, bool rotate_last, bool backward, bool positions,
         const std::string& target) {
        ops::Checker check(backward ? "rope_backward" : "rope", tl::Loc::current());
        return rope_key_dict(ops::rope_key(to_dtype(dtype), heads, head_dim, rot_dim,
                                           rope_config(style, rotate_last), backward, positions,
                                           get_target(target), check));
      },
      "dtype"_a, "heads"_a, "head_dim"_a, "rot_dim"_a, "style"_a = "half", "rotate_last"_a = true,
      "backward"_a = false, "positions"_a = false, "target"_a = "A2");
  m.def("ops_rope_kernel", [](const nb::dict& key) { return ops::rope_kernel(rope_key(key)); });
}

}  // namespace tl::python
