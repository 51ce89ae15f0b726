// `tlc ops` lists the operator library's ops and `tlc op NAME --set ...` runs each against its
// fp64 reference (issue 30, "tlc ops lists the ops and tlc op NAME --set ... runs one against
// its reference with a profile"; docs/must_show.md). TlcCoverage covers tlc's options with a few
// ops; this runs every op `tlc ops` lists, at a small shape with a tail, and requires exit 0 and
// an "ok" line for each output checked against the reference. An op added to the list without
// a small shape here fails, naming it; a shape here for an op no longer listed fails too.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Result {
  int status = -1;
  std::string out;
};

Result tlc(const std::string& args) {
  Result r;
  FILE* p = popen(("'" + std::string(TL_TLC_PATH) + "' " + args + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}

/// Small shapes with tails (7 and 33 rows, 130 columns, S = 33) for every op `tlc ops` lists.
const std::map<std::string, std::string>& small_sets() {
  static const std::map<std::string, std::string> m = {
      {"rms_norm", "--set M=7 --set H=256 --set residual=1 --set rstd=1"},
      {"rms_norm_backward", "--set M=7 --set H=256"},
      {"swiglu", "--set T=7 --set H=256 --set clamp=10 --set weight=1"},
      {"swiglu_backward", "--set T=7 --set H=256 --set weight=1"},
      {"softmax", "--set M=7 --set N=130"},
      {"log_softmax", "--set M=7 --set N=130"},
      {"softmax_backward", "--set M=33 --set N=130"},
      {"log_softmax_backward", "--set M=33 --set N=130"},
      {"layer_norm", "--set M=7 --set H=256"},
      {"layer_norm_backward", "--set M=7 --set H=256"},
      {"topk_gate", "--set T=33"},
      {"topk_gate_backward", "--set T=7 --set E=64 --set k=8"},
      {"gemm", "--set M=33 --set N=7 --set K=65 --set trans_b=1"},
      {"rope", "--set T=7 --set H=2 --set D=64 --set R=32"},
      {"rope_backward", "--set T=7 --set H=2 --set D=64 --set R=32 --set interleaved=1"},
      {"flash_attention", "--set S=33 --set causal=1"},
      {"flash_attention_backward", "--set S=33"},
  };
  return m;
}

std::vector<std::string> listed_ops() {
  auto r = tlc("ops");
  EXPECT_EQ(r.status, 0) << r.out;
  std::vector<std::string> names;
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream w(line);
    std::string name;
    if (w >> name) names.push_back(name);
  }
  return names;
}

TEST(TlcOps, EveryListedOpHasASmallShapeHere) {
  auto names = listed_ops();
  EXPECT_EQ(names.size(), small_sets().size());
  for (const auto& n : names) EXPECT_TRUE(small_sets().count(n)) << "no small shape for " << n;
}

TEST(TlcOps, EveryListedOpRunsAndMatchesItsReference) {
  for (const auto& name : listed_ops()) {
    auto it = small_sets().find(name);
    if (it == small_sets().end()) continue;  // reported by the test above
    SCOPED_TRACE(name);
    auto r = tlc("op " + name + " " + it->second);
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("against the fp64 reference"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("): ok"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("MISMATCH"), std::string::npos) << r.out;
  }
}

// One op with --profile: the simulated time, the roofline fraction and the GM peak are printed.
TEST(TlcOps, ProfilePrintsTimeRooflineAndGmPeak) {
  auto r = tlc("op softmax --set M=33 --set N=130 --profile");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("us simulated"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("roofline"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GM peak"), std::string::npos) << r.out;
}

}  // namespace
