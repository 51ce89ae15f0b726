// What an interpreter decode cache must not keep (issue 31, docs/virtual_npu.md, "Host speed",
// branch fahost4: a per-core cache of constant operands was tried there and dropped). A tile op
// region whose bounds depend on a loop variable, cid or vid resolves afresh on every execution,
// and the overlap and alignment checks of such an op run every time, so an error that only one
// iteration makes is still found. The fast run is compared with TL_NPU_PLAIN_PATHS=1 and with the
// result computed here.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tl/npu/npu.h"
#include "tl/runtime.h"
// after the above: fidelity.h uses their declarations
#include "npu/fidelity.h"

namespace tl {
namespace {

using fidelity::launch_error;

// Four blocks of two AIVs; each AIV adds row 0 of its tile to every row in a loop (a region of
// the loop variable next to a literal one, the same statement on every core) and adds 2^8, from
// a literal-region tile doubled once per iteration, to the last row.
const char* kLoopKernel = R"(@T.prim_func
def f(X: T.Tensor((4, 2, 8, 64), "float32"), Y: T.Tensor((4, 2, 8, 64), "float32")):
    with T.Kernel(4, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            x = T.alloc_ub((8, 64), "float32")
            w = T.alloc_ub((1, 64), "float32")
            T.copy(X[cid:cid + 1, vid:vid + 1, 0:8, 0:64], x)
            T.tile.fill(w, 1.0)
            T.barrier_all()
            for i in T.serial(8):
                T.tile.add(x[i:i + 1, 0:64], x[i:i + 1, 0:64], x[0:1, 0:64])
                T.tile.mul(w, w, 2.0)
            T.tile.add(x[7:8, 0:64], x[7:8, 0:64], w)
            T.barrier_all()
            T.copy(x, Y[cid:cid + 1, vid:vid + 1, 0:8, 0:64])
)";

std::vector<float> run_loop_kernel(bool plain, const std::vector<double>& in) {
  ::setenv("TL_NPU_PLAIN_PATHS", plain ? "1" : "0", 1);
  Device dev;
  Tensor X = from_vector(dev, {4, 2, 8, 64}, DType::Float32, in);
  Tensor Y = from_vector(dev, {4, 2, 8, 64}, DType::Float32, std::vector<double>(in.size(), 0.0));
  const std::string err = launch_error(kLoopKernel, dev, {X, Y}, {.threads = 2});
  ::unsetenv("TL_NPU_PLAIN_PATHS");
  EXPECT_EQ(err, "");
  std::vector<float> out(in.size());
  std::memcpy(out.data(), Y.data(), out.size() * sizeof(float));
  return out;
}

TEST(PerExecutionChecks, LoopAndCoreDependentRegionsResolveOnEveryExecution) {
  std::vector<double> in(4 * 2 * 8 * 64);
  for (size_t k = 0; k < in.size(); ++k) in[k] = static_cast<double>((k * 37) % 101) - 50.5;
  std::vector<float> want(in.begin(), in.end());
  for (size_t tile = 0; tile < 8; ++tile) {
    float* x = want.data() + tile * 8 * 64;
    for (int i = 0; i < 8; ++i)
      for (int j = 0; j < 64; ++j) x[i * 64 + j] = x[i * 64 + j] + x[j];
    for (int j = 0; j < 64; ++j) x[7 * 64 + j] = x[7 * 64 + j] + 256.0f;
  }
  const auto fast = run_loop_kernel(false, in), plain = run_loop_kernel(true, in);
  ASSERT_EQ(fast.size(), want.size());
  EXPECT_EQ(std::memcmp(fast.data(), plain.data(), fast.size() * sizeof(float)), 0);
  for (size_t k = 0; k < want.size(); ++k)
    ASSERT_EQ(fast[k], want[k]) << "element " << k << " (tile " << k / 512 << ")";
}

// The overlap check of an op with a loop-dependent region is not kept from an earlier iteration:
// x[i:i + 2] against x[3:5] is disjoint for i = 0, 1 and overlaps partly at i = 2.
TEST(PerExecutionChecks, AnOverlapOnlyOneIterationMakesIsFound) {
  const std::string text = R"(@T.prim_func
def f(X: T.Tensor((8, 64), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            x = T.alloc_ub((8, 64), "float32")
            if vid == 0:
                T.copy(X, x)
                T.barrier_all()
                for i in T.serial(3):
                    T.tile.add(x[i:i + 2, 0:64], x[i:i + 2, 0:64], x[3:5, 0:64])
                T.barrier_all()
                T.copy(x, X)
)";
  Device dev;
  Tensor X = from_vector(dev, {8, 64}, DType::Float32, std::vector<double>(512, 1.0));
  const std::string err = launch_error(text, dev, {X});
  EXPECT_NE(err.find("T.tile.add: 'dst'"), std::string::npos) << err;
  EXPECT_NE(err.find("and 'src1' (x[3:5, 0:64]) overlap partly"), std::string::npos) << err;
}

// Nor is the alignment check: the start of x[0:1, s:s + 4] with s = 8r mod 12 is byte 0, 32, then
// 16 of UB.
TEST(PerExecutionChecks, AMisalignedStartOnlyOneIterationMakesIsFound) {
  const std::string text = R"(@T.prim_func
def f(X: T.Tensor((1, 16), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            x = T.alloc_ub((1, 16), "float32")
            if vid == 0:
                T.copy(X, x)
                T.barrier_all()
                for r in T.serial(3):
                    T.tile.exp(x[0:1, r * 8 % 12:r * 8 % 12 + 4], x[0:1, r * 8 % 12:r * 8 % 12 + 4])
                T.barrier_all()
                T.copy(x, X)
)";
  Device dev;
  Tensor X = from_vector(dev, {1, 16}, DType::Float32, std::vector<double>(16, 0.0));
  const std::string err = launch_error(text, dev, {X});
  EXPECT_NE(err.find("starts at byte 16 of UB, not on a 32-byte boundary"), std::string::npos)
      << err;
}

// Ops the program marks as never overlapping (Program::overlap_free_ops, overlap.cpp) skip the
// check; an op on two buffers that share planned bytes (pinned addresses) is not one: its partial
// overlap, at i = 0 of a loop-variable region, is still found.
TEST(PerExecutionChecks, AnOverlapOfTwoBuffersSharingBytesIsFound) {
  const std::string text = R"(@T.prim_func
def f(X: T.Tensor((8, 64), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((4, 64), "float32", address=0)
            b = T.alloc_ub((4, 64), "float32", address=640)
            if vid == 0:
                T.copy(X[0:4, 0:64], a)
                T.barrier_all()
                for i in T.serial(2):
                    T.tile.add(b[i:i + 1, 0:64], b[i:i + 1, 0:64], a[2:3, 0:64])
                T.barrier_all()
                T.copy(b, X[4:8, 0:64])
)";
  Device dev;
  Tensor X = from_vector(dev, {8, 64}, DType::Float32, std::vector<double>(512, 1.0));
  // Unchecked (the verifier rejects the pinned overlap): the interpreter's own check is tested.
  const std::string err = tltest::error_if_any([&] {
    compile(parse(text), default_target(), {.verify = false, .lower = false})
        .launch(dev, {X}, {.threads = 1});
  });
  EXPECT_NE(err.find("T.tile.add: 'dst' (b[i:i + 1, 0:64]) and 'src1' (a[2:3, 0:64]) overlap "
                     "partly"),
            std::string::npos)
      << err;
}

}  // namespace
}  // namespace tl
