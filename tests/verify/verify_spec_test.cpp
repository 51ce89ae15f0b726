// Rules tied to the phase of the IR: developer-mode loops are refused in expert kernels
// (until the passes that lower them exist).
#include "verify_test_util.h"

namespace tl {
namespace {

using testing::Clean;
using testing::Reports;
using testing::vector_kernel;

TEST(VerifySpec, ParallelLoopInAnExpertKernel) {
  int bad = 0;
  auto X = T::Tensor("X", {16, 64}, f32);
  auto f = vector_kernel({X}, [&] {
    auto x = T::alloc_ub("x", {16, 64}, f32);
    bad = __LINE__; T::Parallel(16, [&](Expr p) { T::store(x, {p, 0}, 0.0f); });
  });
  EXPECT_TRUE(Reports(f, "developer-loop-in-expert-mode", "T.Parallel", "", bad));
  std::string msg = format_diagnostics(verify(f));
  EXPECT_NE(msg.find("developer-mode loop"), std::string::npos) << msg;
  EXPECT_NE(msg.find("T::serial or T::unroll"), std::string::npos) << msg;
}

TEST(VerifySpec, PipelinedLoopInAnExpertKernel) {
  int bad = 0;
  auto f = vector_kernel({}, [&] {
    bad = __LINE__; T::Pipelined(8, /*num_stages=*/2, [&](Expr) { T::pipe_barrier(Pipe::V); });
  });
  EXPECT_TRUE(Reports(f, "developer-loop-in-expert-mode", "T.Pipelined", "", bad));
  EXPECT_THROW(verify_or_throw(f), Error);
}

TEST(VerifySpec, SerialAndUnrolledLoopsAreExpertLoops) {
  auto f = vector_kernel({}, [&] {
    T::serial(8, [&](Expr) { T::pipe_barrier(Pipe::V); });
    T::unroll(2, [&](Expr) { T::pipe_barrier(Pipe::V); });
  });
  EXPECT_TRUE(Clean(f));
}

}  // namespace
}  // namespace tl
