// tlc: the tl-ascend command-line driver.
//   tlc list                         registered kernels, their parameters and accepted values
//   tlc print KERNEL [--set N=V]     IR text (with `# @file:line` locations); with
//        [--print-after-all | --print-after=NAME[,NAME] | --time-passes] the kernel is
//        lowered: IR dumps / pass timings on stderr, the lowered IR on stdout
//   tlc verify KERNEL [--target A2]  every verifier diagnostic
//   tlc run KERNEL [--set N=V]       run on the virtual NPU with random inputs, check the
//                                    reference when one is registered, print the results
//   tlc run KERNEL --mode timed [--trace F.json] [--html F.html] [--timing-only]
//                                    timing model: profile table, Perfetto trace, HTML timeline;
//                                    the data is computed in simulated-time order and checked
//   tlc report KERNEL [--set N=V]    what the compiler made of it: synchronisations (in the IR
//                                    and executed per block; the author's, the compiler's),
//                                    event ids, channels and workspace, memory per scope
//   tlc opt FILE.tl --passes=a,b     IR text in, the named passes (ungated), IR text out;
//        [--target A2] [--verify-each] [--loc]   (docs/compiler.md, "IR-file tests")
//   tlc opt FILE.tl --pipeline       ... the whole gated pipeline (tl::lower, as tl::compile
//        [--off NAME] [--on NAME] [--scalar-fallback] ...   runs it) with these switches
//   tlc emit KERNEL [--backend ascendc|ir] [--no-host-stub]   the lowered kernel as one AscendC
//                                    C++ file (docs/ascendc.md), or as the lowered Tile IR
//   tlc demo [--out DIR]             the main job: verify, run (hazard-checked, reference-checked)
//                                    and profile every example; IR, traces, timelines to out/
// Two hidden subcommands serve the tests (tests/tools/tlc_coverage_test.cpp): `list-options`
// prints every subcommand and option of this command line, so the test can require a case for
// each; `internal-error-selftest` raises a tl::InternalError, so exit status 3 is tested too.
//
// Whatever the command line, tlc ends with one of the exit statuses of kExitHelp: every
// exception becomes a one-line error, and an option that would do nothing in the chosen mode
// is an error rather than silently ignored.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "ops_cmd.h"
#include "tl/ascendc.h"
#include "tl/kernel_registry.h"
#include "tl/npu/npu.h"
#include "tl/npu/report.h"
#include "tl/npu/timing.h"
#include "tl/npu/trace.h"
#include "tl/parser.h"
#include "tl/pass.h"
#include "tl/printer.h"
#include "tl/verifier.h"
#ifdef TL_HAVE_REFERENCES
#include "common/example_checks.h"
#endif

namespace {

// Exit statuses: scripts that sweep parameters tell a kernel that fails (1) from a command
// line that asks for something impossible (2) and from a bug in tl-ascend (3).
enum Exit : int { kOk = 0, kKernelFailed = 1, kUsage = 2, kInternal = 3 };
constexpr const char* kExitHelp =
    "Exit status: 0 success; 1 the kernel failed (verifier errors, a reference MISMATCH, an error "
    "while compiling or running it); 2 a usage error (bad option, parameter value, kernel or "
    "target "
    "name, unwritable output); 3 an internal error (a bug in tl-ascend, please report it).";

/// A mistake on the command line: exit status kUsage wherever it is raised.
struct UsageError : tl::Error {
  using tl::Error::Error;
};

/// The status a tl::Error gets: kUsage until the kernel is built from valid options, then
/// kKernelFailed (the kernel does not verify, compile or run).
Exit g_error_exit = kUsage;

/// NAME=VALUE pairs of a repeatable option (`--set`, `--dyn`); a name given twice is an error
/// (the later value would silently win).
std::map<std::string, std::string> parse_pairs(const char* option,
                                               const std::vector<std::string>& pairs) {
  std::map<std::string, std::string> m;
  for (const auto& s : pairs) {
    auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0)
      throw UsageError(fmt::format("{} expects NAME=VALUE, got '{}'", option, s));
    auto [it, fresh] = m.emplace(s.substr(0, eq), s.substr(eq + 1));
    if (!fresh) throw UsageError(fmt::format("{} {} is given twice", option, it->first));
  }
  return m;
}

/// Names of the dynamic sizes among `f`'s tensor dimensions.
std::set<std::string> dynamic_sizes(const tl::PrimFunc& f) {
  std::set<std::string> names;
  for (const auto& p : f->params)
    if (p.is_tensor())
      for (const auto& s : p.tensor->shape)
        if (auto* v = s.as<tl::VarNode>()) names.insert(v->name);
  return names;
}

/// `--dyn` values: each names a dynamic size of `f` and is an integer in [0, INT32_MAX] (a
/// dynamic size is an int32 symbol; 0 rows is a valid launch).
std::map<std::string, int64_t> parse_dyn(const tl::KernelEntry& k, const tl::PrimFunc& f,
                                         const std::vector<std::string>& dyn_sets) {
  std::map<std::string, int64_t> dyn;
  const auto names = dynamic_sizes(f);
  for (const auto& [n, s] : parse_pairs("--dyn", dyn_sets)) {
    if (!names.count(n)) {
      std::string known;
      for (const auto& x : names) known += (known.empty() ? "" : ", ") + x;
      throw UsageError(
          fmt::format("--dyn {}: kernel {} has no dynamic size '{}' ({})", n, k.name, n,
                      known.empty() ? "its shapes are all static" : "its dynamic sizes: " + known));
    }
    int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size() || v < 0 || v > INT32_MAX)
      throw UsageError(
          fmt::format("--dyn {}: expected an integer in [0, {}], got '{}'", n, INT32_MAX, s));
    dyn[n] = v;
  }
  return dyn;
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
          throw tl::Error(fmt::format(
              "tlc run: dimension {} of parameter {} is an expression of dynamic sizes; "
              "tlc can only fill plain dynamic dimensions",
              tl::print(s), p.name()));
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
  for (size_t i = 0; i < std::min<size_t>(4, v.size()); ++i)
    head += fmt::format("{}{:.4g}", i ? ", " : "", v[i]);
  return fmt::format("{:<22} min {:>10.4g}  max {:>10.4g}  mean {:>10.4g}  [{}, ...]", t.describe(),
                     lo, hi, v.empty() ? 0.0 : sum / static_cast<double>(v.size()), head);
}

/// An output file named by `option`, opened (and truncated) before the kernel runs, so an
/// unwritable path fails at once instead of after a long run.
struct OutFile {
  std::string option, path;
  std::ofstream os;
  void open(std::string opt, std::string p) {
    option = std::move(opt);
    path = std::move(p);
    if (path.empty()) throw UsageError(fmt::format("{}: expected a file name, got ''", option));
    std::error_code ec;  // the throwing overload fails on an unreadable parent directory
    if (std::filesystem::is_directory(path, ec))
      throw UsageError(fmt::format("{} {}: is a directory, expected a file name", option, path));
    errno = 0;
    os.open(path, std::ios::out | std::ios::trunc);
    if (!os)
      throw UsageError(fmt::format("{} {}: cannot open for writing ({})", option, path,
                                   errno ? std::strerror(errno) : "unknown reason"));
  }
  bool is_open() const { return os.is_open(); }
  /// Flushes and closes; a failed write (disk full, ...) is an error, not a silent truncation.
  void close() {
    os.flush();
    const bool ok = static_cast<bool>(os);
    os.close();
    if (!ok || !os) throw UsageError(fmt::format("{} {}: writing failed", option, path));
  }
};

/// Options of `tlc run` beyond the kernel's parameters.
struct RunMode {
  std::string mode = "fast";  // fast | timed
  std::string trace_file, html_file;
  bool want_trace = false, want_html = false;  // --trace / --html given (even with an empty name)
  int html_blocks = 4;
  bool timing_only = false;    // timed: profile only, no tensor data
  bool check_hazards = false;  // run the hazard checker on the launch's trace
  bool check_stale = false;    // run the stale-data checker (also on with check_hazards)
  tl::DeveloperOptions dev;    // --off, --on, --scalar-fallback
} g_timed;

/// `--off NAME` / `--on NAME`: switches a developer-mode automation off or on
/// (tl::DeveloperOptions).
void switch_to(tl::DeveloperOptions& d, const std::string& name, bool on) {
  std::string names;
  for (const auto& s : tl::switch_registry()) {
    // An opt-in with a flag of its own (--scalar-fallback) is not switched here; one that is on by
    // default (allow_inexact_math) is switched off here: `--off allow_inexact_math` asks for
    // exact math, its flag stays accepted.
    if (s.tlc_flag && !s.default_on()) continue;
    if (name == s.name) {
      d.*s.field = on;
      return;
    }
    names += (names.empty() ? "" : ", ") + std::string(s.name);
  }
  throw UsageError(fmt::format("--{}: no automation named '{}'; expected one of {}",
                               on ? "on" : "off", name, names));
}

/// The switches `--off` (default on: true) or `--on` (default off) is for, for the help text.
std::string switch_names(bool default_on) {
  std::string names;
  for (const auto& s : tl::switch_registry())
    if ((!s.tlc_flag || s.default_on()) && s.default_on() == default_on)
      names += (names.empty() ? "" : ", ") + std::string(s.name);
  return names;
}

/// Timed mode: the profile table, the Chrome trace / HTML timeline, and the outputs that
/// depend on the order of unsynchronised instructions.
void report_timed(const tl::npu::Profile& prof, OutFile& trace, OutFile& html) {
  tl::npu::print_profile(prof, std::cout);
  if (trace.is_open()) {
    tl::npu::write_chrome_trace(prof, trace.os);
    trace.close();
    fmt::print("  chrome trace: {} (open in https://ui.perfetto.dev or chrome://tracing)\n",
               trace.path);
  }
  if (html.is_open()) {
    tl::npu::write_html_timeline(prof, html.os, g_timed.html_blocks);
    html.close();
    fmt::print("  timeline: {}\n", html.path);
  }
  if (g_timed.timing_only) return;
  if (prof.time_order_effects.empty()) {
    fmt::print("  simulated-time order: outputs identical to program order\n");
    return;
  }
  fmt::print(
      "  WARNING: outputs differ between program order and simulated-time order (a missing "
      "synchronisation; --check-hazards names the instructions):\n");
  for (const auto& l : prof.time_order_effects) fmt::print("    {}\n", l);
}

/// Runs one kernel; returns false when its reference check fails.
bool run_kernel(const tl::KernelEntry& k, const std::map<std::string, std::string>& sets,
                const tl::Target& target, int threads,
                const std::vector<std::string>& dyn_sets = {}) {
  const tl::KernelArgs params = tl::resolve_kernel_args(k, sets);
  auto f = k.build(params);
  const auto dyn = parse_dyn(k, f, dyn_sets);
  const bool timed = g_timed.mode == "timed";
  OutFile trace, html;
  if (g_timed.want_trace) trace.open("--trace", g_timed.trace_file);
  if (g_timed.want_html) html.open("--html", g_timed.html_file);
  g_error_exit = kKernelFailed;  // the options are valid: from here on, errors are the kernel's
  auto t0 = std::chrono::steady_clock::now();
  auto kern = tl::compile(f, target, {.dev = g_timed.dev});
  auto t1 = std::chrono::steady_clock::now();
  tl::Device dev(target);
  auto args = make_args(dev, f, 1, dyn);
  tl::npu::Profile prof;
  kern.launch(dev, args,
              {.threads = threads,
               .timing_only = timed && g_timed.timing_only,
               .check_hazards = g_timed.check_hazards,
               .profile = timed ? &prof : nullptr,
               // Per-instruction times only for the files that draw them: a timing-only
               // launch then holds a window of its trace, not all of it.
               .profile_instructions = g_timed.want_trace || g_timed.want_html,
               .progress_percent = 10,
               .check_stale = g_timed.check_stale ? std::optional<bool>(true) : std::nullopt});
  auto t2 = std::chrono::steady_clock::now();
  auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  fmt::print(
      "{} on the virtual {}{}: compiled in {:.1f} ms, ran in {:.1f} ms (host), GM peak {} bytes\n",
      k.name, target.name,
      !timed                ? ""
      : g_timed.timing_only ? " (timed mode, no data)"
                            : " (timed mode, data in simulated-time order)",
      ms(t0, t1), ms(t1, t2), dev.gm_peak_bytes());
  if (timed) report_timed(prof, trace, html);
  if (timed && g_timed.timing_only) return true;
  for (size_t i = 0; i < args.size(); ++i)
    if (f->params[i].is_tensor())
      fmt::print("  {:<8} {}\n", f->params[i].name(), summary(std::get<tl::Tensor>(args[i].value)));
  bool ok = true;
#ifdef TL_HAVE_REFERENCES
  auto check = tl::ref::check_kernel(k.name, params, args);
  if (!check)
    fmt::print("  reference: none registered\n");
  else if (check->empty())
    fmt::print("  reference: match\n");
  else {
    fmt::print("  reference: MISMATCH\n{}", *check);
    ok = false;
  }
#else
  fmt::print("  reference: not built (configure with TL_BUILD_TESTS=ON)\n");
#endif
  return ok;
}

/// `tlc report`: compiles the kernel, runs it once on random inputs recording its trace, and
/// prints what the compiler made of it (tl/npu/report.h).
void report_kernel(const tl::KernelEntry& k, const std::map<std::string, std::string>& sets,
                   const tl::Target& target, const std::vector<std::string>& dyn_sets) {
  auto f = k.build(tl::resolve_kernel_args(k, sets));
  const auto dyn = parse_dyn(k, f, dyn_sets);
  g_error_exit = kKernelFailed;
  auto kern = tl::compile(f, target, {.dev = g_timed.dev});
  tl::Device dev(target);
  auto args = make_args(dev, f, 1, dyn);
  tl::npu::Trace trace;
  kern.launch(dev, args, {.trace = &trace});
  tl::npu::print_report(tl::npu::make_report(f, kern.func(), target, &trace), std::cout);
}

/// Writes `text` to `path` (an IR dump of the demo); a failure is an error.
void write_file(const std::string& path, const std::string& text) {
  OutFile f;
  f.open("--out", path);
  f.os << text;
  f.close();
}

/// The demo: every example is verified, run functionally with the hazard checker and checked
/// against its reference, then run in timed mode; IR, Perfetto trace and HTML timeline go to
/// `dir`. A kernel that fails is reported and the demo goes on with the next one.
int run_demo(const std::string& dir, const tl::Target& target) {
  if (dir.empty()) throw UsageError("--out: expected a directory name, got ''");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir, ec))
    throw UsageError(fmt::format("--out {}: cannot create the directory ({})", dir,
                                 ec ? ec.message() : "a file of that name exists"));
  bool ok = true;
  for (const auto* k : tl::registered_kernels()) {
    std::string base = dir + "/" + k->name;
    try {
      g_error_exit = kKernelFailed;
      auto f = tl::build_kernel(*k);
      auto diags = tl::verify(f, target);
      write_file(base + ".ir.txt", tl::print(f));
      fmt::print("==== {}: {}\n  IR: {}.ir.txt; verify on {}: {} error(s)\n", k->name, k->summary,
                 base, target.name, diags.size());
      for (const auto& d : diags) fmt::print("  {}\n", d.str());
      if (!diags.empty()) {
        ok = false;
        continue;
      }
      g_timed = RunMode{};
      g_timed.check_hazards = true;
      ok &= run_kernel(*k, {}, target, 0);
      g_timed.mode = "timed";
      g_timed.want_trace = g_timed.want_html = true;
      g_timed.trace_file = base + ".trace.json";
      g_timed.html_file = base + ".timeline.html";
      ok &= run_kernel(*k, {}, target, 0);
    } catch (const tl::Error& e) {
      fmt::print("  error: {}\n", e.what());
      ok = false;
    }
    fmt::print("\n");
  }
  fmt::print(
      "demo: {}\n",
      ok ? "every example verified, hazard-free, matched its reference in program order and in "
           "simulated-time order, and was profiled"
         : "FAILED (see above)");
  return ok ? kOk : kKernelFailed;
}

/// `tlc opt FILE --passes=a,b`: IR text in, the named passes run ungated (the user asked for
/// each), IR text out (docs/compiler.md, "IR-file tests"). Each statement line without a
/// comment gets the location `FILE:LINE`, so that errors name the line of the .tl file.
/// With `pipeline`, the whole pipeline runs instead (tl::lower, gated as tl::compile runs it, so
/// a developer kernel's errors are the ones its author meets); `dev` holds the switches.
int opt_file(const std::string& path, const std::vector<std::string>& passes, bool pipeline,
             const tl::DeveloperOptions& dev, const tl::Target& target, bool verify_each,
             bool locations) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError(fmt::format("opt: cannot read '{}'", path));
  // A `# -----` line separates functions (each is parsed and run on its own); each part keeps
  // the file's line numbers (the lines before it are blank), so parse errors name them too.
  std::vector<std::string> parts(1);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.starts_with("# -----")) {
      parts.push_back(std::string(n, '\n'));
      continue;
    }
    const bool blank = line.find_first_not_of(" \t\r") == std::string::npos;
    if (!blank && line.find('#') == std::string::npos) line += fmt::format("  # @{}:{}", path, n);
    parts.back() += line + '\n';
  }
  if (passes.empty() && !pipeline)
    throw UsageError("opt: expected --passes=NAME[,NAME] or --pipeline");
  try {
    dev.validate();
  } catch (const tl::Error& e) {
    throw UsageError(e.what());
  }
  g_error_exit = kKernelFailed;  // the command line is valid: from here on, errors are the IR's
  // A function's error does not stop the others (a file may hold several error cases); the
  // exit status says that one failed.
  bool failed = false;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) std::cout << "# -----\n";
    try {
      tl::PrimFunc f = tl::parse(parts[i], path);
      tl::PassOptions po;
      po.verify_each = verify_each;
      po.dev = dev;
      f = pipeline ? tl::lower(f, target, po) : tl::run_named_passes(f, target, passes, po);
      std::cout << tl::print(f, {.locations = locations});
    } catch (const tl::Error& e) {
      if (std::string_view(e.what()).starts_with("passes: no pass named"))
        throw UsageError(e.what());
      if (parts.size() == 1) throw;
      fmt::print(stderr, "error: {}\n", e.what());
      failed = true;
    }
  }
  return failed ? kKernelFailed : kOk;
}

/// `tlc list-options`: one line per subcommand and option of `app` and its visible subcommands,
/// `<subcommand> <name> <kind>`: kind `subcommand`, `flag` (takes no value), `value` or
/// `positional` (the root is `tlc`). Hidden ones (CLI11 group "") are left out.
void list_options(const CLI::App& app) {
  auto options = [](const CLI::App& a, const std::string& cmd) {
    for (const CLI::Option* o : a.get_options()) {
      if (o->get_group().empty()) continue;
      std::string name = !o->get_lnames().empty()   ? "--" + o->get_lnames().front()
                         : !o->get_snames().empty() ? "-" + o->get_snames().front()
                                                    : o->get_name(true);
      const char* kind = !o->nonpositional()                ? "positional"
                         : o->get_items_expected_max() == 0 ? "flag"
                                                            : "value";
      fmt::print("{} {} {}\n", cmd, name, kind);
    }
  };
  options(app, "tlc");
  for (const CLI::App* sub :
       app.get_subcommands([](const CLI::App* a) { return !a->get_group().empty(); })) {
    fmt::print("{} {} subcommand\n", "tlc", sub->get_name());
    options(*sub, sub->get_name());
  }
}

int tlc_main(int argc, char** argv) {
  CLI::App app{"tlc: the tl-ascend compiler driver"};
  app.require_subcommand(1);
  app.footer(kExitHelp);

  auto* list = app.add_subcommand("list", "list the registered kernels");
  const OpsCommands ops_cmds = add_ops_commands(app);  // tlc ops, tlc op (ops_cmd.cpp)

  std::string kernel, target_name = "A2";
  std::vector<std::string> sets;
  bool no_loc = false;
  int threads = 0;
  auto add_common = [&](CLI::App* c) {
    c->add_option("kernel", kernel, "kernel name (see tlc list)")->required();
    c->add_option("--set", sets,
                  "override a kernel parameter: NAME=VALUE (tlc list: the values each accepts)");
    c->add_option("--target", target_name, "target chip (A2, 910B3, 910B4, A3, 950)");
  };
  auto* print_cmd = app.add_subcommand("print", "print a kernel as IR text");
  add_common(print_cmd);
  print_cmd->add_flag("--no-loc", no_loc, "omit `# @file:line` source locations");
  tl::PassOptions pass_opt;
  print_cmd->add_flag("--print-after-all", pass_opt.print_after_all,
                      "lower the kernel, printing the IR after every pass that changed it");
  print_cmd
      ->add_option("--print-after", pass_opt.print_after,
                   "lower the kernel, printing the IR after the named passes")
      ->delimiter(',');
  print_cmd->add_flag("--time-passes", pass_opt.time_passes,
                      "lower the kernel and time every pass");
  auto* emit_cmd = app.add_subcommand(
      "emit", "lower a kernel and print it as AscendC source (docs/ascendc.md) or lowered IR");
  add_common(emit_cmd);
  std::string emit_backend = "ascendc";
  emit_cmd
      ->add_option("--backend", emit_backend,
                   "ascendc: one AscendC C++ file with its host launch stub; ir: the lowered "
                   "Tile IR the virtual NPU runs")
      ->check(CLI::IsMember({"ascendc", "ir"}));
  bool emit_no_stub = false;
  emit_cmd->add_flag("--no-host-stub", emit_no_stub,
                     "ascendc: omit the host launch function (<<<numBlocks, nullptr, stream>>>)");
  auto* verify_cmd = app.add_subcommand("verify", "verify a kernel for a target");
  add_common(verify_cmd);
  auto* run_cmd = app.add_subcommand("run", "run a kernel on the virtual NPU with random inputs");
  add_common(run_cmd);
  run_cmd->add_option("--threads", threads, "host threads (0: all)")->check(CLI::Range(0, 4096));
  run_cmd
      ->add_option(
          "--mode", g_timed.mode,
          "fast: functional run; timed: timing model, profile table, data in simulated-time order")
      ->check(CLI::IsMember({"fast", "timed"}));
  auto* timing_only_opt = run_cmd->add_flag("--timing-only", g_timed.timing_only,
                                            "timed: profile only, skip the tensor data (faster)");
  auto* trace_opt = run_cmd->add_option("--trace", g_timed.trace_file,
                                        "timed: write a Chrome/Perfetto trace JSON");
  auto* html_opt = run_cmd->add_option(
      "--html", g_timed.html_file, "timed: write an HTML timeline (first --html-blocks blocks)");
  auto* html_blocks_opt = run_cmd
                              ->add_option("--html-blocks", g_timed.html_blocks,
                                           "timed: blocks drawn in the HTML timeline (default 4)")
                              ->check(CLI::PositiveNumber);
  run_cmd->add_flag(
      "--check-hazards", g_timed.check_hazards,
      "report unsynchronised instructions (hazard checker; runs the stale-data checker too)");
  run_cmd->add_flag(
      "--check-stale", g_timed.check_stale,
      "report invalid data (never written, stale past a clipped copy, unset variables) stored to "
      "GM or "
      "deciding a branch, loop bound or address (stale-data checker; also TL_CHECK_STALE=1)");
  std::vector<std::string> offs;
  run_cmd->add_option("--off", offs,
                      "switch a developer-mode automation off: " + switch_names(true) +
                          " (docs/developer_mode.md, Options)");
  std::vector<std::string> ons;
  run_cmd->add_option("--on", ons,
                      "switch a developer-mode automation on that is off by default: " +
                          switch_names(false) + " (docs/developer_mode.md, Options)");
  // The opt-ins that are no automation have flags of their own: --scalar-fallback, ...
  for (const auto& s : tl::switch_registry()) {
    if (!s.tlc_flag) continue;
    std::string flag = "--" + std::string(s.name);
    std::replace(flag.begin(), flag.end(), '_', '-');
    run_cmd->add_flag(flag, g_timed.dev.*s.field, std::string(s.help));
  }
  std::vector<std::string> dyn_sets;
  run_cmd->add_option("--dyn", dyn_sets,
                      "value of a dynamic size: NAME=VALUE in [0, 2^31) (default 1000)");
  auto* report_cmd = app.add_subcommand("report",
                                        "what the compiler made of a kernel: syncs, event ids, "
                                        "channels, workspace, memory per scope");
  add_common(report_cmd);
  std::vector<std::string> report_offs, report_dyn;
  report_cmd->add_option("--off", report_offs,
                         "switch a developer-mode automation off (as for tlc run)");
  std::vector<std::string> report_ons;
  report_cmd->add_option("--on", report_ons,
                         "switch a developer-mode automation on (as for tlc run)");
  report_cmd->add_option("--dyn", report_dyn, "value of a dynamic size: NAME=VALUE (default 1000)");
  auto* opt_cmd = app.add_subcommand(
      "opt", "run passes on an IR text file and print the result (tests/pass/*.tl)");
  std::string opt_path;
  std::vector<std::string> opt_passes;
  bool opt_verify_each = false, opt_loc = false;
  opt_cmd->add_option("file", opt_path, "IR text (what tlc print --no-loc prints)")->required();
  auto* opt_passes_opt =
      opt_cmd->add_option("--passes", opt_passes, "passes to run, in order, ungated: NAME[,NAME]")
          ->delimiter(',');
  bool opt_pipeline = false;
  opt_cmd
      ->add_flag("--pipeline", opt_pipeline,
                 "run the whole pipeline, gated as tl::compile runs it (instead of --passes)")
      ->excludes(opt_passes_opt);
  std::vector<std::string> opt_offs, opt_ons;
  opt_cmd->add_option("--off", opt_offs, "switch a developer-mode automation off (as for tlc run)");
  opt_cmd->add_option("--on", opt_ons, "switch a developer-mode automation on (as for tlc run)");
  tl::DeveloperOptions opt_dev;
  for (const auto& s : tl::switch_registry()) {
    if (!s.tlc_flag) continue;
    std::string flag = "--" + std::string(s.name);
    std::replace(flag.begin(), flag.end(), '_', '-');
    opt_cmd->add_flag(flag, opt_dev.*s.field, std::string(s.help));
  }
  opt_cmd->add_option("--target", target_name, "target chip (A2, 910B3, 910B4, A3, 950)");
  opt_cmd->add_flag("--verify-each", opt_verify_each,
                    "check each pass's output invariant (an internal error when broken)");
  opt_cmd->add_flag("--loc", opt_loc, "print `# @file:line` locations (the .tl file's lines)");
  auto* demo = app.add_subcommand(
      "demo", "the main job: verify, run, check and profile every example kernel");
  std::string demo_dir = "out";
  demo->add_option("--out", demo_dir,
                   "directory for IR dumps, traces and timelines (default out/)");
  auto* list_options_cmd =
      app.add_subcommand("list-options", "print every subcommand and option (for the tests)")
          ->group("");
  auto* internal_selftest =
      app.add_subcommand("internal-error-selftest", "raise an internal error (tests exit status 3)")
          ->group("");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);  // prints the help or the error
    return rc == 0 ? kOk : kUsage;
  }
  try {
    if (*list_options_cmd) {
      list_options(app);
      return kOk;
    }
    if (*internal_selftest)
      TL_ASSERT(false, "tlc internal-error-selftest: the internal error path of tlc");
    const tl::Target& target = tl::get_target(target_name);
    if (*list) {
      for (const auto* k : tl::registered_kernels()) {
        fmt::print("{:<24} {}\n", k->name, k->summary);
        for (const auto& p : k->params)
          fmt::print("    {:<12} = {:<10} {} ({})\n", p.name,
                     p.default_value.empty() ? "''" : p.default_value, p.help, p.rule.describe());
      }
      return kOk;
    }
    if (const int rc = run_ops_commands(ops_cmds, target); rc >= 0) return rc;
    if (*print_cmd) {
      auto f = tl::build_kernel(tl::find_kernel(kernel), parse_pairs("--set", sets));
      g_error_exit = kKernelFailed;
      if (pass_opt.print_after_all || !pass_opt.print_after.empty() || pass_opt.time_passes) {
        try {
          f = tl::lower(f, target, pass_opt);
        } catch (const tl::Error& e) {
          // The pass manager checks --print-after's names before any pass runs: a misspelt
          // pass is the command line's mistake, not the kernel's.
          if (std::string_view(e.what()).starts_with("print-after: no pass named"))
            throw UsageError(e.what());
          throw;
        }
      }
      std::cout << tl::print(f, {.locations = !no_loc});
      return kOk;
    }
    if (*emit_cmd) {
      if (emit_no_stub && emit_backend != "ascendc")
        throw UsageError("--no-host-stub only applies to --backend ascendc");
      auto f = tl::build_kernel(tl::find_kernel(kernel), parse_pairs("--set", sets));
      g_error_exit = kKernelFailed;
      f = tl::lower(f, target);
      if (emit_backend == "ir")
        std::cout << tl::print(f);
      else
        std::cout << tl::ascendc::emit(f, target, {.host_stub = !emit_no_stub});
      return kOk;
    }
    if (*verify_cmd) {
      auto f = tl::build_kernel(tl::find_kernel(kernel), parse_pairs("--set", sets));
      g_error_exit = kKernelFailed;
      auto diags = tl::verify(f, target);
      for (const auto& d : diags) fmt::print("{}\n", d.str());
      fmt::print("{}: {} error(s) on {}\n", kernel, diags.size(), target.name);
      return diags.empty() ? kOk : kKernelFailed;
    }
    if (*run_cmd) {
      // Options that only mean something in timed mode are errors in fast mode, not no-ops.
      g_timed.want_trace = trace_opt->count() > 0;
      g_timed.want_html = html_opt->count() > 0;
      if (g_timed.mode != "timed")
        for (const auto* o : {timing_only_opt, trace_opt, html_opt, html_blocks_opt})
          if (o->count() > 0)
            throw UsageError(
                fmt::format("{} only applies to timed mode (add --mode timed)", o->get_name()));
      if (html_blocks_opt->count() > 0 && !g_timed.want_html)
        throw UsageError("--html-blocks only applies with --html");
      for (const auto& o : offs) switch_to(g_timed.dev, o, false);
      for (const auto& o : ons) switch_to(g_timed.dev, o, true);
      try {
        g_timed.dev.validate();
      } catch (const tl::Error& e) {
        throw UsageError(e.what());
      }
      return run_kernel(tl::find_kernel(kernel), parse_pairs("--set", sets), target, threads,
                        dyn_sets)
                 ? kOk
                 : kKernelFailed;
    }
    if (*report_cmd) {
      for (const auto& o : report_offs) switch_to(g_timed.dev, o, false);
      for (const auto& o : report_ons) switch_to(g_timed.dev, o, true);
      try {
        g_timed.dev.validate();
      } catch (const tl::Error& e) {
        throw UsageError(e.what());
      }
      report_kernel(tl::find_kernel(kernel), parse_pairs("--set", sets), target, report_dyn);
      return kOk;
    }
    if (*opt_cmd) {
      for (const auto& o : opt_offs) switch_to(opt_dev, o, false);
      for (const auto& o : opt_ons) switch_to(opt_dev, o, true);
      return opt_file(opt_path, opt_passes, opt_pipeline, opt_dev, target, opt_verify_each,
                      opt_loc);
    }
    if (*demo) return run_demo(demo_dir, target);
  } catch (const UsageError& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return kUsage;
  } catch (const tl::Error& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return g_error_exit;
  } catch (const tl::InternalError& e) {
    fmt::print(stderr, "{}\n(this is a bug in tl-ascend, not in the kernel; please report it)\n",
               e.what());
    return kInternal;
  } catch (const std::bad_alloc&) {
    fmt::print(
        stderr,
        "error: out of host memory (the kernel's tensors or the virtual NPU's state do not fit)\n");
    return kKernelFailed;
  } catch (const std::exception& e) {
    if (std::ferror(stdout))
      return kUsage;  // fmt::print to a full or closed stdout; main reports it
    fmt::print(stderr,
               "internal error: unexpected exception: {}\n(this is a bug in tl-ascend; please "
               "report it)\n",
               e.what());
    return kInternal;
  } catch (...) {
    fmt::print(
        stderr,
        "internal error: unexpected exception of unknown type\n(this is a bug in tl-ascend; please "
        "report it)\n");
    return kInternal;
  }
  return kOk;
}

}  // namespace

int main(int argc, char** argv) {
  int rc = tlc_main(argc, argv);
  // Output that never reached stdout (a full disk, a closed pipe) is a failure, not success.
  std::cout.flush();
  if (std::fflush(stdout) != 0 || std::ferror(stdout) || !std::cout) {
    fmt::print(stderr, "error: writing to standard output failed\n");
    if (rc == kOk) rc = kUsage;
  }
  return rc;
}
