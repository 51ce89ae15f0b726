// Backends: what turns a lowered kernel into something that runs. The compiler proper
// (tl::lower, tl/pass.h) knows no backend; a backend takes the PrimFunc the pipeline produced
// for a Target and builds its artifact. The virtual NPU is one backend (its artifact is the
// executable npu::Program, tl/npu/npu.h); an AscendC emitter will be another.
//
// tl::compile(backend, f, target, options) runs the pipeline the options ask for, then the
// backend's build, through the JIT cache (tl/jit.h). The cache serves every backend: its key
// names the backend, and its disk level stores the IR the backend was given as text, from
// which a later process asks the backend to build the artifact again.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "tl/ir.h"
#include "tl/pass_registry.h"
#include "tl/target.h"

namespace tl {

/// What a backend builds; each backend derives its own. Immutable once built and shared by
/// every compile that hits the same cache entry, possibly from several threads.
class Artifact {
 public:
  virtual ~Artifact() = default;
  PrimFunc func;                   // the function the backend built it from
  const Target* target = nullptr;  // the target it was built for; outlives the artifact
};

/// A code generator for one kind of device.
class Backend {
 public:
  virtual ~Backend() = default;
  /// A short name, unique among backends and stable across releases ("npu"): it is part of
  /// the JIT cache key, so two backends must never share one.
  virtual std::string_view name() const = 0;
  /// Builds the artifact of `f` for `target`. `f` is the pipeline's output (with
  /// CompileOptions::lower = false, the kernel as written). Kernels the backend cannot build
  /// are tl::Error. Must depend on (f, target) only: the disk cache keeps `f` as text and a
  /// later process calls build on the parsed text. `target` outlives the artifact.
  virtual std::shared_ptr<const Artifact> build(const PrimFunc& f, const Target& target) const = 0;
};

// DeveloperOptions (the developer-mode switches) live with the pass registry
// (tl/pass_registry.h): every switch is a row there.

/// How tl::compile prepares the IR a backend receives, and the JIT cache:
///
///   verify  lower   the backend receives
///   true    true    lower(f): the whole pipeline (default)
///   false   true    lower(f) without its verify pass (the other passes trust the input)
///   true    false   f as written, after the verifier accepted it
///   false   false   f as written, unchecked (for tests of the backends' own checks)
///
/// Both are part of the cache key.
struct CompileOptions {
  bool verify = true;  // run the verifier (compile errors list every violation)
  bool lower = true;   // run the pass pipeline (tl::lower)
  /// JIT cache (tl/jit.h): look the kernel up in memory and on disk before compiling it.
  /// Env TL_CACHE=0 disables the cache regardless.
  bool cache = true;
  bool disk_cache = true;  // false: memory level only
  std::string cache_dir{};  // disk directory; "" = env TL_CACHE_DIR, else the user cache dir
  DeveloperOptions dev{};   // developer-mode automations (with lower = true)
};

/// Compiles `f` for `target` with `backend`: prepares the IR as `opt` says (user errors, such
/// as verifier violations, are tl::Error), then returns the backend's artifact, from the JIT
/// cache when it has one. The NPU's convenience form is tl::compile(f, target, opt) in
/// tl/npu/npu.h.
std::shared_ptr<const Artifact> compile(const Backend& backend, const PrimFunc& f,
                                        const Target& target = default_target(), const CompileOptions& opt = {});

}  // namespace tl
