// The row-tile schedule the library's vector kernels share (RMSNorm, LayerNorm backward, the
// top-k gate both ways; double-buffered: the resident RMSNorm kernels): one definition, so every
// kernel deals its whole tiles and its tail tile to the AIVs the same way
// (include/cann_ops_tilelang/core.h, for_each_row_tile and for_each_row_tile_2slots), and the
// immediate set_then_wait their kernels share.
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

Expr for_each_row_tile_2slots(Expr M, int rM, Expr num_blocks, Expr cid, Expr vid,
                              const std::function<void(int, Expr)>& load,
                              const std::function<void(int, Expr)>& work,
                              const std::function<void(Expr, Expr)>& tail_tile) {
  using tl::Pipe;
  auto workers = T::let("workers", num_blocks * 2);
  auto worker = T::let("worker", cid * 2 + vid);
  auto full_tiles = T::let("full_tiles", M / rM);
  auto mine = T::let("mine", ceildiv(max(full_tiles - worker, 0), workers));
  auto row_of = [&](Expr i) { return (worker + i * workers) * rM; };
  T::set_flag(Pipe::MTE3, Pipe::MTE2, 0);  // both slots start free
  T::set_flag(Pipe::MTE3, Pipe::MTE2, 1);
  T::If(mine > 0, [&] {
    T::wait_flag(Pipe::MTE3, Pipe::MTE2, 0);
    load(0, worker * rM);
    T::set_flag(Pipe::MTE2, Pipe::V, 0);
  });
  // Tiles in pairs, so each slot's code and event ids are constants.
  T::serial("i", ceildiv(mine, 2), [&](Expr i) {
    for (int s = 0; s < 2; ++s) {
      Expr n = i * 2 + s;
      T::If(n < mine, [&] {
        T::If(n + 1 < mine, [&] {  // the next tile loads while this one computes
          T::wait_flag(Pipe::MTE3, Pipe::MTE2, 1 - s);
          load(1 - s, row_of(n + 1));
          T::set_flag(Pipe::MTE2, Pipe::V, 1 - s);
        });
        T::wait_flag(Pipe::MTE2, Pipe::V, s);
        work(s, row_of(n));
        T::set_flag(Pipe::MTE3, Pipe::MTE2, s);
      });
    }
  });
  T::wait_flag(Pipe::MTE3, Pipe::MTE2, 0);
  T::wait_flag(Pipe::MTE3, Pipe::MTE2, 1);
  // The tail tile (M % rM rows) continues the round robin, in slot 0.
  auto tail = T::let("tail", M % rM);
  T::If(tail > 0 && worker == full_tiles % workers,
        [&] { tail_tile(full_tiles * rM, Expr(tail)); });
  return worker;
}

void set_then_wait(tl::Pipe src, tl::Pipe dst, int ev, const tl::Loc& loc) {
  tl::T::set_flag(src, dst, ev, loc);
  tl::T::wait_flag(src, dst, ev, loc);
}

}  // namespace cann_ops_tilelang
