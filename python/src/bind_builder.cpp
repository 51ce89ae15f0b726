// tl_ascend._core: the tl::T builder calls the script parser makes (tensors, kernels, scopes,
// allocations, loops, stores, tile ops, synchronisation), each taking the Python file:line of the
// statement it builds (through `at`, bindings.h); the op registry, from which the Python `T`
// module generates a wrapper per tile primitive; and the C++ kernels registered by name (the
// Python examples' twins).

#include "bindings.h"

namespace tl::python {

void bind_builder(nb::module_& m) {
  // ---- The builder ------------------------------------------------------------------------------
  m.def("Tensor", [](std::string name, nb::handle shape, nb::handle dtype, nb::handle strides,
                     nb::handle loc) {
    return at(loc, [&] {
      return T::Tensor(std::move(name), to_exprs(shape), to_dtype(dtype), to_exprs(strides));
    });
  });
  m.def("Scalar", [](std::string name, nb::handle dtype) {
    return T::Scalar(std::move(name), to_dtype(dtype));
  });
  m.def(
      "dynamic",
      [](std::string name, nb::handle dtype) {
        return T::dynamic(std::move(name), to_dtype(dtype));
      },
      "name"_a, "dtype"_a = "int32");
  m.def("prim_func", [](std::string name, nb::list params, nb::callable body, nb::handle loc) {
    std::vector<ParamRef> ps;
    for (nb::handle p : params) {
      if (nb::isinstance<Buffer>(p))
        ps.emplace_back(nb::cast<Buffer>(p));
      else
        ps.emplace_back(nb::cast<Var>(p));
    }
    return at(loc, [&] { return T::prim_func(std::move(name), std::move(ps), [&] { body(); }); });
  });
  m.def("Kernel", [](nb::handle n, nb::callable body, nb::handle loc) {
    at(loc, [&] {
      T::Kernel(to_expr(n), [&](Expr cid, Expr vid) { body(Var(cid.ptr()), Var(vid.ptr())); });
    });
  });
  m.def("KernelDev", [](nb::handle n, int threads, nb::callable body, nb::handle loc) {
    at(loc, [&] {
      T::Kernel(to_expr(n), [&](Expr cid) { body(Var(cid.ptr())); }, {.threads = threads});
    });
  });
  m.def("Scope", [](const std::string& core, nb::callable body, nb::handle loc) {
    Core c;
    if (core == "C" || core == "Cube" || core == "cube")
      c = Core::Cube;
    else if (core == "V" || core == "Vector" || core == "vector")
      c = Core::Vector;
    else
      throw Error(
          to_loc(loc).loc(),
          fmt::format("T.Scope: expected \"C\" (the AIC) or \"V\" (the AIVs), got \"{}\"", core));
    at(loc, [&] { T::Scope(c, [&] { body(); }); });
  });
  m.def("alloc", [](const std::string& scope, std::string name, nb::handle shape, nb::handle dtype,
                    int64_t address, nb::handle loc) {
    return at(loc, [&]() -> Buffer {
      auto s = to_exprs(shape);
      DType t = to_dtype(dtype);
      if (scope == "L1") return T::alloc_L1(std::move(name), std::move(s), t, address);
      if (scope == "L0A") return T::alloc_L0A(std::move(name), std::move(s), t, address);
      if (scope == "L0B") return T::alloc_L0B(std::move(name), std::move(s), t, address);
      if (scope == "L0C") return T::alloc_L0C(std::move(name), std::move(s), t, address);
      if (scope == "UB") return T::alloc_ub(std::move(name), std::move(s), t, address);
      if (scope == "shared") return T::alloc_shared(std::move(name), std::move(s), t);
      if (scope == "fragment") return T::alloc_fragment(std::move(name), std::move(s), t);
      if (scope == "workspace") return T::alloc_workspace(std::move(name), std::move(s), t);
      throw InternalError(__FILE__, __LINE__, "scope", "unknown alloc scope " + scope);
    });
  });
  m.def(
      "alloc_var",
      [](std::string name, nb::handle dtype, nb::handle init, nb::handle loc) {
        return at(loc, [&] {
          return T::alloc_var(std::move(name), to_dtype(dtype),
                              init.is_none() ? std::nullopt : std::optional(to_expr(init)));
        });
      },
      "name"_a, "dtype"_a, "init"_a.none(), "loc"_a.none());
  m.def("annotate_address", [](nb::list pins, nb::handle loc) {
    std::vector<std::pair<Buffer, int64_t>> ps;
    for (nb::handle p : pins) {
      auto t = nb::cast<nb::tuple>(p);
      ps.emplace_back(nb::cast<Buffer>(t[0]), nb::cast<int64_t>(t[1]));
    }
    at(loc, [&] { T::annotate_address(ps); });
  });
  m.def("annotate_l2_cache", [](nb::list modes, nb::handle loc) {
    std::vector<std::pair<Buffer, L2CacheMode>> ms;
    for (nb::handle p : modes) {
      auto t = nb::cast<nb::tuple>(p);
      auto mode = parse_l2_cache(nb::cast<std::string>(t[1]));
      if (!mode) throw InternalError(__FILE__, __LINE__, "mode", "unchecked L2 cache mode");
      ms.emplace_back(nb::cast<Buffer>(t[0]), *mode);
    }
    at(loc, [&] { T::annotate_l2_cache(ms); });
  });
  m.def("view", [](std::string name, const Buffer& base, nb::handle dtype, nb::handle loc) {
    return at(loc, [&] { return T::view(std::move(name), base, to_dtype(dtype)); });
  });
  m.def("assign", [](const Buffer& var, nb::handle value, nb::handle loc) {
    at(loc, [&] { T::assign(var, to_expr(value)); });
  });
  m.def("store", [](const Buffer& buf, nb::handle indices, nb::handle value, nb::handle loc) {
    at(loc, [&] { T::store(buf, to_exprs(indices), to_expr(value)); });
  });
  m.def("let", [](std::string name, nb::handle value, nb::handle loc) {
    return at(loc, [&] { return T::let(std::move(name), to_expr(value)); });
  });
  m.def("fresh_name", [](const std::string& base) { return lang::fresh_name(base); });
  m.def("building", [] { return lang::building(); });
  m.def("loop", [](const std::string& kind, std::string name, nb::handle min, nb::handle extent,
                   int stages, int skew, nb::callable body, nb::handle loc) {
    at(loc, [&] {
      Expr lo = to_expr(min), ext = to_expr(extent);
      auto b = [&](Expr v) { body(Var(v.ptr())); };
      if (kind == "serial") {
        T::serial(std::move(name), lo, ext, b);
      } else if (kind == "unroll")
        T::unroll(std::move(name), ext, b);
      else if (kind == "parallel")
        T::Parallel(std::move(name), ext, b);
      else if (kind == "pipelined")
        T::Pipelined(std::move(name), ext, stages, T::PipelineOptions{.skew = skew}, b);
      else
        throw InternalError(__FILE__, __LINE__, "kind", "unknown loop kind " + kind);
    });
  });
  m.def("Persistent", [](nb::handle domain, nb::handle workers, nb::handle worker,
                         nb::callable body, nb::handle loc) {
    at(loc, [&] {
      T::Persistent(to_exprs(domain), to_expr(workers), to_expr(worker),
                    [&](std::vector<Expr> coords) {
                      nb::list l;
                      for (auto& c : coords) l.append(c);
                      body(l);
                    });
    });
  });
  m.def(
      "If",
      [](nb::handle cond, nb::callable then_body, nb::handle else_body, nb::handle loc) {
        at(loc, [&] {
          std::function<void()> e;
          if (!else_body.is_none()) e = [&] { nb::borrow<nb::callable>(else_body)(); };
          T::If(
              to_expr(cond), [&] { then_body(); }, e);
        });
      },
      "cond"_a, "then_body"_a, "else_body"_a.none(), "loc"_a.none());
  m.def("emit", [](const std::string& op, nb::handle args, nb::handle attrs, nb::handle loc) {
    std::vector<TileArg> a;
    for (nb::handle h : args) a.push_back(to_tile_arg(h));
    std::vector<Attr> at_;
    for (auto [k, v] : nb::cast<nb::dict>(attrs))
      at_.push_back({nb::cast<std::string>(k), to_attr(v)});
    at(loc, [&] { T::emit(op, std::move(a), std::move(at_)); });
  });
  m.def("set_flag", [](nb::handle src, nb::handle dst, nb::handle id, nb::handle loc) {
    at(loc, [&] { T::set_flag(to_pipe(src), to_pipe(dst), to_expr(id)); });
  });
  m.def("wait_flag", [](nb::handle src, nb::handle dst, nb::handle id, nb::handle loc) {
    at(loc, [&] { T::wait_flag(to_pipe(src), to_pipe(dst), to_expr(id)); });
  });
  m.def("pipe_barrier",
        [](nb::handle pipe, nb::handle loc) { at(loc, [&] { T::pipe_barrier(to_pipe(pipe)); }); });
  m.def("barrier_all", [](nb::handle loc) { at(loc, [&] { T::barrier_all(); }); });
  m.def("set_cross_flag", [](nb::handle pipe, nb::handle id, int mode, nb::handle loc) {
    at(loc, [&] { T::set_cross_flag(to_pipe(pipe), to_expr(id), mode); });
  });
  m.def("wait_cross_flag",
        [](nb::handle id, nb::handle loc) { at(loc, [&] { T::wait_cross_flag(to_expr(id)); }); });
  m.def("sync_all", [](nb::handle loc) { at(loc, [&] { T::sync_all(); }); });
  m.def("printf", [](std::string fmt_, nb::handle args, nb::handle loc) {
    at(loc, [&] { T::printf(std::move(fmt_), to_exprs(args)); });
  });
  m.def(
      "user_error",
      [](nb::handle loc, const std::string& msg) { throw Error(to_loc(loc).loc(), msg); },
      "loc"_a.none(), "msg"_a);
  // For the test that an internal error (a tl-ascend bug) reaches Python as an exception.
  m.def("_internal_error_probe",
        [] { TL_ASSERT(false, "probe: {}", "raised on purpose by a test"); });

  // ---- The op registry --------------------------------------------------------------------------
  m.def("ops", [] {
    nb::list out;
    for (const OpDef* op : all_ops()) {
      nb::dict d;
      d["name"] = op->name;
      d["summary"] = op->summary;
      d["developer_only"] = *op->developer_only;
      d["elementwise"] = op->elementwise();  // element i of each tile operand pairs with dst's i
      nb::list operands;
      for (const auto& o : op->operands) {
        nb::dict od;
        od["name"] = o.name;
        od["kind"] = o.kind == OperandKind::Tile     ? "tile"
                     : o.kind == OperandKind::Scalar ? "scalar"
                                                     : "tile_or_scalar";
        od["optional"] = o.optional;
        od["variadic"] = o.variadic;
        operands.append(od);
      }
      d["operands"] = operands;
      nb::list attrs;
      for (const auto& a : op->attrs) {
        nb::dict ad;
        ad["name"] = a.name;
        std::visit([&](const auto& v) { ad["default"] = v; }, a.default_value);
        ad["choices"] = a.choices;
        attrs.append(ad);
      }
      d["attrs"] = attrs;
      out.append(d);
    }
    return out;
  });

  // ---- C++ kernels by name (the Python examples' twins) -----------------------------------------
  m.def("registered_kernels", [] {
    std::vector<std::string> names;
    for (const auto* k : registered_kernels()) names.push_back(k->name);
    return names;
  });
  m.def(
      "build_registered",
      [](const std::string& name, const std::map<std::string, std::string>& overrides) {
        return build_kernel(find_kernel(name), overrides);
      },
      "name"_a, "overrides"_a = std::map<std::string, std::string>{});
}

}  // namespace tl::python
