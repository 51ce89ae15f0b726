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
//
// The bindings are split by what they bind: bindings.h (the shared converters), convert.cpp,
// bind_ir.cpp, bind_builder.cpp, bind_launch.cpp and bind_ops.cpp (the operator library
// cann_ops_tilelang, for the Python package of the same name).

#include "bindings.h"

NB_MODULE(_core, m) {
  using namespace tl;
  using namespace tl::python;
  m.doc() = "tl-ascend's C++ core: IR, builder, compiler and the virtual NPU";
  // project(VERSION) in CMakeLists.txt, the one version number; tl_ascend.__version__ is this.
  // (Named `version`, not `__version__`, which nanobind's stubgen leaves out of _core.pyi.)
  m.attr("version") = TL_VERSION;

  nb::exception<Error>(m, "Error", PyExc_RuntimeError);
  nb::exception<InternalError>(m, "InternalError", PyExc_RuntimeError);

  bind_ir(m);
  bind_builder(m);
  bind_launch(m);
  bind_ops(m);
  bind_ascendc(m);  // the AscendC backend: bind_ascendc.cpp
}
