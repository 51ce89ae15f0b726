// Internal: the developer rule `developer-read-before-write` (first_reads.cpp), which the
// verifier runs on the body of each developer kernel.
#pragma once

#include "tl/verifier.h"

namespace tl::rules {

/// Reports each cube op that reads a tile before any statement of the kernel writes it.
void check_first_reads(const Stmt& kernel_body, VerifyContext& ctx);

}  // namespace tl::rules
