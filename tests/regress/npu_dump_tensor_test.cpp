// Regression of issue 10, item 9: T.dump_tensor of a sub-region of a fractal buffer (L1, L0C)
// printed the first elements of the buffer's storage (rows 0..15 of its first fractal column)
// whatever the region was. It prints the region's elements, row-major, and says which region.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "tl/lang.h"
#include "tl/npu/npu.h"

namespace tl {
namespace {

constexpr int M = 32, K = 16, N = 32;

/// C = A x I on the cube (so L0C holds A exactly), dumping A_L1 and C_L0C: whole, and the
/// region rows [16, 32) x columns [8, 24).
PrimFunc dump_regions() {
  auto A = T::Tensor("A", {M, K}, DType::Float16);
  auto B = T::Tensor("B", {K, N}, DType::Float16);
  return T::prim_func("dump_regions", {A, B}, [&] {
    T::Kernel(1, [&](Expr, Expr) {
      T::Scope(Core::Cube, [&] {
        auto a = T::alloc_L1("A_L1", {M, K}, DType::Float16);
        auto b = T::alloc_L1("B_L1", {K, N}, DType::Float16);
        auto c = T::alloc_L0C("C_L0C", {M, N}, DType::Float32);
        T::copy(A, a);
        T::copy(B, b);
        T::set_flag(Pipe::MTE2, Pipe::MTE1, 0);
        T::wait_flag(Pipe::MTE2, Pipe::MTE1, 0);
        T::gemm_v0(a, b, c, {.init = true});
        T::set_flag(Pipe::M, Pipe::FIX, 0);
        T::wait_flag(Pipe::M, Pipe::FIX, 0);
        T::dump_tensor(a.region({16, 4}, {16, 8}), 1);
        T::dump_tensor(c.region({16, 8}, {16, 16}), 2);
        T::dump_tensor(a, 3);
      });
    });
  });
}

/// The numbers of `line` after its last '['.
std::vector<double> numbers(const std::string& line) {
  std::vector<double> v;
  std::string body = line.substr(line.rfind('[') + 1);
  std::istringstream in(body);
  double x;
  char sep;
  while (in >> x) {
    v.push_back(x);
    in >> sep;
  }
  return v;
}

TEST(NpuDumpTensor, SubRegionOfL1AndL0CPrintsTheRegion) {
  auto k = compile(dump_regions());
  Device dev;
  // A[r][c] = r * 16 + c (exact in fp16 up to 2048); B = identity.
  Tensor A = arange(dev, {M, K}, DType::Float16);
  std::vector<double> eye(K * N, 0.0);
  for (int i = 0; i < K; ++i) eye[i * N + i] = 1.0;
  Tensor B = from_vector(dev, {K, N}, DType::Float16, eye);
  std::ostringstream os;
  k.launch(dev, {A, B}, {.out = &os});
  std::istringstream lines(os.str());
  std::string l1, l0c, whole;
  std::getline(lines, l1);
  std::getline(lines, l0c);
  std::getline(lines, whole);

  EXPECT_NE(l1.find("A_L1 float16 [16:32, 4:12] ["), std::string::npos) << l1;
  std::vector<double> want;
  for (int r = 16; r < 32; ++r)
    for (int c = 4; c < 12; ++c) want.push_back(r * K + c);
  EXPECT_EQ(numbers(l1), want) << l1;

  EXPECT_NE(l0c.find("C_L0C float32 [16:32, 8:24] ["), std::string::npos) << l0c;
  want.clear();
  for (int r = 16; r < 32; ++r)
    for (int c = 8; c < 24; ++c)
      want.push_back(c < K ? r * K + c : 0.0);  // C = A x I: columns >= K are 0
  EXPECT_EQ(numbers(l0c), want) << l0c;

  // The whole buffer: every element once, row-major, no region in the header.
  EXPECT_NE(whole.find("desc=3 A_L1 float16 ["), std::string::npos) << whole;
  want.clear();
  for (int i = 0; i < M * K; ++i) want.push_back(i);
  EXPECT_EQ(numbers(whole), want) << whole;
}

}  // namespace
}  // namespace tl
