// ScopedSourceLoc: a binding (the Python front end) makes every DSL call record its own
// caller's file:line. The override reaches the IR, DSL user errors and verifier diagnostics;
// guards nest, restore on scope exit, and are per thread.
#include <gtest/gtest.h>

#include <thread>

#include "tl/lang.h"
#include "tl/printer.h"
#include "tl/verifier.h"

namespace tl {
namespace {

/// A small vector kernel: copy in, exp, copy out.
PrimFunc exp_kernel() {
  auto X = T::Tensor("X", {64}, f32);
  return T::prim_func("exp_kernel", {X}, [&] {
    T::Kernel(1, [&](Expr, Expr) {
      T::Scope(Core::Vector, [&] {
        auto x = T::alloc_ub("x", {64}, f32);
        T::copy(X, x);
        T::set_flag(Pipe::MTE2, Pipe::V, 0);
        T::wait_flag(Pipe::MTE2, Pipe::V, 0);
        T::tile::exp(x, x);
        T::set_flag(Pipe::V, Pipe::MTE3, 0);
        T::wait_flag(Pipe::V, Pipe::MTE3, 0);
        T::copy(x, X);
      });
    });
  });
}

TEST(SourceLoc, KernelBuiltUnderTheOverridePrintsItsLocation) {
  PrimFunc f;
  {
    ScopedSourceLoc at(SourceLoc{"kernel.py", 12});
    f = exp_kernel();
  }
  std::string text = print(f);
  EXPECT_NE(text.find("# @kernel.py:12"), std::string::npos) << text;
  EXPECT_EQ(text.find("tests/ir/"), std::string::npos) << text;
  EXPECT_EQ(f->loc.str(), "kernel.py:12");
}

TEST(SourceLoc, WithoutAnOverrideTheCxxCallerIsRecorded) {
  std::string text = print(exp_kernel());
  EXPECT_NE(text.find("# @tests/ir/source_loc_test.cpp:"), std::string::npos) << text;
  EXPECT_EQ(text.find("kernel.py"), std::string::npos) << text;
}

TEST(SourceLoc, DslUserErrorsCarryTheOverride) {
  ScopedSourceLoc at(SourceLoc{"kernel.py", 12});
  try {
    T::prim_func("f", {T::Tensor("A", {16}, f32)}, [&] {
      T::Kernel(1,
                [&](Expr, Expr) { T::Scope(Core::Vector, [&] { T::alloc_ub("", {16}, f32); }); });
    });
    FAIL() << "expected a tl::Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.loc().str(), "kernel.py:12");
    EXPECT_EQ(std::string(e.what()).rfind("kernel.py:12: ", 0), 0u) << e.what();
  }
}

TEST(SourceLoc, VerifierDiagnosticsCarryTheOverride) {
  PrimFunc f;
  {
    ScopedSourceLoc at(SourceLoc{"kernel.py", 7});
    auto X = T::Tensor("X", {64}, f32);
    f = T::prim_func("f", {X}, [&] {
      T::Kernel(1, [&](Expr, Expr) {
        T::Scope(Core::Cube, [&] {
          ScopedSourceLoc inner(SourceLoc{"kernel.py", 9});
          T::alloc_ub("x", {64}, f32);  // UB in a Cube scope
        });
      });
    });
  }
  auto ds = verify(f);
  ASSERT_FALSE(ds.empty());
  for (const auto& d : ds) EXPECT_EQ(d.loc.str(), "kernel.py:9") << d.str();
}

TEST(SourceLoc, GuardsNestAndRestore) {
  auto line_of_barrier = [] {
    PrimFunc f =
        T::prim_func("f", {}, [&] { T::Kernel(1, [&](Expr, Expr) { T::barrier_all(); }); });
    std::string text = print(f);
    size_t at = text.find("T.barrier_all()  # @");
    return at == std::string::npos ? std::string()
                                   : text.substr(at + 20, text.find('\n', at) - at - 20);
  };
  {
    ScopedSourceLoc outer(SourceLoc{"a.py", 1});
    EXPECT_EQ(line_of_barrier(), "a.py:1");
    {
      ScopedSourceLoc inner(SourceLoc{"b.py", 2});
      EXPECT_EQ(line_of_barrier(), "b.py:2");
    }
    EXPECT_EQ(line_of_barrier(), "a.py:1");
  }
  EXPECT_NE(line_of_barrier().find("tests/ir/source_loc_test.cpp:"), std::string::npos)
      << line_of_barrier();
}

TEST(SourceLoc, TheOverrideIsPerThread) {
  ScopedSourceLoc at(SourceLoc{"kernel.py", 12});
  std::string other;
  std::thread t([&] { other = print(exp_kernel()); });
  t.join();
  EXPECT_EQ(other.find("kernel.py"), std::string::npos) << other;
  EXPECT_NE(other.find("# @tests/ir/source_loc_test.cpp:"), std::string::npos) << other;
  EXPECT_NE(print(exp_kernel()).find("# @kernel.py:12"), std::string::npos);
}

}  // namespace
}  // namespace tl
