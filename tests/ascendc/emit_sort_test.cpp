// The AscendC emitter's gather, sort, index and atomic-add forms (src/ascendc/emit_sort.cpp,
// docs/ascendc.md): which API each op becomes, and the constructs still without a form, each an
// error naming the construct and its source line. Their end-to-end runs (bit-identical to the
// VM on the CPU model) are the AscendcE2E.sort_ops / atomic_rows / op.topk_gate* ctest entries.
#include <gtest/gtest.h>

#include <functional>

#include "common/error_of.h"
#include "tl/ascendc.h"
#include "tl/lang.h"
#include "tl/pass.h"

namespace tl {
namespace {

/// A vector kernel over X [64] (float32, or `dt`) loaded into x; `body` adds the op under test
/// on x and its own buffers, and records its line.
PrimFunc kernel(DType dt, const std::function<void(Buffer x, Buffer X)>& body) {
  auto X = T::Tensor("X", {64}, dt);
  return T::prim_func("k", {X}, [&] {
    T::Kernel(1, [&](Expr, Expr) {
      T::Scope(Core::Vector, [&] {
        Buffer x = T::alloc_ub("x", {64}, dt);
        T::copy(X, x);
        T::pipe_barrier(Pipe::ALL);
        body(x, X);
        T::pipe_barrier(Pipe::ALL);
        T::copy(x, X);
      });
    });
  });
}

std::string emit_of(const PrimFunc& f) {
  return ascendc::emit(lower(f, default_target()), default_target());
}

using tltest::error_of;

TEST(AscendCEmitSort, MapsTheOpsToTheirApi) {
  PrimFunc f = kernel(DType::Float32, [](Buffer x, Buffer X) {
    Buffer pairs = T::alloc_ub("pairs", {128}, DType::Float32);
    Buffer pos = T::alloc_ub("pos", {64}, DType::Float32);
    Buffer off = T::alloc_ub("off", {16}, DType::Int32);
    Buffer w = T::alloc_ub("w", {16}, DType::Float32);
    T::topk(pairs, x, 16, 64);
    T::pipe_barrier(Pipe::V);
    T::tile::gather_mask(pos, pairs, "P1010");
    T::tile::createvecindex(off, 0);
    T::pipe_barrier(Pipe::V);
    T::tile::mul(off, off, 4);  // byte offsets
    T::pipe_barrier(Pipe::V);
    T::tile::gather(w, x, T::view("offu", off, DType::UInt32));
    T::pipe_barrier(Pipe::ALL);
    T::atomic_add(X.region({0}, {16}), w);
  });
  const std::string text = emit_of(f);
  for (const char* want :
       {"AscendC::ArithProgression<float>(", "AscendC::Sort32(", "AscendC::MrgSort(",
        "AscendC::GatherMask(pos, pairs, static_cast<uint8_t>(2), false, 0, "
        "AscendC::GatherMaskParams{1, 2, 8, 0}, tl_kept);",
        "AscendC::CreateVecIndex(off, static_cast<int32_t>(0), 16);",
        "AscendC::Gather(w, x, offu, 0, 16);", "AscendC::SetAtomicAdd<float>();",
        "AscendC::SetAtomicNone();"})
    EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;
}

struct Bad {
  const char* what;  // in the message
  std::function<void(Buffer x)> op;
  DType dt = DType::Float32;
};

TEST(AscendCEmitSort, ConstructsWithoutAFormAreErrorsNamingThemAndTheirLine) {
  int line = 0;
  const std::vector<Bad> cases = {
      {"T.tile.gather of int8 (Gather on A2 takes 16- and 32-bit types)",
       [&](Buffer x) {
         Buffer w = T::alloc_ub("w", {32}, DType::Int8);
         Buffer off = T::alloc_ub("off", {32}, DType::UInt32);
         line = __LINE__ + 1;
         T::tile::gather(w, x, off);
       },
       DType::Int8},
      {"T.tile.gather_mask with a mask tile",
       [&](Buffer x) {
         Buffer m = T::alloc_ub("m", {8}, DType::UInt32);
         Buffer p = T::alloc_ub("p", {64}, DType::Float32);
         line = __LINE__ + 1;
         T::tile::gather_mask(p, x, m);
       }},
      {"T.tile.gather_mask over 'p': not whole 256-byte repeats",
       [&](Buffer x) {
         Buffer p = T::alloc_ub("p", {16}, DType::Float32);
         line = __LINE__ + 1;
         T::tile::gather_mask(x.region({0}, {8}), p, "P0101");
       }},
      {"T.tile.arith_progression with a non-integer diff",
       [&](Buffer x) {
         line = __LINE__ + 1;
         T::tile::arith_progression(x, 0.0, 0.5);
       }},
      {"T.init_sort_buf has no AscendC form",
       [&](Buffer x) {
         line = __LINE__ + 1;
         T::init_sort_buf(x, 32);
       }},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    const std::string msg =
        error_of([&] { emit_of(kernel(c.dt, [&](Buffer x, Buffer) { c.op(x); })); });
    EXPECT_NE(msg.find(c.what), std::string::npos) << msg;
    EXPECT_NE(msg.find(fmt::format("emit_sort_test.cpp:{}", line)), std::string::npos) << msg;
  }
}

// From L0C the Fixpipe rounds the float32 sum to float16 before the atomic unit adds it: two
// roundings where the VM's atomic_add rounds once. Refused, naming the construct and its line.
TEST(AscendCEmitSort, AtomicAddFromL0CIntoHalfIsAnError) {
  auto A = T::Tensor("A", {16, 16}, DType::Float16);
  auto C = T::Tensor("C", {16, 16}, DType::Float16);
  int line = 0;
  PrimFunc f = T::prim_func("l0c_atomic", {A, C}, [&] {
    T::Kernel(1, [&](Expr, Expr) {
      T::Scope(Core::Cube, [&] {
        Buffer a = T::alloc_L1("a", {16, 16}, DType::Float16);
        Buffer b = T::alloc_L1("b", {16, 16}, DType::Float16);
        Buffer c = T::alloc_L0C("c", {16, 16}, DType::Float32);
        T::copy(A, a);
        T::copy(A, b);
        T::pipe_barrier(Pipe::ALL);
        T::gemm_v0(a, b, c, {.init = true});
        T::pipe_barrier(Pipe::ALL);
        line = __LINE__ + 1;
        T::atomic_add(C.region({0, 0}, {16, 16}), c);
      });
    });
  });
  const std::string msg = error_of([&] { emit_of(f); });
  EXPECT_NE(msg.find("T.atomic_add from L0C into float16"), std::string::npos) << msg;
  EXPECT_NE(msg.find(fmt::format("emit_sort_test.cpp:{}", line)), std::string::npos) << msg;
}

}  // namespace
}  // namespace tl
