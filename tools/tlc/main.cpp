// tlc: the tl-ascend command-line driver.
//   tlc list                         registered kernels and their parameters
//   tlc print KERNEL [--set N=V]     IR text (with `# @file:line` locations); with
//        [--print-after-all | --print-after=NAME[,NAME] | --time-passes] the kernel is
//        lowered: IR dumps / pass timings on stderr, the lowered IR on stdout
//   tlc verify KERNEL [--target A2]  every verifier diagnostic
//   tlc run KERNEL [--set N=V]       run on the virtual NPU with random inputs, check the
//                                    reference when one is registered, print the results
//   tlc run KERNEL --mode timed [--trace F.json] [--html F.html] [--timing-only]
//                                    timing model: profile table, Perfetto trace, HTML timeline;
//                                    the data is computed in simulated-time order and checked
//   tlc demo [--out DIR]             the main job: verify, run (hazard-checked, reference-checked)
//                                    and profile every example; IR, traces, timelines to out/
#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "tl/kernel_registry.h"
#include "tl/npu/npu.h"
#include "tl/npu/timing.h"
#include "tl/npu/trace.h"
#include "tl/pass.h"
#include "tl/printer.h"
#include "tl/verifier.h"
#ifdef TL_HAVE_REFERENCES
#include "common/example_checks.h"
#endif

namespace {

std::map<std::string, std::string> parse_sets(const std::vector<std::string>& sets) {
  std::map<std::string, std::string> m;
  for (const auto& s : sets) {
    auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0)
      throw tl::Error(fmt::format("--set expects NAME=VALUE, got '{}'", s));
    m[s.substr(0, eq)] = s.substr(eq + 1);
  }
  return m;
}

tl::KernelArgs resolved_args(const tl::KernelEntry& k, const std::map<std::string, std::string>& sets) {
  tl::KernelArgs a;
  for (const auto& p : k.params) a.set(p.name, p.default_value);
  for (const auto& [n, v] : sets) a.set(n, v);
  return a;
}

constexpr int64_t kDefaultDynamic = 1000;  // value of a dynamic size not given with --dyn

/// Random inputs for every tensor parameter (deterministic seeds), defaults for scalars.
std::vector<tl::Arg> make_args(tl::Device& dev, const tl::PrimFunc& f, uint64_t seed,
                               const std::map<std::string, int64_t>& dyn) {
  std::vector<tl::Arg> args;
  for (size_t i = 0; i < f->params.size(); ++i) {
    const auto& p = f->params[i];
    if (!p.is_tensor()) {
      args.emplace_back(tl::is_float(p.scalar.dtype()) ? 1e-6 : 0.0);
      continue;
    }
    std::vector<int64_t> shape;
    for (const auto& s : p.tensor->shape) {
      auto v = tl::as_const_int(s);
      if (!v) {
        // A dynamic size: its value comes from --dyn NAME=VALUE (default kDefaultDynamic).
        auto* var = s.as<tl::VarNode>();
        if (!var)
          throw tl::Error(fmt::format("tlc run: dimension {} of parameter {} is an expression of dynamic sizes; "
                                      "tlc can only fill plain dynamic dimensions", tl::print(s), p.name()));
        auto it = dyn.find(var->name);
        v = it == dyn.end() ? kDefaultDynamic : it->second;
      }
      shape.push_back(*v);
    }
    args.emplace_back(tl::uniform(dev, shape, p.tensor->dtype, seed + i, -1.0, 1.0));
  }
  return args;
}

std::string summary(const tl::Tensor& t) {
  auto v = t.to_vector();
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  for (double x : v) {
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    sum += x;
  }
  std::string head;
  for (size_t i = 0; i < std::min<size_t>(4, v.size()); ++i) head += fmt::format("{}{:.4g}", i ? ", " : "", v[i]);
  return fmt::format("{:<22} min {:>10.4g}  max {:>10.4g}  mean {:>10.4g}  [{}, ...]", t.describe(), lo, hi,
                     v.empty() ? 0.0 : sum / static_cast<double>(v.size()), head);
}

/// Options of `tlc run` beyond the kernel's parameters.
struct RunMode {
  std::string mode = "fast";  // fast | timed
  std::string trace_file, html_file;
  int html_blocks = 4;
  bool timing_only = false;    // timed: profile only, no tensor data
  bool check_hazards = false;  // run the hazard checker on the launch's trace
} g_timed;

/// Timed mode: the profile table, the Chrome trace / HTML timeline, and the outputs that
/// depend on the order of unsynchronised instructions.
void report_timed(const tl::npu::Profile& prof) {
  tl::npu::print_profile(prof, std::cout);
  if (!g_timed.trace_file.empty()) {
    std::ofstream os(g_timed.trace_file);
    tl::npu::write_chrome_trace(prof, os);
    fmt::print("  chrome trace: {} (open in https://ui.perfetto.dev or chrome://tracing)\n", g_timed.trace_file);
  }
  if (!g_timed.html_file.empty()) {
    std::ofstream os(g_timed.html_file);
    tl::npu::write_html_timeline(prof, os, g_timed.html_blocks);
    fmt::print("  timeline: {}\n", g_timed.html_file);
  }
  if (g_timed.timing_only) return;
  if (prof.time_order_effects.empty()) {
    fmt::print("  simulated-time order: outputs identical to program order\n");
    return;
  }
  fmt::print("  WARNING: outputs differ between program order and simulated-time order (a missing "
             "synchronisation; --check-hazards names the instructions):\n");
  for (const auto& l : prof.time_order_effects) fmt::print("    {}\n", l);
}

/// Runs one kernel; returns false when its reference check fails.
bool run_kernel(const tl::KernelEntry& k, const std::map<std::string, std::string>& sets, const tl::Target& target,
                int threads, const std::map<std::string, int64_t>& dyn = {}) {
  auto f = tl::build_kernel(k, sets);
  auto t0 = std::chrono::steady_clock::now();
  auto kern = tl::compile(f, target);
  auto t1 = std::chrono::steady_clock::now();
  tl::Device dev(target);
  auto args = make_args(dev, f, 1, dyn);
  const bool timed = g_timed.mode == "timed";
  tl::npu::Profile prof;
  kern.launch(dev, args, {.threads = threads, .timing_only = timed && g_timed.timing_only,
                          .check_hazards = g_timed.check_hazards, .profile = timed ? &prof : nullptr,
                          .progress_percent = 10});
  auto t2 = std::chrono::steady_clock::now();
  auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  fmt::print("{} on the virtual {}{}: compiled in {:.1f} ms, ran in {:.1f} ms (host), GM peak {} bytes\n", k.name,
             target.name,
             !timed ? "" : g_timed.timing_only ? " (timed mode, no data)" : " (timed mode, data in simulated-time order)",
             ms(t0, t1), ms(t1, t2), dev.gm_peak_bytes());
  if (timed) report_timed(prof);
  if (timed && g_timed.timing_only) return true;
  for (size_t i = 0; i < args.size(); ++i)
    if (f->params[i].is_tensor()) fmt::print("  {:<8} {}\n", f->params[i].name(), summary(std::get<tl::Tensor>(args[i].value)));
  bool ok = true;
#ifdef TL_HAVE_REFERENCES
  auto check = tl::ref::check_kernel(k.name, resolved_args(k, sets), args);
  if (!check) fmt::print("  reference: none registered\n");
  else if (check->empty()) fmt::print("  reference: match\n");
  else {
    fmt::print("  reference: MISMATCH\n{}", *check);
    ok = false;
  }
#else
  fmt::print("  reference: not built (configure with TL_BUILD_TESTS=ON)\n");
#endif
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tlc: the tl-ascend compiler driver"};
  app.require_subcommand(1);

  auto* list = app.add_subcommand("list", "list the registered kernels");

  std::string kernel, target_name = "A2";
  std::vector<std::string> sets;
  bool no_loc = false;
  int threads = 0;
  auto add_common = [&](CLI::App* c) {
    c->add_option("kernel", kernel, "kernel name (see tlc list)")->required();
    c->add_option("--set", sets, "override a kernel parameter: NAME=VALUE");
    c->add_option("--target", target_name, "target chip (A2, 910B3, 910B4, A3, 950)");
  };
  auto* print_cmd = app.add_subcommand("print", "print a kernel as IR text");
  add_common(print_cmd);
  print_cmd->add_flag("--no-loc", no_loc, "omit `# @file:line` source locations");
  tl::PassOptions pass_opt;
  print_cmd->add_flag("--print-after-all", pass_opt.print_after_all,
                      "lower the kernel, printing the IR after every pass that changed it");
  print_cmd->add_option("--print-after", pass_opt.print_after,
                        "lower the kernel, printing the IR after the named passes")
      ->delimiter(',');
  print_cmd->add_flag("--time-passes", pass_opt.time_passes, "lower the kernel and time every pass");
  auto* verify_cmd = app.add_subcommand("verify", "verify a kernel for a target");
  add_common(verify_cmd);
  auto* run_cmd = app.add_subcommand("run", "run a kernel on the virtual NPU with random inputs");
  add_common(run_cmd);
  run_cmd->add_option("--threads", threads, "host threads (0: all)");
  run_cmd->add_option("--mode", g_timed.mode,
                      "fast: functional run; timed: timing model, profile table, data in simulated-time order")
      ->check(CLI::IsMember({"fast", "timed"}));
  run_cmd->add_flag("--timing-only", g_timed.timing_only, "timed: profile only, skip the tensor data (faster)");
  run_cmd->add_option("--trace", g_timed.trace_file, "timed: write a Chrome/Perfetto trace JSON");
  run_cmd->add_option("--html", g_timed.html_file, "timed: write an HTML timeline (first --html-blocks blocks)");
  run_cmd->add_option("--html-blocks", g_timed.html_blocks, "timed: blocks drawn in the HTML timeline (default 4)");
  run_cmd->add_flag("--check-hazards", g_timed.check_hazards, "report unsynchronised instructions (hazard checker)");
  std::vector<std::string> dyn_sets;
  run_cmd->add_option("--dyn", dyn_sets, "value of a dynamic size: NAME=VALUE (default 1000)");
  auto* demo = app.add_subcommand("demo", "the main job: verify, run, check and profile every example kernel");
  std::string demo_dir = "out";
  demo->add_option("--out", demo_dir, "directory for IR dumps, traces and timelines (default out/)");

  CLI11_PARSE(app, argc, argv);
  try {
    const tl::Target& target = tl::get_target(target_name);
    if (*list) {
      for (const auto* k : tl::registered_kernels()) {
        fmt::print("{:<24} {}\n", k->name, k->summary);
        for (const auto& p : k->params) fmt::print("    {:<12} = {:<10} {}\n", p.name, p.default_value, p.help);
      }
      return 0;
    }
    if (*print_cmd) {
      auto f = tl::build_kernel(tl::find_kernel(kernel), parse_sets(sets));
      if (pass_opt.print_after_all || !pass_opt.print_after.empty() || pass_opt.time_passes)
        f = tl::lower(f, target, pass_opt);
      std::cout << tl::print(f, {.locations = !no_loc});
      return 0;
    }
    if (*verify_cmd) {
      auto f = tl::build_kernel(tl::find_kernel(kernel), parse_sets(sets));
      auto diags = tl::verify(f, target);
      for (const auto& d : diags) fmt::print("{}\n", d.str());
      fmt::print("{}: {} error(s) on {}\n", kernel, diags.size(), target.name);
      return diags.empty() ? 0 : 1;
    }
    if (*run_cmd) {
      std::map<std::string, int64_t> dyn;
      for (const auto& [n, v] : parse_sets(dyn_sets)) dyn[n] = std::stoll(v);
      return run_kernel(tl::find_kernel(kernel), parse_sets(sets), target, threads, dyn) ? 0 : 1;
    }
    if (*demo) {
      // The main job: every example is verified, run functionally with the hazard checker and
      // checked against its reference, then run in timed mode; IR, Perfetto trace and HTML
      // timeline go to out/.
      std::filesystem::create_directories(demo_dir);
      bool ok = true;
      for (const auto* k : tl::registered_kernels()) {
        auto f = tl::build_kernel(*k);
        auto diags = tl::verify(f, target);
        std::string base = demo_dir + "/" + k->name;
        std::ofstream(base + ".ir.txt") << tl::print(f);
        fmt::print("==== {}: {}\n  IR: {}.ir.txt; verify on {}: {} error(s)\n", k->name, k->summary, base, target.name,
                   diags.size());
        for (const auto& d : diags) fmt::print("  {}\n", d.str());
        if (!diags.empty()) {
          ok = false;
          continue;
        }
        g_timed = RunMode{};
        g_timed.check_hazards = true;
        ok &= run_kernel(*k, {}, target, 0);
        g_timed.mode = "timed";
        g_timed.trace_file = base + ".trace.json";
        g_timed.html_file = base + ".timeline.html";
        ok &= run_kernel(*k, {}, target, 0);
        fmt::print("\n");
      }
      fmt::print("demo: {}\n", ok ? "every example verified, hazard-free, matched its reference in program order and in "
                                        "simulated-time order, and was profiled"
                                   : "FAILED (see above)");
      return ok ? 0 : 1;
    }
  } catch (const tl::Error& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  } catch (const tl::InternalError& e) {
    fmt::print(stderr, "{}\n(this is a bug in tl-ascend, not in the kernel; please report it)\n", e.what());
    return 2;
  }
  return 0;
}
