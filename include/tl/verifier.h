// The verifier: checks an expert-mode kernel against a target's rules and reports every
// violation (not just the first). Each diagnostic names the op, the operand, the rule and
// the DSL source line, e.g.
//   examples/gemm.cpp:26: T.tile.add: operand 'dst' (buffer 'x_l1', scope L1): vector ops
//   take UB operands only [rule: vector-operand-scope]
#pragma once

#include <string>
#include <vector>

#include "tl/ir.h"
#include "tl/target.h"

namespace tl {

struct Diagnostic {
  std::string op;       // "T.copy", "T.tile.add", "T.set_flag", "T.alloc_ub", "T.Kernel", ...
  std::string operand;  // "dst", "src1", "event_id", ... ("" when the rule is about the op)
  std::string rule;     // stable identifier: "copy-path", "ub-alignment", "event-id-range", ...
  std::string message;  // what was expected and what came
  SourceLoc loc;
  std::string str() const;
};

/// Context handed to per-op verifier rules (OpDef::verify).
class VerifyContext {
 public:
  VerifyContext(const Target& t, std::vector<Diagnostic>& out) : target_(t), out_(out) {}
  const Target& target() const { return target_; }
  /// Reports a violation at `loc`.
  void error(const SourceLoc& loc, std::string op, std::string operand, std::string rule,
             std::string message);
  /// Reports a violation of tile op `n` (op name and location taken from it).
  void error(const TileOpNode& n, std::string operand, std::string rule, std::string message);
  /// The core scope the statement being checked sits in (nullopt outside any T::Scope).
  std::optional<CoreKind> core() const { return core_; }
  void set_core(std::optional<CoreKind> c) { core_ = c; }

 private:
  const Target& target_;
  std::vector<Diagnostic>& out_;
  std::optional<CoreKind> core_;
};

/// Every violation of `f` on target `t`; empty when the kernel is valid.
std::vector<Diagnostic> verify(const PrimFunc& f, const Target& t = default_target());
/// Throws tl::Error listing every violation, if there are any.
void verify_or_throw(const PrimFunc& f, const Target& t = default_target());

}  // namespace tl
