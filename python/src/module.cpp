// tl_ascend._core: the nanobind extension behind the Python front end. It is deliberately thin:
// the IR handles (Expr, Var, Buffer, regions, PrimFunc), the tl::T builder calls (each taking
// the Python file:line the script parser is at, recorded through tl::ScopedSourceLoc), the op
// registry (so the Python `T` module can generate a wrapper per tile primitive), and compile /
// launch on the virtual NPU with tensors handed over by DLPack without a copy. Everything a
// user writes in Python reaches the C++ builder through here, so a Python kernel and its C++
// twin build the same IR. The script parser itself (python/tl_ascend/language/parser.py) and
// the jit decorator are Python.
//
// Errors: tl::Error becomes tl_ascend.Error (a user error, with the Python file:line when the
// statement has one), tl::InternalError becomes tl_ascend.InternalError; a Python exception
// raised in a body callback passes through the C++ builder unchanged.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "tl/error.h"
#include "tl/ir.h"
#include "tl/ir_ops.h"
#include "tl/jit.h"
#include "tl/kernel_registry.h"
#include "tl/lang.h"
#include "tl/npu/npu.h"
#include "tl/npu/timing.h"
#include "tl/npu/trace.h"
#include "tl/op.h"
#include "tl/parser.h"
#include "tl/printer.h"
#include "tl/runtime.h"
#include "tl/target.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace tl::python {
namespace {

// ---- Source locations -----------------------------------------------------------------------

/// (file, line, via) from the script parser: where the statement being built was written.
struct PyLoc {
  std::string file;
  int line = 0;
  std::string via;
  SourceLoc loc() const { return SourceLoc{file, line, via}; }
};

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

/// The Python type name of `h`, for messages.
std::string py_type_name(nb::handle h) {
  return nb::cast<std::string>(nb::str(h.type().attr("__name__")));
}

/// A Python value as an expression: Expr itself, anything with `_tl_expr()` (the parser's
/// buffer elements), bool, int (an int32 immediate when it fits, as a C++ `int` literal is;
/// int64 otherwise), float (a float32 immediate, as a C++ double literal in the DSL is).
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

// ---- Launch arguments -------------------------------------------------------------------------

DType dlpack_dtype(const nb::dlpack::dtype& d, std::string_view what) {
  using C = nb::dlpack::dtype_code;
  auto code = static_cast<C>(d.code);
  if (d.lanes == 1) {
    if (code == C::Int) switch (d.bits) {
        case 8:
          return DType::Int8;
        case 16:
          return DType::Int16;
        case 32:
          return DType::Int32;
        case 64:
          return DType::Int64;
      }
    if (code == C::UInt) switch (d.bits) {
        case 8:
          return DType::UInt8;
        case 16:
          return DType::UInt16;
        case 32:
          return DType::UInt32;
        case 64:
          return DType::UInt64;
      }
    if (code == C::Float) switch (d.bits) {
        case 16:
          return DType::Float16;
        case 32:
          return DType::Float32;
        case 64:
          return DType::Float64;
      }
    if (code == C::Bfloat && d.bits == 16) return DType::BFloat16;
    if (code == C::Bool && d.bits == 8) return DType::Bool;
  }
  throw Error(fmt::format("{}: DLPack dtype (code {}, {} bits, {} lanes) has no tl-ascend dtype",
                          what, d.code, d.bits, d.lanes));
}

/// One tensor argument: (array supporting DLPack, dtype to read its bytes as or None, name).
Tensor wrap_tensor(Device& dev, nb::handle item) {
  auto t = nb::cast<nb::tuple>(item);
  std::string what = nb::cast<std::string>(t[2]);
  auto arr = nb::cast<nb::ndarray<nb::device::cpu>>(t[0]);
  DType dt = t[1].is_none() ? dlpack_dtype(arr.dtype(), what) : to_dtype(t[1]);
  std::vector<int64_t> shape, strides;
  for (size_t d = 0; d < arr.ndim(); ++d) {
    shape.push_back(static_cast<int64_t>(arr.shape(d)));
    strides.push_back(arr.stride(d));
  }
  return Tensor::wrap(dev, arr.data(), std::move(shape), std::move(strides), dt, what);
}

Arg to_arg(Device& dev, nb::handle h) {
  if (nb::isinstance<nb::tuple>(h)) return Arg(wrap_tensor(dev, h));
  if (nb::isinstance<nb::bool_>(h)) return Arg(int64_t{nb::cast<bool>(h)});
  if (nb::isinstance<nb::int_>(h)) return Arg(nb::cast<int64_t>(h));
  if (nb::isinstance<nb::float_>(h)) return Arg(nb::cast<double>(h));
  throw nb::type_error(
      fmt::format("a kernel argument must be a tensor, an int or a float, got {}", py_type_name(h))
          .c_str());
}

nb::dict profile_dict(const npu::Profile& p) {
  nb::dict d;
  d["kernel"] = p.kernel;
  d["target"] = p.target;
  d["clock_ghz"] = p.clock_ghz;
  d["total_cycles"] = p.total_cycles;
  d["total_us"] = p.total_us;
  d["launch_overhead_us"] = p.launch_overhead_us;
  d["task_us"] = p.task_us();
  d["num_blocks"] = p.num_blocks;
  d["physical_blocks"] = p.physical_blocks;
  d["events"] = p.events;
  d["gm_bytes"] = p.gm_bytes;
  d["gm_hbm_bytes"] = p.gm_hbm_bytes;
  nb::dict busy;
  for (auto [kind, name] :
       {std::pair{CoreKind::Cube, "cube"}, std::pair{CoreKind::Vector, "vector"}}) {
    nb::dict per_pipe;
    for (Pipe pipe : {Pipe::S, Pipe::V, Pipe::M, Pipe::MTE1, Pipe::MTE2, Pipe::MTE3, Pipe::FIX})
      per_pipe[std::string(pipe_name(pipe)).c_str()] = p.busy_ratio(pipe, kind);
    busy[name] = per_pipe;
  }
  d["busy"] = busy;
  nb::list cores;
  for (const auto& c : p.cores) {
    nb::dict cd;
    cd["name"] = c.name;
    cd["block"] = c.block;
    cd["start"] = c.start;
    cd["end"] = c.end;
    cd["instructions"] = c.instructions;
    nb::dict cb;
    for (int i = 0; i < kNumPipes; ++i)
      cb[std::string(pipe_name(static_cast<Pipe>(i))).c_str()] = c.busy[i];
    cd["busy_cycles"] = cb;
    cores.append(cd);
  }
  d["cores"] = cores;
  nb::list effects;
  for (const auto& e : p.time_order_effects) effects.append(e);
  d["time_order_effects"] = effects;
  std::ostringstream table;
  npu::print_profile(p, table);
  d["table"] = table.str();
  return d;
}

/// DeveloperOptions from {"pipeline_loops": False, ...}: a user error naming an unknown key.
DeveloperOptions dev_options(const std::map<std::string, bool>& m) {
  DeveloperOptions o;
  for (const auto& [k, v] : m) {
    bool found = false;
    for (const auto& s : switch_registry())
      if (k == s.name) {
        o.*s.field = v;
        found = true;
      }
    if (!found) {
      std::string known;
      for (const auto& s : switch_registry())
        known += (known.empty() ? "" : ", ") + std::string(s.name);
      throw Error(fmt::format("unknown developer option '{}': expected one of {}", k, known));
    }
  }
  o.validate();
  return o;
}

/// Runs `f` with the builder recording `loc` (when known) for every statement it makes.
/// A user error raised without a location (a bad dtype or pipe name) gets `loc`.
template <typename F>
auto at(nb::handle loc, F&& f) {
  PyLoc l = to_loc(loc);
  if (l.line <= 0) return f();
  ScopedSourceLoc guard(l.loc());
  try {
    return f();
  } catch (const Error& e) {
    if (e.loc().known()) throw;
    throw Error(l.loc(), e.what());
  }
}

/// The main Python thread (set at import): the only one whose PyErr_CheckSignals runs handlers.
unsigned long g_main_thread = 0;

/// Runs a launch on a worker thread with the GIL released while this thread polls Python's
/// signal handlers every 50 ms: Ctrl-C (SIGINT's handler raising KeyboardInterrupt, or any
/// handler raising) cancels the launch (LaunchOptions::cancel) and the exception propagates
/// once the worker stopped, within about 0.1 s. Before, the launch ran on this thread with the
/// GIL released and Python only saw the signal when it returned: a runaway loop could not be
/// stopped. Off the main thread PyErr_CheckSignals does nothing: the launch runs there directly.
void launch_interruptibly(const CompiledKernel& k, Device& dev, const std::vector<Arg>& args,
                          LaunchOptions o) {
  if (PyThread_get_thread_ident() != g_main_thread) {
    // No signal handler can run on this thread: the worker would cost a thread for nothing.
    nb::gil_scoped_release release;
    k.launch(dev, args, o);
    return;
  }
  std::atomic<bool> cancel{false};
  o.cancel = &cancel;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::exception_ptr error;
  bool interrupted = false;
  {
    nb::gil_scoped_release release;
    std::thread worker([&] {
      try {
        k.launch(dev, args, o);
      } catch (...) {
        error = std::current_exception();
      }
      std::lock_guard<std::mutex> g(mu);
      done = true;
      cv.notify_all();
    });
    std::unique_lock<std::mutex> lk(mu);
    while (!cv.wait_for(lk, std::chrono::milliseconds(50), [&] { return done; })) {
      if (interrupted) continue;
      lk.unlock();
      {
        nb::gil_scoped_acquire gil;
        if (PyErr_CheckSignals() != 0) {
          // The handler's exception stays set on this thread until the launch has stopped.
          interrupted = true;
          cancel.store(true, std::memory_order_relaxed);
        }
      }
      lk.lock();
    }
    lk.unlock();
    worker.join();
  }
  if (interrupted) throw nb::python_error();  // the KeyboardInterrupt, not LaunchCancelled
  if (error) std::rethrow_exception(error);
}

}  // namespace
}  // namespace tl::python

NB_MODULE(_core, m) {
  using namespace tl;
  using namespace tl::python;
  m.doc() = "tl-ascend's C++ core: IR, builder, compiler and the virtual NPU";
  // project(VERSION) in CMakeLists.txt, the one version number; tl_ascend.__version__ is this.
  // (Named `version`, not `__version__`, which nanobind's stubgen leaves out of _core.pyi.)
  m.attr("version") = TL_VERSION;
  g_main_thread = nb::cast<unsigned long>(
      nb::module_::import_("threading").attr("main_thread")().attr("ident"));

  nb::exception<Error>(m, "Error", PyExc_RuntimeError);
  nb::exception<InternalError>(m, "InternalError", PyExc_RuntimeError);

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

  // ---- Expression helpers (TileLang's T.max, T.exp, T.cast, ...)
  // ----------------------------------
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
    int arity = intrinsic_arity(name);
    if (arity < 0) throw Error(fmt::format("unknown scalar intrinsic '{}'", name));
    if (static_cast<int>(a.size()) != arity)
      throw Error(fmt::format("T.{} takes {} argument(s), got {}", name, arity, a.size()));
    const DType t =
        a[0].dtype();  // before `a` is moved from (the order of arguments is unspecified)
    return CallNode::make(t, name, std::move(a));
  });

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
                   int stages, nb::callable body, nb::handle loc) {
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
        T::Pipelined(std::move(name), ext, stages, b);
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

  // ---- The op registry
  // ---------------------------------------------------------------------------
  m.def("ops", [] {
    nb::list out;
    for (const OpDef* op : all_ops()) {
      nb::dict d;
      d["name"] = op->name;
      d["summary"] = op->summary;
      d["developer_only"] = op->developer_only;
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

  // ---- C++ kernels by name (the Python examples' twins)
  // ------------------------------------------
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

  // ---- Compile and launch
  // -------------------------------------------------------------------------
  m.def("cache_stats", [] {
    jit::CacheStats c = jit::cache_stats();
    nb::dict d;
    d["memory_hits"] = c.memory_hits;
    d["disk_hits"] = c.disk_hits;
    d["misses"] = c.misses;
    d["disk_writes"] = c.disk_writes;
    d["disk_rejects"] = c.disk_rejects;
    return d;
  });
  // tilelang.cache.clear_cache() empties both levels: the memory map here, the disk files in
  // Python (tl_ascend/cache.py), which needs the directory the C++ cache resolves to.
  m.def("clear_jit_cache", [] { jit::clear_cache(); });
  m.def("jit_cache_dir", [] { return jit::cache_dir(); });
  m.def("dtype_bits", [](nb::handle dtype) { return dtype_bits(to_dtype(dtype)); });
  m.def("target_names", [] { return target_names(); });
  m.def("default_target", [] { return default_target().name; });

  nb::class_<Device>(m, "Device")
      .def(
          "__init__",
          [](Device* d, const std::string& target) { new (d) Device(get_target(target)); },
          "target"_a = "A2")
      .def_prop_ro("target", [](const Device& d) { return d.target().name; });

  nb::class_<CompiledKernel>(m, "CompiledKernel")
      .def_prop_ro("lowered", [](const CompiledKernel& k) { return k.func(); })
      .def_prop_ro("target", [](const CompiledKernel& k) { return k.target().name; });

  m.def(
      "compile",
      [](const PrimFunc& f, const std::string& target, bool verify, bool lower, bool cache,
         const std::map<std::string, bool>& dev) {
        CompileOptions o;
        o.verify = verify;
        o.lower = lower;
        o.cache = cache;
        o.dev = dev_options(dev);
        return compile(f, get_target(target), o);
      },
      "func"_a, "target"_a = "A2", "verify"_a = true, "lower"_a = true, "cache"_a = true,
      "dev"_a = std::map<std::string, bool>{});

  m.def(
      "launch",
      [](const CompiledKernel& k, Device& dev, nb::list args, int threads, bool check_hazards,
         bool timed, bool poison, int64_t max_steps, std::string trace_path,
         std::string timeline_path, std::optional<bool> check_stale) -> nb::object {
        std::vector<Arg> a;
        for (nb::handle h : args) a.push_back(to_arg(dev, h));
        LaunchOptions o;
        o.threads = threads;
        o.check_hazards = check_hazards;
        o.poison = poison;
        o.max_steps = max_steps;
        o.check_stale = check_stale;  // None: TL_CHECK_STALE, else with check_hazards
        npu::Profile prof;
        if (timed) o.profile = &prof;
        std::ostringstream out;
        o.out = &out;
        launch_interruptibly(k, dev, a, o);
        if (std::string text = out.str(); !text.empty())
          nb::module_::import_("sys").attr("stdout").attr("write")(text);
        if (!timed) return nb::none();
        if (!trace_path.empty()) {
          std::ofstream f(trace_path);
          if (!f) throw Error(fmt::format("cannot write the trace to '{}'", trace_path));
          npu::write_chrome_trace(prof, f);
        }
        if (!timeline_path.empty()) {
          std::ofstream f(timeline_path);
          if (!f) throw Error(fmt::format("cannot write the timeline to '{}'", timeline_path));
          npu::write_html_timeline(prof, f);
        }
        return profile_dict(prof);
      },
      "kernel"_a, "device"_a, "args"_a, "threads"_a = 0, "check_hazards"_a = false,
      "timed"_a = false, "poison"_a = false, "max_steps"_a = 0, "trace_path"_a = "",
      "timeline_path"_a = "", "check_stale"_a = nb::none());
}
