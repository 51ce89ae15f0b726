// The test regime's level and seeds (tests/ops/ops_seed.h; docs/ops.md "Tests"): a test's seed
// is a function of OPS_TILELANG_SEED and the test's own full name only, so running it alone,
// filtered or shuffled gives it the same data; OPS_TILELANG_TEST_LEVEL reads 0/1/2 with 1 as
// the default and out-of-range values clamped; the binary's --seed flag means what the variable
// means; each grid test records its GM peak as a property of the test. These pin the properties
// docs/must_show.md cites.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "common/scoped_env.h"
#include "ops/ops_seed.h"

namespace {

using tltest::ScopedEnv;

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

// The flag's parsing (tests/tl_tests_main.cpp calls it before gtest): --seed N and --seed=N are
// taken out of argv and set the base seed; everything else stays, in order; a bad value is an
// error naming it.
TEST(OpsSeed, SeedFlagIsTakenOutOfArgvAndSetsTheBaseSeed) {
  ScopedEnv e("OPS_TILELANG_SEED", "1");
  auto run = [](std::vector<std::string> args, int* argc_out) {
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    int argc = static_cast<int>(args.size());
    std::string err = opstest::take_seed_flag(argc, argv.data());
    std::vector<std::string> left(argv.begin(), argv.begin() + argc);
    *argc_out = argc;
    return std::make_pair(err, left);
  };
  int argc = 0;
  auto [err, left] = run({"tl_tests", "--gtest_filter=A.*", "--seed", "42", "-x"}, &argc);
  EXPECT_EQ(err, "");
  EXPECT_EQ(left, (std::vector<std::string>{"tl_tests", "--gtest_filter=A.*", "-x"}));
  EXPECT_STREQ(std::getenv("OPS_TILELANG_SEED"), "42");
  EXPECT_EQ(opstest::test_seed(),
            expected(42, "OpsSeed.SeedFlagIsTakenOutOfArgvAndSetsTheBaseSeed/"));
  std::tie(err, left) = run({"tl_tests", "--seed=18446744073709551615"}, &argc);
  EXPECT_EQ(err, "");
  EXPECT_EQ(argc, 1);
  EXPECT_STREQ(std::getenv("OPS_TILELANG_SEED"), "18446744073709551615");
  std::tie(err, left) = run({"tl_tests"}, &argc);  // no flag: the variable stays
  EXPECT_EQ(err, "");
  EXPECT_STREQ(std::getenv("OPS_TILELANG_SEED"), "18446744073709551615");
  for (const char* bad : {"x7", "-1", "", "18446744073709551616"}) {
    std::tie(err, left) = run({"tl_tests", std::string("--seed=") + bad}, &argc);
    EXPECT_NE(err.find(std::string("'") + bad + "'"), std::string::npos) << err;
  }
  std::tie(err, left) = run({"tl_tests", "--seed"}, &argc);
  EXPECT_NE(err.find("--seed needs a value"), std::string::npos) << err;
}

// Records the seed it gets as a property (read by the next test from a child run).
TEST(OpsSeed, RecordsItsSeed) {
  ::testing::Test::RecordProperty("seed", std::to_string(opstest::test_seed()));
}

// This very binary run with --seed 12345, and with OPS_TILELANG_SEED=12345: the same seed, the
// one the formula gives; an invalid --seed stops the binary with status 2.
TEST(OpsSeed, SeedFlagAndVariableGiveTheSameSeedInAChildRun) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  auto seed_of = [&](const std::string& how) -> std::string {
    const auto out = std::filesystem::temp_directory_path() /
                     ("ops_seed_flag." + std::to_string(getpid()) + ".json");
    const std::string cmd = how + " '" + self + "' --gtest_filter=OpsSeed.RecordsItsSeed" +
                            (how.find("SEED=") == std::string::npos ? " --seed 12345" : "") +
                            " --gtest_output=json:'" + out.string() + "' > /dev/null 2>&1";
    if (std::system(cmd.c_str()) != 0) return "failed: " + cmd;
    std::ifstream in(out);
    auto j = nlohmann::json::parse(in);
    std::filesystem::remove(out);
    return j["testsuites"][0]["testsuite"][0]["seed"].get<std::string>();
  };
  const std::string want = std::to_string(expected(12345, "OpsSeed.RecordsItsSeed/"));
  EXPECT_EQ(seed_of("env -u OPS_TILELANG_SEED"), want);
  EXPECT_EQ(seed_of("env OPS_TILELANG_SEED=12345"), want);
  EXPECT_EQ(seed_of("env OPS_TILELANG_SEED=99"),
            std::to_string(expected(99, "OpsSeed.RecordsItsSeed/")));
  const std::string bad = "'" + self + "' --seed nope --gtest_filter=None > /dev/null 2>&1";
  const int st = std::system(bad.c_str());
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 2) << st;
}

}  // namespace
