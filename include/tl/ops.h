// Typed handles of the registered tile primitives: `ops::copy()`, `ops::reduce_sum()`,
// `ops::tile::add()`, `ops::tile::row_expand_max()`, ... each returns the op's one OpDef.
// Passes, the virtual NPU and the DSL name an op through its handle, never through a string, so
// a misspelt op fails to compile; a pass compares `n.op == &ops::copy()` (a pointer compare),
// and a decision about a family of ops reads the OpDef's traits (include/tl/op.h), not a list
// of names. The names mirror the surface syntax: `T.copy` is ops::copy(), `T.tile.exp` is
// ops::tile::exp() (the nested namespace keeps the `tile.` prefix, as in the DSL's T::tile::).
// The handles are generated from the op lists, include/tl/op_list.def and
// include/tl/vector_ops.def, and defined next to the definitions (src/op/handles.cpp). Op names
// as strings remain only where a name comes from user text: the IR parser and the Python
// bindings (find_op, make_tile_op(string_view, ...)).
#pragma once

#include "tl/op.h"

namespace tl::ops {

#define TL_OP(IDENT) const OpDef& IDENT();
#include "tl/op_list.def"

namespace tile {
#define TL_TILE_OP(IDENT) const OpDef& IDENT();
#include "tl/op_list.def"
#define TL_VECTOR_BINARY(NAME, ...) const OpDef& NAME();
#define TL_VECTOR_UNARY(NAME, ...) const OpDef& NAME();
#define TL_VECTOR_ROW_EXPAND(NAME, ...) const OpDef& row_expand_##NAME();
#include "tl/vector_ops.def"
}  // namespace tile

}  // namespace tl::ops
