// The pass manager: runs named passes in order and implements the debug knobs (print the IR
// after passes that changed it, time each pass, check each pass's output invariant).
#include <time.h>

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

/// CPU time of the calling thread, in microseconds.
int64_t thread_cpu_us() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

bool env_on(std::string_view name) {
  std::string v = env_value(name);
  return !v.empty() && v != "0";
}

/// A user error unless every name in `names` is a pass of `passes`.
void check_pass_names(const std::vector<std::string>& names, const std::vector<Pass>& passes,
                      std::string_view option) {
  for (const auto& name : names) {
    bool known = false;
    for (const auto& p : passes) known |= p.name == name;
    if (!known) {
      std::string all;
      for (const auto& p : passes) all += (all.empty() ? "" : ", ") + p.name;
      throw Error(fmt::format("{}: no pass named '{}' (passes: {})", option, name, all));
    }
  }
}

/// verify_each: `out`, the output of `pass`, must meet the pass's invariant. A violation is
/// the pass's bug, not the user's: an InternalError naming the pass and every violation.
void check_invariant(const Pass& pass, const PrimFunc& out, const Target& target) {
  auto ds = verify(out, target, {.spec = *pass.ensures});
  if (ds.empty()) return;
  internal_error(
      __FILE__, __LINE__, "the output of every pass meets its invariant",
      fmt::format("pass '{}' broke its output invariant (the {} spec) on kernel '{}', target {}; "
                  "{} violation{}:\n{}",
                  pass.name, spec_name(*pass.ensures), out->name, target.name, ds.size(),
                  ds.size() == 1 ? "" : "s", format_diagnostics(ds)));
}

}  // namespace

PassOptions with_env(PassOptions opt) {
  opt.print_after_all |= env_on("TL_PRINT_AFTER_ALL");
  opt.time_passes |= env_on("TL_TIME_PASSES");
  opt.verify_each |= env_on("TL_VERIFY_EACH");
  for (auto& n : split_names(env_value("TL_PRINT_AFTER"))) opt.print_after.push_back(std::move(n));
  return opt;
}

PrimFunc run_passes(const PrimFunc& f, const Target& target, const std::vector<Pass>& passes,
                    const PassOptions& options) {
  PassOptions opt = with_env(options);
  auto sink = opt.sink ? opt.sink : [](const std::string& s) { std::fputs(s.c_str(), stderr); };
  check_pass_names(opt.print_after, passes, "print-after");
  check_pass_names(opt.disabled_passes, passes, "disabled passes");
  // verify_each: a pass is held to its invariant only when its input met the expert spec (an
  // invalid input is the user's doing, reported by the verify pass unless it is disabled).
  // A pass that met its invariant also met the expert spec, which every spec includes.
  bool input_valid = opt.verify_each && verify(f, target).empty();
  PrimFunc cur = f;
  for (const auto& pass : passes) {
    bool disabled = false;
    for (const auto& n : opt.disabled_passes) disabled |= n == pass.name;
    if (disabled) continue;
    bool dump = opt.print_after_all;
    for (const auto& n : opt.print_after) dump |= n == pass.name;
    // Text before the pass, only when a dump may need it: printing is not free.
    std::string before = dump ? print(cur) : std::string();
    auto t0 = std::chrono::steady_clock::now();
    // The thread's CPU clock is a system call: read only when asked for.
    const int64_t c0 = opt.time_passes ? thread_cpu_us() : 0;
    PrimFunc next = pass.run(cur, target);
    const int64_t c1 = opt.time_passes ? thread_cpu_us() : 0;
    auto t1 = std::chrono::steady_clock::now();
    TL_ASSERT(next != nullptr, "pass {} returned no function", pass.name);
    if (opt.time_passes) {
      // Wall time, and the thread's CPU time: on a loaded machine the wall time also counts the
      // time other processes held the core (docs/compiler.md, "Compile latency").
      auto us = std::chrono::duration_cast<std::chrono::microseconds>(t1 - t0).count();
      sink(fmt::format("// pass {}: {} us (cpu {} us)\n", pass.name, us, c1 - c0));
    }
    if (dump && next != cur) {
      std::string after = print(next);
      if (after != before) sink(fmt::format("// IR after {}\n{}", pass.name, after));
    }
    if (opt.verify_each && pass.phase) {
      std::string broken = pass.phase(next);
      if (!broken.empty())
        internal_error(
            __FILE__, __LINE__, "the output of every pass meets its phase invariant",
            fmt::format("pass '{}' broke its phase invariant on kernel '{}', target {}: {}",
                        pass.name, next->name, target.name, broken));
    }
    if (opt.verify_each) {
      if (input_valid && pass.ensures)
        check_invariant(pass, next, target);
      else
        input_valid = verify(next, target).empty();
    }
    cur = next;
  }
  return cur;
}

}  // namespace tl
