// The verifier: checks an expert-mode kernel against a target's rules and reports every
// violation (not just the first). Each diagnostic names the op, the operand, the rule and
// the DSL source line, e.g.
//   examples/gemm.cpp:26: T.tile.add: operand 'dst' (buffer 'x_l1' in L1): vector ops
//   take UB operands only [rule: vector-operand-scope]
//
// Specs: the expert spec (the default) is what an expert-mode kernel as written must satisfy;
// the planned spec is the expert spec plus what plan_memory establishes, so passes can be
// checked against it (PassOptions::verify_each): verify(f, t, {.spec = Spec::Planned}).
//
// What is checked (every chip fact comes from the Target; rule ids in brackets):
//  - structure: exactly one T::Kernel [kernel-count] with num_blocks > 0 [kernel-num-blocks];
//    nothing but declarations outside it [outside-kernel]; scopes not nested [nested-scope];
//    every tile op (except printf/dump_tensor) and every flag/barrier inside a T::Scope
//    [op-outside-scope] -- expert mode names the core of all work explicitly, also for
//    vector-only kernels; cube ops in Cube and vector ops in Vector scopes [op-core-scope];
//    copies in the scope of the core that issues their path [copy-core-scope]; on-chip
//    buffers allocated in the scope of the core that owns them, or at kernel level
//    [alloc-core-scope]; developer-mode memories rejected [developer-scope-in-expert-mode];
//    T::Parallel and T::Pipelined loops rejected until the developer-mode passes lower them
//    [developer-loop-in-expert-mode].
//  - developer kernels (T::Kernel without vid, docs/developer_mode.md): no T::Scope
//    [developer-scope], no user sync [developer-user-sync], no physically placed buffer
//    [developer-physical-scope] -- the compiler does all three; T::Parallel and T::Pipelined
//    are allowed; tile-op rules about memories and cores are checked on the lowered kernel
//    (the expert re-verify after the developer passes), which reports at the user's lines.
//  - symbols: vars used outside their binding [undefined-var], bound twice [rebound-symbol];
//    buffers used outside their Allocate's block [undefined-buffer]; scalar loads/stores on
//    memories the scalar unit cannot address [scalar-access-scope].
//  - views (T::view): of an on-chip buffer [view-scope], same element width [view-dtype-width],
//    the base's scope, shape and address [view-layout].
//  - buffers: positive on-chip sizes, GM tensor sizes >= 0 whose byte size fits in int64
//    [buffer-shape]; capacity [buffer-capacity], explicit address alignment and range (the padded
//    footprint ends within capacity) [buffer-address-alignment, buffer-address-range]. Sizes,
//    ends and offsets are computed with checked arithmetic: a value that overflows int64 is
//    reported, never wrapped into range;
//    regions inside their buffer [region-out-of-bounds]; UB rows and starts 32 B aligned
//    [ub-row-alignment, ub-start-alignment].
//  - ops: operand memories, dtypes and shapes from the target tables (see src/verify/).
//  - sync: event ids, HardEvent pairs, pipes per core, cross-flag ids/modes/pipes.
//  - planned spec only: every on-chip buffer (L1, L0A, L0B, L0C, UB) has an address
//    [buffer-unplanned]; with the address rules above it is then aligned and in capacity.
// Each op names its rule in OpDef::verify (an OpRule, src/op/*.cpp); src/verify/rule_table.cpp
// runs the rule that implements it (src/verify/op_rules.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
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
  std::string context;  // what the operand is, e.g. "buffer 'x_l1' in L1" ("" if nothing to add)
  /// "file:line: T.op: operand 'dst' (context): message [rule: id]".
  std::string str() const;
};

/// All diagnostics, one per line.
std::string format_diagnostics(const std::vector<Diagnostic>& ds);

/// Which phase's rules apply (the legal IR narrows as lowering proceeds).
enum class Spec : uint8_t {
  Expert,   // an expert-mode kernel: what the verify pass demands of its input
  Planned,  // Expert, and every on-chip buffer has an address (plan_memory's output)
};
std::string_view spec_name(Spec s);  // "expert", "planned"

struct VerifyOptions {
  Spec spec = Spec::Expert;
};

/// Context handed to per-op verifier rules (OpDef::verify).
class VerifyContext {
 public:
  VerifyContext(const Target& t, std::vector<Diagnostic>& out, Spec spec = Spec::Expert)
      : target_(t), out_(out), spec_(spec) {}
  const Target& target() const { return target_; }
  Spec spec() const { return spec_; }
  /// Reports a violation at `loc`.
  void error(const SourceLoc& loc, std::string op, std::string operand, std::string rule,
             std::string message, std::string context = "");
  /// Reports a violation of tile op `n` (op name and location taken from it; when `operand`
  /// names a region operand, the buffer and its memory are added as context).
  void error(const TileOpNode& n, std::string operand, std::string rule, std::string message);
  /// Number of diagnostics reported so far.
  size_t num_errors() const { return out_.size(); }
  /// The core scope the statement being checked sits in (nullopt outside any T::Scope).
  std::optional<CoreKind> core() const { return core_; }
  void set_core(std::optional<CoreKind> c) { core_ = c; }
  /// True inside a developer kernel (KernelNode::developer): the compiler, not the author,
  /// names cores, memories and syncs there, so the rules about them wait for the lowered IR.
  bool developer() const { return developer_; }
  void set_developer(bool d) { developer_ = d; }

 private:
  const Target& target_;
  std::vector<Diagnostic>& out_;
  Spec spec_;
  std::optional<CoreKind> core_;
  bool developer_ = false;
};

/// An op-specific verifier rule: reports through `ctx`, never throws (a tl::InternalError on a
/// bug propagates). The generic rules (operand arity and kinds, memories, core scopes, UB
/// alignment, region bounds) have run and passed when it is called.
using OpRuleFn = void (*)(const TileOpNode& n, VerifyContext& ctx);
/// Registers the rule of primitive `op_name` (an op whose OpDef::verify is OpRule::Prim),
/// from its file in src/prims during static initialisation only (tl::register_prim says why).
/// Checked the first time a primitive is verified: a Prim op without a rule, a rule without
/// such an op, or two rules for one op are internal errors.
void register_op_rule(std::string op_name, OpRuleFn rule);

/// Every violation of `f` on target `t` against `opt.spec`; empty when the kernel is valid.
/// Never throws a tl::Error (a tl::InternalError on a verifier bug propagates).
std::vector<Diagnostic> verify(const PrimFunc& f, const Target& t = default_target(),
                               const VerifyOptions& opt = {});
/// Throws tl::Error listing every violation, if there are any.
void verify_or_throw(const PrimFunc& f, const Target& t = default_target(),
                     const VerifyOptions& opt = {});

}  // namespace tl
