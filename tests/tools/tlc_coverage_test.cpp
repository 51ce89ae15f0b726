// Every tlc subcommand and option is exercised by a case here, and the list of them comes from
// the tool itself (`tlc list-options`, a hidden subcommand that walks its CLI11 definition), so
// an option added to tools/tlc/main.cpp without a case fails TlcCoverage.EveryOptionHasACase,
// naming it. Each case runs the built tlc (TL_TLC_PATH) and checks the exit status of the
// contract (`tlc --help`: 0 success, 1 the kernel failed, 2 usage error, 3 internal error) and
// a line of output that shows the option took effect (or, for files, that they were written).
// Kernels are kept small: every case runs in about a second or less.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

struct Result {
  int status = -1;  // exit status, or 128 + signal
  std::string out;  // stdout and stderr
};

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

/// Runs tlc with `args`; `cache` is its JIT disk cache (each case its own, so a compile that
/// prints a remark is not replaced by a cache hit that does not).
Result tlc(const std::vector<std::string>& args, const std::string& cache = "") {
  std::string cmd = cache.empty() ? quote(TL_TLC_PATH)
                                  : "TL_CACHE_DIR=" + quote(cache) + " " + quote(TL_TLC_PATH);
  for (const auto& a : args) cmd += " " + quote(a);
  cmd += " 2>&1";
  Result r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
  return r;
}

/// One invocation: its arguments ("{tmp}" is a fresh directory), the exit status, text the
/// output must contain and text it must not, files (under {tmp}) it must write.
struct Case {
  std::vector<std::string> args;
  int status;
  std::string contains;
  std::string absent = {};
  std::vector<std::string> files = {};
};

std::vector<std::string> gemm(const char* cmd, std::vector<std::string> extra = {}) {
  std::vector<std::string> a = {cmd, "gemm", "--set", "M=128", "--set", "N=256", "--set", "K=64"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

/// `rel` under the repository root (ctest sets TL_SOURCE_DIR), for `tlc opt`'s IR files.
std::string src(const char* rel) {
  const char* root = std::getenv("TL_SOURCE_DIR");
  return fmt::format("{}/{}", root ? root : ".", rel);
}

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      // The root and the exit status contract.
      {{"--help"}, 0, "Exit status: 0 success; 1 the kernel failed"},
      {{"nope"}, 2, "A subcommand is required"},
      {{"internal-error-selftest"}, 3, "this is a bug in tl-ascend"},
      {{"list-options"}, 0, "run --check-hazards flag"},
      // list
      {{"list"}, 0, "gemm_pipelined"},
      {{"list", "--help"}, 0, "list the registered kernels"},
      // the operator library (tools/tlc/ops_cmd.cpp)
      {{"ops"}, 0, "rms_norm_backward"},
      {{"ops", "--help"}, 0, "list the ops of the cann_ops_tilelang library"},
      {{"op", "--help"}, 0, "run a cann_ops_tilelang op on random data and check it"},
      {{"op", "rms_norm", "--set", "M=9", "--set", "H=256", "--set", "residual=1", "--set",
        "rstd=1"},
       0,
       "residual  bfloat16[9, 256] against the fp64 reference"},
      {{"op", "rms_norm_backward", "--set", "M=3", "--set", "H=512", "--set", "dtype=float32"},
       0,
       "dw"},
      {{"op", "rms_norm_backward", "--set", "M=9", "--set", "H=256", "--profile"},
       0,
       "% of the hbm roofline"},
      {{"op", "rms_norm", "--set", "Q=1"}, 2, "op rms_norm has no parameter 'Q'"},
      {{"op", "nope"}, 2, "no op named 'nope'"},
      {{"op", "flash_attention", "--set", "S=33", "--set", "causal=1", "--set", "layout=BHSD"},
       0,
       "lse       float32[1, 2, 33] against the fp64 reference"},
      {{"op", "flash_attention", "--set", "layout=SBHD"},
       2,
       "--set layout: expected BSHD or BHSD, got 'SBHD'"},
      {{"op", "rope", "--set", "T=7", "--set", "H=2", "--set", "D=64", "--set", "R=32"},
       0,
       "y         float16[14, 64] against the fp64 reference"},
      {{"op", "rope_backward", "--set", "T=33", "--set", "H=3", "--set", "interleaved=1"},
       0,
       "dx        float16[99, 128] against the fp64 reference"},
      {{"op", "layer_norm_backward", "--set", "M=7", "--set", "H=512"},
       0,
       "db        bfloat16[512] against the fp64 reference"},
      {{"op", "topk_gate_backward", "--set", "T=7", "--set", "E=64", "--set", "k=8"},
       0,
       "dlogits   bfloat16[7, 64] against the fp64 reference"},
      // print
      {{"print", "gemm"}, 0, "# @examples/"},
      {{"print", "gemm", "--no-loc"}, 0, "T.gemm_v0", "# @"},
      {{"print", "gemm", "--set", "M=2048", "--no-loc"}, 0, "(2048, "},
      {{"print", "gemm", "--target", "950", "--print-after=plan_memory"},
       0,
       "// IR after plan_memory"},
      {{"print", "add_dev", "--print-after-all"}, 0, "// IR after vectorize_parallel"},
      {{"print", "add_dev", "--time-passes"}, 0, "// pass insert_syncs: "},
      {{"print", "gemm", "--print-after=nope"}, 2, "no pass named 'nope'"},
      {{"print", "--help"}, 0, "--print-after-all"},
      // verify
      {{"verify", "gemm", "--target", "950"}, 0, "gemm: 0 error(s) on 950"},
      {{"verify", "gemm", "--set", "bK=2048"}, 1, "buffer-capacity"},
      {{"verify", "--help"}, 0, "verify a kernel for a target"},
      // run
      {gemm("run", {"--threads", "2"}), 0, "reference: match"},
      {gemm("run", {"--mode", "fast", "--target", "910B3"}), 0, "on the virtual 910B3: compiled"},
      {gemm("run", {"--mode", "timed"}), 0,
       "simulated-time order: outputs identical to program order"},
      {gemm("run", {"--mode", "timed", "--timing-only", "--trace", "{tmp}/t.json", "--html",
                    "{tmp}/t.html", "--html-blocks", "2"}),
       0,
       "(timed mode, no data)",
       "reference:",
       {"t.json", "t.html"}},
      {gemm("run", {"--html-blocks", "2"}), 2, "--html-blocks only applies to timed mode"},
      {{"run", "add_dev", "--set", "M=8", "--check-hazards"}, 0, "reference: match"},
      {{"run", "add_dev", "--set", "M=8", "--check-stale"}, 0, "reference: match"},
      {{"run", "add_dev", "--set", "M=8", "--off", "insert_syncs", "--check-hazards"},
       1,
       "RAW hazard on UB"},
      // gelu_dev divides in an element loop; 950's tile.div flushes subnormals, so the loop is
      // not vectorised without one of the two options (docs/compiler.md, vectorize_parallel).
      {{"run", "gelu_dev", "--target", "950", "--off", "allow_inexact_math"},
       1,
       "cannot vectorise: unsupported operation: / on float32"},
      {{"run", "gelu_dev", "--target", "950", "--off", "allow_inexact_math", "--scalar-fallback"},
       0,
       "remark: vectorize_parallel: T.Parallel runs as a serial scalar loop (scalar_fallback)"},
      {{"run", "add_dev", "--off", "vectorize", "--off", "split_cube_vector", "--off",
        "insert_syncs", "--scalar-fallback"},
       2,
       "'scalar_fallback' is on but needs 'vectorize', which is off"},
      // allow_inexact_math is on by default (issue 29); --allow-inexact-math stays accepted.
      {{"run", "gelu_dev", "--target", "950"},
       0,
       "/ on float32 vectorised as tile.div, which flushes subnormals on 950"},
      {{"run", "gelu_dev", "--target", "950", "--allow-inexact-math"},
       0,
       "/ on float32 vectorised as tile.div, which flushes subnormals on 950"},
      {{"run", "rms_norm_dynamic", "--dyn", "M=37"}, 0, "Y        bfloat16[37, 4096]"},
      {{"run", "--help"}, 0, "--check-hazards"},
      // report
      {gemm("report", {"--target", "A3"}), 0, "synchronisations executed per block"},
      {{"report", "rms_norm_dynamic", "--dyn", "M=37"}, 0, "on-chip memory per core"},
      {{"report", "add_dev", "--off", "merge_flags"}, 0, "synchronisations executed per block"},
      {{"report", "gemm_dev", "--set", "M=256", "--set", "N=256", "--set", "K=512", "--on",
        "merge_flags"},
       0,
       "synchronisations executed per block"},
      {{"report", "add_dev", "--on", "nothing"}, 2, "--on: no automation named 'nothing'"},
      {{"run", "add_dev", "--set", "M=8", "--on", "merge_flags"}, 0, "reference: match"},
      {{"report", "add_dev", "--off", "nothing"}, 2, "--off: no automation named 'nothing'"},
      {{"report", "--help"}, 0, "what the compiler made of a kernel"},
      // opt (IR text in, the named passes, IR text out; docs/compiler.md, "IR-file tests")
      {{"opt", src("tests/pass/infer_scopes.tl"), "--passes", "infer_scopes"},
       0,
       "a = T.alloc_L1((32, 32), \"float16\")",
       "T.alloc_shared"},
      {{"opt", src("tests/pass/infer_scopes.tl"), "--passes=infer_scopes", "--loc"},
       0,
       "infer_scopes.tl:9"},
      {{"opt", src("tests/pass/vectorize_parallel.tl"), "--passes", "vectorize_parallel",
        "--verify-each"},
       0,
       "T.tile.add(c, a, b)"},
      {{"opt", src("tests/pass/plan_memory.tl"), "--passes", "plan_memory", "--target", "950"},
       0,
       "address=0"},
      {{"opt", src("tests/pass/plan_memory.tl"), "--passes", "plan_memory", "--target", "nope"},
       2,
       "nope"},
      {{"opt", src("tests/pass/infer_scopes.tl"), "--passes", "infer_scope"},
       2,
       "passes: no pass named 'infer_scope' (passes: verify, simplify, infer_scopes"},
      {{"opt", "/nonexistent/x.tl", "--passes", "simplify"},
       2,
       "opt: cannot read '/nonexistent/x.tl'"},
      {{"opt", src("tests/pass/infer_scopes_errors.tl"), "--passes", "infer_scopes"},
       1,
       "is used in two gemm operand positions"},
      {{"opt", "--help"}, 0, "run passes on an IR text file"},
      // opt --pipeline: the whole gated pipeline, with tlc run's developer switches
      {{"opt", src("tests/pass/developer_errors_inexact_math.tl"), "--pipeline", "--off",
        "allow_inexact_math"},
       1,
       "k.py:6: T.Parallel: cannot vectorise: unsupported operation: T.exp on float32"},
      {{"opt", src("tests/pass/developer_errors_inexact_math.tl"), "--pipeline",
        "--allow-inexact-math"},
       0,
       "T.tile.exp(x, x)",
       "T.Parallel"},
      {{"opt", src("tests/pass/developer_errors_inexact_math.tl"), "--pipeline",
        "--scalar-fallback", "--off", "allow_inexact_math"},
       0,
       "remark: vectorize_parallel: T.Parallel runs as a serial scalar loop (scalar_fallback)"},
      {{"opt", src("tests/pass/developer_errors_inexact_math.tl"), "--pipeline", "--off",
        "vectorize"},
       0,
       "for j in T.Parallel(64):"},
      {{"opt", src("tests/pass/developer_errors_inexact_math.tl"), "--pipeline", "--on", "nothing"},
       2,
       "--on: no automation named 'nothing'"},
      {{"opt", src("tests/pass/developer_errors_inexact_math.tl"), "--pipeline", "--off",
        "infer_scopes"},
       2,
       "infer_scopes"},
      {{"opt", src("tests/pass/developer_errors_inexact_math.tl")},
       2,
       "opt: expected --passes=NAME[,NAME] or --pipeline"},
      {{"opt", src("tests/pass/infer_scopes.tl"), "--pipeline", "--passes", "simplify"},
       2,
       "--passes excludes --pipeline"},
      // emit (docs/ascendc.md)
      {{"emit", "add_dev"}, 0, "AscendC::Add(z, x, y, 4096);"},
      {{"emit", "add_dev", "--no-host-stub"}, 0, "AscendC::Add(z, x, y, 4096);", "<<<"},
      {{"emit", "gemm", "--backend", "ir"}, 0, "T.gemm_v0(", "AscendC::"},
      {{"emit", "gemm", "--set", "M=2048"}, 0, "AscendC::Mmad("},
      {{"emit", "add_dev", "--target", "A3"}, 0, "for target A3"},
      {{"emit", "add_dev", "--backend", "ir", "--no-host-stub"}, 2, "--no-host-stub only applies"},
      {{"emit", "add_dev", "--backend", "cuda"}, 2, "--backend"},
      {{"emit", "gemm", "--set", "M=2048", "--set", "N=1024"}, 0, "AscendC::Fixpipe<half, float"},
      {{"emit", "--help"}, 0, "--backend"},
      // demo (the whole job takes minutes: its option is exercised on an unwritable directory)
      {{"demo", "--out", "/proc/nope"}, 2, "error: --out /proc/nope: cannot create the directory"},
      {{"demo", "--help"}, 0, "the main job"},
  };
  return all;
}

class TlcCase : public ::testing::TestWithParam<size_t> {};

TEST_P(TlcCase, ExitStatusAndEffect) {
  const Case& c = cases()[GetParam()];
  const fs::path tmp =
      fs::temp_directory_path() / fmt::format("tlc_coverage_{}_{}", getpid(), GetParam());
  fs::create_directories(tmp);
  std::vector<std::string> args;
  for (std::string a : c.args) {
    if (auto at = a.find("{tmp}"); at != std::string::npos) a.replace(at, 5, tmp.string());
    args.push_back(a);
  }
  Result r = tlc(args, (tmp / "cache").string());
  EXPECT_EQ(r.status, c.status) << r.out;
  EXPECT_NE(r.out.find(c.contains), std::string::npos) << "expected '" << c.contains << "' in:\n"
                                                       << r.out;
  if (!c.absent.empty()) {
    EXPECT_EQ(r.out.find(c.absent), std::string::npos) << "unexpected '" << c.absent << "' in:\n"
                                                       << r.out;
  }
  for (const auto& f : c.files)
    EXPECT_GT(fs::exists(tmp / f) ? fs::file_size(tmp / f) : 0, 100u) << f;
  fs::remove_all(tmp);
}

std::string case_name(const ::testing::TestParamInfo<size_t>& info) {
  std::string n = fmt::format("{}", info.param);
  for (const auto& a : cases()[info.param].args) {
    if (n.size() > 40) break;
    for (char ch : a) {
      if (std::isalnum(static_cast<unsigned char>(ch))) n += ch;
    }
    n += '_';
  }
  return n;
}

INSTANTIATE_TEST_SUITE_P(Tlc, TlcCase, ::testing::Range<size_t>(0, cases().size()), case_name);

/// `tlc list-options`: (subcommand, option) -> kind, for the root ("tlc") and each subcommand.
std::map<std::pair<std::string, std::string>, std::string> inventory() {
  Result r = tlc({"list-options"});
  EXPECT_EQ(r.status, 0) << r.out;
  std::map<std::pair<std::string, std::string>, std::string> inv;
  std::istringstream in(r.out);
  std::string cmd, name, kind;
  while (in >> cmd >> name >> kind) inv[{cmd, name}] = kind;
  return inv;
}

TEST(TlcCoverage, EveryOptionHasACase) {
  auto inv = inventory();
  ASSERT_GT(inv.size(), 30u) << "tlc list-options printed too little";
  // What the cases exercise, read the way tlc parses them: the first bare word is the
  // subcommand; `--name` (or `--name=value`) an option, whose value is the next word when the
  // inventory says it takes one; any other bare word a positional of the subcommand.
  std::set<std::pair<std::string, std::string>> seen;
  for (const auto& c : cases()) {
    std::string sub = "tlc";
    for (size_t i = 0; i < c.args.size(); ++i) {
      const std::string& a = c.args[i];
      if (a.starts_with("-")) {
        std::string name = a.substr(0, a.find('='));
        seen.insert({sub, name});
        auto it = inv.find({sub, name});
        if (it != inv.end() && it->second == "value" && a.find('=') == std::string::npos) ++i;
      } else if (sub == "tlc") {
        sub = a;
        seen.insert({"tlc", a});
      } else {
        for (const auto& [key, kind] : inv)
          if (key.first == sub && kind == "positional") seen.insert(key);
      }
    }
  }
  std::string missing;
  for (const auto& [key, kind] : inv)
    if (!seen.count(key)) missing += fmt::format("\n  {} {} ({})", key.first, key.second, kind);
  EXPECT_TRUE(missing.empty())
      << "tlc subcommands and options no case of tests/tools/tlc_coverage_test.cpp "
         "exercises (add a case that runs each and checks its effect):"
      << missing;
}

TEST(TlcCoverage, TheInventoryListsTheDocumentedSubcommands) {
  auto inv = inventory();
  auto kind = [&](const char* cmd, const char* name) {
    auto it = inv.find({cmd, name});
    return it == inv.end() ? std::string("(absent)") : it->second;
  };
  for (const char* sub : {"list", "print", "verify", "run", "report", "opt", "demo", "ops", "op"})
    EXPECT_EQ(kind("tlc", sub), "subcommand") << sub;
  EXPECT_EQ(kind("run", "kernel"), "positional");
  EXPECT_EQ(kind("run", "--set"), "value");
  EXPECT_EQ(kind("run", "--check-hazards"), "flag");
  EXPECT_EQ(kind("tlc", "list-options"), "(absent)");  // hidden
}

}  // namespace
