// The IR text parser: reads what printer.h prints (the grammar is documented there) back into
// a PrimFunc. Malformed text is a tl::Error carrying `line:col: expected X, got Y`; the parser
// never crashes, hangs or recurses without bound on any input.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "tl/ir.h"

namespace tl {

/// Limits of the text the parser reads; beyond them parse() throws tl::Error naming the limit
/// (before allocating anything that grows with the input, so a huge input is never a
/// std::bad_alloc). Printed IR stays far below them: a kernel is a few thousand lines, and an
/// expression tree at most kMaxExprNodes nodes (tl/ir.h).
inline constexpr size_t kMaxIrTextBytes = size_t{16} << 20;   // the whole input: 16 MiB
inline constexpr size_t kMaxIrLineBytes = size_t{1} << 20;    // one line: 1 MiB
inline constexpr size_t kMaxIrTokens = size_t{1} << 20;       // tokens in the input
inline constexpr size_t kMaxIrTokenBytes = size_t{64} << 10;  // one number or string literal
inline constexpr size_t kMaxIrNameBytes = 255;                // one name

/// The one rule for names (functions, parameters, dynamic symbols, buffers, variables) shared
/// by the DSL and the parser, so every name the DSL accepts prints and parses back: an ASCII
/// letter or `_`, then letters, digits and `_`, at most kMaxIrNameBytes long, and not a
/// keyword of the text format (T True False None and or not if else elif for in with as def
/// pass float while return lambda import from).
bool is_ir_name(std::string_view s);

/// Parses one function. `filename` prefixes error positions. Integer literals must fit their
/// dtype (`300` is no int32 literal beyond [-2^31, 2^31); `T.int8(300)` is an error naming the
/// literal, the dtype and its range; `T.uint64` takes [0, 2^64)).
PrimFunc parse(std::string_view text, std::string_view filename = "<ir>");

/// parse(), giving the allocation statements (T.alloc_* and T.view, in text order) the
/// diagnostic origins BufferNode::origin holds and the text does not print ("UB twin of 'c'"):
/// the JIT disk cache stores them beside the text, so a kernel reloaded from disk reports what
/// the compiler made as a fresh compile does. A count other than the text's allocations is a
/// tl::Error.
PrimFunc parse(std::string_view text, std::string_view filename,
               const std::vector<std::string>& alloc_origins);

}  // namespace tl
