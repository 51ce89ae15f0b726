// tl_ascend._core: the IR handles (Expr with its Python operators, Var, Buffer, BufferRegion,
// PrimFunc), the developer-mode switches, the IR parser and printer, and the expression helpers
// behind TileLang's T.max, T.exp, T.cast, ... The handles wrap the C++ IR objects themselves: an
// expression built in Python is the one the C++ builder receives.

#include "bindings.h"
#include "tl/arith.h"
#include "tl/ir_functor.h"
#include "tl/pass.h"

namespace tl::python {
namespace {

// ---- Binary operators on expressions --------------------------------------------------------

template <typename F>
void def_binary(nb::class_<Expr>& c, const char* name, const char* rname, F f) {
  c.def(
      name, [f](nb::handle a, nb::handle b) { return f(to_expr(a), to_expr(b)); },
      nb::is_operator());
  if (rname)
    c.def(
        rname, [f](nb::handle a, nb::handle b) { return f(to_expr(b), to_expr(a)); },
        nb::is_operator());
}

}  // namespace

void bind_ir(nb::module_& m) {
  // ---- IR handles ---------------------------------------------------------------------------
  auto expr = nb::class_<Expr>(m, "Expr");
  expr.def_prop_ro("dtype", [](const Expr& e) { return std::string(dtype_name(e.dtype())); })
      .def("__repr__", [](const Expr& e) { return print(e); })
      .def("__str__", [](const Expr& e) { return print(e); })
      .def("is_const", [](const Expr& e) { return e.as<IntImmNode>() || e.as<FloatImmNode>(); })
      .def("const_value",
           [](const Expr& e) -> nb::object {
             if (auto* i = e.as<IntImmNode>()) return nb::int_(i->value);
             if (auto* f = e.as<FloatImmNode>()) return nb::float_(f->value);
             return nb::none();
           })
      // The value of an expression of named sizes (an output dimension `N // 2` of a dynamic
      // N): the jit launcher sizes allocated tensors with it. None if a variable has no value.
      .def("evaluate",
           [](const Expr& e, const std::map<std::string, int64_t>& values) -> nb::object {
             struct Vars : IRVisitor {
               const std::map<std::string, int64_t>* values;
               arith::VarMap map;
               void visit_(const VarNode* v) override {
                 auto it = values->find(v->name);
                 if (it != values->end()) map[v] = arith::make_int(v->dtype, it->second);
               }
             } vars;
             vars.values = &values;
             vars.visit(e);
             Expr r = simplify(arith::substitute(e, vars.map));
             if (auto* i = r.as<IntImmNode>()) return nb::int_(i->value);
             return nb::none();
           })
      .def("__bool__",
           [](const Expr& e) -> bool {
             throw nb::type_error(
                 fmt::format(
                     "the kernel expression '{}' has no Python truth value: it is known only "
                     "when the kernel runs (use it in an `if` of the kernel body, T.if_then_else "
                     "or T.select)",
                     print(e))
                     .c_str());
           })
      .def("__neg__", [](const Expr& a) { return -a; })
      .def("__invert__", [](const Expr& a) { return !a; })
      .def("astype", [](const Expr& a, nb::handle t) { return cast(to_dtype(t), a); });
  def_binary(expr, "__add__", "__radd__", [](Expr a, Expr b) { return a + b; });
  def_binary(expr, "__sub__", "__rsub__", [](Expr a, Expr b) { return a - b; });
  def_binary(expr, "__mul__", "__rmul__", [](Expr a, Expr b) { return a * b; });
  def_binary(expr, "__truediv__", "__rtruediv__", [](Expr a, Expr b) { return a / b; });
  def_binary(expr, "__floordiv__", "__rfloordiv__", [](Expr a, Expr b) {
    if (is_float(a.dtype()) || is_float(b.dtype()))
      throw Error(fmt::format("'//' needs integer operands, got {} and {} (use '/')",
                              dtype_name(a.dtype()), dtype_name(b.dtype())));
    return a / b;
  });
  def_binary(expr, "__mod__", "__rmod__", [](Expr a, Expr b) { return a % b; });
  def_binary(expr, "__lt__", nullptr, [](Expr a, Expr b) { return a < b; });
  def_binary(expr, "__le__", nullptr, [](Expr a, Expr b) { return a <= b; });
  def_binary(expr, "__gt__", nullptr, [](Expr a, Expr b) { return a > b; });
  def_binary(expr, "__ge__", nullptr, [](Expr a, Expr b) { return a >= b; });
  def_binary(expr, "__eq__", nullptr, [](Expr a, Expr b) { return a == b; });
  def_binary(expr, "__ne__", nullptr, [](Expr a, Expr b) { return a != b; });
  def_binary(expr, "__and__", "__rand__",
             [](Expr a, Expr b) { return is_bool(a.dtype()) ? (a && b) : bitwise_and(a, b); });
  def_binary(expr, "__or__", "__ror__",
             [](Expr a, Expr b) { return is_bool(a.dtype()) ? (a || b) : bitwise_or(a, b); });
  def_binary(expr, "__xor__", "__rxor__", [](Expr a, Expr b) { return bitwise_xor(a, b); });
  def_binary(expr, "__lshift__", "__rlshift__", [](Expr a, Expr b) { return shift_left(a, b); });
  def_binary(expr, "__rshift__", "__rrshift__", [](Expr a, Expr b) { return shift_right(a, b); });
  expr.attr("__hash__") = nb::none();

  nb::class_<Var, Expr>(m, "Var")
      .def(
          "__init__",
          [](Var* v, std::string name, nb::handle dtype) {
            new (v) Var(std::move(name), to_dtype(dtype));
          },
          "name"_a, "dtype"_a = "int32")
      .def_prop_ro("name", [](const Var& v) { return v.name(); });

  nb::class_<BufferRegion>(m, "BufferRegion")
      .def_prop_ro("buffer", [](const BufferRegion& r) { return r.buffer; })
      .def_prop_ro("extents", [](const BufferRegion& r) { return region_extents(r); })
      .def_prop_ro("starts",
                   [](const BufferRegion& r) {
                     std::vector<Expr> s;
                     for (const auto& x : r.ranges) s.push_back(x.min);
                     return s;
                   })
      .def("__repr__", [](const BufferRegion& r) { return print(r); });

  nb::class_<Buffer>(m, "Buffer")
      .def_prop_ro("name", [](const Buffer& b) { return b->name; })
      .def_prop_ro("dtype", [](const Buffer& b) { return std::string(dtype_name(b->dtype)); })
      .def_prop_ro("scope", [](const Buffer& b) { return std::string(scope_name(b->scope)); })
      .def_prop_ro("shape", [](const Buffer& b) { return b->shape; })
      .def_prop_ro("ndim", [](const Buffer& b) { return b->ndim(); })
      .def("load", [](const Buffer& b, nb::handle idx) { return b.load(to_exprs(idx)); })
      .def("region",
           [](const Buffer& b, nb::handle starts, nb::handle extents) {
             return b.region(to_exprs(starts), to_exprs(extents));
           })
      .def("at", [](const Buffer& b, nb::handle starts) { return b.at(to_exprs(starts)); })
      .def("__repr__", [](const Buffer& b) {
        return fmt::format("<{} buffer '{}' {}>", scope_name(b->scope), b->name,
                           dtype_name(b->dtype));
      });

  nb::class_<PrimFunc>(m, "PrimFunc")
      .def_prop_ro("name", [](const PrimFunc& f) { return f->name; })
      .def_prop_ro("developer",
                   [](const PrimFunc& f) {
                     const KernelNode* k = kernel_of(f);
                     return k && k->developer();
                   })
      .def(
          "script",
          [](const PrimFunc& f, bool locations) {
            return print(f, PrintOptions{.locations = locations});
          },
          "locations"_a = true)
      .def("params",
           [](const PrimFunc& f) {
             nb::list out;
             for (const auto& p : f->params) {
               nb::dict d;
               d["name"] = p.name();
               d["is_tensor"] = p.is_tensor();
               if (p.is_tensor()) {
                 d["dtype"] = std::string(dtype_name(p.tensor->dtype));
                 nb::list shape;
                 for (const auto& s : p.tensor->shape) {
                   if (auto* i = s.as<IntImmNode>())
                     shape.append(nb::int_(i->value));
                   else if (s.as<VarNode>())
                     shape.append(nb::cast(Var(s.ptr())));
                   else
                     shape.append(nb::cast(s));
                 }
                 d["shape"] = shape;
               } else {
                 d["dtype"] = std::string(dtype_name(p.scalar.dtype()));
               }
               out.append(d);
             }
             return out;
           })
      .def("dynamics",
           [](const PrimFunc& f) {
             std::vector<std::string> names;
             for (const auto& d : f->dynamics) names.push_back(d.name());
             return names;
           })
      .def("__repr__", [](const PrimFunc& f) { return fmt::format("<PrimFunc '{}'>", f->name); });

  // The developer-mode switches (tl/pass_registry.h): tl_ascend.PassConfigKey's TL_DEV_* names
  // and the alias keys of pass_configs come from these rows.
  m.def("developer_switches", [] {
    nb::list out;
    for (const auto& s : switch_registry()) {
      nb::dict d;
      d["name"] = std::string(s.name);
      nb::list keys;
      for (auto k : s.keys) keys.append(std::string(k));
      d["keys"] = keys;
      nb::list needs;
      for (auto n : s.needs) needs.append(std::string(n));
      d["needs"] = needs;
      d["default"] = s.default_on();
      d["help"] = std::string(s.help);
      out.append(d);
    }
    return out;
  });
  m.def(
      "parse",
      [](std::string_view text, std::string_view filename) { return parse(text, filename); },
      "text"_a, "filename"_a = "<ir>");
  m.def("print_expr", [](nb::handle e) { return print(to_expr(e)); });
  m.def("as_expr", [](nb::handle e) { return to_expr(e); });
  // a - b when it is the same integer for every value of the variables ((m + 1) * 64 - m * 64
  // is 64), else None: the parser gives a slice this constant extent (issue 29).
  m.def("constant_difference", [](nb::handle a, nb::handle b) {
    return arith::constant_difference(to_expr(a), to_expr(b));
  });

  // ---- Expression helpers (TileLang's T.max, T.exp, T.cast, ...) --------------------------------
  m.def("min", [](nb::handle a, nb::handle b) { return tl::min(to_expr(a), to_expr(b)); });
  m.def("max", [](nb::handle a, nb::handle b) { return tl::max(to_expr(a), to_expr(b)); });
  m.def("ceildiv", [](nb::handle a, nb::handle b) { return tl::ceildiv(to_expr(a), to_expr(b)); });
  m.def("floordiv", [](nb::handle a, nb::handle b) { return floordiv(to_expr(a), to_expr(b)); });
  m.def("floormod", [](nb::handle a, nb::handle b) { return floormod(to_expr(a), to_expr(b)); });
  m.def("truncdiv", [](nb::handle a, nb::handle b) { return truncdiv(to_expr(a), to_expr(b)); });
  m.def("truncmod", [](nb::handle a, nb::handle b) { return truncmod(to_expr(a), to_expr(b)); });
  m.def("select", [](nb::handle c, nb::handle t, nb::handle f) {
    return select(to_expr(c), to_expr(t), to_expr(f));
  });
  m.def("logical_and", [](nb::handle a, nb::handle b) { return to_expr(a) && to_expr(b); });
  m.def("logical_or", [](nb::handle a, nb::handle b) { return to_expr(a) || to_expr(b); });
  m.def("logical_not", [](nb::handle a) { return !to_expr(a); });
  m.def("cast", [](nb::handle t, nb::handle v) { return cast(to_dtype(t), to_expr(v)); });
  m.def("imm", [](nb::handle t, double v) { return imm(to_dtype(t), v); });
  m.def("int_imm", [](nb::handle t, int64_t v) { return IntImmNode::make(to_dtype(t), v); });
  m.def("inf", [](nb::handle t) { return inf(to_dtype(t)); });
  m.def("neg_inf", [](nb::handle t) { return neg_inf(to_dtype(t)); });
  m.def("intrinsic", [](const std::string& name, nb::handle args) {
    auto a = to_exprs(args);
    const IntrinsicDef* def = find_intrinsic(name);
    if (!def) throw Error(fmt::format("unknown scalar intrinsic '{}'", name));
    const int arity = def->arity;
    if (static_cast<int>(a.size()) != arity)
      throw Error(fmt::format("T.{} takes {} argument(s), got {}", name, arity, a.size()));
    const DType t =
        a[0].dtype();  // before `a` is moved from (the order of arguments is unspecified)
    return CallNode::make(t, name, std::move(a));
  });
  // The scalar intrinsics (include/tl/intrinsics.def), from which tl_ascend.language makes
  // T.exp, T.pow, ...: the Python side keeps no list of its own.
  m.def("intrinsics", [] {
    nb::list out;
    for (const IntrinsicDef& def : intrinsics()) {
      nb::dict d;
      d["name"] = std::string(def.name);
      d["arity"] = def.arity;
      d["float_only"] = def.dtypes == IntrinsicDTypes::Float;
      const OpDef* vop = op_for_intrinsic(def.id);
      d["vector_op"] = vop ? nb::cast(vop->name) : nb::none();
      d["exact"] = def.exact == IntrinsicExact::Always     ? "always"
                   : def.exact == IntrinsicExact::BFloat16 ? "bfloat16"
                                                           : "never";
      out.append(d);
    }
    return out;
  });
}

}  // namespace tl::python
