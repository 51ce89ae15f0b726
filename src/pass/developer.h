// Shared by the developer-mode passes (docs/developer_mode.md): how to recognise a developer
// kernel, and the small queries every one of them needs. Every developer pass returns an expert
// kernel unchanged, so each starts with `if (!is_developer(f)) return f;`.
#pragma once

#include <string>

#include "tl/ir.h"

namespace tl::dev {

/// The function's T::Kernel (nullptr if it has none).
const KernelNode* find_kernel(const PrimFunc& f);
/// True if `f` launches a developer kernel (T::Kernel without vid, not yet lowered).
bool is_developer(const PrimFunc& f);
/// "'name' (file:line)" for messages about a buffer.
std::string describe(const Buffer& b);
/// "T.op at file:line" for messages about a statement.
std::string describe(const Stmt& s);

}  // namespace tl::dev
