// Internal: the DSL's statement builder. A thread-local stack of open blocks; each T:: call
// appends to the innermost one. T::prim_func opens the outermost block.
#pragma once

#include <functional>
#include <map>
#include <vector>

#include "tl/ir.h"
#include "tl/lang.h"  // building, fresh_name

namespace tl::lang {

/// Appends a statement to the innermost open block (a user error outside T::prim_func).
void emit(Stmt s, const SourceLoc& loc);
/// Runs `body` in a new block and returns the block's statements as one Stmt.
Stmt capture(const std::function<void()>& body, const SourceLoc& loc);
/// Records the function's T::Kernel launch (a user error if it is not the only one).
void note_kernel(const SourceLoc& loc);
/// Returns a name not yet used in the function being built (`base`, `base_1`, ...), and
/// reserves it.
std::string unique_name(const std::string& base);
/// True for names the IR text format can print and parse back: tl::is_ir_name, the one rule
/// the parser applies too.
bool is_identifier(const std::string& s);
/// Why a name is rejected ("expected an identifier ..."), and a bounded rendering of one.
std::string name_rule();
std::string shown_name(const std::string& name);
/// Rethrows the exception being handled; a tl::Error without a location gets `loc` (the DSL
/// statement whose body raised it). Call only inside a catch block.
[[noreturn]] void rethrow_located(const SourceLoc& loc);
/// `body` with every buffer pinned by T::annotate_address (and each view of one) at its address.
Stmt apply_pins(const Stmt& body, const std::map<const BufferNode*, int64_t>& pins);
/// `body` and `params` with every GM tensor T::annotate_l2_cache named in its L2 cache mode.
Stmt apply_l2_modes(const Stmt& body, std::vector<Param>& params,
                    const std::map<const BufferNode*, L2CacheMode>& modes);
/// Records a buffer name as used; a user error if it already is, or is not an identifier.
void claim_name(const std::string& name, const SourceLoc& loc);

}  // namespace tl::lang
