// Expert-mode GELU on the vector cores, double buffered: calibration row C13 of the timing
// model (8192 x 8192 fp32 on 48 AIVs, docs/calibration.md). Sigmoid form of GELU:
//   y = x * sigmoid(1.702 x) = x / (1 + exp(-1.702 x))
// (four vector instructions per tile: mul, exp, add, div; the tanh form would add a few more).
//
// Tiles of `tile` elements go round-robin to the 2 * blocks AIVs. Each AIV ping-pongs two
// buffer sets (x_b, y_b): while V computes tile t in set b, MTE2 loads tile t + 1 into the
// other set and MTE3 stores tile t - 1. Flags per set b (the elementwise_add scheme):
//   V -> MTE2 (b)  x_b has been read by the div, the next load may overwrite it
//   MTE2 -> V (b)  the load has landed
//   MTE3 -> V (b)  y_b has been stored, the next tile's mul may overwrite it
//   V -> MTE3 (b)  the div has written y_b
// The four V instructions form one dependency chain on y_b: a pipe_barrier(V) between each.
#include "tl/kernel_registry.h"
#include "tl/lang.h"

namespace tl::examples {

PrimFunc gelu(int M, int N, int tile, int blocks, DType dtype) {
  if (N % tile != 0) throw Error(fmt::format("gelu: N={} must be a multiple of tile={}", N, tile));
  const int per_row = N / tile, tiles = checked_product("gelu: the tile count M * (N / tile)", {M, per_row});
  const int workers = 2 * blocks;
  const int rounds = ceildiv(ceildiv(tiles, workers), 2);  // two tiles (one per buffer set) per round
  auto X = T::Tensor("X", {M, N}, dtype);
  auto Y = T::Tensor("Y", {M, N}, dtype);
  return T::prim_func("gelu", {X, Y}, [&] {
    T::Kernel(blocks, [&](Expr cid, Expr vid) {
      T::Scope(Core::Vector, [&] {
        Buffer x[2] = {T::alloc_ub("x0", {1, tile}, dtype), T::alloc_ub("x1", {1, tile}, dtype)};
        Buffer y[2] = {T::alloc_ub("y0", {1, tile}, dtype), T::alloc_ub("y1", {1, tile}, dtype)};
        Var w = T::let("w", cid * 2 + vid);
        for (int b = 0; b < 2; ++b) {
          T::set_flag(Pipe::V, Pipe::MTE2, b);
          T::set_flag(Pipe::MTE3, Pipe::V, b);
        }
        T::serial("r", rounds, [&](Expr r) {
          for (int b = 0; b < 2; ++b) {
            Expr t = (r * 2 + b) * workers + w;
            T::If(t < tiles, [&] {
              Expr row = t / per_row, col = t % per_row * tile;
              T::wait_flag(Pipe::V, Pipe::MTE2, b);
              T::copy(X.at({row, col}), x[b]);
              T::set_flag(Pipe::MTE2, Pipe::V, b);
              T::wait_flag(Pipe::MTE2, Pipe::V, b);
              T::wait_flag(Pipe::MTE3, Pipe::V, b);
              T::tile::mul(y[b], x[b], -1.702);
              T::pipe_barrier(Pipe::V);
              T::tile::exp(y[b], y[b]);
              T::pipe_barrier(Pipe::V);
              T::tile::add(y[b], y[b], 1.0);
              T::pipe_barrier(Pipe::V);
              T::tile::div(y[b], x[b], y[b]);
              T::set_flag(Pipe::V, Pipe::MTE2, b);
              T::set_flag(Pipe::V, Pipe::MTE3, b);
              T::wait_flag(Pipe::V, Pipe::MTE3, b);
              T::copy(y[b], Y.at({row, col}));
              T::set_flag(Pipe::MTE3, Pipe::V, b);
            });
          }
        });
        for (int b = 0; b < 2; ++b) {
          T::wait_flag(Pipe::V, Pipe::MTE2, b);
          T::wait_flag(Pipe::MTE3, Pipe::V, b);
        }
      });
    });
  });
}

TL_REGISTER_KERNEL({
    .name = "gelu",
    .summary = "expert GELU (sigmoid form) on the AIVs, double buffered (timing calibration C13)",
    .params = {{"M", "96", "rows"},
               {"N", "8192", "columns"},
               {"tile", "8192", "elements per tile (a divisor of N)", ParamRule::tile()},
               {"blocks", "24", "blocks (2 AIVs each)", ParamRule::blocks()},
               {"dtype", "float32", "X, Y dtype", {.one_of = {"float32", "float16"}}}},
    .build = [](const KernelArgs& a) {
      return gelu(a.get("M"), a.get("N"), a.get("tile"), a.get("blocks"), a.get_dtype("dtype"));
    },
});

}  // namespace tl::examples
