// The JIT cache behind tl::compile (tl/backend.h; the NPU's form in tl/npu/npu.h).
//
// tl::compile(backend, f, target, options) looks the kernel up before compiling it. The key is
//   compiler version (kCompilerVersion) + the build id (build_id(): a hash of the library's
//   sources, so any change to the compiler invalidates the disk entries of older builds)
//   + a fingerprint of the op registry + the backend's name
//   + the target (name, chip, core counts, memory capacities and alignments)
//   + the options that change the result (CompileOptions::verify and ::lower)
//   + structural_hash(f)
//   + a fingerprint of f's source locations (the function's, the parameters', each
//     statement's and declared buffer's file:line)
// so variable and buffer names do not matter: the same kernel built again with other variable
// names hits the entry of the first one (and its artifact reports the first one's names in
// errors). Source locations do matter: an artifact's run-time errors name the lines of the
// function it was built from, so the same kernel written at other lines (or parsed from text
// that lost its `# @file:line` comments) gets an entry of its own, in memory and on disk, and
// its errors name its own lines. The kernel's own name is part of structural_hash.
//
// Two levels, shared by every backend:
//  * memory: a thread-safe map key -> shared Artifact. Compiling the very PrimFunc object an
//    entry was made from again is a pointer lookup; an equal function built anew costs one
//    structural hash and one structural comparison with the cached function;
//  * disk: one file per key in cache_dir(): a one-line JSON header (format, version, key,
//    backend, target, kernel name, hash of the IR) followed by the IR the backend was given
//    (the LOWERED IR unless CompileOptions::lower = false) as text (tl::print). A disk hit
//    parses the text and has the backend build its artifact from it, without running the
//    pass pipeline again. Files are written to a unique temporary name in the same directory
//    and renamed into place, so concurrent processes never see a partial file. An entry whose
//    version or key differs, that does not parse, whose parsed function does not hash to
//    the recorded value, or that fails the verifier (the planned spec for lowered IR, the
//    expert spec with lower = false: a cache file is untrusted input, and a forged address
//    must never reach the backend) is ignored (counted in disk_rejects) and overwritten.
//
// Configuration:
//  * env TL_CACHE=0 disables both levels (as does CompileOptions::cache = false);
//  * CompileOptions::disk_cache = false keeps the memory level only;
//  * the directory is CompileOptions::cache_dir, else env TL_CACHE_DIR, else
//    $XDG_CACHE_HOME/tl-ascend, else $HOME/.cache/tl-ascend (no disk level without any).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "tl/backend.h"
#include "tl/ir.h"
#include "tl/target.h"

namespace tl {
/// The build id of this library: a SHA-256 (64 hex digits) over the contents and paths of its
/// sources (src/ and include/), computed at build time. The same sources give the same id, in
/// any build directory and on any machine; any edit gives another.
std::string_view build_id();
}  // namespace tl

namespace tl::jit {

/// Bump when the artifact format changes: old disk entries are then ignored. (Changes to the
/// compiler's sources need no bump: they change build_id().)
inline constexpr std::string_view kCompilerVersion = "tl-ascend-jit-2";

struct CacheStats {
  uint64_t memory_hits = 0;   // compile() answered from the in-memory map
  uint64_t disk_hits = 0;     // answered by parsing a disk artifact
  uint64_t misses = 0;        // compiled (pipeline and backend)
  uint64_t disk_writes = 0;   // artifacts written
  uint64_t disk_rejects = 0;  // artifacts present but ignored (version/key mismatch, corrupt)
  uint64_t disk_errors = 0;   // artifacts that could not be written (I/O errors; never fatal)
};

/// Counters since start (or the last reset_cache_stats).
CacheStats cache_stats();
void reset_cache_stats();
/// Number of kernels in the in-memory cache.
size_t cache_entries();
/// Empties the in-memory cache (the disk cache stays; a later compile may hit it).
void clear_cache();

/// The cache key of `f` compiled for `target` by `backend` with `opt` (a printable string).
std::string cache_key(const Backend& backend, const PrimFunc& f, const Target& target,
                      const CompileOptions& opt = {});
/// The disk directory `opt` resolves to; "" when the disk level is disabled or unresolvable.
std::string cache_dir(const CompileOptions& opt = {});
/// The artifact file of `f` ("" when the disk level is disabled).
std::string cache_file(const Backend& backend, const PrimFunc& f, const Target& target,
                       const CompileOptions& opt = {});

/// The IR a backend receives for `f` under `opt` (the table on CompileOptions): the pipeline's
/// output, or `f` itself, verified or not. User errors are tl::Error.
PrimFunc prepare(const PrimFunc& f, const Target& target, const CompileOptions& opt = {});
/// Prepares and builds without consulting or filling the cache (what a miss runs).
std::shared_ptr<const Artifact> compile_uncached(const Backend& backend, const PrimFunc& f,
                                                 const Target& target,
                                                 const CompileOptions& opt = {});

}  // namespace tl::jit
