// OPS_TILELANG_TEST_LEVEL and per-test seeds for the cann_ops_tilelang C++ tests (docs/ops.md,
// "Tests"): the level picks the parameter grids; a test's seed is a hash of OPS_TILELANG_SEED
// (or the test binary's --seed flag, tests/tl_tests_main.cpp) and the test's own full name, so
// filtering or reordering tests never changes its data.
#pragma once
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "tl/runtime.h"

namespace opstest {

/// OPS_TILELANG_TEST_LEVEL: 0, 1 (default) or 2.
inline int test_level() {
  const char* v = std::getenv("OPS_TILELANG_TEST_LEVEL");
  if (v == nullptr || *v == 0) return 1;
  int l = std::atoi(v);
  return l < 0 ? 0 : (l > 2 ? 2 : l);
}

/// A seed from the base seed (OPS_TILELANG_SEED, default 0) and the running test's full name
/// (suite, name and parameter): the same test always gets the same data.
inline uint64_t test_seed(const std::string& extra = {}) {
  const char* v = std::getenv("OPS_TILELANG_SEED");
  uint64_t h = 1469598103934665603ull ^ (v ? std::strtoull(v, nullptr, 10) : 0);
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string id = info ? std::string(info->test_suite_name()) + "." + info->name() : std::string();
  id += "/" + extra;
  for (unsigned char ch : id) h = (h ^ ch) * 1099511628211ull;
  return h;
}

/// Takes the test binary's `--seed N` (or `--seed=N`) out of argv, before gtest sees it, and
/// makes it the base seed: OPS_TILELANG_SEED=N for this process (and the tools it runs), so the
/// flag means exactly what the variable means and wins over it. N: a decimal uint64. Returns an
/// error message ("" when fine, the flag absent included).
inline std::string take_seed_flag(int& argc, char** argv) {
  std::string err;
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    std::string value;
    if (a == "--seed") {
      if (i + 1 >= argc) return "--seed needs a value (a decimal unsigned integer)";
      value = argv[++i];
    } else if (a.substr(0, 7) == "--seed=") {
      value = std::string(a.substr(7));
    } else {
      argv[out++] = argv[i];
      continue;
    }
    char* end = nullptr;
    errno = 0;
    std::strtoull(value.c_str(), &end, 10);
    if (value.empty() || value[0] == '-' || *end != 0 || errno == ERANGE)
      return "--seed: '" + value + "' is not a decimal unsigned 64-bit integer";
    ::setenv("OPS_TILELANG_SEED", value.c_str(), 1);
  }
  argc = out;
  argv[argc] = nullptr;
  return err;
}

/// Records `dev`'s GM high-water mark (Device::gm_peak_bytes: the test's inputs, outputs and
/// workspaces, the device being the test's own) as the running test's property gm_peak_bytes,
/// which --gtest_output=json:FILE (or xml) writes per test; docs/ops.md "GM peak".
inline void record_gm_peak(const tl::Device& dev) {
  ::testing::Test::RecordProperty("gm_peak_bytes", std::to_string(dev.gm_peak_bytes()));
}

}  // namespace opstest
