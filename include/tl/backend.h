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

/// Developer-mode automations (docs/developer_mode.md, "Options"): each is on by default and
/// can be switched off, to see what it does or to do its job by hand. One that needs another is
/// rejected when that one is off (tilelang-ascend issue 1825: options that silently depended
/// on each other). Expert kernels are unaffected. Part of the JIT cache key.
struct DeveloperOptions {
  bool infer_scopes = true;       // place shared/fragment tiles in L1/L0A/L0B/L0C/UB
  bool lower_cube_ops = true;     // gemm -> L1 -> L0A/L0B loads + mma; needs infer_scopes
  bool mask_tails = true;         // the stale part of clipped tiles kept out of results; needs infer_scopes
  bool legalize_copies = true;    // tails, padded rows, partial L1 panels; needs infer_scopes
  bool split_cube_vector = true;  // Cube and Vector scopes; needs infer_scopes, lower_cube_ops
  bool vectorize = true;          // Parallel element loops -> vector ops; needs split_cube_vector
  bool insert_syncs = true;       // flags and barriers; needs split_cube_vector
  /// T.Pipelined loops overlap neighbouring iterations (slots, skew; pipeline_loops); off: they
  /// run as serial loops.
  bool pipeline_loops = true;
  /// A threads = 2 kernel's two AIVs take half the vector work each (split_aiv); off: AIV 0
  /// does it all.
  bool split_aiv = true;
  /// insert_syncs drops every sync the others already imply; off: it keeps all it planned.
  bool minimise_syncs = true;
  /// Two neighbouring flags of a pipe pair become one, as an expert writes them (merge_flags):
  /// fewer syncs, but the earlier destination waits for the later source, which costs cycles
  /// where that source is on the critical path (docs/developer_mode.md, "Merged flags and
  /// guarded credits"). Off by default: on no developer example does it save a cycle, and it
  /// costs gemm_dev 1.4 % and matmul_add_dev 4.0 %. Needs minimise_syncs.
  bool merge_flags = false;
  /// A loop that cannot be vectorised runs serially on the scalar unit, with a remark (off: an
  /// error naming the reason). Needs vectorize.
  bool scalar_fallback = false;
  /// Element loops may use the vector unit's exp / log / sigmoid / rsqrt, which can differ from
  /// the correctly rounded scalar result in the last bit (a remark each). Needs vectorize.
  bool allow_inexact_math = false;

  /// A tl::Error naming both options when an enabled one needs a disabled one.
  void validate() const;
  /// "infer_scopes=1,lower_cube_ops=1,...": every option, for the cache key and messages.
  std::string fingerprint() const;
};

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
