// Rules tied to the phase of the IR: developer-mode loops are refused in expert kernels
// outside the scopes the passes lower them in, and the planned spec (plan_memory's output
// invariant) demands an address for every on-chip buffer.
#include "verify_test_util.h"

#include "tl/pass.h"

namespace tl {
namespace {

using testing::Clean;
using testing::HasDiag;
using testing::kernel;
using testing::Reports;
using testing::vector_kernel;

PrimFunc copy_through_ub(int64_t address = -1) {
  auto X = T::Tensor("X", {64}, f32);
  return vector_kernel({X}, [&] {
    auto x = T::alloc_ub("x", {64}, f32, address);
    T::copy(X, x);
    T::set_flag(Pipe::MTE2, Pipe::MTE3, 0);
    T::wait_flag(Pipe::MTE2, Pipe::MTE3, 0);
    T::copy(x, X);
  });
}

// Issue 29: TileLang-Ascend's expert kernels write T.Parallel in T.Scope("V") and T.Pipelined in
// any scope; the pipeline lowers them (vectorize_parallel, pipeline_loops). Outside those scopes
// no core would run them: still an error naming the scope.
TEST(VerifySpec, ParallelLoopInAnExpertVectorScopeIsAccepted) {
  auto X = T::Tensor("X", {16, 64}, f32);
  auto f = vector_kernel({X}, [&] {
    auto x = T::alloc_ub("x", {16, 64}, f32);
    T::Parallel(16, [&](Expr p) { T::store(x, {p, 0}, 0.0f); });
  });
  EXPECT_TRUE(Clean(f));
}

TEST(VerifySpec, ParallelLoopOutsideTheVectorScope) {
  int bad = 0;
  auto X = T::Tensor("X", {16, 64}, f32);
  auto f = kernel({X}, [&] {
    auto x = T::alloc_ub("x", {16, 64}, f32);
    bad = __LINE__ + 1;
    T::Parallel(16, [&](Expr p) { T::store(x, {p, 0}, 0.0f); });
  });
  EXPECT_TRUE(Reports(f, "developer-loop-in-expert-mode", "T.Parallel", "", bad));
  std::string msg = format_diagnostics(verify(f));
  EXPECT_NE(msg.find("lowered only inside T::Scope(Core::Vector)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("outside any scope"), std::string::npos) << msg;
}

TEST(VerifySpec, PipelinedLoopInAnExpertScopeIsAcceptedOutsideIsNot) {
  EXPECT_TRUE(Clean(vector_kernel(
      {}, [&] { T::Pipelined(8, /*num_stages=*/2, [&](Expr) { T::pipe_barrier(Pipe::V); }); })));
  int bad = 0;
  auto f = kernel({}, [&] {
    bad = __LINE__ + 1;
    T::Pipelined(8, /*num_stages=*/2,
                 [&](Expr) { T::Scope(Core::Vector, [&] { T::pipe_barrier(Pipe::V); }); });
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

TEST(VerifySpec, UnplannedBufferViolatesOnlyThePlannedSpec) {
  PrimFunc f = copy_through_ub();
  EXPECT_TRUE(Clean(f));
  auto ds = verify(f, default_target(), {.spec = Spec::Planned});
  EXPECT_TRUE(HasDiag(ds, "buffer-unplanned", "T.alloc_ub", "address", 0));
  EXPECT_EQ(ds.size(), 1u) << format_diagnostics(ds);
}

TEST(VerifySpec, LoweredKernelMeetsThePlannedSpec) {
  PrimFunc g = lower(copy_through_ub(), default_target());
  auto ds = verify(g, default_target(), {.spec = Spec::Planned});
  EXPECT_TRUE(ds.empty()) << format_diagnostics(ds);
}

TEST(VerifySpec, PinnedAddressesMustBeAlignedAndInCapacity) {
  EXPECT_TRUE(
      verify(copy_through_ub(/*address=*/0), default_target(), {.spec = Spec::Planned}).empty());
  auto misaligned =
      verify(copy_through_ub(/*address=*/16), default_target(), {.spec = Spec::Planned});
  EXPECT_TRUE(HasDiag(misaligned, "buffer-address-alignment", "T.alloc_ub", "address", 0));
  const int64_t ub = default_target().cap(MemScope::UB);
  auto past_end =
      verify(copy_through_ub(/*address=*/ub - 128), default_target(), {.spec = Spec::Planned});
  EXPECT_TRUE(HasDiag(past_end, "buffer-address-range", "T.alloc_ub", "address", 0));
}

TEST(VerifySpec, AddressRangeCountsFractalPadding) {
  // A 20 x 20 fp16 L1 tile occupies 32 x 32 x 2 bytes (fractal padding), not 800.
  const int64_t l1 = default_target().cap(MemScope::L1);
  const int64_t at = (l1 - 1024) / 32 * 32 + 32;  // room for 800 bytes, not for 2048
  ASSERT_LE(at + 800, l1);
  ASSERT_GT(at + 2048, l1);
  auto f = testing::cube_kernel({}, [&] { T::alloc_L1("a", {20, 20}, f16, at); });
  EXPECT_TRUE(Reports(f, "buffer-address-range", "T.alloc_L1", "address", 0));
}

TEST(VerifySpec, SpecNames) {
  EXPECT_EQ(spec_name(Spec::Expert), "expert");
  EXPECT_EQ(spec_name(Spec::Planned), "planned");
}

}  // namespace
}  // namespace tl
