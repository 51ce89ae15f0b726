// The profiling layer of cann_ops_tilelang (include/cann_ops_tilelang/core.h, docs/ops.md
// "Benchmarks and profiles"): ScopedRun hands LaunchOptions to every kernel an op launches and
// collects their profiles; summarize() adds the launches up and sets them against the
// target's roofline; Device::gm_peak_bytes() is the GM high-water mark of a call; `tlc op
// --profile` prints all of it; and the benchmark harness's mode switch (tests/ops/ops_bench.h).
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "cann_ops_tilelang/norm.h"
#include "ops/ops_bench.h"
#include "ops/ops_checked.h"

namespace {

using namespace cann_ops_tilelang;
using tl::DType;

// The Device's GM high-water mark: reset_peak() starts it at what is in use, allocations raise
// it, frees do not lower it.
TEST(OpsProfile, DeviceGmPeakIsTheHighWaterMarkSinceReset) {
  tl::Device dev;
  auto a = tl::Tensor::empty(dev, {1024}, DType::Float32);  // 4 KB held throughout
  const int64_t held = dev.gm_bytes_in_use();
  EXPECT_GE(held, 4096);
  {
    auto b = tl::Tensor::empty(dev, {4096}, DType::Float32);  // 16 KB, freed below
    EXPECT_GE(dev.gm_peak_bytes(), held + 16384);
  }
  EXPECT_EQ(dev.gm_bytes_in_use(), held);
  EXPECT_GE(dev.gm_peak_bytes(), held + 16384);  // the peak stays
  dev.reset_peak();
  EXPECT_EQ(dev.gm_peak_bytes(), held);
  auto c = tl::Tensor::empty(dev, {256}, DType::Float32);
  EXPECT_EQ(dev.gm_peak_bytes(), dev.gm_bytes_in_use());
}

// rms_norm_backward's peak counts what it allocates during the call: dx, dw and the fp32
// dW partials (2 * blocks rows of H), which are freed before it returns.
TEST(OpsProfile, GmPeakOfACallCountsItsWorkspace) {
  tl::Device dev;
  const int64_t M = 64, H = 512;
  auto x = tl::Tensor::empty(dev, {M, H}, DType::BFloat16);
  auto dy = tl::Tensor::empty(dev, {M, H}, DType::BFloat16);
  auto w = tl::Tensor::empty(dev, {H}, DType::BFloat16);
  const int64_t held = dev.gm_bytes_in_use();
  dev.reset_peak();
  auto g = rms_norm_backward(dy, x, w);
  const int64_t partials = 2 * (dev.target().num_aiv / 2) * H * 4;
  EXPECT_GE(dev.gm_peak_bytes(), held + M * H * 2 + H * 2 + partials);
  EXPECT_EQ(dev.gm_bytes_in_use(), held + g.dx.nbytes() + g.dw.nbytes());  // partials freed
}

// Without a ScopedRun nothing is collected; inside one every launch is profiled (the backward
// launches two kernels), and scopes nest.
TEST(OpsProfile, ScopedRunCollectsOneProfilePerLaunch) {
  tl::Device dev;
  auto x = tl::randn(dev, {7, 512}, DType::BFloat16, 1);
  auto w = tl::uniform(dev, {512}, DType::BFloat16, 2, 0.5, 1.5);
  RunOptions outer, inner;
  outer.profile = inner.profile = true;
  {
    ScopedRun a(outer);
    rms_norm(x, w);
    {
      ScopedRun b(inner);
      rms_norm_backward(x, x, w);
    }
    rms_norm(x, w);
  }
  rms_norm(x, w);  // no scope: not collected
  ASSERT_EQ(outer.profiles.size(), 2u);
  ASSERT_EQ(inner.profiles.size(), 2u);
  for (const auto& p : outer.profiles) {
    EXPECT_GT(p.total_us, 0);
    EXPECT_GT(p.gm_bytes, 7 * 512 * 2 * 2 - 1);  // x read, y written at least
  }
  auto s = summarize(inner.profiles, rms_norm_backward_cost(7, 512, DType::BFloat16), dev.target());
  EXPECT_EQ(s.launches, 2);
  EXPECT_NEAR(s.us, inner.profiles[0].total_us + inner.profiles[1].total_us, 1e-9);
  EXPECT_GT(s.roofline_us, 0);
  EXPECT_LT(s.roofline_fraction(), 1.0);
  bool vector_busy = false;
  for (const auto& [pipe, f] : s.busy) {
    EXPECT_GT(f, 0) << pipe;
    EXPECT_LE(f, 1.0 + 1e-9) << pipe;
    vector_busy = vector_busy || pipe == "aiv.V";
  }
  EXPECT_TRUE(vector_busy);
}

// The roofline takes the largest of the three bounds, from the target's own peaks.
TEST(OpsProfile, RooflineIsTheLargestBoundFromTheTargetPeaks) {
  const tl::Target& t = tl::default_target();
  const Peaks pk = target_peaks(t);
  EXPECT_EQ(pk.hbm_bytes_per_s, t.costs.hbm_bytes_per_s);
  // A2: 24 AICs x 8192 flops per cycle x 1.85 GHz = 363.7 TFLOPS fp16.
  EXPECT_NEAR(pk.cube_flops_per_s, t.num_aic * 8192.0 * t.clock_ghz * 1e9, 1e3);
  tl::npu::Profile one;
  one.total_us = 100;
  one.clock_ghz = t.clock_ghz;
  auto hbm = summarize({one}, {.bytes = 0.5 * pk.hbm_bytes_per_s * 1e-4}, t);  // 50 us of HBM
  EXPECT_EQ(hbm.bound, "hbm");
  EXPECT_NEAR(hbm.roofline_fraction(), 0.5, 1e-12);
  auto cube = summarize({one}, {.bytes = 1, .cube_flops = pk.cube_flops_per_s * 1e-4}, t);
  EXPECT_EQ(cube.bound, "cube");
  EXPECT_NEAR(cube.roofline_fraction(), 1.0, 1e-12);
}

std::pair<int, std::string> shell(const std::string& cmd) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// `tlc op NAME --profile` checks the op (the data computed in simulated-time order) and prints
// the profile and the GM peak of the call.
TEST(OpsProfile, TlcOpProfilePrintsTimeRooflineBusyAndGmPeak) {
  const std::string tlc = std::string("'") + TL_TLC_PATH + "' op ";
  for (const char* op : {"rms_norm --set residual=1", "rms_norm_backward"}) {
    auto [status, out] = shell(tlc + op + " --set M=33 --set H=512 --profile");
    EXPECT_EQ(status, 0) << out;
    for (const char* want : {"us simulated", "% of the hbm roofline", " aiv.V ", "GM peak"})
      EXPECT_NE(out.find(want), std::string::npos) << op << ": no '" << want << "' in\n" << out;
    EXPECT_EQ(out.find("NOT"), std::string::npos) << out;
  }
}

// OPS_TILELANG_BENCH's values; a malformed one is a failure naming it, not a silent skip.
TEST(OpsProfile, BenchModeFromTheEnvironment) {
  const char* old = std::getenv("OPS_TILELANG_BENCH");
  const std::string saved = old ? old : "";
  unsetenv("OPS_TILELANG_BENCH");
  EXPECT_EQ(opsbench::mode(), opsbench::Mode::Off);
  setenv("OPS_TILELANG_BENCH", "1", 1);
  EXPECT_EQ(opsbench::mode(), opsbench::Mode::Check);
  setenv("OPS_TILELANG_BENCH", "update", 1);
  EXPECT_EQ(opsbench::mode(), opsbench::Mode::Update);
  setenv("OPS_TILELANG_BENCH", "yes", 1);
  ::testing::TestPartResultArray failures;
  {
    ::testing::ScopedFakeTestPartResultReporter rep(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &failures);
    EXPECT_EQ(opsbench::mode(), opsbench::Mode::Off);
  }
  ASSERT_EQ(failures.size(), 1);
  EXPECT_NE(std::string(failures.GetTestPartResult(0).message()).find("got 'yes'"),
            std::string::npos);
  if (old)
    setenv("OPS_TILELANG_BENCH", saved.c_str(), 1);
  else
    unsetenv("OPS_TILELANG_BENCH");
}

// Every RMSNorm kernel under the hazard checker and in timed mode with data (simulated-time
// order, as the hardware runs it), bf16 and fp32, a tail tile included. Before the fix,
// rms_norm_bwd had two WAR hazards on the vector pipe (a tile.mul overwrote wb_ub / gf_ub that
// the previous, overlapping tile.mul still read): the hazard check failed, and in timed mode
// 16316 of 16896 dx values and 2540 of 24576 dW partials differed from program order
// (`tlc op rms_norm_backward --set M=33 --set H=512 --profile`: dw off by up to 2x).
TEST(OpsProfile, RmsNormKernelsAreHazardFreeAndTimeOrderIndependent) {
  for (DType dt : {DType::BFloat16, DType::Float32}) {
    tl::Device dev;
    auto x = tl::randn(dev, {33, 512}, dt, 1);
    auto r = tl::randn(dev, {33, 512}, dt, 3);
    auto w = tl::uniform(dev, {512}, dt, 2, 0.5, 1.5);
    // 1157 rows: 3 or 4 row tiles per AIV, so the resident kernels' second slot and their
    // prefetch run (33 rows give each AIV one tile at most), and a tail of 5 rows.
    auto xl = tl::randn(dev, {1157, 512}, dt, 4);
    auto calls = [&] {
      rms_norm(x, w, r, {.return_rstd = true});
      rms_norm_backward(x, r, w);
      rms_norm(xl, w);
      rms_norm_backward(xl, xl, w);
    };
    opstest::expect_hazard_free_and_time_order_free(calls, 6, std::string(tl::dtype_name(dt)));
  }
}

// The harness itself: `update` writes one JSONL line per case; `check` passes on that file, and
// fails naming the case when the baseline's time is 3 % away (beyond the 2 % rule) or a case
// is missing. Runs in a scratch TL_SOURCE_DIR so the committed baselines are untouched.
TEST(OpsProfile, BenchBaselineBeyondTwoPercentFails) {
  // Per process: other worktrees' suites may run this test at the same time.
  const std::string dir = ::testing::TempDir() + "opsbench_selftest_" + std::to_string(getpid());
  std::filesystem::create_directories(dir + "/tests/ops/baselines");
  const char* old_root = std::getenv("TL_SOURCE_DIR");
  const char* old_mode = std::getenv("OPS_TILELANG_BENCH");
  const std::string saved_root = old_root ? old_root : "", saved_mode = old_mode ? old_mode : "";
  setenv("TL_SOURCE_DIR", dir.c_str(), 1);
  const std::vector<opsbench::Case> cases{
      {"rms_norm", "7x512 bfloat16", [](tl::Device& d) {
         rms_norm(tl::Tensor::empty(d, {7, 512}, DType::BFloat16),
                  tl::Tensor::empty(d, {512}, DType::BFloat16));
         return rms_norm_cost(7, 512, DType::BFloat16, false, false);
       }}};
  auto failures_of = [&](const std::vector<opsbench::Case>& cs) {
    ::testing::TestPartResultArray f;
    {
      ::testing::ScopedFakeTestPartResultReporter rep(
          ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &f);
      opsbench::run_file("selftest", cs);
    }
    std::string all;
    for (int i = 0; i < f.size(); ++i)
      if (f.GetTestPartResult(i).failed()) all += f.GetTestPartResult(i).message();
    return all;
  };
  setenv("OPS_TILELANG_BENCH", "update", 1);
  EXPECT_EQ(failures_of(cases), "");
  const std::string path = dir + "/tests/ops/baselines/selftest.jsonl";
  std::string line;
  std::getline(std::ifstream(path), line);
  auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j["op"], "rms_norm");
  EXPECT_GT(j["us"].get<double>(), 0);
  EXPECT_GT(j["gm_peak_bytes"].get<double>(), 7 * 512 * 2 * 2 - 1);
  setenv("OPS_TILELANG_BENCH", "1", 1);
  EXPECT_EQ(failures_of(cases), "");
  j["us"] = j["us"].get<double>() * 1.03;
  std::ofstream(path) << j.dump() << "\n";
  EXPECT_NE(failures_of(cases).find("rms_norm | 7x512 bfloat16: "), std::string::npos);
  auto renamed = cases;
  renamed[0].what = "7x512 other";
  const std::string missing = failures_of(renamed);
  EXPECT_NE(missing.find("7x512 other: not in"), std::string::npos) << missing;
  EXPECT_NE(missing.find("no longer a case"), std::string::npos) << missing;
  if (old_root)
    setenv("TL_SOURCE_DIR", saved_root.c_str(), 1);
  else
    unsetenv("TL_SOURCE_DIR");
  if (old_mode)
    setenv("OPS_TILELANG_BENCH", saved_mode.c_str(), 1);
  else
    unsetenv("OPS_TILELANG_BENCH");
}

}  // namespace
