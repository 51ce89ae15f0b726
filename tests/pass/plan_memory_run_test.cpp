// plan_memory end to end: a kernel whose UB buffers add up to more than UB but whose live
// ranges allow reuse compiles, runs on the virtual NPU and is correct; one whose buffers are
// truly live together fails at compile time with the scope's buffer table.
#include <gtest/gtest.h>

#include <cmath>

#include "pass/pass_test_util.h"
#include "tl/lang.h"
#include "tl/npu/npu.h"
#include "tl/runtime.h"

namespace tl {
namespace {

using testing::error_of;

constexpr int kRows = 64, kCols = 256;  // one 64 KiB fp32 tile per block

/// Y = (2 * exp(X))^2 computed through four 64 KiB UB tiles a -> b -> c -> d: 256 KiB in all,
/// more than UB (196,608 bytes on A2), but never more than two live at once. With
/// `keep_all_live`, a last add reads a, b and c at the end, so all four are live together.
PrimFunc chain(int blocks, bool keep_all_live) {
  auto X = T::Tensor("X", {blocks * kRows, kCols}, f32);
  auto Y = T::Tensor("Y", {blocks * kRows, kCols}, f32);
  return T::prim_func("ub_chain", {X, Y}, [&] {
    T::Kernel(blocks, [&](Expr cid, Expr vid) {
      T::Scope(Core::Vector, [&] {
        auto a = T::alloc_ub("a_ub", {kRows, kCols}, f32);
        auto b = T::alloc_ub("b_ub", {kRows, kCols}, f32);
        auto c = T::alloc_ub("c_ub", {kRows, kCols}, f32);
        auto d = T::alloc_ub("d_ub", {kRows, kCols}, f32);
        T::If(vid == 0, [&] {  // one AIV per block does the work
          T::copy(X.at({cid * kRows, 0}), a);
          T::set_flag(Pipe::MTE2, Pipe::V, 0);
          T::wait_flag(Pipe::MTE2, Pipe::V, 0);
          T::tile::exp(b, a);
          T::pipe_barrier(Pipe::V);
          T::tile::add(c, b, b);
          T::pipe_barrier(Pipe::V);
          T::tile::mul(d, c, c);
          if (keep_all_live) {
            T::pipe_barrier(Pipe::V);
            T::tile::add(d, d, a);
            T::tile::add(d, d, b);
            T::tile::add(d, d, c);
          }
          T::set_flag(Pipe::V, Pipe::MTE3, 0);
          T::wait_flag(Pipe::V, Pipe::MTE3, 0);
          T::copy(d, Y.at({cid * kRows, 0}));
        });
      });
    });
  });
}

TEST(PlanMemoryRun, OversubscribedButReusableUbCompilesRunsAndIsCorrect) {
  const int blocks = 2;
  PrimFunc f = chain(blocks, /*keep_all_live=*/false);
  const Target& t = default_target();
  ASSERT_GT(4 * kRows * kCols * 4, t.cap(MemScope::UB));  // the buffers alone do not fit

  PrimFunc lowered = lower(f, t);
  std::string ir = print(lowered, {.locations = false});
  // a dies at the exp, so c takes its bytes; b dies at the add, so d takes b's.
  EXPECT_NE(ir.find(R"(a_ub = T.alloc_ub((64, 256), "float32", address=0))"), std::string::npos)
      << ir;
  EXPECT_NE(ir.find(R"(b_ub = T.alloc_ub((64, 256), "float32", address=65536))"), std::string::npos)
      << ir;
  EXPECT_NE(ir.find(R"(c_ub = T.alloc_ub((64, 256), "float32", address=0))"), std::string::npos)
      << ir;
  EXPECT_NE(ir.find(R"(d_ub = T.alloc_ub((64, 256), "float32", address=65536))"), std::string::npos)
      << ir;

  CompiledKernel k = compile(f, t);
  Device dev(t);
  Tensor x = uniform(dev, {blocks * kRows, kCols}, f32, /*seed=*/7, -1.0, 1.0);
  Tensor y = Tensor::empty(dev, {blocks * kRows, kCols}, f32);
  k.launch(dev, {x, y});
  std::vector<double> xv = x.to_vector(), yv = y.to_vector();
  ASSERT_EQ(xv.size(), yv.size());
  int bad = 0;
  for (size_t i = 0; i < xv.size(); ++i) {
    double e = std::exp(static_cast<float>(xv[i]));
    double want = (2 * e) * (2 * e);
    if (std::fabs(yv[i] - want) > 1e-5 * std::fabs(want) + 1e-6 && bad++ < 5)
      ADD_FAILURE() << "Y[" << i / kCols << ", " << i % kCols << "] = " << yv[i] << ", expected "
                    << want << " (x = " << xv[i] << ")";
  }
  EXPECT_EQ(bad, 0);
}

TEST(PlanMemoryRun, BuffersTrulyLiveTogetherFailWithTheTable) {
  PrimFunc f = chain(1, /*keep_all_live=*/true);
  std::string msg = error_of([&] { compile(f, default_target()); });
  EXPECT_NE(msg.find("tests/pass/plan_memory_run_test.cpp:"), std::string::npos)
      << msg;  // the kernel
  EXPECT_NE(msg.find("UB needs 262,144 bytes, capacity 196,608 on A2"), std::string::npos) << msg;
  for (const char* name : {"a_ub", "b_ub", "c_ub", "d_ub"})
    EXPECT_NE(msg.find(name), std::string::npos) << msg;
  EXPECT_NE(msg.find("(64, 256)"), std::string::npos) << msg;
}

}  // namespace
}  // namespace tl
