// insert_syncs beyond IR text in, IR text out: its fixtures are tests/pass/insert_syncs_cases.tl
// (whole output text, line for line); here every case of that file is launched on the virtual NPU
// with the hazard checker (no unordered pair, no deadlock, flags balanced) and the stale-data
// checker, and insert_syncs is checked to return its input itself when it has nothing to do.
// Why the rest stays C++ (not a .tl file):
// - the launches and the identity of the returned function: `tlc opt` prints IR, it runs nothing;
// - AutoMarkPrintsAndParsesBack tests the parser and printer API (SyncOrigin of each parsed sync,
//   structural_equal ignoring it), not a pass.
#include "pass/pass_test_util.h"

#include <fstream>

#include "tl/ir_equal.h"
#include "tl/npu/npu.h"
#include "tl/npu/stale.h"
#include "tl/target.h"

namespace tl {
namespace {

/// Launches `f` with the hazard and flag checkers on (a tl::Error on any finding), and the
/// stale-data checker, whose findings (one line each) go to `stale` when given. Tensor
/// parameters get uniform data.
void launch_checked(const PrimFunc& f, std::string* stale = nullptr) {
  Device dev;
  std::vector<Arg> args;
  uint64_t seed = 1;
  for (const auto& p : f->params) {
    ASSERT_TRUE(p.is_tensor()) << p.name();
    std::vector<int64_t> shape;
    for (const auto& e : p.tensor->shape) shape.push_back(*as_const_int(e));
    args.push_back(uniform(dev, shape, p.tensor->dtype, seed++));
  }
  std::vector<npu::StaleFinding> found;
  compile(f, default_target(), {.cache = false})
      .launch(dev, args,
              {.threads = 1, .check_hazards = true, .stale_findings = stale ? &found : nullptr});
  for (const auto& x : found) *stale += x.str() + "\n";
}

/// The cases of an IR-file test: its text split at `# -----` lines, each named by the
/// `# Suite.Test` comment heading it (tests/pass/*.tl; docs/compiler.md, "IR-file tests").
struct IrCase {
  std::string name, text;
};
std::vector<IrCase> ir_cases(const std::string& rel) {
  const char* root = std::getenv("TL_SOURCE_DIR");
  std::ifstream in(std::string(root) + "/" + rel);
  EXPECT_TRUE(in.good()) << "cannot read " << rel;
  std::vector<IrCase> cases(1);
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("# -----")) {
      cases.emplace_back();
      continue;
    }
    if (cases.back().name.empty() && line.starts_with("# InsertSyncs."))
      cases.back().name = line.substr(2, line.find_first_of(":", 2) - 2);
    cases.back().text += line + "\n";
  }
  return cases;
}

TEST(InsertSyncs, EveryCaseOfTheIrFileRunsHazardFree) {
  if (!std::getenv("TL_SOURCE_DIR")) GTEST_SKIP() << "TL_SOURCE_DIR not set (run through ctest)";
  const auto cases = ir_cases("tests/pass/insert_syncs_cases.tl");
  EXPECT_EQ(cases.size(), 16u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    ASSERT_FALSE(c.name.empty()) << "a case without its `# InsertSyncs.Name` heading";
    const PrimFunc f = parse(c.text);
    const PrimFunc g = insert_syncs(f, default_target());
    std::string stale;
    launch_checked(g, &stale);
    // The kernel only exists to order the two writers of Y: its L0C tile is never written.
    if (c.name == "InsertSyncs.PairWithoutAHardwareEventGoesThroughAThirdPipe") {
      EXPECT_EQ(stale,
                "invalid data stored to GM at <unknown>: T.copy stores 256 invalid of 256 elements "
                "into 'Y', the first Y[0, 0]; never written in this launch (first in block 0 "
                "AIC)\n");
    } else {
      EXPECT_EQ(stale, "");
    }
    // Nothing to do (scopes with syncs of their own, its own output): the same function.
    if (print(g, {.locations = false}) == print(f, {.locations = false})) {
      EXPECT_EQ(g, f);
    }
    EXPECT_EQ(insert_syncs(g, default_target()), g);
  }
}

TEST(InsertSyncs, AutoMarkPrintsAndParsesBack) {
  constexpr std::string_view text = R"(@T.prim_func
def f(X: T.Tensor((16, 64), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            T.set_flag("MTE2", "V", 0, auto=True)
            T.wait_flag("MTE2", "V", 0)
            T.pipe_barrier("V", auto=True)
            T.barrier_all(auto=True)
            T.set_cross_flag("MTE3", 3, mode=2, auto=True)
            T.wait_cross_flag(4, auto=True)
            T.sync_all()
)";
  PrimFunc f = parse(text);
  EXPECT_EQ(print(f, {.locations = false}), text);
  std::vector<SyncOrigin> origins;
  pre_order_visit(f->body, [&](const Stmt& s) {
    if (auto* y = s.as<SyncNode>()) origins.push_back(y->origin);
  });
  using O = SyncOrigin;
  EXPECT_EQ(origins,
            (std::vector<O>{O::Auto, O::User, O::Auto, O::Auto, O::Auto, O::Auto, O::User}));
  // `auto=False` is the default spelled out. Who wrote a sync is not what it does: structural
  // equality ignores the origin, as it ignores source locations.
  PrimFunc user = parse(R"(@T.prim_func
def f(X: T.Tensor((16, 64), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            T.set_flag("MTE2", "V", 0, auto=False)
            T.wait_flag("MTE2", "V", 0)
            T.pipe_barrier("V")
            T.barrier_all()
            T.set_cross_flag("MTE3", 3, mode=2)
            T.wait_cross_flag(4)
            T.sync_all()
)");
  EXPECT_NE(print(user), print(f));
  EXPECT_TRUE(structural_equal(user, f));
}

}  // namespace
}  // namespace tl
