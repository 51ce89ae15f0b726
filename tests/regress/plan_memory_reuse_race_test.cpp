// Regression of the memory planner's unsound reuse (tilelang-ascend issue 1156, and tl-ascend's
// own plan_memory before the "Compiler core" issue): a kernel whose syncs are correct as
// written got a racy plan because the planner let a buffer take another's bytes across pipes
// with nothing ordering the old owner's last access before the new owner's first.
//
// Each AIV loads x (MTE2), computes y = exp(x) (V), stores y (MTE3); then loads z (MTE2), doubles
// it (V) and stores it. Every flag the kernel needs for its own buffers is there. x is dead
// after the exp, so a planner that only looks at live ranges puts z on x's bytes; but the load
// of z (MTE2) is not ordered after the exp's read of x (V), nor after the load of x (MTE2 may
// overlap consecutive DMAs): on the chip z's data lands in x while the exp still reads it.
#include <gtest/gtest.h>

#include <cmath>

#include "pass/pass_test_util.h"
#include "tl/ir_functor.h"
#include "tl/lang.h"
#include "tl/npu/npu.h"
#include "tl/npu/timing.h"
#include "tl/pass.h"

namespace tl {
namespace {

constexpr int R = 16, C = 64;  // 1024 fp32 elements

/// `pin`: place x and z at byte 0 by hand, as the unsound planner did.
PrimFunc exp_then_double(bool pin) {
  auto X = T::Tensor("X", {R, C}, f32), Z = T::Tensor("Z", {R, C}, f32);
  auto Y = T::Tensor("Y", {R, C}, f32), W = T::Tensor("W", {R, C}, f32);
  return T::prim_func("exp_then_double", {X, Z, Y, W}, [&] {
    T::Kernel(1, [&](Expr, Expr vid) {
      T::Scope(Core::Vector, [&] {
        T::If(vid == 0, [&] {
          auto x = T::alloc_ub("x", {R, C}, f32, pin ? 0 : -1);
          auto y = T::alloc_ub("y", {R, C}, f32, pin ? R * C * 4 : -1);
          T::copy(X, x);
          T::set_flag(Pipe::MTE2, Pipe::V, 0);
          T::wait_flag(Pipe::MTE2, Pipe::V, 0);
          T::tile::exp(y, x);
          T::set_flag(Pipe::V, Pipe::MTE3, 0);
          T::wait_flag(Pipe::V, Pipe::MTE3, 0);
          T::copy(y, Y);
          auto z = T::alloc_ub("z", {R, C}, f32, pin ? 0 : -1);
          T::copy(Z, z);
          T::set_flag(Pipe::MTE2, Pipe::V, 0);
          T::wait_flag(Pipe::MTE2, Pipe::V, 0);
          T::tile::add(z, z, z);
          T::set_flag(Pipe::V, Pipe::MTE3, 0);
          T::wait_flag(Pipe::V, Pipe::MTE3, 0);
          T::copy(z, W);
        });
      });
    });
  });
}

struct Outcome {
  std::string hazards;                  // the hazard checker's error ("" when clean)
  std::vector<std::string> time_order;  // Profile::time_order_effects of a timed launch
  int wrong_y = 0, wrong_w = 0;         // elements of the timed launch's Y, W that are wrong
};

Outcome run(const PrimFunc& f) {
  Outcome r;
  auto kern = compile(f, default_target(), {.cache = false});
  Device dev;
  Tensor X = uniform(dev, {R, C}, f32, 1, -2, 2),
         Z = uniform(dev, {R, C}, f32, 2, 3, 5);  // never equal to an X
  Tensor Y = Tensor::empty(dev, {R, C}, f32), W = Tensor::empty(dev, {R, C}, f32);
  try {
    kern.launch(dev, {X, Z, Y, W}, {.threads = 1, .check_hazards = true});
  } catch (const Error& e) {
    r.hazards = e.what();
  }
  npu::Profile prof;
  kern.launch(dev, {X, Z, Y, W}, {.threads = 1, .profile = &prof});
  r.time_order = prof.time_order_effects;
  auto x = X.to_vector(), z = Z.to_vector(), y = Y.to_vector(), w = W.to_vector();
  for (size_t i = 0; i < x.size(); ++i) {
    r.wrong_y += y[i] != static_cast<double>(std::exp(static_cast<float>(x[i])));
    r.wrong_w += w[i] != 2 * z[i];
  }
  return r;
}

TEST(Regress, PlanMemoryNeverReusesBytesAcrossUnorderedPipes) {
  // What the unsound plan did (x and z on the same bytes) ran with hazards on x's bytes, and in
  // simulated-time order the exp read z's data (1023 of the 1024 outputs wrong). Written by hand
  // with explicit addresses it is now refused at compile time (issue 29: plan_memory compares
  // pinned buffers), naming the two buffers and the unordered pair.
  try {
    compile(exp_then_double(/*pin=*/true), default_target(), {.cache = false});
    ADD_FAILURE() << "the racy pinned plan compiled";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("nothing orders 'z' after 'x'"), std::string::npos) << m;
  }

  // What tl::compile does now: z gets bytes of its own; clean, and right in simulated-time order.
  PrimFunc f = exp_then_double(/*pin=*/false);
  Outcome good = run(f);
  EXPECT_EQ(good.hazards, "");
  EXPECT_TRUE(good.time_order.empty());
  EXPECT_EQ(good.wrong_y, 0);
  EXPECT_EQ(good.wrong_w, 0);
  PrimFunc planned = lower(f, default_target());
  EXPECT_NE(testing::address_of(planned, "x"), testing::address_of(planned, "z"));
}

}  // namespace
}  // namespace tl
