// Internal errors (TL_ASSERT) throw tl::InternalError instead of aborting, so a host process
// survives them; they are not tl::Error, so a handler (or test) of user errors lets them pass.
#include <gtest/gtest.h>

#include "tl/error.h"
#include "tl/lang.h"
#include "tl/npu/npu.h"
#include "tl/op.h"
#include "tl/pass.h"

namespace tl {
namespace {

TEST(InternalError, AssertThrowsWithFileLineConditionAndContext) {
  const int line = __LINE__ + 2;
  try {
    TL_ASSERT(1 + 1 == 3, "arithmetic is broken: {} != {}", 1 + 1, 3);
    FAIL() << "TL_ASSERT did not throw";
  } catch (const InternalError& e) {
    EXPECT_EQ(e.file(), "tests/ir/internal_error_test.cpp");
    EXPECT_EQ(e.line(), line);
    EXPECT_EQ(e.condition(), "1 + 1 == 3");
    EXPECT_EQ(e.context(), "arithmetic is broken: 2 != 3");
    EXPECT_EQ(
        std::string(e.what()),
        fmt::format("tl-ascend internal error at tests/ir/internal_error_test.cpp:{}: assertion "
                    "`1 + 1 == 3` failed: arithmetic is broken: 2 != 3",
                    line));
  }
}

TEST(InternalError, IsNotAUserError) {
  static_assert(!std::is_base_of_v<Error, InternalError>);
  static_assert(!std::is_base_of_v<InternalError, Error>);
  // A real invariant of the library: only registered environment variables may be read.
  bool caught_as_user_error = false, caught_as_internal = false;
  try {
    try {
      env_value("TL_NO_SUCH_VARIABLE");
    } catch (const Error&) {
      caught_as_user_error = true;
    }
  } catch (const InternalError& e) {
    caught_as_internal = true;
    EXPECT_NE(std::string(e.what()).find("TL_NO_SUCH_VARIABLE is read but not in env_registry()"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(caught_as_user_error);
  EXPECT_TRUE(caught_as_internal);
  EXPECT_THROW(env_value("TL_NO_SUCH_VARIABLE"), InternalError);
}

TEST(InternalError, IsAStdException) {
  // Bindings translate std::exception subclasses; InternalError is a std::logic_error.
  try {
    env_value("TL_NO_SUCH_VARIABLE");
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("tl-ascend internal error at src/support/env.cpp:"),
              std::string::npos)
        << e.what();
    return;
  }
  FAIL() << "expected a std::logic_error";
}

TEST(InternalError, RaisedOnACoreThreadReachesTheCallerOfLaunch) {
  // The interpreter trusts a verified kernel: tile operands are regions where the op needs
  // them. An unverified one made of raw nodes (no DSL or verifier checks), with a scalar as
  // tile.add's destination, trips that invariant on the core threads (four blocks, two host
  // threads); the launch rethrows it to the caller, still an InternalError. (A stray variable
  // used to serve here; the NPU's compile step now reports unbound symbols as user errors.)
  Buffer X = BufferNode::make("X", f32, {64}, MemScope::GM);
  Stmt add = TileOpNode::make(find_op("tile.add"),
                              {TileArg(Expr(1.0)), TileArg(Expr(1.0)), TileArg(Expr(1.0))}, {});
  Var cid("cid"), vid("vid");
  PrimFunc f =
      make_prim_func("raw_op", {}, {Param{X, {}}},
                     KernelNode::make(4, cid, vid, ScopeNode::make(CoreKind::Vector, add)));
  auto k = compile(f, default_target(), {.verify = false, .lower = false, .cache = false});
  Device dev;
  Tensor t = Tensor::empty(dev, {64}, f32);
  try {
    k.launch(dev, {t}, {.threads = 2});
    FAIL() << "expected an InternalError";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("is not a region"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tl
