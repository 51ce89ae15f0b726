// The IR text parser: reads what printer.h prints (the grammar is documented there) back into
// a PrimFunc. Malformed text is a tl::Error carrying `line:col: expected X, got Y`; the parser
// never crashes, hangs or recurses without bound on any input.
#pragma once

#include <string>
#include <string_view>

#include "tl/ir.h"

namespace tl {

/// Parses one function. `filename` prefixes error positions.
PrimFunc parse(std::string_view text, std::string_view filename = "<ir>");

}  // namespace tl
