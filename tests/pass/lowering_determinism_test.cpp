// The compiler's output must not depend on where the host heap put the IR's nodes. Passes that
// keep maps or sets keyed by node pointers must not let that order reach the IR (declaration
// order, names, planned addresses): heap addresses differ between runs and builds, so the same
// kernel would get other UB addresses and so other bank conflicts and cycles from run to run.
// Found in pipeline_loops' skew point: the softmax statistics given slots for the skew were
// declared in pointer order, so the library FlashAttention's `mlast_*`, `rs_*`, `alpha_*` moved
// between runs of one binary. Each case here lowers a kernel several times, building it afresh
// after scattering the heap differently, and compares the printed IR.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cann_ops_tilelang/attention.h"
#include "tl/kernel_registry.h"
#include "tl/pass.h"
#include "tl/printer.h"
#include "tl/target.h"

namespace tl {
namespace {

/// Leaves holes of random sizes all over the heap (freed every other block of a seeded mix),
/// so the next allocations land in an order that depends on `seed`.
std::vector<std::unique_ptr<char[]>> scatter_heap(unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::unique_ptr<char[]>> keep;
  for (int i = 0; i < 4000; ++i) {
    keep.emplace_back(new char[16 + rng() % 512]);
    if (rng() % 2) keep.back().reset();
  }
  return keep;
}

template <typename Build>
void expect_same_ir_whatever_the_heap(Build build) {
  const Target& t = default_target();
  std::string first;
  for (unsigned seed = 0; seed < 3; ++seed) {
    auto holes = scatter_heap(seed);
    const std::string ir = print(lower(build(), t));
    if (seed == 0) {
      first = ir;
    } else {
      ASSERT_EQ(ir, first) << "seed " << seed;
    }
  }
}

TEST(LoweringDeterminism, LibraryFlashAttentionWhateverTheHeap) {
  for (bool causal : {false, true})
    for (int64_t seq : {0}) {
      SCOPED_TRACE(testing::Message() << "causal " << causal << " seq " << seq);
      auto key = cann_ops_tilelang::flash_attention_key(DType::Float16, 4, 128, causal,
                                                        cann_ops_tilelang::AttentionLayout::BSHD, 0,
                                                        default_target(), seq);
      expect_same_ir_whatever_the_heap(
          [&] { return cann_ops_tilelang::flash_attention_kernel(key); });
    }
}

TEST(LoweringDeterminism, RegisteredKernelsWhateverTheHeap) {
  for (const KernelEntry* e : registered_kernels()) {
    SCOPED_TRACE(e->name);
    expect_same_ir_whatever_the_heap([&] { return build_kernel(*e); });
  }
}

}  // namespace
}  // namespace tl
