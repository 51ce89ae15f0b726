// The pass manager: passes run in order; --print-after-all / --print-after dump the IR only
// after passes that changed it, under a `// IR after <pass>` header; --time-passes reports
// every pass; the environment variables do the same; unknown pass names are user errors;
// disabled passes do not run; verify_each holds every pass to its output invariant. What lower
// makes of an expert kernel is tests/pass/lower_pipeline.tl. Kept here, because `tlc opt` has
// no pass manager knobs: the dumps and timings through PassOptions::sink, the environment
// variables, disabled passes, and passes defined by the test (a broken pass for verify_each).
#include <cstdlib>

#include "pass/pass_test_util.h"
#include "tl/kernel_registry.h"

namespace tl {
namespace {

using testing::error_of;

constexpr std::string_view kKernel = R"(@T.prim_func
def f(X: T.Tensor((64,), "float32")):
    with T.Kernel(2 * 1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((64,), "float32")
            T.copy(X, a)
            T.set_flag("MTE2", "MTE3", 0)
            T.wait_flag("MTE2", "MTE3", 0)
            T.copy(a, X)
)";

struct Captured {
  std::string text;
  PassOptions options() {
    PassOptions o;
    o.sink = [this](const std::string& s) { text += s; };
    return o;
  }
};

size_t count(const std::string& s, std::string_view part) {
  size_t n = 0;
  for (size_t p = s.find(part); p != std::string::npos; p = s.find(part, p + 1)) ++n;
  return n;
}

// LowerRunsVerifySimplifyAndPlanMemory: tests/pass/lower_pipeline.tl (tlc opt --pipeline).

TEST(PassManager, PrintAfterAllDumpsOnlyPassesThatChangedTheIr) {
  Captured c;
  PassOptions o = c.options();
  o.print_after_all = true;
  lower(parse(kKernel), default_target(), o);
  EXPECT_EQ(count(c.text, "// IR after verify"), 0u) << c.text;  // verify changes nothing
  EXPECT_EQ(count(c.text, "// IR after simplify"), 1u) << c.text;
  EXPECT_EQ(count(c.text, "// IR after plan_memory"), 1u) << c.text;
  EXPECT_LT(c.text.find("// IR after simplify"), c.text.find("// IR after plan_memory"));
  EXPECT_NE(c.text.find("with T.Kernel(2, is_npu=True)"), std::string::npos) << c.text;
  EXPECT_NE(c.text.find("address=0"), std::string::npos) << c.text;
}

TEST(PassManager, PrintAfterSelectsPasses) {
  Captured c;
  PassOptions o = c.options();
  o.print_after = {"plan_memory"};
  lower(parse(kKernel), default_target(), o);
  EXPECT_EQ(count(c.text, "// IR after"), 1u) << c.text;
  EXPECT_EQ(c.text.rfind("// IR after plan_memory\n@T.prim_func", 0), 0u) << c.text;
}

TEST(PassManager, TimePassesReportsEveryPassInMicroseconds) {
  Captured c;
  PassOptions o = c.options();
  o.time_passes = true;
  o.dev.merge_flags = true;  // off by default (a switch leaves its pass out, as in tl::compile)
  lower(parse(kKernel), default_target(), o);
  // Every pass of the pipeline reports, the developer-mode ones too (they return an expert
  // kernel unchanged, quickly).
  for (const char* p : {"// pass place_expert_tiles: ",
                        "// pass verify: ",
                        "// pass simplify: ",
                        "// pass clip_expert_copies: ",
                        "// pass infer_scopes: ",
                        "// pass lower_cube_ops: ",
                        "// pass mask_tails: ",
                        "// pass legalize_copies: ",
                        "// pass split_cube_vector: ",
                        "// pass vectorize_parallel: ",
                        "// pass split_aiv: ",
                        "// pass pipeline_loops: ",
                        "// pass simplify_lowered: ",
                        "// pass verify_lowered: ",
                        "// pass hoist_above_channel_waits: ",
                        "// pass group_vector_ops: ",
                        "// pass plan_memory: ",
                        "// pass insert_syncs: ",
                        "// pass hoist_slot_credits: ",
                        "// pass insert_channel_syncs: ",
                        "// pass elide_channel_credits: ",
                        "// pass elide_implied_syncs: ",
                        "// pass merge_flags: ",
                        "// pass guard_loop_credits: "})
    EXPECT_NE(c.text.find(p), std::string::npos) << p << "\n" << c.text;
  // Each line: wall time, then the thread's CPU time ("// pass verify: 90 us (cpu 85 us)").
  EXPECT_EQ(count(c.text, " us (cpu "), 24u) << c.text;
  EXPECT_EQ(count(c.text, " us)\n"), 24u) << c.text;
  EXPECT_EQ(count(c.text, "// IR after"), 0u) << c.text;
}

TEST(PassManager, RunsCustomPassesInOrder) {
  std::string order;
  std::vector<Pass> passes = {
      {"first",
       [&](const PrimFunc& f, const Target&) {
         order += "1";
         return f;
       }},
      {"second",
       [&](const PrimFunc& f, const Target&) {
         order += "2";
         return simplify(f);
       }},
  };
  Captured c;
  PassOptions o = c.options();
  o.print_after = {"first", "second"};
  run_passes(parse(kKernel), default_target(), passes, o);
  EXPECT_EQ(order, "12");
  EXPECT_EQ(count(c.text, "// IR after first"), 0u) << c.text;
  EXPECT_EQ(count(c.text, "// IR after second"), 1u) << c.text;
}

TEST(PassManager, UnknownPassNameIsAUserError) {
  PassOptions o;
  o.print_after = {"plan_memroy"};
  std::string msg = error_of([&] { lower(parse(kKernel), default_target(), o); });
  EXPECT_NE(msg.find("no pass named 'plan_memroy'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("plan_memory"), std::string::npos) << msg;
}

TEST(PassManager, EnvironmentVariablesTurnOnTheKnobs) {
  ::setenv("TL_PRINT_AFTER", "simplify, plan_memory", 1);
  ::setenv("TL_TIME_PASSES", "1", 1);
  PassOptions o = with_env({});
  ::unsetenv("TL_PRINT_AFTER");
  ::unsetenv("TL_TIME_PASSES");
  EXPECT_EQ(o.print_after, (std::vector<std::string>{"simplify", "plan_memory"}));
  EXPECT_TRUE(o.time_passes);
  EXPECT_FALSE(o.print_after_all);
  EXPECT_FALSE(with_env({}).time_passes);
}

TEST(PassManager, DisabledPassesDoNotRun) {
  std::string order;
  std::vector<Pass> passes = {
      {"first",
       [&](const PrimFunc& f, const Target&) {
         order += "1";
         return f;
       }},
      {"second",
       [&](const PrimFunc& f, const Target&) {
         order += "2";
         return f;
       }},
  };
  PassOptions o;
  o.disabled_passes = {"first"};
  run_passes(parse(kKernel), default_target(), passes, o);
  EXPECT_EQ(order, "2");
  o.disabled_passes = {"frist"};
  std::string msg = error_of([&] { run_passes(parse(kKernel), default_target(), passes, o); });
  EXPECT_NE(msg.find("no pass named 'frist' (passes: first, second)"), std::string::npos) << msg;
}

TEST(PassManager, LowerWithoutItsVerifyPassTrustsTheInput) {
  // A T.Pipelined loop outside any scope fails the expert spec but lowers (pipeline_loops makes
  // it serial): with "verify" disabled it goes through.
  constexpr std::string_view kParallel = R"(@T.prim_func
def f(X: T.Tensor((64,), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        for p in T.Pipelined(4, num_stages=2):
            with T.Scope("Vector"):
                a = T.alloc_ub((64,), "float32")
                T.pipe_barrier("V")
)";
  EXPECT_THROW(lower(parse(kParallel), default_target()), Error);
  PassOptions o;
  o.disabled_passes = {"verify"};
  PrimFunc g = lower(parse(kParallel), default_target(), o);
  EXPECT_NE(print(g).find("address=0"), std::string::npos) << print(g);
  o.verify_each = true;  // an invalid input is nobody's invariant to keep
  EXPECT_NO_THROW(lower(parse(kParallel), default_target(), o));
}

TEST(PassManager, VerifyEachCatchesAPassThatBreaksTheExpertSpec) {
  // The broken pass moves the vector work into a Cube scope.
  Pass broken{"break_scopes",
              [](const PrimFunc& f, const Target&) {
                std::string text = print(f);
                text.replace(text.find("\"Vector\""), 8, "\"Cube\"");
                return parse(text);
              },
              Spec::Expert};
  std::vector<Pass> passes = {{"verify", verify_pass, Spec::Expert}, broken};
  PassOptions o;
  if (env_value("TL_VERIFY_EACH").empty()) {  // off by default: unchecked
    EXPECT_NO_THROW(run_passes(parse(kKernel), default_target(), passes, o));
  }
  o.verify_each = true;
  std::string msg =
      error_of<InternalError>([&] { run_passes(parse(kKernel), default_target(), passes, o); });
  EXPECT_NE(msg.find("pass 'break_scopes' broke its output invariant (the expert spec)"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("[rule: copy-core-scope]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[rule: alloc-core-scope]"), std::string::npos) << msg;
}

TEST(PassManager, VerifyEachCatchesAPassThatBreaksThePlannedSpec) {
  // Claims to plan memory but does nothing: the UB buffer has no address.
  std::vector<Pass> passes = {
      {"verify", verify_pass, Spec::Expert},
      {"fake_plan", [](const PrimFunc& f, const Target&) { return f; }, Spec::Planned}};
  PassOptions o;
  o.verify_each = true;
  std::string msg =
      error_of<InternalError>([&] { run_passes(parse(kKernel), default_target(), passes, o); });
  EXPECT_NE(msg.find("pass 'fake_plan' broke its output invariant (the planned spec)"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("1 violation:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[rule: buffer-unplanned]"), std::string::npos) << msg;
  // The environment variable turns it on too.
  ::setenv("TL_VERIFY_EACH", "1", 1);
  bool internal = false;
  try {
    run_passes(parse(kKernel), default_target(), passes, {});
  } catch (const InternalError&) {
    internal = true;
  }
  ::unsetenv("TL_VERIFY_EACH");
  EXPECT_TRUE(internal);
}

TEST(PassManager, VerifyEachBlamesThePassAfterAnUncheckedOne) {
  // A pass without an invariant breaks the kernel; the next pass is not blamed for it.
  std::vector<Pass> passes = {
      {"verify", verify_pass, Spec::Expert},
      {"unchecked",
       [](const PrimFunc& f, const Target&) {
         std::string text = print(f);
         return parse(text.replace(text.find("\"Vector\""), 8, "\"Cube\""));
       }},
      {"simplify", [](const PrimFunc& g, const Target&) { return simplify(g); }, Spec::Expert}};
  PassOptions o;
  o.verify_each = true;
  EXPECT_NO_THROW(run_passes(parse(kKernel), default_target(), passes, o));
}

TEST(PassManager, InvalidInputIsAUserErrorEvenWithVerifyEach) {
  PassOptions o;
  o.verify_each = true;
  std::string text(kKernel);
  text.replace(text.find("\"Vector\""), 8, "\"Cube\"");
  std::string msg = error_of([&] { lower(parse(text), default_target(), o); });
  EXPECT_NE(msg.find("fails verification"), std::string::npos) << msg;
}

TEST(PassManager, EveryExampleKernelLowersWithVerifyEach) {
  PassOptions o;
  o.verify_each = true;
  for (const KernelEntry* k : registered_kernels()) {
    SCOPED_TRACE(k->name);
    PrimFunc g;
    EXPECT_NO_THROW(g = lower(build_kernel(*k), default_target(), o));
    if (g) {
      auto ds = verify(g, default_target(), {.spec = Spec::Planned});
      EXPECT_TRUE(ds.empty()) << format_diagnostics(ds);
    }
  }
}

TEST(PassManager, EveryEnvironmentVariableIsRegisteredAndDocumented) {
  const char* root = std::getenv("TL_SOURCE_DIR");
  if (!root) GTEST_SKIP() << "TL_SOURCE_DIR not set (run through ctest)";
  std::FILE* fp = std::fopen((std::string(root) + "/docs/compiler.md").c_str(), "r");
  ASSERT_TRUE(fp);
  std::string doc;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, fp)) > 0;) doc.append(buf, n);
  std::fclose(fp);
  for (const auto& v : env_registry())
    EXPECT_NE(doc.find("`" + std::string(v.name) + "`"), std::string::npos)
        << v.name << " missing in docs/compiler.md";
}

}  // namespace
}  // namespace tl
