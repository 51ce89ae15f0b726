// The AscendC backend: turns a lowered kernel (what tl::lower gives the virtual NPU) into one
// self-contained AscendC C++ file -- the `__global__ __aicore__` entry over GM_ADDR arguments,
// the on-chip buffers at the addresses memory planning chose, one AscendC call a line with the
// source line it came from, and a host launch stub in the form a CANN project uses. It is the
// way out to a real card (docs/ascendc.md): a user builds the file with the vendor's toolchain;
// the CPU model of the AscendC API compiles the same file with g++.
//
// The backend never emits something it cannot stand behind: a construct without an AscendC form
// (an op, an operand layout, a scalar expression) is a tl::Error naming the construct and its
// source line. docs/ascendc.md lists what is emitted and what is not yet.
#pragma once

#include <memory>
#include <string>

#include "tl/backend.h"

namespace tl {

namespace ascendc {

struct EmitOptions {
  bool host_stub = true;  // the host launch function, behind `#ifndef TL_ASCENDC_NO_HOST_STUB`
  bool locations = true;  // `// file:line` comments from the source
};

/// The AscendC source of `lowered` for `target`: one C++ file. `lowered` must be an expert kernel
/// (a developer kernel after tl::lower); anything the emitter cannot express is a tl::Error
/// naming the construct and its source line.
std::string emit(const PrimFunc& lowered, const Target& target, const EmitOptions& opt = {});

/// What the AscendC backend builds: the source text.
class Source : public Artifact {
 public:
  std::string text;
};

}  // namespace ascendc

/// The AscendC backend (name "ascendc"); its artifacts are ascendc::Source.
const Backend& ascendc_backend();

/// Lowers `f` as tl::compile does (the same pipeline and options) and returns its AscendC text.
std::string ascendc_source(const PrimFunc& f, const Target& target = default_target(),
                           const CompileOptions& opt = {});

}  // namespace tl
