// The opt-in benchmarks of cann_ops_tilelang (docs/ops.md, "Benchmarks"): each op's test file
// registers its benchmark shapes with OPS_BENCH(File, cases) and gets one gtest,
// OpsBench.File, which runs every case once in timed mode on the virtual NPU (timing only:
// the timing model needs the instruction stream, not the data) and compares each with the
// file's JSONL baseline tests/ops/baselines/File.jsonl. The simulator is deterministic, so a
// case whose simulated time moves beyond 2 % of its baseline, either way, fails: a slower
// kernel is a regression, a faster one must be acknowledged by rewriting the baseline.
//
// OPS_TILELANG_BENCH selects: unset or 0 = skipped (the default suite stays fast); 1 or check
// = compare; update = rewrite the baseline. Each line records per case: simulated us, bytes
// the op must move and GB/s at that time, flops, the roofline (HBM bandwidth, cube and vector
// peaks of the target) and the fraction reached, per-pipe busy fractions, the bytes the
// kernels actually moved, and the GM peak of the call (Device::gm_peak_bytes).
#pragma once
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cann_ops_tilelang/core.h"

namespace opsbench {

enum class Mode { Off, Check, Update };

/// OPS_TILELANG_BENCH: unset, "" or "0" = Off; "1" or "check" = Check; "update" = Update.
inline Mode mode() {
  const char* v = std::getenv("OPS_TILELANG_BENCH");
  if (v == nullptr || *v == 0 || std::string(v) == "0") return Mode::Off;
  if (std::string(v) == "update") return Mode::Update;
  if (std::string(v) == "1" || std::string(v) == "check") return Mode::Check;
  ADD_FAILURE() << "OPS_TILELANG_BENCH: expected 0, 1, check or update, got '" << v << "'";
  return Mode::Off;
}

/// One benchmark: `run` allocates the op's inputs on `dev` (zeros: a timing-only launch does
/// not read them), calls the op once and returns what the op must at least move and compute.
struct Case {
  std::string op;    // the all_ops() name
  std::string what;  // shape, dtype and options, e.g. "4096x7168 bfloat16 residual"
  std::function<cann_ops_tilelang::OpCost(tl::Device&)> run;
};

/// Runs one case on a fresh Device of A2 (the baselines' target: the figures docs/ops.md
/// quotes) and returns its baseline line.
inline nlohmann::ordered_json measure(const Case& c) {
  tl::Device dev(tl::get_target("A2"));
  cann_ops_tilelang::RunOptions ro;
  ro.profile = true;
  ro.launch.timing_only = true;
  cann_ops_tilelang::OpCost cost;
  {
    cann_ops_tilelang::ScopedRun scope(ro);
    cost = c.run(dev);
  }
  auto p = cann_ops_tilelang::summarize(ro.profiles, cost, dev.target());
  auto r = [](double v, int digits) {  // fixed digits keep the files' diffs readable
    return std::stod(fmt::format("{:.{}f}", v, digits));
  };
  nlohmann::ordered_json busy = nlohmann::ordered_json::object();
  for (const auto& [pipe, f] : p.busy) busy[pipe] = r(f, 3);
  nlohmann::ordered_json j;
  j["op"] = c.op;
  j["case"] = c.what;
  j["target"] = dev.target().name;
  j["us"] = r(p.us, 2);
  j["task_us"] = r(p.task_us, 2);
  j["launches"] = p.launches;
  j["bytes"] = cost.bytes;
  j["gbps"] = r(p.us > 0 ? cost.bytes / p.us / 1e3 : 0, 1);
  j["flops"] = cost.cube_flops;
  j["vector_ops"] = cost.vector_ops;
  j["roofline_us"] = r(p.roofline_us, 2);
  j["bound"] = p.bound;
  j["roofline_fraction"] = r(p.roofline_fraction(), 3);
  j["gm_bytes_moved"] = p.gm_bytes;
  j["busy"] = busy;
  j["gm_peak_bytes"] = dev.gm_peak_bytes();
  return j;
}

inline std::string baseline_path(const std::string& file) {
  const char* root = std::getenv("TL_SOURCE_DIR");
  return std::string(root ? root : ".") + "/tests/ops/baselines/" + file + ".jsonl";
}

/// The markdown row docs/ops.md's table is made of (printed by every run).
inline std::string table_row(const nlohmann::ordered_json& j) {
  std::string busy;
  for (const auto& [k, v] : j["busy"].items())
    if (v.get<double>() >= 0.05) busy += fmt::format("{} {:.0f}%, ", k, 100 * v.get<double>());
  if (!busy.empty()) busy.resize(busy.size() - 2);
  return fmt::format("| {} | {} | {:.1f} | {:.1f} ({}) | {:.0f}% | {:.0f} | {} | {:.1f} |",
                     j["op"].get<std::string>(), j["case"].get<std::string>(),
                     j["us"].get<double>(), j["roofline_us"].get<double>(),
                     j["bound"].get<std::string>(), 100 * j["roofline_fraction"].get<double>(),
                     j["gbps"].get<double>(), busy, j["gm_peak_bytes"].get<double>() / 1e6);
}

/// Runs `cases` for the test file `file` in the mode OPS_TILELANG_BENCH selects.
inline void run_file(const std::string& file, const std::vector<Case>& cases) {
  const Mode m = mode();
  if (m == Mode::Off) GTEST_SKIP() << "benchmarks are opt-in: OPS_TILELANG_BENCH=1 (or update)";
  if (!std::getenv("TL_SOURCE_DIR")) GTEST_SKIP() << "TL_SOURCE_DIR not set (run through ctest)";
  const std::string path = baseline_path(file);
  std::map<std::string, nlohmann::json> base;
  if (m == Mode::Check) {
    std::ifstream in(path);
    ASSERT_TRUE(in) << "no baseline " << path << ": write it with OPS_TILELANG_BENCH=update";
    for (std::string line; std::getline(in, line);) {
      if (line.empty()) continue;
      auto j = nlohmann::json::parse(line);
      base[j["op"].get<std::string>() + " | " + j["case"].get<std::string>()] = j;
    }
  }
  std::string out;
  for (const auto& c : cases) {
    auto j = measure(c);
    std::cout << table_row(j) << "\n";
    out += j.dump() + "\n";
    if (m != Mode::Check) continue;
    const std::string key = c.op + " | " + c.what;
    auto it = base.find(key);
    if (it == base.end()) {
      ADD_FAILURE() << key << ": not in " << path << " (rewrite it: OPS_TILELANG_BENCH=update)";
      continue;
    }
    const double was = it->second["us"].get<double>(), now = j["us"].get<double>();
    EXPECT_LE(std::abs(now - was), 0.02 * was)
        << key << ": " << now << " us simulated against " << was << " us in " << path
        << " (beyond 2 %; if intended, rewrite it: OPS_TILELANG_BENCH=update)";
    const double peak_was = it->second["gm_peak_bytes"].get<double>();
    EXPECT_LE(std::abs(j["gm_peak_bytes"].get<double>() - peak_was), 0.02 * peak_was)
        << key << ": GM peak " << j["gm_peak_bytes"] << " bytes against " << peak_was;
    base.erase(it);
  }
  if (m == Mode::Check) {
    for (const auto& [key, _] : base)
      ADD_FAILURE() << key << ": in " << path << " but no longer a case (rewrite the baseline)";
  } else {
    std::ofstream(path) << out;
    std::cout << "wrote " << path << "\n";
  }
}

}  // namespace opsbench

/// Registers the benchmarks of a test file: OPS_BENCH(rms_norm_test, cases) where `cases` is
/// an expression giving std::vector<opsbench::Case>; the gtest is OpsBench.rms_norm_test.
#define OPS_BENCH(File, cases)        \
  TEST(OpsBench, File) {              \
    opsbench::run_file(#File, cases); \
  }
