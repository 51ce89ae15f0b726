// Internal to the extension tl_ascend._core (python/src/), not a library header: the converters
// from Python values to IR values (dtypes, pipes, expressions, tile arguments, attributes, the
// script parser's source locations) that every binding file uses, the `at` wrapper that records
// a statement's Python file:line, and the bind_* function of each file: bind_ir.cpp (the IR
// handles and expression helpers), bind_builder.cpp (the tl::T builder calls, the op registry,
// the C++ kernels by name), bind_launch.cpp (compile and launch on the virtual NPU) and
// bind_ops.cpp (the cann_ops_tilelang operator library).
// module.cpp's top comment describes the extension.
#pragma once

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

// ---- Source locations -----------------------------------------------------------------------

/// (file, line, via) from the script parser: where the statement being built was written.
struct PyLoc {
  std::string file;
  int line = 0;
  std::string via;
  SourceLoc loc() const { return SourceLoc{file, line, via}; }
};
PyLoc to_loc(nb::handle h);

// ---- Conversions (convert.cpp) ----------------------------------------------------------------

DType to_dtype(nb::handle h);
Pipe to_pipe(nb::handle h);
/// The Python type name of `h`, for messages.
std::string py_type_name(nb::handle h);
/// A Python value as an expression: Expr itself, anything with `_tl_expr()` (the parser's
/// buffer elements), bool, int (an int32 immediate when it fits, as a C++ `int` literal is;
/// int64 otherwise), float (a float32 immediate, as a C++ double literal in the DSL is).
Expr to_expr(nb::handle h);
std::vector<Expr> to_exprs(nb::handle seq);
TileArg to_tile_arg(nb::handle h);
AttrValue to_attr(nb::handle h);
/// One tensor argument, (array supporting DLPack, dtype to read its bytes as or None, name),
/// viewed in `dev`'s GM without a copy (bind_launch.cpp).
Tensor wrap_tensor(Device& dev, nb::handle item);

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

// ---- The bindings, one function per file, called in this order by NB_MODULE (module.cpp) ----

void bind_ir(nb::module_& m);
void bind_builder(nb::module_& m);
void bind_launch(nb::module_& m);
void bind_ops(nb::module_& m);

// ---- cann_ops_tilelang's bindings (bind_ops.cpp, bind_ops_gategemm.cpp) --------------------

/// A field of a kernel key that crosses from Python as a dict. Every field is required, so a twin
/// test cannot pass by leaving one at a default the two sides read differently: a missing one is
/// "<what> key needs the field '<name>' (<fields>), got <the dict>".
nb::handle key_field(const nb::dict& d, const char* name, std::string_view what,
                     std::string_view fields = {});
/// An op's output tensor as a numpy array (numpy) or a torch tensor.
nb::object ops_to_array(const Tensor& t, bool numpy);
/// LayerNorm backward and the LayerNorm generators and keys (bind_ops_layernorm.cpp).
void bind_ops_layernorm(nb::module_& m);
void bind_ascendc(nb::module_& m);  // emit_ascendc: bind_ascendc.cpp

}  // namespace tl::python
