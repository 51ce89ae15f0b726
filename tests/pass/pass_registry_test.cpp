// The pass registry (tl/pass_registry.h): the switches keep the keys, defaults and cache
// fingerprint they had before the registry existed; every switch and pass is documented; every
// pass has its IR-file test; lower's gates, the switches' passes and the needs come from the
// rows (a pass switched off by DeveloperOptions takes the passes that lower its output with it).
#include <filesystem>
#include <fstream>
#include <sstream>

#include "pass/pass_test_util.h"
#include "tl/backend.h"

namespace tl {
namespace {

using testing::error_of;

std::string read_source(const std::string& rel) {
  const char* root = std::getenv("TL_SOURCE_DIR");
  std::ifstream in(std::string(root ? root : ".") + "/" + rel);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(PassRegistry, TheFingerprintIsTheOneTheCacheKeyHadBefore) {
  // The literal tl::DeveloperOptions::fingerprint() printed before the registry keeps its place
  // (a cache key that changed would silently orphan every disk cache entry); switches added
  // since follow it, in registry order, so adding one needs no edit here.
  const std::string before =
      "infer_scopes=1,lower_cube_ops=1,mask_tails=1,legalize_copies=1,split_cube_vector=1,"
      "vectorize=1,insert_syncs=1,pipeline_loops=1,split_aiv=1,minimise_syncs=1,merge_flags=0,"
      "scalar_fallback=0,allow_inexact_math=1";  // =1 since issue 29 made it the default: a
                                                 // kernel cached with it off keeps its own key
  std::string added;
  bool past = false;
  for (const Switch& s : switch_registry()) {
    if (past) added += fmt::format(",{}={:d}", s.name, s.default_on());
    past |= s.name == "allow_inexact_math";
  }
  EXPECT_EQ(DeveloperOptions{}.fingerprint(), before + added);
  DeveloperOptions d;
  d.split_aiv = false;
  EXPECT_NE(d.fingerprint().find("split_aiv=0,minimise_syncs=1"), std::string::npos)
      << d.fingerprint();
}

TEST(PassRegistry, EverySwitchHasItsKeyDefaultAndNeeds) {
  for (const Switch& s : switch_registry()) {
    ASSERT_FALSE(s.keys.empty()) << s.name;
    EXPECT_EQ(s.keys[0], "tl.dev." + std::string(s.name));
    EXPECT_EQ(find_switch(s.keys[0]), &s);
    EXPECT_EQ(find_switch(s.name), &s);
    for (auto need : s.needs) EXPECT_NE(find_switch(need), nullptr) << s.name << " needs " << need;
  }
  EXPECT_EQ(find_switch("no_such_switch"), nullptr);
  EXPECT_FALSE(find_switch("merge_flags")->default_on());
  EXPECT_TRUE(find_switch("mask_tails")->default_on());
  DeveloperOptions d;
  d.vectorize = false;  // scalar_fallback is off: valid
  EXPECT_NO_THROW(d.validate());
  d.scalar_fallback = true;
  EXPECT_NE(error_of([&] {
              d.validate();
            }).find("'scalar_fallback' is on but needs 'vectorize', which is off"),
            std::string::npos);
}

TEST(PassRegistry, EveryPassRowIsWellFormed) {
  for (const PassDef& p : pass_registry()) {
    EXPECT_TRUE(p.run) << p.name;
    EXPECT_EQ(find_pass(p.name), &p);
    if (!p.switch_name.empty()) {
      EXPECT_NE(find_switch(p.switch_name), nullptr) << p.name;
    }
    for (auto need : p.needs) {
      const PassDef* n = find_pass(need);
      ASSERT_NE(n, nullptr) << p.name << " needs " << need;
      EXPECT_LT(n, &p) << p.name << " needs " << need << ", which runs after it";
    }
  }
}

TEST(PassRegistry, EverySwitchAndPassIsDocumented) {
  if (!std::getenv("TL_SOURCE_DIR")) GTEST_SKIP() << "TL_SOURCE_DIR not set (run through ctest)";
  std::string dev = read_source("docs/developer_mode.md"),
              compiler = read_source("docs/compiler.md");
  for (const Switch& s : switch_registry()) {
    std::string row = fmt::format("| `{}` | ", s.name);
    size_t at = dev.find(row, dev.find("### Options"));
    ASSERT_NE(at, std::string::npos) << s.name << " has no row in docs/developer_mode.md, Options";
    std::string_view def = std::string_view(dev).substr(at + row.size());
    EXPECT_TRUE(def.starts_with(s.default_on() ? "on" : "off") ||
                def.starts_with(s.default_on() ? "on" : "**off**"))
        << s.name << ": the documented default is not the registry's";
  }
  for (const PassDef& p : pass_registry())
    EXPECT_NE(compiler.find(fmt::format("`{}`", p.name)), std::string::npos)
        << p.name << " is not in docs/compiler.md";
}

TEST(PassRegistry, EveryPassHasAnIrFileTest) {
  if (!std::getenv("TL_SOURCE_DIR")) GTEST_SKIP() << "TL_SOURCE_DIR not set (run through ctest)";
  for (const PassDef& p : pass_registry()) {
    // simplify_lowered and verify_lowered are simplify and verify again, on the lowered kernel.
    std::string name(p.name == "simplify_lowered" ? "simplify"
                     : p.name == "verify_lowered" ? "verify"
                                                  : p.name);
    std::string file = fmt::format("{}/tests/pass/{}.tl", std::getenv("TL_SOURCE_DIR"), name);
    EXPECT_TRUE(std::filesystem::exists(file)) << p.name << ": no " << file;
    if (std::filesystem::exists(file)) {
      EXPECT_NE(read_source(fmt::format("tests/pass/{}.tl", name)).find("--passes="),
                std::string::npos)
          << file;
    }
  }
}

TEST(PassRegistry, RunNamedPassesRunsUngatedAndRejectsUnknownNames) {
  PrimFunc f = parse(R"(@T.prim_func
def f(X: T.Tensor((16, 64), "float32")):
    with T.Kernel(1, threads=1) as cid:
        x = T.alloc_shared((16, 64), "float32")
        T.copy(X, x)
        T.tile.exp(x, x)
        T.copy(x, X)
)");
  std::string out =
      print(run_named_passes(f, default_target(), {"infer_scopes"}, {}), {.locations = false});
  EXPECT_NE(out.find("x = T.alloc_ub((16, 64)"), std::string::npos) << out;
  EXPECT_NE(error_of([&] { run_named_passes(f, default_target(), {"infer_scope"}, {}); })
                .find("passes: no pass named 'infer_scope' (passes: combine_cv, "
                      "place_expert_tiles, verify, simplify, infer_scopes"),
            std::string::npos);
}

// verify_each checks a lowering pass's phase invariant: a vectorize_parallel that did nothing
// leaves a Parallel loop in the Vector scope, an internal error naming the pass. (Before the
// registry no pass stated one: a vectorize_parallel that returned its input passed verify_each.)
TEST(PassRegistry, VerifyEachChecksThePhaseInvariant) {
  PrimFunc f = parse(R"(@T.prim_func
def f(A: T.Tensor((64,), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((64,), "float32")
            for i in T.Parallel(64):
                a[i] = a[i] + a[i]
)");
  const PassDef* vec = find_pass("vectorize_parallel");
  ASSERT_TRUE(vec && vec->phase);
  EXPECT_NE(vec->phase(f).find("a T.Parallel loop is left in the Vector scope"), std::string::npos);
  Pass lazy{"vectorize_parallel", [](const PrimFunc& g, const Target&) { return g; }, std::nullopt,
            vec->phase};
  PassOptions o;
  o.verify_each = true;
  std::string msg = error_of<InternalError>([&] { run_passes(f, default_target(), {lazy}, o); });
  EXPECT_NE(msg.find("pass 'vectorize_parallel' broke its phase invariant"), std::string::npos)
      << msg;
  // The real pass meets it.
  EXPECT_NO_THROW(run_named_passes(f, default_target(), {"vectorize_parallel"}, o));
  EXPECT_EQ(find_pass("infer_scopes")->phase(f), "");
  EXPECT_EQ(find_pass("split_cube_vector")->phase(f), "");
}

}  // namespace
}  // namespace tl
