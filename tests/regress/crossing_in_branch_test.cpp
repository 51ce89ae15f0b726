// A crossing tile read by the consumer only inside an `if` both cores evaluate crosses inside
// that branch (infer_scopes, docs/developer_mode.md "Data that crosses cores";
// tests/pass/infer_scopes_branch_crossings.tl checks the placement): an L0C sum accumulated over
// a K loop and read by the vector unit at the last step only is drained once, at that step. This
// runs it fast, hazard-checked and timed against a reference, K steps 1, 7, 33, one and two AIVs:
// the channel inside the branch, its flags and credits, hold for every trip count, in a serial
// loop and in pipelined ones (2 and 3 stages).
#include <gtest/gtest.h>

#include <random>

#include "tl/npu/npu.h"
// after tl/npu/npu.h, which declares what it uses
#include "npu/fidelity.h"
#include "tl/npu/timing.h"
#include "tl/runtime.h"

namespace tl {
namespace {

std::string last_step_kernel(int n, int threads, const char* loop) {
  return fmt::format(R"(@T.prim_func
def last_step_only(A: T.Tensor((32, {0}), "float16"), C: T.Tensor((32, 32), "float16")):
    with T.Kernel(1, threads={1}) as cid:
        a = T.alloc_shared((32, 32), "float16")
        c = T.alloc_fragment((32, 32), "float32")
        d = T.alloc_shared((32, 32), "float16")
        for k in {4}:
            T.copy(A[0:32, k * 32:k * 32 + 32], a)
            T.gemm(a, a, c, k == 0)
            if k == {3}:
                for i in T.Parallel(32):
                    for j in T.Parallel(32):
                        d[i, j] = T.cast(c[i, j], "float16")
                T.copy(d, C)
)",
                     32 * n, threads, n, n - 1, fmt::format(fmt::runtime(loop), n));
}

TEST(CrossingInBranch, AnL0CSumReadAtTheLastStepIsRightForEveryTripCount) {
  for (int n : {1, 7, 33}) {
    for (int threads : {1, 2})
      for (const char* loop :
           {"T.serial({})", "T.Pipelined({}, num_stages=2)", "T.Pipelined({}, num_stages=3)"}) {
        SCOPED_TRACE(fmt::format("K steps {}, threads {}, {}", n, threads, loop));
        std::mt19937 rng(static_cast<uint32_t>(n * 3 + threads));
        std::vector<double> a(static_cast<size_t>(32 * 32 * n));
        for (auto& v : a) v = static_cast<double>(static_cast<int>(rng() % 3) - 1);
        // C = sum_k A_k A_k: integers below 2048 in magnitude, exact in fp32 and fp16.
        std::vector<double> expect(32 * 32, 0.0);
        const size_t w = static_cast<size_t>(32 * n);
        for (int k = 0; k < n; ++k)
          for (size_t i = 0; i < 32; ++i)
            for (size_t j = 0; j < 32; ++j)
              for (size_t l = 0; l < 32; ++l)
                expect[i * 32 + j] += a[i * w + static_cast<size_t>(k * 32) + l] *
                                      a[l * w + static_cast<size_t>(k * 32) + j];
        const std::string text = last_step_kernel(n, threads, loop);
        std::vector<LaunchOptions> modes(3);
        modes[0] = {.threads = 1};
        modes[1] = {.threads = 1, .check_hazards = true};
        npu::Profile prof;
        modes[2] = {.threads = 1, .profile = &prof};
        for (const LaunchOptions& opt : modes) {
          Device dev;
          Tensor A = from_vector(dev, {32, 32 * n}, DType::Float16, a),
                 C = Tensor::empty(dev, {32, 32}, DType::Float16);
          EXPECT_EQ(fidelity::launch_error(text, dev, {A, C}, opt), "");
          EXPECT_EQ(C.to_vector(), expect);
        }
        EXPECT_TRUE(prof.time_order_effects.empty());
      }
  }
}

}  // namespace
}  // namespace tl
