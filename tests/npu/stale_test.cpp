// The stale-data checker (tl/npu/stale.h, docs/virtual_npu.md "Stale-data checker"): what it
// reports on bug 1 of issue 27 as the compiler emitted it before its fix, on the classic
// expert-mode tail bug, that it is quiet on every example, and its switches.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>

#include "common/error_of.h"
#include "common/example_checks.h"
#include "common/scoped_env.h"
#include "tl/kernel_registry.h"
#include "tl/npu/hazard.h"
#include "tl/npu/npu.h"
#include "tl/npu/stale.h"
#include "tl/npu/timing.h"
#include "tl/npu/trace.h"
#include "tl/parser.h"
#include "tl/runtime.h"

namespace tl {
namespace {

using npu::StaleFinding;

/// The findings of launching `text` with `args` under the checker.
std::vector<StaleFinding> findings(const std::string& text, Device& dev,
                                   const std::vector<Arg>& args) {
  std::vector<StaleFinding> f;
  compile(parse(text)).launch(dev, args, {.threads = 2, .check_stale = true, .stale_findings = &f});
  return f;
}

std::string all(const std::vector<StaleFinding>& f) {
  std::string s;
  for (const auto& x : f) s += x.str() + "\n";
  return s;
}

// Bug 1 of issue 27 as legalize_copies emitted it (the developer kernel `rowsq` of the issue,
// 13 x 100, lowered before the fix; a plain expert kernel here, so this test does not depend on
// the developer passes): the K loop's second copy is clipped to 36 of 64 columns, the
// accumulator adds the stale rest of `x`, and the whole-row reduce_sum folds it into every
// row sum (41 % relative error).
constexpr const char* kBug1 = R"(@T.prim_func
def k(X: T.Tensor((13, 100), "float32"), Y: T.Tensor((13,), "float32")):
    with T.Kernel(2, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            if vid == 0:
                x = T.alloc_ub((8, 64), "float32", address=2048)
                acc = T.alloc_ub((8, 64), "float32", address=0)
                s = T.alloc_ub((8,), "float32", address=2048)
                T.tile.fill(acc, 0.0)
                for c in T.serial(2):
                    if c > 0:
                        T.wait_flag("V", "MTE2", 0, auto=True)
                    T.copy(X[cid * 8:cid * 8 + T.min(13 - cid * 8, 8), c * 64:c * 64 + T.min(100 - c * 64, 64)], x[0:T.min(13 - cid * 8, 8), 0:T.min(100 - c * 64, 64)], pad=True, clipped=True)  # @k.py:13
                    T.set_flag("MTE2", "V", 0, auto=True)
                    vec_t0 = T.alloc_ub((8, 64), "float32", address=4096)
                    T.wait_flag("MTE2", "V", 0, auto=True)
                    T.pipe_barrier("V", auto=True)
                    T.tile.mul(vec_t0, x, x)
                    if c + 1 < 2:
                        T.set_flag("V", "MTE2", 0, auto=True)
                    T.pipe_barrier("V", auto=True)
                    T.tile.add(acc, acc, vec_t0)
                T.pipe_barrier("V", auto=True)
                T.reduce_sum(acc, s)  # @k.py:16
                T.set_flag("V", "MTE3", 0, auto=True)
                T.wait_flag("V", "MTE3", 0, auto=True)
                T.copy(s[0:T.min(13 - cid * 8, 8)], Y[cid * 8:cid * 8 + T.min(13 - cid * 8, 8)], pad=True)  # @k.py:17
)";

TEST(StaleChecker, ReportsBug1TheClippedTailSummedIntoTheRowSums) {
  Device dev;
  Tensor X = uniform(dev, {13, 100}, f32, 1), Y = Tensor::empty(dev, {13}, f32);
  auto f = findings(kBug1, dev, {X, Y});
  ASSERT_EQ(f.size(), 1u) << all(f);
  EXPECT_EQ(f[0].kind, StaleFinding::Kind::StoreToGM);
  EXPECT_EQ(f[0].op, "copy");
  EXPECT_EQ(f[0].buffer, "Y");
  EXPECT_EQ(f[0].element, std::vector<int64_t>{0});  // block 0: all 8 sums
  EXPECT_EQ(f[0].invalid, 8);
  EXPECT_EQ(f[0].total, 8);
  EXPECT_EQ(f[0].loc.str(), "k.py:17");
  EXPECT_NE(f[0].origin.find("stale since the clipped copy at k.py:13"), std::string::npos)
      << f[0].origin;
  EXPECT_EQ(f[0].core, "block 0 AIV0");
  EXPECT_EQ(f[0].count, 2);  // both blocks
}

// Bug 2 of issue 27 (a let before `with T.Kernel` never ran) is fixed; what the checker
// reported on it before the fix is recorded in tests/regress/let_before_kernel_test.cpp, and an
// unset variable in a region address is StaleRules.ScalarUsesOfInvalidValues.

// The classic expert-mode tail bug: DataCopyPad of a 100-element fp32 row into a 128-wide UB
// row (the pad lanes reach column 104), then a ReduceSum of the whole 128-wide row, stored to
// GM: columns 104..127 were never written.
constexpr const char* kExpertTail = R"(@T.prim_func
def tail(X: T.Tensor((8, 100), "float32"), Y: T.Tensor((8,), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            if vid == 0:
                x = T.alloc_ub((8, 128), "float32")
                s = T.alloc_ub((8,), "float32")
                T.copy(X, x[0:8, 0:100], pad=True)  # @tail.py:8
                T.set_flag("MTE2", "V", 0)
                T.wait_flag("MTE2", "V", 0)
                T.reduce_sum(x, s)  # @tail.py:11
                T.set_flag("V", "MTE3", 0)
                T.wait_flag("V", "MTE3", 0)
                T.copy(s, Y)  # @tail.py:14
)";

TEST(StaleChecker, ReportsTheExpertTailBugAReduceOverAWholeRowAfterAPaddedCopy) {
  Device dev;
  Tensor X = uniform(dev, {8, 100}, f32, 1), Y = Tensor::empty(dev, {8}, f32);
  auto f = findings(kExpertTail, dev, {X, Y});
  ASSERT_EQ(f.size(), 1u) << all(f);
  EXPECT_EQ(f[0].str(),
            "invalid data stored to GM at tail.py:14: T.copy stores 8 invalid of 8 elements into "
            "'Y', the first Y[0]; "
            "never written in this launch (first in block 0 AIV0)");
  // Fixed (the row reduced over the 100 columns it holds): quiet, and hazard-free.
  std::string fixed = kExpertTail;
  fixed.replace(fixed.find("T.reduce_sum(x, s)"), 18, "T.reduce_sum(x[0:8, 0:100], s)");
  EXPECT_EQ(all(findings(fixed, dev, {X, Y})), "");
}

// Every registered example (expert and developer) on random inputs: no finding. The largest
// run at smaller sizes than their registry defaults, with the same tiles (tlc demo runs the
// defaults under the checker).
TEST(StaleChecker, QuietOnEveryExample) {
  const std::map<std::string, std::map<std::string, std::string>> smaller = {
      {"copy_gm_l1", {{"M", "256"}, {"N", "2048"}}},
      {"copy_gm_ub", {{"M", "256"}, {"N", "2048"}}},
      {"gemm", {{"M", "256"}, {"N", "512"}, {"K", "256"}}},
      {"gemm_dev", {{"M", "256"}, {"N", "512"}, {"K", "512"}}},
      {"gemm_pipelined", {{"M", "256"}, {"N", "512"}, {"K", "512"}}},
      {"minicv", {{"M", "256"}, {"N", "256"}}},
      {"rms_norm", {{"M", "64"}}},
  };
  for (const auto* k : registered_kernels()) {
    SCOPED_TRACE(k->name);
    Device dev;
    auto it = smaller.find(k->name);
    auto f =
        build_kernel(*k, it == smaller.end() ? std::map<std::string, std::string>{} : it->second);
    auto args = ref::random_args(dev, f);
    std::vector<StaleFinding> found;
    compile(f).launch(dev, args, {.check_stale = true, .stale_findings = &found});
    EXPECT_EQ(all(found), "");
  }
}

using tltest::ScopedEnv;

std::string launch_error(Device& dev, const std::vector<Arg>& args, const LaunchOptions& opt) {
  return tltest::error_if_any([&] { compile(parse(kExpertTail)).launch(dev, args, opt); });
}

// On with check_hazards and TL_CHECK_STALE=1, off when either says so, and its own option wins.
TEST(StaleChecker, SwitchesOptionEnvironmentAndCheckHazards) {
  Device dev;
  Tensor X = uniform(dev, {8, 100}, f32, 1), Y = Tensor::empty(dev, {8}, f32);
  const std::string want =
      "stale-data check of kernel tail: 1 use(s) of invalid data\n  invalid data stored to GM";
  {
    ScopedEnv env("TL_CHECK_STALE", nullptr);
    EXPECT_EQ(launch_error(dev, {X, Y}, {}), "");  // off by default
    EXPECT_EQ(launch_error(dev, {X, Y}, {.check_hazards = true}).rfind(want, 0), 0u);
    EXPECT_EQ(launch_error(dev, {X, Y}, {.check_hazards = true, .check_stale = false}), "");
    EXPECT_EQ(launch_error(dev, {X, Y}, {.check_stale = true}).rfind(want, 0), 0u);
    // Timing-only launches compute no data: nothing to check.
    npu::Profile prof;
    EXPECT_EQ(
        launch_error(dev, {X, Y}, {.timing_only = true, .profile = &prof, .check_stale = true}),
        "");
  }
  {
    ScopedEnv env("TL_CHECK_STALE", "1");
    EXPECT_EQ(launch_error(dev, {X, Y}, {}).rfind(want, 0), 0u);
    EXPECT_EQ(launch_error(dev, {X, Y}, {.check_stale = false}), "");
  }
  {
    ScopedEnv env("TL_CHECK_STALE", "0");
    EXPECT_EQ(launch_error(dev, {X, Y}, {.check_hazards = true}), "");
  }
  {
    ScopedEnv env("TL_CHECK_STALE", "yes");
    EXPECT_EQ(launch_error(dev, {X, Y}, {}),
              "TL_CHECK_STALE must be 1 (run the stale-data checker on every launch) or 0 (never), "
              "got 'yes'");
  }
}

/// Exit status and output (stdout and stderr) of a shell command.
std::pair<int, std::string> shell(const std::string& cmd) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return {-1, ""};
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// tlc run --check-stale turns the checker on whatever TL_CHECK_STALE says: with a malformed
// value in the environment the option still runs (the environment is not read), without it
// the launch reads the variable and fails naming it (exit status 1: the kernel failed).
TEST(StaleChecker, TlcRunCheckStaleOption) {
  const std::string tlc = std::string("'") + TL_TLC_PATH + "' run add_dev --set M=8 --set N=64";
  auto [status, out] = shell("TL_CHECK_STALE=yes " + tlc + " --check-stale");
  EXPECT_EQ(status, 0) << out;
  EXPECT_NE(out.find("reference: match"), std::string::npos) << out;
  std::tie(status, out) = shell("TL_CHECK_STALE=yes " + tlc);
  EXPECT_EQ(status, 1) << out;
  EXPECT_NE(out.find("TL_CHECK_STALE must be 1"), std::string::npos) << out;
}

// ctest runs the whole suite, C++ and Python, with the checker on (tests/CMakeLists.txt,
// python/CMakeLists.txt): a build change that dropped it would silently lose that coverage.
TEST(StaleChecker, TheSuiteRunsWithTheCheckerOn) {
  if (!std::getenv("TL_SOURCE_DIR")) GTEST_SKIP() << "TL_SOURCE_DIR not set (run through ctest)";
  const char* v = std::getenv("TL_CHECK_STALE");
  EXPECT_EQ(std::string(v ? v : "(unset)"), "1");
  // The Python suite's ctest entry sets it too.
  std::ifstream py(std::string(std::getenv("TL_SOURCE_DIR")) + "/python/CMakeLists.txt");
  std::string text((std::istreambuf_iterator<char>(py)), std::istreambuf_iterator<char>());
  const size_t entry = text.find("set_tests_properties(python_suite");
  ASSERT_NE(entry, std::string::npos);
  EXPECT_NE(text.find("TL_CHECK_STALE=1", entry), std::string::npos);
}

// Timed mode: the checker checks the functional run; the time-ordered replay runs without it.
TEST(StaleChecker, TimedLaunchesAreCheckedOnce) {
  Device dev;
  Tensor X = uniform(dev, {8, 100}, f32, 1), Y = Tensor::empty(dev, {8}, f32);
  npu::Profile prof;
  std::vector<StaleFinding> f;
  compile(parse(kExpertTail))
      .launch(dev, {X, Y}, {.profile = &prof, .check_stale = true, .stale_findings = &f});
  ASSERT_EQ(f.size(), 1u) << all(f);
  EXPECT_EQ(f[0].count, 1);
}

// The checkers' reports as strings (npu::hazard_report): empty for a clean trace, the hazard
// checker's message for one with an unordered pair.
TEST(StaleChecker, HazardReportIsTheHazardCheckersMessage) {
  for (bool sync : {true, false}) {
    std::string text = kExpertTail;
    if (!sync)
      for (const char* s : {"                T.set_flag(\"MTE2\", \"V\", 0)\n",
                            "                T.wait_flag(\"MTE2\", \"V\", 0)\n"})
        text.erase(text.find(s), std::string(s).size());
    Device dev;
    Tensor X = uniform(dev, {8, 100}, f32, 1), Y = Tensor::empty(dev, {8}, f32);
    npu::Trace trace;
    compile(parse(text)).launch(dev, {X, Y}, {.trace = &trace, .check_stale = false});
    const std::string r = npu::hazard_report(trace, dev.target());
    if (sync)
      EXPECT_EQ(r, "");
    else
      EXPECT_EQ(r.rfind("hazard check of kernel tail: 1 unordered access pair(s)", 0), 0u) << r;
  }
}

// Every op with virtual-NPU semantics has a stale-data rule (the table is checked when it is
// built; this names any gap).
TEST(StaleChecker, EveryOpWithSemanticsHasARule) {
  for (const OpDef* op : all_ops())
    EXPECT_EQ(npu::implements(*op), npu::has_stale_rule(*op)) << op->name;
}

// The same findings for any host thread count.
TEST(StaleChecker, FindingsDoNotDependOnTheThreadCount) {
  std::string first;
  for (int threads : {1, 2, 8}) {
    Device dev;
    Tensor X = uniform(dev, {13, 100}, f32, 1), Y = Tensor::empty(dev, {13}, f32);
    std::vector<StaleFinding> f;
    compile(parse(kBug1))
        .launch(dev, {X, Y}, {.threads = threads, .check_stale = true, .stale_findings = &f});
    if (first.empty()) first = all(f);
    EXPECT_EQ(all(f), first) << threads << " threads";
  }
}

}  // namespace
}  // namespace tl
