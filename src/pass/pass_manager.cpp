// The pass manager: runs named passes in order and implements the debug knobs (print the IR
// after passes that changed it, time each pass).
#include <chrono>
#include <cstdio>

#include "tl/pass.h"
#include "tl/printer.h"

namespace tl {
namespace {

std::vector<std::string> split_names(const std::string& s) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= s.size()) {
    size_t comma = s.find(',', at);
    if (comma == std::string::npos) comma = s.size();
    std::string name = s.substr(at, comma - at);
    while (!name.empty() && name.front() == ' ') name.erase(name.begin());
    while (!name.empty() && name.back() == ' ') name.pop_back();
    if (!name.empty()) out.push_back(name);
    at = comma + 1;
  }
  return out;
}

bool env_on(std::string_view name) {
  std::string v = env_value(name);
  return !v.empty() && v != "0";
}

}  // namespace

PassOptions with_env(PassOptions opt) {
  opt.print_after_all |= env_on("TL_PRINT_AFTER_ALL");
  opt.time_passes |= env_on("TL_TIME_PASSES");
  for (auto& n : split_names(env_value("TL_PRINT_AFTER"))) opt.print_after.push_back(std::move(n));
  return opt;
}

PrimFunc run_passes(const PrimFunc& f, const Target& target, const std::vector<Pass>& passes,
                    const PassOptions& options) {
  PassOptions opt = with_env(options);
  auto sink = opt.sink ? opt.sink : [](const std::string& s) { std::fputs(s.c_str(), stderr); };
  for (const auto& name : opt.print_after) {
    bool known = false;
    for (const auto& p : passes) known |= p.name == name;
    if (!known) {
      std::string names;
      for (const auto& p : passes) names += (names.empty() ? "" : ", ") + p.name;
      throw Error(fmt::format("print-after: no pass named '{}' (passes: {})", name, names));
    }
  }
  PrimFunc cur = f;
  for (const auto& pass : passes) {
    bool dump = opt.print_after_all;
    for (const auto& n : opt.print_after) dump |= n == pass.name;
    // Text before the pass, only when a dump may need it: printing is not free.
    std::string before = dump ? print(cur) : std::string();
    auto t0 = std::chrono::steady_clock::now();
    PrimFunc next = pass.run(cur, target);
    auto t1 = std::chrono::steady_clock::now();
    TL_ASSERT(next != nullptr, "pass {} returned no function", pass.name);
    if (opt.time_passes) {
      auto us = std::chrono::duration_cast<std::chrono::microseconds>(t1 - t0).count();
      sink(fmt::format("// pass {}: {} us\n", pass.name, us));
    }
    if (dump && next != cur) {
      std::string after = print(next);
      if (after != before) sink(fmt::format("// IR after {}\n{}", pass.name, after));
    }
    cur = next;
  }
  return cur;
}

}  // namespace tl
