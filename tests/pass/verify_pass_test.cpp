// The verify pass: valid kernels pass through untouched; invalid ones are user errors listing
// every violation with its rule, before any later pass runs.
#include "pass/pass_test_util.h"

namespace tl {
namespace {

using testing::error_of;
using testing::run_on_text;

constexpr std::string_view kValid = R"(@T.prim_func
def f(X: T.Tensor((16, 64), "float32"), Y: T.Tensor((16, 64), "float32")):
    with T.Kernel(2, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((16, 64), "float32")
            T.copy(X, a)
            T.set_flag("MTE2", "V", 0)
            T.wait_flag("MTE2", "V", 0)
            T.tile.exp(a, a)
            T.set_flag("V", "MTE3", 0)
            T.wait_flag("V", "MTE3", 0)
            T.copy(a, Y)
)";

std::string verified(std::string_view text) {
  return run_on_text(text, [](const PrimFunc& f) { return verify_pass(f, default_target()); });
}

/// kValid with `from` replaced by `to`.
std::string mutated(std::string_view from, std::string_view to) {
  std::string s(kValid);
  auto at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return s.replace(at, from.size(), to);
}

TEST(VerifyPass, ValidKernelComesBackAsIs) {
  EXPECT_EQ(verified(kValid), kValid);
  PrimFunc f = parse(kValid);
  EXPECT_EQ(verify_pass(f, default_target()), f);
}

TEST(VerifyPass, MisalignedExplicitAddressIsRejected) {
  std::string msg = error_of([] {
    verified(mutated(R"(a = T.alloc_ub((16, 64), "float32"))", R"(a = T.alloc_ub((16, 64), "float32", address=3))"));
  });
  EXPECT_NE(msg.find("buffer-address-alignment"), std::string::npos) << msg;
}

TEST(VerifyPass, EveryViolationIsListed) {
  std::string bad = mutated(R"(T.set_flag("MTE2", "V", 0))", R"(T.set_flag("MTE2", "V", 99))");
  auto at = bad.find(R"(T.wait_flag("MTE2", "V", 0))");
  bad.replace(at, 27, R"(T.wait_flag("MTE2", "V", 99))");
  std::string msg = error_of([&] { verified(bad); });
  size_t count = 0;
  for (size_t p = msg.find("[rule:"); p != std::string::npos; p = msg.find("[rule:", p + 1)) ++count;
  EXPECT_GE(count, 2u) << msg;
}

TEST(VerifyPass, RunsBeforePlanningInLower) {
  // An over-capacity single buffer is reported by the verifier's rule, not by the planner.
  std::string msg = error_of([] {
    lower(parse(mutated(R"(a = T.alloc_ub((16, 64), "float32"))", R"(a = T.alloc_ub((1024, 1024), "float32"))")),
          default_target());
  });
  EXPECT_NE(msg.find("[rule:"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("live stmts"), std::string::npos) << msg;
}

}  // namespace
}  // namespace tl
