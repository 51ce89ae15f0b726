// The row-tile schedule the library's vector kernels share (RMSNorm, LayerNorm backward, the
// top-k gate both ways): one definition, so every kernel deals its whole tiles and its tail tile
// to the AIVs the same way (include/cann_ops_tilelang/core.h, for_each_row_tile).
#include "cann_ops_tilelang/core.h"
#include "tl/lang.h"

namespace cann_ops_tilelang {

using tl::Expr;
namespace T = tl::T;

Expr for_each_row_tile(Expr M, int rM, Expr num_blocks, Expr cid, Expr vid,
                       const std::function<void(Expr, std::optional<Expr>)>& tile_rows) {
  auto workers = T::let("workers", num_blocks * 2);
  auto worker = T::let("worker", cid * 2 + vid);
  auto full_tiles = T::let("full_tiles", M / rM);
  T::Persistent({full_tiles}, workers, worker,
                [&](std::vector<Expr> t) { tile_rows(T::let("row0", t[0] * rM), std::nullopt); });
  // The tail tile continues the round robin: worker full_tiles % workers takes it.
  auto tail = T::let("tail", M % rM);
  T::If(tail > 0 && worker == full_tiles % workers,
        [&] { tile_rows(full_tiles * rM, Expr(tail)); });
  return worker;
}

}  // namespace cann_ops_tilelang
