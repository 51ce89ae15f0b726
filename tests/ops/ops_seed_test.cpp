// The test regime's level and seeds (tests/ops/ops_seed.h; docs/ops.md "Tests"): a test's seed
// is a function of OPS_TILELANG_SEED and the test's own full name only, so running it alone,
// filtered or shuffled gives it the same data; OPS_TILELANG_TEST_LEVEL reads 0/1/2 with 1 as
// the default and out-of-range values clamped; each grid test records its GM peak as a property
// of the test. These pin the properties docs/must_show.md cites.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "ops/ops_seed.h"

namespace {

/// Sets (or unsets) an environment variable for the scope, restoring it after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

/// FNV-1a of "<suite>.<name>/<extra>" from the base seed, written out here so the test fails
/// if the seed ever depends on anything else (the order tests run in, a counter, the time).
uint64_t expected(uint64_t base, const std::string& id) {
  uint64_t h = 1469598103934665603ull ^ base;
  for (unsigned char ch : id) h = (h ^ ch) * 1099511628211ull;
  return h;
}

TEST(OpsSeed, SeedIsAFunctionOfTheBaseSeedAndTheTestNameOnly) {
  const std::string id = "OpsSeed.SeedIsAFunctionOfTheBaseSeedAndTheTestNameOnly/";
  {
    ScopedEnv e("OPS_TILELANG_SEED", nullptr);
    EXPECT_EQ(opstest::test_seed(), expected(0, id));
    EXPECT_EQ(opstest::test_seed(), opstest::test_seed());  // no hidden counter
    EXPECT_EQ(opstest::test_seed("x"), expected(0, id + "x"));
    EXPECT_NE(opstest::test_seed("x"), opstest::test_seed());
  }
  ScopedEnv e("OPS_TILELANG_SEED", "12345");
  EXPECT_EQ(opstest::test_seed(), expected(12345, id));
  EXPECT_NE(opstest::test_seed(), expected(0, id));
}

TEST(OpsSeed, AnotherTestGetsAnotherSeed) {
  ScopedEnv e("OPS_TILELANG_SEED", nullptr);
  EXPECT_EQ(opstest::test_seed(), expected(0, "OpsSeed.AnotherTestGetsAnotherSeed/"));
  EXPECT_NE(opstest::test_seed(),
            expected(0, "OpsSeed.SeedIsAFunctionOfTheBaseSeedAndTheTestNameOnly/"));
}

TEST(OpsSeed, LevelDefaultsToOneAndClamps) {
  const std::pair<const char*, int> cases[] = {{nullptr, 1}, {"", 1},  {"0", 0}, {"1", 1},
                                               {"2", 2},     {"7", 2}, {"-3", 0}};
  for (const auto& [value, level] : cases) {
    ScopedEnv e("OPS_TILELANG_TEST_LEVEL", value);
    EXPECT_EQ(opstest::test_level(), level) << (value ? value : "(unset)");
  }
}

// A grid test run by this very binary (/proc/self/exe) with --gtest_output=json has the
// property gm_peak_bytes: its inputs and output (34 x 130 bf16, 8.8 KB each) at least.
TEST(OpsSeed, GridTestsRecordTheirGmPeakPerTest) {
  const std::string test = "Grid/SoftmaxGrid.ForwardMatchesFp64Reference/M34_N130_bfloat16";
  const auto out = std::filesystem::temp_directory_path() /
                   ("ops_seed_gm_peak." + std::to_string(getpid()) + ".json");
  // Resolved here: inside std::system's shell /proc/self/exe would be the shell.
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string cmd = "'" + self + "' --gtest_filter='" + test + "' --gtest_output=json:'" +
                          out.string() + "' > /dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream in(out);
  auto j = nlohmann::json::parse(in);
  std::filesystem::remove(out);
  const auto& t = j["testsuites"][0]["testsuite"][0];
  ASSERT_TRUE(t.contains("gm_peak_bytes")) << t.dump();
  EXPECT_GE(std::stoll(t["gm_peak_bytes"].get<std::string>()), 2 * 34 * 130 * 2);
}

}  // namespace
