// A kernel loaded from the JIT disk cache emits the same AscendC text as the same kernel
// compiled fresh. The disk artifact is the lowered IR printed and parsed again; the parser makes
// one Var per binding site, while a fresh compile may bind one Var object at several sites
// (splitting a developer kernel into cube and vector code copies `bx = cid % 4` into both core
// scopes). The emitter used to name variables by object, so the reload printed `bx_1` where the
// fresh compile printed `bx`: the same inputs gave different source text depending on whether
// the cache was warm. It now names them by the C++ block they are bound in (docs/ascendc.md).
// The reload also keeps what made each buffer (BufferNode::origin, which the text does not
// print): `tlc report` and KernelReport read it, and lost it on a warm cache.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "jit/jit_test_util.h"
#include "tl/ascendc.h"
#include "tl/error.h"
#include "tl/ir_functor.h"
#include "tl/jit.h"
#include "tl/kernel_registry.h"
#include "tl/npu/npu.h"

namespace tl {
namespace {

using jittest::TempDir;

/// The AscendC text of `k`, or the emitter's error where a kernel has no AscendC form yet.
std::string emitted(const CompiledKernel& k) {
  try {
    return ascendc::emit(k.func(), default_target());
  } catch (const Error& e) {
    return std::string("error: ") + e.what();
  }
}

/// BufferNode::origin of every allocation, in text order.
std::vector<std::string> origins(const CompiledKernel& k) {
  std::vector<std::string> out;
  pre_order_visit(k.func()->body, [&](const Stmt& s) {
    if (auto* a = s.as<AllocateNode>()) out.push_back(a->buffer->origin);
  });
  return out;
}

/// Compiles the registered kernel `name` fresh into a disk cache at `d`, then again as a new
/// process would (memory level cleared, so the artifact is parsed), and compares the AscendC.
void expect_same_source_after_reload(const std::string& name,
                                     const std::map<std::string, std::string>& set = {}) {
  SCOPED_TRACE(name);
  TempDir d;
  CompileOptions o;
  o.cache_dir = d.str();
  PrimFunc f = build_kernel(find_kernel(name), set);
  jit::clear_cache();
  jit::reset_cache_stats();
  CompiledKernel first = compile(f, default_target(), o);
  const std::string fresh = emitted(first);
  jit::clear_cache();
  CompiledKernel again = compile(f, default_target(), o);
  const std::string reloaded = emitted(again);
  EXPECT_EQ(jit::cache_stats().disk_hits, 1u);
  EXPECT_EQ(fresh, reloaded);
  EXPECT_EQ(origins(first), origins(again));
  jit::clear_cache();
}

TEST(DiskReloadEmit, DeveloperFlashAttentionNamesItsBlockIndicesAlike) {
  // Before the fix the reload declared `bx_1`, `by_1`, `bz_1` in vector code.
  expect_same_source_after_reload("flash_attention_dev");
}

TEST(DiskReloadEmit, EveryRegisteredKernelAtItsDefaults) {
  for (const KernelEntry* e : registered_kernels()) expect_same_source_after_reload(e->name);
}

}  // namespace
}  // namespace tl
