// Issue 10 item 9: every example's reference check (tests/common/example_checks.cpp, what
// `tlc run` reports) holds with every dtype the example accepts. The dtypes come from the
// registry (ParamRule::one_of of every dtype parameter), so an example that starts accepting a
// dtype is checked with it here. `tlc run gelu --set dtype=float16` used to report a false
// MISMATCH (fp32 tolerances), and minicv with out_dtype=float16 one wherever exp overflowed
// fp16 to inf, as the rounded reference does too.
#include <gtest/gtest.h>

#include "common/example_checks.h"
#include "tl/kernel_registry.h"
#include "tl/npu/npu.h"

namespace tl {
namespace {

/// Small sizes per example (every tile still a valid one for each accepted dtype on A2).
const std::map<std::string, std::map<std::string, std::string>>& small_sizes() {
  static const std::map<std::string, std::map<std::string, std::string>> m = {
      {"gelu", {{"M", "2"}, {"N", "2048"}, {"tile", "1024"}, {"blocks", "2"}}},
      {"elementwise_add", {{"M", "2"}, {"N", "2048"}, {"tile", "1024"}, {"blocks", "2"}}},
      {"gemm", {{"M", "128"}, {"N", "256"}, {"K", "128"}}},
      {"gemm_pipelined", {{"M", "128"}, {"N", "256"}, {"K", "256"}, {"blocks", "1"}}},
      {"minicv", {{"M", "128"}, {"N", "128"}, {"K", "128"}}},
      {"rms_norm", {{"M", "16"}, {"N", "2048"}, {"blocks", "2"}}},
      {"rms_norm_dynamic", {{"N", "2048"}, {"blocks", "2"}}},
      {"flash_attention", {{"S", "128"}, {"D", "128"}, {"bK", "128"}, {"bD", "128"}}},
      {"flash_attention_pipelined", {{"S", "128"}, {"D", "128"}, {"bK", "128"}, {"bD", "128"}}},
      {"gemm_dev", {{"M", "128"}, {"N", "256"}, {"K", "128"}}},
      {"matmul_add_dev", {{"M", "128"}, {"N", "128"}, {"K", "128"}}},
      {"flash_attention_dev", {{"S", "128"}, {"D", "64"}}},
      {"add_dev", {{"M", "8"}, {"N", "1024"}, {"bM", "2"}}},
      {"rms_norm_dev", {{"M", "16"}, {"N", "256"}}},
      {"gelu_dev", {{"M", "4"}, {"N", "1024"}, {"bM", "2"}}},
      {"softmax_dev", {{"M", "16"}, {"N", "256"}}},
      {"copy_gm_ub", {{"M", "64"}, {"N", "1024"}, {"tN", "256"}, {"blocks", "1"}}},
      {"copy_gm_l1", {{"M", "64"}, {"N", "1024"}, {"tN", "256"}, {"blocks", "2"}, {"slots", "2"}}},
      {"ring_sum", {{"M", "33"}, {"N", "40"}, {"blocks", "3"}}},
  };
  return m;
}

/// Every combination of the values of `k`'s non-integer parameters.
std::vector<std::map<std::string, std::string>> choices(const KernelEntry& k) {
  std::vector<std::map<std::string, std::string>> all = {{}};
  for (const auto& p : k.params) {
    if (p.rule.is_integer()) continue;
    std::vector<std::map<std::string, std::string>> next;
    for (const auto& c : all)
      for (const auto& v : p.rule.one_of) {
        auto d = c;
        d[p.name] = v;
        next.push_back(d);
      }
    all = next;
  }
  return all;
}

/// Runs example `name` with `overrides` on random inputs; its reference check's report.
std::string run_and_check(const std::string& name,
                          const std::map<std::string, std::string>& overrides) {
  const KernelEntry& k = find_kernel(name);
  PrimFunc f = build_kernel(k, overrides);
  Device dev;
  auto args = ref::random_args(dev, f);
  compile(f).launch(dev, args);
  std::map<std::string, std::string> values;
  for (const auto& p : k.params) values[p.name] = p.default_value;
  for (const auto& [n, v] : overrides) values[n] = v;
  return ref::check_kernel(name, KernelArgs(values), args).value_or("no reference");
}

// `tlc run gelu --set dtype=float16` reported a MISMATCH: the check used fp32 tolerances for
// a kernel whose four vector ops round to fp16.
TEST(ExampleChecks, GeluFloat16IsCheckedWithFp16Tolerances) {
  EXPECT_EQ(
      run_and_check(
          "gelu",
          {{"M", "2"}, {"N", "2048"}, {"tile", "1024"}, {"blocks", "2"}, {"dtype", "float16"}}),
      "");
}

// minicv with an fp16 output: exp of the GEMM overflows fp16 to inf for some random inputs, as
// the reference rounded to fp16 does; inf == inf is a match, not "inf, expected 72704".
TEST(ExampleChecks, MinicvFloat16OutputOverflowMatchesTheRoundedReference) {
  EXPECT_EQ(
      run_and_check("minicv", {{"M", "128"}, {"N", "128"}, {"K", "256"}, {"out_dtype", "float16"}}),
      "");
}

class ExampleDtypes : public ::testing::TestWithParam<std::string> {};

TEST_P(ExampleDtypes, EveryAcceptedDtypeMatchesItsReference) {
  const KernelEntry& k = find_kernel(GetParam());
  ASSERT_TRUE(small_sizes().count(k.name)) << "add small sizes for " << k.name;
  int checked = 0;
  for (const auto& choice : choices(k)) {
    auto overrides = small_sizes().at(k.name);
    overrides.insert(choice.begin(), choice.end());
    std::string what;
    for (const auto& [n, v] : choice) what += fmt::format(" {}={}", n, v.empty() ? "''" : v);
    PrimFunc f;
    try {
      f = build_kernel(k, overrides);
    } catch (const Error& e) {
      // A combination the generator rejects (gemm_pipelined: out_dtype neither dtype nor fp32).
      EXPECT_NE(std::string(e.what()).find("out_dtype"), std::string::npos)
          << k.name << what << ": " << e.what();
      continue;
    }
    Device dev;
    auto args = ref::random_args(dev, f);
    ASSERT_NO_THROW(compile(f).launch(dev, args)) << k.name << what;
    auto check = ref::check_kernel(k.name, resolve_kernel_args(k, overrides), args);
    if (!check) continue;  // no reference (the copy benchmarks)
    EXPECT_EQ(*check, "") << k.name << what;
    ++checked;
  }
  if (!k.name.starts_with("copy_gm_")) {
    EXPECT_GT(checked, 0) << k.name;
  }
}

std::vector<std::string> kernel_names() {
  std::vector<std::string> r;
  for (const KernelEntry* k : registered_kernels()) r.push_back(k->name);
  return r;
}

INSTANTIATE_TEST_SUITE_P(Examples, ExampleDtypes, ::testing::ValuesIn(kernel_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace tl
