// tl_ascend._core: the converters from Python values to IR values (declared in bindings.h): the
// script parser's source locations, dtype and pipe names, expressions (Python ints, floats and
// bools as immediates, kernel symbols through `_tl_expr`), tile arguments and op attributes. A
// value of the wrong kind is a tl_ascend.Error or TypeError naming what was expected.

#include "bindings.h"

namespace tl::python {

PyLoc to_loc(nb::handle h) {
  if (h.is_none()) return {};
  auto t = nb::cast<nb::tuple>(h);
  PyLoc l;
  l.file = nb::cast<std::string>(t[0]);
  l.line = nb::cast<int>(t[1]);
  if (t.size() > 2) l.via = nb::cast<std::string>(t[2]);
  return l;
}

// ---- Conversions ------------------------------------------------------------------------------

DType to_dtype(nb::handle h) {
  std::string s = nb::cast<std::string>(nb::str(h));
  if (s == "float") s = "float32";  // TileLang's accum_dtype="float"
  if (s == "int") s = "int32";      // TileLang's (TVM's) "int" is int32
  auto t = parse_dtype(s);
  if (!t)
    throw Error(
        fmt::format("unknown dtype '{}': expected one of float16, bfloat16, float32, int8, int16, "
                    "int32, int64, uint8, uint16, uint32, uint64, bool, float8_e4m3, float8_e5m2",
                    s));
  return *t;
}

Pipe to_pipe(nb::handle h) {
  std::string s = nb::cast<std::string>(nb::str(h));
  if (auto p = parse_pipe(s)) return *p;
  throw Error(
      fmt::format("unknown pipe '{}': expected one of S, V, M, MTE1, MTE2, MTE3, FIX, ALL", s));
}

std::string py_type_name(nb::handle h) {
  return nb::cast<std::string>(nb::str(h.type().attr("__name__")));
}

Expr to_expr(nb::handle h) {
  if (nb::isinstance<Expr>(h)) return nb::cast<Expr>(h);
  if (nb::hasattr(h, "_tl_expr")) return to_expr(h.attr("_tl_expr")());
  if (nb::isinstance<nb::bool_>(h)) return Expr(nb::cast<bool>(h));
  if (nb::isinstance<nb::int_>(h)) {
    int64_t v;
    if (!nb::try_cast<int64_t>(h, v))
      throw Error(
          fmt::format("the integer {} does not fit int64", nb::cast<std::string>(nb::str(h))));
    if (v >= INT32_MIN && v <= INT32_MAX) return Expr(static_cast<int>(v));
    return Expr(v);
  }
  if (nb::isinstance<nb::float_>(h)) return Expr(nb::cast<double>(h));
  throw nb::type_error(
      fmt::format("expected an expression (an int, float, bool or a kernel symbol), got {} '{}'",
                  py_type_name(h), nb::cast<std::string>(nb::repr(h)).substr(0, 80))
          .c_str());
}

std::vector<Expr> to_exprs(nb::handle seq) {
  std::vector<Expr> out;
  for (nb::handle h : seq) out.push_back(to_expr(h));
  return out;
}

TileArg to_tile_arg(nb::handle h) {
  if (nb::isinstance<Buffer>(h)) return TileArg(nb::cast<Buffer>(h));
  if (nb::isinstance<BufferRegion>(h)) return TileArg(nb::cast<BufferRegion>(h));
  if (nb::hasattr(h, "_tl_region")) return to_tile_arg(h.attr("_tl_region")());
  return TileArg(to_expr(h));
}

AttrValue to_attr(nb::handle h) {
  if (nb::isinstance<nb::bool_>(h)) return nb::cast<bool>(h);
  if (nb::isinstance<nb::int_>(h)) return nb::cast<int64_t>(h);
  if (nb::isinstance<nb::float_>(h)) return nb::cast<double>(h);
  if (nb::isinstance<nb::str>(h)) return nb::cast<std::string>(h);
  throw nb::type_error(
      fmt::format("an op attribute must be a bool, int, float or str, got {}", py_type_name(h))
          .c_str());
}

}  // namespace tl::python
