// Internal to split_aiv (src/pass/split_aiv_turns.cpp): the loops whose iterations the two AIVs
// take in turns, so that a whole UB tile pushed to the cube in a gather loop does not keep the
// vector work on AIV 0 (TileLang-Ascend's vid reduction).
#pragma once

#include <optional>
#include <set>
#include <string>

#include "tl/ir.h"
#include "tl/target.h"

namespace tl::dev {

/// For each tile of `pushed` (UB tiles split_aiv leaves whole that `work` copies into a channel
/// workspace), the innermost loop around its pushes, when every such loop's iterations are
/// independent of the AIV that runs them (`split`: the tiles whose rows are split); nullopt and
/// `why` otherwise.
std::optional<std::set<const ForNode*>> turn_loops(const Stmt& work,
                                                   const std::set<const BufferNode*>& pushed,
                                                   const std::set<const BufferNode*>& split,
                                                   const Target& t, std::string& why);

/// `L` with each statement of its body (lets and declarations aside) under
/// `if (t - min) % 2 == vid`.
Stmt take_in_turns(const ForNode& L, const Var& vid);

}  // namespace tl::dev
