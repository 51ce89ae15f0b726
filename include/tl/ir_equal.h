// Structural equality and hashing of IR. Variables and buffers are compared by where they
// are bound (parameters, dynamic symbols, loop variables, cid/vid, Let, Allocate), not by
// name or pointer, so a parsed function equals the DSL function it was printed from and a
// renamed copy of a kernel hashes the same. Source locations are ignored, and so is a sync's
// origin (SyncOrigin: who wrote a sync, like where, is not what it does). Nested sequences
// are flattened and one-statement sequences unwrapped before comparison, so block structure
// that the text format does not show does not matter.
#pragma once

#include <cstdint>
#include <string>

#include "tl/ir.h"

namespace tl {

bool structural_equal(const PrimFunc& a, const PrimFunc& b);
bool structural_equal(const Stmt& a, const Stmt& b);
bool structural_equal(const Expr& a, const Expr& b);

/// Equal functions hash equally. Stable across runs and platforms (a cache key).
uint64_t structural_hash(const PrimFunc& f);

/// Where two functions first differ ("" when equal): for test failure messages.
std::string first_difference(const PrimFunc& a, const PrimFunc& b);

}  // namespace tl
