// The AscendC CPU model against the virtual NPU (docs/ascendc.md, "CPU model"): each hand-written
// AscendC kernel (kernels/) runs on the model and its tl::T twin (twins.h) on the VM, on the
// same random inputs, at tail sizes; outputs must be the same bytes, and both runs pass the
// hazard checker. The mutation test deletes one WaitFlag and requires the checker to name the
// unsynchronised pair.
#include <gtest/gtest.h>

#include <cstring>

#include "ascendc_cpu/model.h"
#include "kernels/kernels.h"
#include "tl/npu/npu.h"
#include "tl/npu/trace.h"
#include "twins.h"

namespace tl::ascendc_tests {
namespace {

/// Elements whose bytes differ between a and b (same shape and dtype).
int64_t differing(const Tensor& a, const Tensor& b) {
  const int64_t es = dtype_bytes(a.dtype());
  int64_t n = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    n += std::memcmp(a.data() + i * es, b.data() + i * es, static_cast<size_t>(es)) != 0;
  return n;
}

void run_vm(const PrimFunc& f, const std::vector<Arg>& args, Device& dev) {
  LaunchOptions opt;
  opt.check_hazards = true;
  tl::compile(f).launch(dev, args, opt);
}

struct Shape {
  int M, N;
};
std::string name_of(const testing::TestParamInfo<Shape>& p) {
  return fmt::format("M{}_N{}", p.param.M, p.param.N);
}

// Tails: sizes 1, 7, 33, 1000, 4097 in rows and columns (columns that are not whole 32-byte
// blocks take the padded copies; rows not a multiple of the per-core rows clip the last block).
const Shape kShapes[] = {{1, 1}, {7, 33}, {33, 7}, {1000, 33}, {7, 4097}, {33, 1000}};

class AddModel : public testing::TestWithParam<Shape> {};

TEST_P(AddModel, Fp16AndFp32MatchTheVm) {
  const auto [M, N] = GetParam();
  const int R = 2;
  for (DType dt : {DType::Float16, DType::Float32}) {
    Device dev;
    Tensor x = randn(dev, {M, N}, dt, 1), y = randn(dev, {M, N}, dt, 2);
    Tensor z_vm = Tensor::empty(dev, {M, N}, dt), z_model = Tensor::empty(dev, {M, N}, dt);
    run_vm(add_twin(M, N, R, dt), {x, y, z_vm}, dev);
    const int blocks = (M + 2 * R - 1) / (2 * R);
    auto kernel = dt == DType::Float16 ? tl_test_add_f16 : tl_test_add_f32;
    ascendc_cpu::launch(
        {.kernel = "add", .num_blocks = blocks, .tensors = {{"X", x}, {"Y", y}, {"Z", z_model}}},
        [&] { kernel(x.data(), y.data(), z_model.data(), M, N, R); });
    EXPECT_EQ(differing(z_vm, z_model), 0) << dtype_name(dt);
    // A live comparison: the outputs are the sums, not two copies of an untouched buffer.
    EXPECT_NE(differing(z_model, Tensor::empty(dev, {M, N}, dt)), 0);
  }
}
INSTANTIATE_TEST_SUITE_P(AscendcModelTails, AddModel, testing::ValuesIn(kShapes), name_of);

class SoftmaxModel : public testing::TestWithParam<Shape> {};

TEST_P(SoftmaxModel, MatchesTheVm) {
  const auto [M, N] = GetParam();
  Device dev;
  Tensor x = randn(dev, {M, N}, DType::Float32, 7);
  Tensor y_vm = Tensor::empty(dev, {M, N}, DType::Float32);
  Tensor y_model = Tensor::empty(dev, {M, N}, DType::Float32);
  run_vm(softmax_twin(M, N), {x, y_vm}, dev);
  ascendc_cpu::launch(
      {.kernel = "softmax", .num_blocks = (M + 15) / 16, .tensors = {{"X", x}, {"Y", y_model}}},
      [&] { tl_test_softmax(x.data(), y_model.data(), M, N); });
  EXPECT_EQ(differing(y_vm, y_model), 0);
  EXPECT_NE(differing(y_model, Tensor::empty(dev, {M, N}, DType::Float32)), 0);
}
INSTANTIATE_TEST_SUITE_P(AscendcModelTails, SoftmaxModel, testing::ValuesIn(kShapes), name_of);

// The same trace reaches the hazard checker: with the WaitFlag<MTE2_V> before the Add deleted,
// the copies into x and y and the Add that reads them are unordered, and the report names both
// instructions by their lines in the kernel file.
TEST(AscendcModel, MutantWithoutWaitFlagIsNamed) {
  Device dev;
  const int M = 7, N = 33;
  Tensor x = randn(dev, {M, N}, DType::Float16, 1), y = randn(dev, {M, N}, DType::Float16, 2);
  Tensor z = Tensor::empty(dev, {M, N}, DType::Float16);
  auto run = [&](auto kernel) {
    ascendc_cpu::launch(
        {.kernel = "add", .num_blocks = 2, .tensors = {{"X", x}, {"Y", y}, {"Z", z}}},
        [&] { kernel(x.data(), y.data(), z.data(), M, N, 2); });
  };
  EXPECT_NO_THROW(run(tl_test_add_f16));
  try {
    run(tl_test_add_f16_no_wait);
    FAIL() << "the hazard checker did not see the missing WaitFlag";
  } catch (const Error& e) {
    const std::string msg = e.what();
    if (getenv("TL_SHOW_REPORT")) fmt::print("{}\n", msg);
    EXPECT_NE(msg.find("RAW hazard on UB of block 0 AIV0: tile.add (V"), std::string::npos) << msg;
    EXPECT_NE(msg.find("is not ordered after copy (MTE2"), std::string::npos) << msg;
    EXPECT_NE(msg.find("kernels/add.cpp:"), std::string::npos) << msg;
    // The SetFlag whose WaitFlag was deleted is reported too.
    EXPECT_NE(msg.find("flag left set"), std::string::npos) << msg;
  }
}

// Same inputs, same outputs and the same trace (determinism of the one-core-at-a-time launch).
TEST(AscendcModel, RunsAreDeterministic) {
  Device dev;
  const int M = 33, N = 1000;
  Tensor x = randn(dev, {M, N}, DType::Float32, 3);
  Tensor y1 = Tensor::empty(dev, {M, N}, DType::Float32),
         y2 = Tensor::empty(dev, {M, N}, DType::Float32);
  npu::Trace t1, t2;
  ascendc_cpu::launch(
      {.kernel = "softmax", .num_blocks = 3, .tensors = {{"X", x}, {"Y", y1}}, .trace = &t1},
      [&] { tl_test_softmax(x.data(), y1.data(), M, N); });
  ascendc_cpu::launch(
      {.kernel = "softmax", .num_blocks = 3, .tensors = {{"X", x}, {"Y", y2}}, .trace = &t2},
      [&] { tl_test_softmax(x.data(), y2.data(), M, N); });
  EXPECT_EQ(differing(y1, y2), 0);
  ASSERT_EQ(t1.cores.size(), t2.cores.size());
  for (size_t c = 0; c < t1.cores.size(); ++c) {
    ASSERT_EQ(t1.cores[c].events.size(), t2.cores[c].events.size());
    for (size_t e = 0; e < t1.cores[c].events.size(); ++e)
      EXPECT_EQ(t1.cores[c].events[e].name, t2.cores[c].events[e].name);
  }
  EXPECT_GT(t1.cores[1].events.size(), 20u);  // the AIVs' instructions are in the trace
}

}  // namespace
}  // namespace tl::ascendc_tests
