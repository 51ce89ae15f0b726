// The typed op handles of include/tl/ops.h: each looks its op up once, by the name the op list
// gives it (include/tl/op_list.def, include/tl/vector_ops.def), and keeps the pointer. A handle
// without a registered op is a registration bug (tl::InternalError); the test
// OpRegistry.HandlesCoverEveryOp calls every handle and checks they cover all_ops().
#include "tl/ops.h"

namespace tl::ops {
namespace {
const OpDef& lookup(std::string_view name) {
  const OpDef* d = find_op(name);
  TL_ASSERT(d, "op handle without a registered op: {}", name);
  return *d;
}
}  // namespace

#define TL_OP(IDENT)                        \
  const OpDef& IDENT() {                    \
    static const OpDef& d = lookup(#IDENT); \
    return d;                               \
  }
#include "tl/op_list.def"

namespace tile {
#define TL_TILE_HANDLE(IDENT, NAME)       \
  const OpDef& IDENT() {                  \
    static const OpDef& d = lookup(NAME); \
    return d;                             \
  }
#define TL_TILE_OP(IDENT) TL_TILE_HANDLE(IDENT, "tile." #IDENT)
#include "tl/op_list.def"
#define TL_VECTOR_BINARY(NAME, ...) TL_TILE_HANDLE(NAME, "tile." #NAME)
#define TL_VECTOR_UNARY(NAME, ...) TL_TILE_HANDLE(NAME, "tile." #NAME)
#define TL_VECTOR_ROW_EXPAND(NAME, ...) TL_TILE_HANDLE(row_expand_##NAME, "tile.row_expand_" #NAME)
#include "tl/vector_ops.def"
#undef TL_TILE_HANDLE
}  // namespace tile

}  // namespace tl::ops

namespace tl {

const OpDef* op_for_intrinsic(Intrinsic id) {
  // The vector-op column of include/tl/intrinsics.def: a handle's address, or nullptr.
  using Handle = const OpDef& (*)();
  switch (id) {
#define TL_INTRINSIC(Id, name, arity, dtypes, scalar, vector_op, exact) \
  case Intrinsic::Id: {                                                 \
    const Handle h = vector_op;                                         \
    return h ? &h() : nullptr;                                          \
  }
#include "tl/intrinsics.def"
  }
  return nullptr;
}

}  // namespace tl
