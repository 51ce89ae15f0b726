// Regressions of issue 10 item 3 in the kernel registry: every generator's parameters are
// checked against their declared ParamRule before the generator runs, so a tile of 0 or a
// negative size (SIGFPE in the generator before), a value beyond int32 (silently truncated:
// M=4294967424 ran as M=128) or a dtype the generator does not support is a tl::Error naming
// the parameter and what it must be; huge values never crash a generator or the verifier.
#include <gtest/gtest.h>

#include "pass/pass_test_util.h"
#include "tl/kernel_registry.h"
#include "tl/verifier.h"

namespace tl {
namespace {

using testing::error_of;

TEST(KernelParams, ZeroOrNegativeIntegerParameterIsRejectedByEveryGenerator) {
  for (const KernelEntry* k : registered_kernels())
    for (const KernelParam& p : k->params) {
      if (!p.rule.is_integer()) continue;
      for (const char* v : {"0", "-1", "-2147483648"}) {
        std::string msg = error_of([&] { build_kernel(*k, {{p.name, v}}); });
        EXPECT_NE(msg.find(fmt::format("kernel {}: parameter {} must be ", k->name, p.name)),
                  std::string::npos)
            << k->name << " " << p.name << "=" << v << ": " << msg;
        EXPECT_NE(msg.find(fmt::format("got '{}'", v)), std::string::npos) << msg;
      }
    }
}

TEST(KernelParams, TileParameterStatesItsMultiple) {
  std::string msg = error_of([&] { build_kernel(find_kernel("flash_attention"), {{"bM", "48"}}); });
  EXPECT_NE(
      msg.find(
          "kernel flash_attention: parameter bM must be a multiple of 32 in [32, 65536], got '48'"),
      std::string::npos)
      << msg;
  msg = error_of([&] { build_kernel(find_kernel("gelu"), {{"tile", "0"}}); });
  EXPECT_NE(msg.find("parameter tile must be an integer in [1, 65536], got '0'"), std::string::npos)
      << msg;
}

TEST(KernelParams, ValueBeyondInt32IsAnErrorNotTruncated) {
  std::string msg = error_of([&] { build_kernel(find_kernel("gemm"), {{"M", "4294967424"}}); });
  EXPECT_NE(msg.find("parameter M must be an integer in [1, 2147483647], got '4294967424'"),
            std::string::npos)
      << msg;
  msg = error_of([&] { build_kernel(find_kernel("gemm"), {{"M", "99999999999999999999"}}); });
  EXPECT_NE(msg.find("parameter M must be"), std::string::npos) << msg;
  // KernelArgs::get used to static_cast the int64 to int.
  msg = error_of([&] {
    KernelArgs(std::map<std::string, std::string>{{"M", "4294967424"}}).get("M");
  });
  EXPECT_NE(msg.find("kernel parameter M: expected an integer that fits int32, got 4294967424"),
            std::string::npos)
      << msg;
}

TEST(KernelParams, JunkAndUnsupportedValuesAreRejected) {
  for (const char* v : {"", "abc", " 5", "+5", "0x10", "1e3", "5 "}) {
    std::string msg = error_of([&] { build_kernel(find_kernel("gemm"), {{"K", v}}); });
    EXPECT_NE(msg.find("parameter K must be"), std::string::npos) << "'" << v << "': " << msg;
  }
  std::string msg = error_of([&] { build_kernel(find_kernel("gelu"), {{"dtype", "bfloat16"}}); });
  EXPECT_NE(
      msg.find("kernel gelu: parameter dtype must be one of float32, float16, got 'bfloat16'"),
      std::string::npos)
      << msg;
  msg = error_of([&] { build_kernel(find_kernel("rms_norm"), {{"passes", "3"}}); });
  EXPECT_NE(msg.find("parameter passes must be an integer in [1, 2], got '3'"), std::string::npos)
      << msg;
  msg = error_of([&] { build_kernel(find_kernel("elementwise_add"), {{"blocks", "1000000000"}}); });
  EXPECT_NE(msg.find("parameter blocks must be an integer in [1, 65535]"), std::string::npos)
      << msg;
}

TEST(KernelParams, EveryDefaultMeetsItsRuleAndNamesADtypeWhereOneIsExpected) {
  for (const KernelEntry* k : registered_kernels()) {
    EXPECT_NO_THROW(resolve_kernel_args(*k)) << k->name;
    for (const KernelParam& p : k->params)
      for (const auto& v : p.rule.one_of) {
        if (p.name.find("dtype") != std::string::npos && !v.empty()) {
          EXPECT_TRUE(parse_dtype(v)) << k->name << " " << p.name << ": " << v;
        }
      }
  }
}

// The largest value each integer parameter accepts, and one past it: the generator either
// builds a kernel (which then verifies or not) or raises a tl::Error; it never overflows,
// divides by zero or crashes, and neither does the verifier on what it built.
TEST(KernelParams, HugeValuesNeverCrashAGeneratorOrTheVerifier) {
  const Target& t = get_target("A2");
  for (const KernelEntry* k : registered_kernels())
    for (const KernelParam& p : k->params) {
      if (!p.rule.is_integer()) continue;
      const int64_t top = p.rule.max - p.rule.max % p.rule.multiple_of;
      for (int64_t v : {top, top - p.rule.multiple_of, p.rule.max + 1}) {
        try {
          PrimFunc f = build_kernel(*k, {{p.name, std::to_string(v)}});
          (void)verify(f, t);
        } catch (const Error&) {
        }
      }
    }
}

TEST(KernelParams, ARuleWithoutValuesIsReportedNotDividedBy) {
  KernelEntry k{.name = "k",
                .summary = "",
                .params = {{"bM", "16", "", {.multiple_of = 0}}},
                .build = [](const KernelArgs&) { return PrimFunc(); }};
  std::string msg = error_of([&] { resolve_kernel_args(k); });
  EXPECT_NE(msg.find("kernel k: parameter bM has an empty rule"), std::string::npos) << msg;
  k.params[0].rule = {.min = 5, .max = 4};
  msg = error_of([&] { resolve_kernel_args(k); });
  EXPECT_NE(msg.find("has an empty rule"), std::string::npos) << msg;
}

TEST(KernelParams, CheckedProductReportsOverflow) {
  EXPECT_EQ(checked_product("x", {3, 5, 7}), 105);
  std::string msg = error_of([&] { checked_product("gemm: the block count", {65536, 65536}); });
  EXPECT_NE(msg.find("gemm: the block count"), std::string::npos) << msg;
  msg = error_of([&] { checked_product("tiles", {INT64_MAX, 2}); });
  EXPECT_NE(msg.find("tiles"), std::string::npos) << msg;
}

}  // namespace
}  // namespace tl
