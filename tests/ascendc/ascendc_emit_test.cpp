// The AscendC backend (tl/ascendc.h, docs/ascendc.md): golden files of the emitted text for
// three small kernels (vector, vector with reductions and row broadcasts, cube), which every
// change of the emitter must update on purpose (TL_UPDATE_GOLDEN=1 rewrites them; review the
// diff); every example kernel either emits or fails with the error that names its construct;
// bad input (a construct without an AscendC form) is an error naming it and its source line;
// the backend goes through tl::compile and its cache like the virtual NPU's.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tl/ascendc.h"
#include "tl/kernel_registry.h"
#include "tl/lang.h"
#include "tl/pass.h"

namespace tl {
namespace {

namespace fs = std::filesystem;

std::string emit_example(const std::string& name) {
  PrimFunc f = build_kernel(find_kernel(name), {});
  return ascendc::emit(lower(f, default_target()), default_target());
}

fs::path golden_dir() {
  const char* src = std::getenv("TL_SOURCE_DIR");
  return fs::path(src ? src : ".") / "tests" / "ascendc" / "golden";
}

class Golden : public ::testing::TestWithParam<const char*> {};

TEST_P(Golden, EmittedTextMatchesTheReviewedFile) {
  if (!std::getenv("TL_SOURCE_DIR")) GTEST_SKIP() << "TL_SOURCE_DIR not set (run through ctest)";
  const std::string name = GetParam();
  const std::string text = emit_example(name);
  const fs::path file = golden_dir() / (name + ".cpp.golden");
  if (std::getenv("TL_UPDATE_GOLDEN")) {
    std::ofstream(file) << text;
    GTEST_SKIP() << "rewrote " << file;
  }
  std::ifstream in(file);
  ASSERT_TRUE(in) << "no golden file " << file << " (TL_UPDATE_GOLDEN=1 writes it)";
  std::stringstream want;
  want << in.rdbuf();
  EXPECT_EQ(text, want.str()) << "the AscendC text of " << name << " changed; if on purpose, "
                              << "rerun with TL_UPDATE_GOLDEN=1 and review the diff";
}

INSTANTIATE_TEST_SUITE_P(AscendC, Golden, ::testing::Values("add_dev", "softmax_dev", "gemm"));

// Deterministic: the same kernel emits the same text twice.
TEST(AscendCEmit, Deterministic) {
  EXPECT_EQ(emit_example("flash_attention_dev"), emit_example("flash_attention_dev"));
}

// What every example kernel gives today: emitted (with the API calls its ops need), or the
// error naming the construct the emitter has no form for. The list is docs/ascendc.md's.
TEST(AscendCEmit, EveryExampleEmitsOrNamesItsConstruct) {
  const std::map<std::string, std::string> not_yet = {};
  for (const auto* k : registered_kernels()) {
    SCOPED_TRACE(k->name);
    auto it = not_yet.find(k->name);
    if (it != not_yet.end()) {
      try {
        emit_example(k->name);
        ADD_FAILURE() << k->name << " emits now: move it out of the not-yet list";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(it->second), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("examples/"), std::string::npos) << e.what();
      }
      continue;
    }
    const std::string text = emit_example(k->name);
    EXPECT_NE(text.find("extern \"C\" __global__ __aicore__ void " + k->name + "("),
              std::string::npos);
    EXPECT_NE(text.find(k->name + "<<<numBlocks, nullptr, stream>>>"), std::string::npos);
  }
}

// Spot checks of the mapping on the example kernels (the golden files show the whole text).
TEST(AscendCEmit, MapsOpsToTheirApi) {
  const std::string rms = emit_example("rms_norm");
  EXPECT_NE(rms.find("AscendC::Cast(yb_ub, xf_ub, AscendC::RoundMode::CAST_RINT, 8192);"),
            std::string::npos);
  EXPECT_NE(rms.find("AscendC::Adds(ss_ub, ss_ub, eps, 8);"), std::string::npos);
  EXPECT_NE(rms.find("float eps"), std::string::npos);  // a scalar parameter by value
  const std::string dyn = emit_example("rms_norm_dynamic");
  EXPECT_NE(dyn.find("int32_t M)"), std::string::npos);  // the dynamic size as an argument
  const std::string mix = emit_example("minicv");
  EXPECT_NE(mix.find("AscendC::CrossCoreSetFlag<2, PIPE_FIX>(0);"), std::string::npos);
  EXPECT_NE(mix.find("AscendC::CrossCoreWaitFlag(0);"), std::string::npos);
  EXPECT_NE(mix.find("if ASCEND_IS_AIC {"), std::string::npos);
  EXPECT_NE(mix.find("if ASCEND_IS_AIV {"), std::string::npos);
  const std::string ws = emit_example("matmul_add_dev");
  EXPECT_NE(ws.find("GM_ADDR c_ub_ws_handle"), std::string::npos);  // a workspace argument
}

// A column broadcast (Brcb per column block), axpy and a reduction over the first axis (RA).
TEST(AscendCEmit, ColumnBroadcastAxpyAndFirstAxisReduction) {
  auto X = T::Tensor("X", {16, 64}, DType::Float32);
  auto S = T::Tensor("S", {64}, DType::Float32);
  PrimFunc f = T::prim_func("colb", {X, S}, [&] {
    T::Kernel(1, [&](Expr, Expr) {
      T::Scope(Core::Vector, [&] {
        Buffer x = T::alloc_ub("x", {16, 64}, DType::Float32);
        Buffer y = T::alloc_ub("y", {16, 64}, DType::Float32);
        Buffer c = T::alloc_ub("c", {16, 1}, DType::Float32);
        Buffer s = T::alloc_ub("s", {64}, DType::Float32);
        T::copy(X, x);
        T::tile::fill(c, 0.5);
        T::pipe_barrier(Pipe::ALL);
        T::tile::broadcast(y, c);
        T::pipe_barrier(Pipe::V);
        T::tile::axpy(y, x, 2.0);
        T::pipe_barrier(Pipe::V);
        T::reduce_sum(y, s, 0);
        T::pipe_barrier(Pipe::ALL);
        T::copy(s, S);
      });
    });
  });
  const std::string text = ascendc::emit(lower(f, default_target()), default_target());
  EXPECT_NE(text.find("AscendC::Brcb(y, c, 2, AscendC::BrcbRepeatParams(8, 64));"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("AscendC::Brcb(y[56], c, 2, AscendC::BrcbRepeatParams(8, 64));"),
            std::string::npos);
  EXPECT_NE(text.find("AscendC::Axpy(y, x, 2.0f, 1024);"), std::string::npos);
  EXPECT_NE(text.find("AscendC::ReduceSum<float, AscendC::Pattern::Reduce::RA>(s, y,"),
            std::string::npos);
}

// Compare (tensor and scalar forms) into a bitmask, Select tensor-tensor.
TEST(AscendCEmit, CompareAndSelect) {
  auto X = T::Tensor("X", {2, 64}, DType::Float32);
  auto Y = T::Tensor("Y", {2, 64}, DType::Float32);
  PrimFunc f = T::prim_func("cmpsel", {X, Y}, [&] {
    T::Kernel(1, [&](Expr, Expr) {
      T::Scope(Core::Vector, [&] {
        Buffer x = T::alloc_ub("x", {2, 64}, DType::Float32);
        Buffer y = T::alloc_ub("y", {2, 64}, DType::Float32);
        Buffer m = T::alloc_ub("m", {16}, DType::UInt8);
        Buffer k = T::alloc_ub("k", {16}, DType::UInt8);
        T::copy(X, x);
        T::pipe_barrier(Pipe::ALL);
        T::tile::compare(m, x, 0.5, "GT");
        T::tile::compare(k, x, x, "EQ");
        T::pipe_barrier(Pipe::V);
        T::tile::select(y, m, x, x, 2);
        T::pipe_barrier(Pipe::ALL);
        T::copy(y, Y);
      });
    });
  });
  const std::string text = ascendc::emit(lower(f, default_target()), default_target());
  EXPECT_NE(text.find("AscendC::Compares(m, x, 0.5f, AscendC::CMPMODE::GT, 128);"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("AscendC::Compare(k, x, x, AscendC::CMPMODE::EQ, 128);"), std::string::npos);
  EXPECT_NE(
      text.find("AscendC::Select(y, m, x, x, AscendC::SELMODE::VSEL_TENSOR_TENSOR_MODE, 128);"),
      std::string::npos);
}

// A tile op without an AscendC form in the emitter: an error naming it and its source line.
// T.tile.tanh: the virtual NPU's tanh is glibc's tanhf, AscendC's Tanh its own approximation,
// so the emitter writes neither (emit_activation.cpp).
TEST(AscendCEmit, UnsupportedOpIsAnErrorNamingItAndItsLine) {
  auto X = T::Tensor("X", {8, 64}, DType::Float32);
  auto Y = T::Tensor("Y", {8, 64}, DType::Float32);
  int line = 0;
  PrimFunc f = T::prim_func("th", {X, Y}, [&] {
    T::Kernel(1, [&](Expr, Expr) {
      T::Scope(Core::Vector, [&] {
        Buffer x = T::alloc_ub("x", {8, 64}, DType::Float32);
        T::copy(X, x);
        T::pipe_barrier(Pipe::ALL);
        line = __LINE__ + 1;
        T::tile::tanh(x, x);
        T::pipe_barrier(Pipe::ALL);
        T::copy(x, Y);
      });
    });
  });
  try {
    ascendc::emit(lower(f, default_target()), default_target());
    FAIL() << "emitted a kernel with T.tile.tanh";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("T.tile.tanh (the virtual NPU computes glibc's tanhf"), std::string::npos)
        << msg;
    EXPECT_NE(msg.find("has no AscendC form"), std::string::npos) << msg;
    EXPECT_NE(msg.find(fmt::format("ascendc_emit_test.cpp:{}", line)), std::string::npos) << msg;
  }
}

// A shift by a distance the AscendC pages give no result for (not a constant within the
// element's width): an error naming the op, what it needs and the line.
TEST(AscendCEmit, ShiftByAComputedDistanceIsAnError) {
  auto X = T::Tensor("X", {8, 64}, DType::Int16);
  auto Y = T::Tensor("Y", {8, 64}, DType::Int16);
  auto B = T::Scalar("bits", DType::Int32);
  int line = 0;
  PrimFunc f = T::prim_func("shl", {X, Y, B}, [&] {
    T::Kernel(1, [&](Expr, Expr) {
      T::Scope(Core::Vector, [&] {
        Buffer x = T::alloc_ub("x", {8, 64}, DType::Int16);
        T::copy(X, x);
        T::pipe_barrier(Pipe::ALL);
        line = __LINE__ + 1;
        T::tile::shift_left(x, x, B);
        T::pipe_barrier(Pipe::ALL);
        T::copy(x, Y);
      });
    });
  });
  try {
    ascendc::emit(lower(f, default_target()), default_target());
    FAIL() << "emitted a shift by a computed distance";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("T.tile.shift_left by a distance that is not a constant in [0, 16)"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find(fmt::format("ascendc_emit_test.cpp:{}", line)), std::string::npos) << msg;
  }
}

// A division by a scalar: AscendC has no Divs, and a multiplication by the reciprocal rounds
// twice; the emitter spreads the scalar over its UB scratch and divides tile by tile.
TEST(AscendCEmit, DivisionByAScalarDividesByASpreadTile) {
  auto X = T::Tensor("X", {8, 64}, DType::Float32);
  auto Y = T::Tensor("Y", {8, 64}, DType::Float32);
  PrimFunc f = T::prim_func("divs", {X, Y}, [&] {
    T::Kernel(1, [&](Expr, Expr) {
      T::Scope(Core::Vector, [&] {
        Buffer x = T::alloc_ub("x", {8, 64}, DType::Float32);
        T::copy(X, x);
        T::pipe_barrier(Pipe::ALL);
        T::tile::div(x, x, 3.0);
        T::pipe_barrier(Pipe::ALL);
        T::copy(x, Y);
      });
    });
  });
  const std::string text = ascendc::emit(lower(f, default_target()), default_target());
  EXPECT_NE(text.find("AscendC::Duplicate(tl_scratch_float32, 3.0f, 512);"), std::string::npos)
      << text;
  EXPECT_NE(text.find("AscendC::Div(x, x, tl_scratch_float32, 512);"), std::string::npos) << text;
  EXPECT_EQ(text.find("Muls"), std::string::npos) << text;
}

// The backend through tl::compile: the same text, and a second compile hits the cache.
TEST(AscendCEmit, BackendThroughCompile) {
  PrimFunc f = build_kernel(find_kernel("add_dev"), {});
  CompileOptions opt;
  opt.disk_cache = false;
  const std::string a = ascendc_source(f, default_target(), opt);
  EXPECT_EQ(a, ascendc::emit(lower(f, default_target()), default_target()));
  EXPECT_EQ(ascendc_backend().name(), "ascendc");
  EXPECT_EQ(ascendc_source(f, default_target(), opt), a);
}

}  // namespace
}  // namespace tl
