// The one registry of tl-ascend's environment variables (tl/env.h, docs/compiler.md).
#include <cstdlib>

#include "tl/env.h"
#include "tl/error.h"

namespace tl {

const std::vector<EnvVar>& env_registry() {
  static const std::vector<EnvVar> vars = {
      {"TL_PRINT_AFTER_ALL", "0", "1: print the IR after every pass that changed it (stderr)"},
      {"TL_PRINT_AFTER", "", "comma-separated pass names: print the IR after these passes only"},
      {"TL_TIME_PASSES", "0", "1: print the wall time of every pass in microseconds (stderr)"},
      {"TL_VERIFY_EACH", "0",
       "1: check every pass's output against its invariant (a violation is an internal error)"},
      {"TL_CACHE", "1", "0: disable the JIT cache (memory and disk)"},
      {"TL_CACHE_DIR", "", "directory of the on-disk JIT cache (empty: memory cache only)"},
      {"TL_CACHE_DEBUG", "", "1: print why a JIT disk artifact is rejected (stderr)"},
      {"TL_HOST_MEMORY", "",
       "bytes of host memory device GM and launches may use (suffix K/M/G/T; empty: physical "
       "memory)"},
      {"TL_MAX_STEPS", "",
       "instruction budget of a launch: interpreter steps per core and block (empty: 2^30; 0 or "
       "none: no budget)"},
      {"TL_CHECK_STALE", "",
       "1: run the stale-data checker on every launch, 0: on none (empty: with check_hazards)"},
      {"TL_LARGER_INPUTS", "",
       "prefix: a contiguous input tensor larger than its declared shape is read as its first "
       "elements, as on the chip, with a remark (stderr); empty: an error (python -m "
       "tl_ascend.run sets prefix)"},
      {"TL_NPU_PLAIN_PATHS", "0",
       "1: the virtual NPU's op semantics take their plain element-by-element paths instead of "
       "the batched / SIMD ones (same bits; for comparing them, docs/virtual_npu.md)"},
      {"TL_GM_POISON", "",
       "1: GM a library op allocates for an output its kernel writes whole starts as 0xFF bytes "
       "(NaN) instead of unspecified, 0: never; empty: with TL_CHECK_STALE=1"},
      {"TL_TRACE_WINDOW", "",
       "trace events per core a streamed timing-only launch hands the timing model ahead of "
       "what it consumed (empty: 4096)"},
      {"TL_HAZARD_RETIRE", "",
       "0: a hazard-checked launch keeps its whole trace and checks it after the run; empty or "
       "1: checks each block while the launch runs and frees its events"},
      {"TL_TEST_LEVEL", "0", "tests: 1 runs the exhaustive numeric sweeps"},
      {"TL_ARITH_ITERS", "100000",
       "tests: number of random expressions of the arith property tests"},
      {"TL_SOURCE_DIR", "", "tests: repository root, set by ctest, for reading examples"},
  };
  return vars;
}

std::string env_value(std::string_view name) {
  bool known = false;
  for (const auto& v : env_registry()) known |= v.name == name;
  TL_ASSERT(known, "environment variable {} is read but not in env_registry()", name);
  const char* s = std::getenv(std::string(name).c_str());
  return s ? s : "";
}

}  // namespace tl
