// Regressions of issue 10 item 9 (compiler side): a disk-cache artifact with a forged address
// near INT64_MAX crashed the process (the loaded IR went to the backend unchecked); parsing a
// 100 MB line threw std::bad_alloc; and a kernel compiled with `verify = false` that used
// another kernel's loop variable or buffer hit an internal assertion at launch. Now a loaded
// artifact must pass the verifier (planned spec) or it is rejected and recompiled, the parser
// has documented input, line, token and name limits, and the NPU's compile step reports
// unbound symbols as user errors.
#include <gtest/gtest.h>

#include <regex>

#include "common/references.h"
#include "jit/jit_test_util.h"
#include "pass/pass_test_util.h"
#include "tl/ir_equal.h"
#include "tl/jit.h"
#include "tl/lang.h"
#include "tl/npu/npu.h"
#include "tl/parser.h"
#include "tl/printer.h"

namespace tl {
namespace {

using jittest::TempDir;
using testing::error_of;

// ---- The disk cache re-verifies what it loads ------------------------------------------------

PrimFunc doubler() {
  auto X = T::Tensor("X", {8, 64}, f32), Y = T::Tensor("Y", {8, 64}, f32);
  return T::prim_func("doubler", {X, Y}, [&] {
    T::Kernel(1, [&](Expr, Expr) {
      T::Scope(Core::Vector, [&] {
        auto x = T::alloc_ub("x", {8, 64}, f32);
        T::copy(X, x);
        T::set_flag(Pipe::MTE2, Pipe::V, 0);
        T::wait_flag(Pipe::MTE2, Pipe::V, 0);
        T::tile::add(x, x, x);
        T::set_flag(Pipe::V, Pipe::MTE3, 0);
        T::wait_flag(Pipe::V, Pipe::MTE3, 0);
        T::copy(x, Y);
      });
    });
  });
}

void check_doubler(const CompiledKernel& k) {
  Device dev;
  Tensor X = uniform(dev, {8, 64}, f32, 3), Y = Tensor::empty(dev, {8, 64}, f32);
  k.launch(dev, {X, Y});
  auto x = X.to_vector(), y = Y.to_vector();
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(y[i], 2 * x[i]) << i;
}

/// Rewrites the artifact's IR with `forge` and fixes up its recorded hash, as a forger would.
void forge_artifact(const std::string& file, const std::function<std::string(std::string)>& forge) {
  std::string text = jittest::read_file(file);
  size_t nl = text.find('\n');
  ASSERT_NE(nl, std::string::npos);
  std::string body = forge(text.substr(nl + 1));
  std::string header =
      std::regex_replace(text.substr(0, nl), std::regex("\"lowered_hash\":\"[0-9a-f]+\""),
                         fmt::format("\"lowered_hash\":\"{:016x}\"", structural_hash(parse(body))));
  jittest::write_file(file, header + "\n" + body);
}

TEST(CompileHardening, ForgedCacheArtifactIsVerifiedAndRejected) {
  for (const char* address : {"9223372036854775776", "8"}) {  // near INT64_MAX; misaligned in UB
    SCOPED_TRACE(address);
    TempDir d;
    CompileOptions opt;
    opt.cache_dir = d.str();
    PrimFunc f = doubler();
    jit::clear_cache();
    compile(f, default_target(), opt);
    std::string file = jit::cache_file(npu_backend(), f, default_target(), opt);
    forge_artifact(file, [&](std::string ir) {
      return std::regex_replace(ir, std::regex("address=[0-9]+"),
                                std::string("address=") + address);
    });
    ASSERT_NE(jittest::read_file(file).find(address), std::string::npos);
    jit::clear_cache();
    jit::reset_cache_stats();
    auto k = compile(f, default_target(), opt);
    auto s = jit::cache_stats();
    EXPECT_EQ(s.disk_hits, 0u);
    EXPECT_EQ(s.disk_rejects, 1u);
    EXPECT_EQ(s.misses, 1u);
    check_doubler(k);
  }
  jit::clear_cache();
}

// ---- Parser limits -------------------------------------------------------------------------

TEST(CompileHardening, HundredMegabyteLineIsAnError) {
  std::string text =
      "@T.prim_func\ndef k():\n    x = " + std::string(size_t{100} << 20, '1') + "\n";
  std::string msg = error_of([&] { parse(text); });
  EXPECT_NE(msg.find("longer than"), std::string::npos) << msg;
}

TEST(CompileHardening, ParserLimitsAreErrorsNamingThem) {
  const std::string head =
      "@T.prim_func\ndef k():\n    with T.Kernel(1, is_npu=True) as (cid, vid):\n        ";
  struct Case {
    std::string text, says;
  };
  const Case cases[] = {
      {head + "x = 1" + std::string(kMaxIrLineBytes, ' ') + "\n", "line longer than"},
      {head + "x = \"" + std::string(kMaxIrTokenBytes, 'a') + "\"\n", "string literal longer than"},
      {head + "x = " + std::string(kMaxIrTokenBytes + 1, '7') + "\n", "number longer than"},
      {head + std::string(kMaxIrNameBytes + 1, 'v') + " = 1\n", "name longer than"},
      {[&] {
         std::string t = head;
         for (size_t i = 0; i < kMaxIrTokens / 4 + 1; ++i) t += "x = 1\n        ";
         return t;
       }(),
       "tokens"},
  };
  for (const Case& c : cases) {
    std::string msg = error_of([&] { parse(c.text); });
    EXPECT_NE(msg.find(c.says), std::string::npos) << msg.substr(0, 200);
    EXPECT_NE(msg.find("limit"), std::string::npos) << msg.substr(0, 200);
  }
  // A name at the limit is fine.
  std::string ok = head + std::string(kMaxIrNameBytes, 'v') + " = 1\n";
  EXPECT_NO_THROW(parse(ok));
}

// ---- Unbound symbols in unverified kernels -------------------------------------------------

TEST(CompileHardening, UnverifiedKernelUsingAnotherKernelsSymbolsIsAUserError) {
  // Symbols of kernel `other`: its loop variable and its UB buffer.
  Expr other_i;
  Buffer other_ub;
  auto Z = T::Tensor("Z", {64}, f32);
  T::prim_func("other", {Z}, [&] {
    T::Kernel(1, [&](Expr, Expr) {
      T::Scope(Core::Vector, [&] {
        other_ub = T::alloc_ub("z", {64}, f32);
        T::serial(4, [&](Expr i) { other_i = i; });
      });
    });
  });
  auto uses = [&](bool loop_var) {
    auto X = T::Tensor("X", {64}, f32);
    return T::prim_func("k", {X}, [&] {
      T::Kernel(1, [&](Expr, Expr) {
        T::Scope(Core::Vector, [&] {
          if (loop_var) {
            auto x = T::alloc_ub("x", {64}, f32);
            T::copy(X, x);
            T::store(X, {0}, x(other_i));
          } else {
            T::copy(X, other_ub);
          }
        });
      });
    });
  };
  for (bool loop_var : {true, false})
    for (bool lower : {true, false}) {
      SCOPED_TRACE(fmt::format("loop_var={} lower={}", loop_var, lower));
      PrimFunc f = uses(loop_var);
      EXPECT_THROW(compile(f, default_target(), {.verify = true, .lower = lower, .cache = false}),
                   Error);
      std::string msg = error_of([&] {
        auto k = compile(f, default_target(), {.verify = false, .lower = lower, .cache = false});
        Device dev;
        Tensor X = Tensor::empty(dev, {64}, f32);
        k.launch(dev, {X});
      });
      EXPECT_NE(msg.find(loop_var ? "variable 'i'" : "buffer 'z'"), std::string::npos) << msg;
      EXPECT_NE(msg.find("another kernel"), std::string::npos) << msg;
    }
}

}  // namespace
}  // namespace tl
