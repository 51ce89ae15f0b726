// Errors of the virtual NPU and its determinism: out-of-bounds regions found at run time name
// the buffer, the offending range and the DSL line; launch argument errors name the argument,
// what was expected and what came; a cross-core wait nobody satisfies is reported as a
// deadlock naming the core and the flag; a GEMM that skips the ND -> NZ conversion computes
// wrong numbers; and the examples give bit-identical results for 1 and 2 host threads.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "common/error_of.h"
#include "common/references.h"
#include "npu/op_harness.h"
#include "tl/kernel_registry.h"

namespace tl {
namespace {

using namespace optest;

#define EXPECT_HAS(msg, part) \
  EXPECT_NE((msg).find(part), std::string::npos) << "missing \"" << (part) << "\" in: " << (msg)

using tltest::error_if_any;
using tltest::error_of;

// ---- out-of-bounds regions at run time -----------------------------------------------------

TEST(NpuErrors, OutOfBoundsRegionNamesBufferRangeAndLine) {
  // The region starts at a runtime scalar: the verifier cannot prove it in bounds.
  int line = 0;
  auto f = one_op_func({{"dst", {64}, DType::Float32}, {"big", {128}, DType::Float32}},
                       {{"off", DType::Int32}},
                       [&](const std::vector<Buffer>& ub, const std::vector<Var>& s) {
                         line = __LINE__ + 1;
                         T::tile::add(ub[0], ub[1].region({s[0]}, {64}), 1.0);
                       });
  CompiledKernel k;
  try {
    k = compile(f);
  } catch (const Error&) {
    k = compile(f, default_target(), {.verify = false, .lower = false});
  }
  Device dev;
  Tensor d = Tensor::empty(dev, {64}, DType::Float32),
         b = Tensor::empty(dev, {128}, DType::Float32);
  k.launch(dev, {d, b, 64});  // in bounds: [64, 128)
  std::string msg = error_of([&] { k.launch(dev, {d, b, 72}); });
  EXPECT_HAS(msg, "out-of-bounds");
  EXPECT_HAS(msg, "'big'");
  EXPECT_HAS(msg, "[72, 136)");
  EXPECT_HAS(msg, "[0, 128)");
  EXPECT_HAS(msg, fmt::format("tests/npu/npu_errors_test.cpp:{}", line));
  EXPECT_HAS(msg, "AIV0");
}

TEST(NpuErrors, OutOfBoundsGmCopyAtRunTime) {
  // A GM -> UB copy whose GM start comes from a scalar runs past the tensor's end.
  auto X = T::Tensor("X", {256}, DType::Float32);
  auto off = T::Scalar("off", DType::Int32);
  int line = 0;
  auto f = T::prim_func("oob_copy", {X, off}, [&] {
    T::Kernel(1, [&](Expr, Expr vid) {
      T::Scope(Core::Vector, [&] {
        auto x = T::alloc_ub("x_ub", {64}, DType::Float32);
        T::If(vid == 0, [&] {
          line = __LINE__ + 1;
          T::copy(X.at({off}), x);
        });
      });
    });
  });
  // The pipeline clips such a copy at the tensor's end (clip_expert_copies, issue 29); compiled
  // as written, the executor's own bounds check names the access.
  CompiledKernel k = compile(f, default_target(), {.verify = false, .lower = false});
  Device dev;
  Tensor t = Tensor::empty(dev, {256}, DType::Float32);
  EXPECT_EQ(error_if_any([&] { k.launch(dev, {t, 192}); }), "");
  EXPECT_EQ(error_if_any([&] { compile(f).launch(dev, {t, 200}); }), "");  // clipped
  std::string msg = error_of([&] { k.launch(dev, {t, 200}); });
  EXPECT_HAS(msg, "'X'");
  EXPECT_HAS(msg, "200");
  EXPECT_HAS(msg, fmt::format("tests/npu/npu_errors_test.cpp:{}", line));
}

// ---- launch arguments ----------------------------------------------------------------------

CompiledKernel small_kernel() {
  return compile(one_op_func({{"x", {16, 32}, DType::Float16}}, {{"alpha", DType::Float32}},
                             [](const std::vector<Buffer>& ub, const std::vector<Var>& s) {
                               T::tile::mul(ub[0], ub[0], s[0]);
                             }));
}

TEST(NpuErrors, LaunchArgumentErrorsNameArgumentExpectedAndActual) {
  auto k = small_kernel();
  Device dev;
  Tensor good = Tensor::empty(dev, {16, 32}, DType::Float16);
  EXPECT_EQ(error_if_any([&] { k.launch(dev, {good, 2.0}); }), "");

  std::string m = error_of([&] {
    k.launch(dev, {Tensor::empty(dev, {16, 32}, DType::Float32), 2.0});
  });
  EXPECT_HAS(m, "'G_x'");
  EXPECT_HAS(m, "float16");
  EXPECT_HAS(m, "float32");

  // Fewer elements than declared (a larger tensor of a parameter the kernel writes is its
  // row-major prefix, docs/python.md "Argument shapes").
  m = error_of([&] { k.launch(dev, {Tensor::empty(dev, {16, 16}, DType::Float16), 2.0}); });
  EXPECT_HAS(m, "'G_x'");
  EXPECT_HAS(m, "shape");
  EXPECT_HAS(m, "16, 32");
  EXPECT_HAS(m, "16, 16");

  m = error_of([&] { k.launch(dev, {good}); });
  EXPECT_HAS(m, "takes 2 arguments");
  EXPECT_HAS(m, "got 1");
  m = error_of([&] { k.launch(dev, {good, 2.0, 3.0}); });
  EXPECT_HAS(m, "got 3");

  m = error_of([&] { k.launch(dev, {good, good}); });  // tensor for the scalar
  EXPECT_HAS(m, "'alpha'");
  EXPECT_HAS(m, "scalar");
  EXPECT_HAS(m, "got a tensor");
  m = error_of([&] { k.launch(dev, {1.0, 2.0}); });  // scalar for the tensor
  EXPECT_HAS(m, "'G_x'");
  EXPECT_HAS(m, "must be a tensor, got a scalar");
}

// ---- deadlocks -----------------------------------------------------------------------------

TEST(NpuErrors, CrossFlagNeverSetIsADeadlockNamingCoreAndFlag) {
  auto X = T::Tensor("X", {64}, DType::Float32);
  auto f = T::prim_func("hang", {X}, [&] {
    T::Kernel(2, [&](Expr, Expr) { T::Scope(Core::Cube, [&] { T::wait_cross_flag(5); }); });
  });
  CompiledKernel k;
  try {
    k = compile(f);
  } catch (const Error&) {
    k = compile(f, default_target(), {.verify = false, .lower = false});
  }
  Device dev;
  Tensor t = Tensor::empty(dev, {64}, DType::Float32);
  for (int threads : {1, 2}) {
    std::string m = error_of([&] { k.launch(dev, {t}, {.threads = threads}); });
    EXPECT_HAS(m, "deadlock");
    // Both blocks hang; the launch reports the lowest thread's error whichever failed first.
    EXPECT_HAS(m, "block 0 AIC");
    EXPECT_HAS(m, "5");
    EXPECT_HAS(m, "wait_cross_flag");
  }
}

TEST(NpuErrors, WaitFlagNeverSetIsADeadlock) {
  auto X = T::Tensor("X", {64}, DType::Float32);
  auto f = T::prim_func("hang2", {X}, [&] {
    T::Kernel(1, [&](Expr, Expr) {
      T::Scope(Core::Vector, [&] { T::wait_flag(Pipe::MTE2, Pipe::V, 3); });
    });
  });
  CompiledKernel k;
  try {
    k = compile(f);
  } catch (const Error&) {
    k = compile(f, default_target(), {.verify = false, .lower = false});
  }
  Device dev;
  Tensor t = Tensor::empty(dev, {64}, DType::Float32);
  std::string m = error_of([&] { k.launch(dev, {t}); });
  EXPECT_HAS(m, "deadlock");
  EXPECT_HAS(m, "AIV");
  EXPECT_HAS(m, "wait_flag");
}

// ---- a wrong layout gives wrong numbers ------------------------------------------------------

/// One-tile expert GEMM C = A x B (fp16 in, fp32 accumulate, fp16 out); the GM -> L1 copies
/// convert ND to NZ unless told not to.
PrimFunc tiny_gemm(int M, int N, int K, bool nd2nz) {
  auto A = T::Tensor("A", {M, K}, DType::Float16);
  auto B = T::Tensor("B", {K, N}, DType::Float16);
  auto C = T::Tensor("C", {M, N}, DType::Float16);
  return T::prim_func("tiny_gemm", {A, B, C}, [&] {
    T::Kernel(1, [&](Expr, Expr) {
      T::Scope(Core::Cube, [&] {
        auto a = T::alloc_L1("A_L1", {M, K}, DType::Float16);
        auto b = T::alloc_L1("B_L1", {K, N}, DType::Float16);
        auto c = T::alloc_L0C("C_L0C", {M, N}, DType::Float32);
        T::copy(A, a, {.nd2nz = nd2nz});
        T::copy(B, b, {.nd2nz = nd2nz});
        T::set_flag(Pipe::MTE2, Pipe::MTE1, 0);
        T::wait_flag(Pipe::MTE2, Pipe::MTE1, 0);
        T::gemm_v0(a, b, c, {.init = true});
        T::set_flag(Pipe::M, Pipe::FIX, 0);
        T::wait_flag(Pipe::M, Pipe::FIX, 0);
        T::copy(c, C);
      });
    });
  });
}

TEST(NpuErrors, GemmWithoutNd2NzGivesWrongNumbers) {
  const int M = 32, N = 64, K = 48;
  Device dev;
  Tensor A = uniform(dev, {M, K}, DType::Float16, 1), B = uniform(dev, {K, N}, DType::Float16, 2);
  auto want = ref::matmul(A.to_vector(), B.to_vector(), M, N, K);
  for (bool nd2nz : {true, false}) {
    SCOPED_TRACE(fmt::format("nd2nz {}", nd2nz));
    auto f = tiny_gemm(M, N, K, nd2nz);
    CompiledKernel k;
    try {
      k = compile(f);
    } catch (const Error&) {
      k = compile(f, default_target(), {.verify = false, .lower = false});
    }
    Tensor C = Tensor::empty(dev, {M, N}, DType::Float16);
    k.launch(dev, {A, B, C});
    std::string d = ref::compare(C.to_vector(), want, N, 1e-3 * std::sqrt(K), 1e-3);
    if (nd2nz)
      EXPECT_EQ(d, "");
    else
      EXPECT_NE(d, "") << "an ND tile read as NZ must not reproduce the product";
  }
}

// ---- determinism across host threads ----------------------------------------------------------

std::map<std::string, std::string> sizes(std::initializer_list<std::pair<const char*, int>> kv) {
  std::map<std::string, std::string> m;
  for (auto& [k, v] : kv) m[k] = std::to_string(v);
  return m;
}

TEST(NpuDeterminism, GemmAndRmsNormBitIdenticalFor1And2Threads) {
  {
    const int M = 256, N = 512, K = 128;
    auto kern = compile(build_kernel(find_kernel("gemm"), sizes({{"M", M}, {"N", N}, {"K", K}})));
    std::vector<std::vector<uint8_t>> out;
    for (int threads : {1, 2}) {
      Device dev;
      Tensor A = uniform(dev, {M, K}, DType::Float16, 1),
             B = uniform(dev, {K, N}, DType::Float16, 2);
      Tensor C = Tensor::empty(dev, {M, N}, DType::Float16);
      kern.launch(dev, {A, B, C}, {.threads = threads});
      out.push_back(bytes_of(C));
    }
    EXPECT_TRUE(out[0] == out[1]) << "gemm differs between 1 and 2 threads";
  }
  for (int passes : {2, 1}) {
    const int M = 64, N = 2048;
    auto kern = compile(
        build_kernel(find_kernel("rms_norm"), sizes({{"M", M}, {"N", N}, {"passes", passes}})));
    std::vector<std::vector<uint8_t>> out;
    for (int threads : {1, 2}) {
      Device dev;
      Tensor X = randn(dev, {M, N}, DType::BFloat16, 3),
             W = uniform(dev, {N}, DType::BFloat16, 4, 0.5, 1.5);
      Tensor Y = Tensor::empty(dev, {M, N}, DType::BFloat16);
      kern.launch(dev, {X, W, Y, 1e-6}, {.threads = threads});
      out.push_back(bytes_of(Y));
    }
    EXPECT_TRUE(out[0] == out[1]) << "rms_norm (passes=" << passes
                                  << ") differs between 1 and 2 threads";
  }
}

}  // namespace
}  // namespace tl
