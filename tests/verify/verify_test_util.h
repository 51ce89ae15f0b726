// Helpers for verifier tests: small kernel skeletons and a matcher that finds a diagnostic by
// rule and checks its op, operand and source line.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "tl/lang.h"
#include "tl/target.h"
#include "tl/verifier.h"

namespace tl::testing {

/// A function `k(params)` with one launch of `blocks` blocks whose body is `body`.
inline PrimFunc kernel(std::vector<ParamRef> params, const std::function<void()>& body,
                       Expr blocks = 1) {
  return T::prim_func("k", std::move(params),
                      [&] { T::Kernel(blocks, [&](Expr, Expr) { body(); }); });
}
/// The same with the body inside T::Scope(core).
inline PrimFunc scoped(Core core, std::vector<ParamRef> params, const std::function<void()>& body) {
  return kernel(std::move(params), [&] { T::Scope(core, body); });
}
inline PrimFunc vector_kernel(std::vector<ParamRef> params, const std::function<void()>& body) {
  return scoped(Core::Vector, std::move(params), body);
}
inline PrimFunc cube_kernel(std::vector<ParamRef> params, const std::function<void()>& body) {
  return scoped(Core::Cube, std::move(params), body);
}

/// Finds the diagnostic with `rule` and checks op, operand and line (line 0: not checked).
inline ::testing::AssertionResult HasDiag(const std::vector<Diagnostic>& ds, std::string_view rule,
                                          std::string_view op, std::string_view operand, int line) {
  std::string all = format_diagnostics(ds);
  for (const auto& d : ds) {
    if (d.rule != rule) continue;
    if (d.op != op || d.operand != operand || (line && d.loc.line != line)) continue;
    if (line && d.loc.file.find("tests/verify/") == std::string::npos)
      return ::testing::AssertionFailure() << "diagnostic has file '" << d.loc.file << "'\n" << all;
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure()
         << "no diagnostic [rule: " << rule << "] on " << op << " operand '" << operand
         << "' at line " << line << "; got:\n"
         << (all.empty() ? "(nothing)\n" : all);
}

/// Verifies `f` on `target` and checks it reports `rule` on `op`/`operand` at `line`.
inline ::testing::AssertionResult Reports(const PrimFunc& f, std::string_view rule,
                                          std::string_view op, std::string_view operand, int line,
                                          std::string_view target = "A2") {
  return HasDiag(verify(f, get_target(target)), rule, op, operand, line);
}

inline ::testing::AssertionResult Clean(const PrimFunc& f, std::string_view target = "A2") {
  auto ds = verify(f, get_target(target));
  if (ds.empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "expected no diagnostics on " << target << ", got:\n"
                                       << format_diagnostics(ds);
}

}  // namespace tl::testing
