// Expert-mode elementwise add Z = X + Y on the vector cores, double buffered: calibration row
// C9 of the timing model (8192 x 8192 fp16 on 48 AIVs, docs/calibration.md).
//
// The rows are cut into tiles of `tile` elements; tile t goes to worker t % (2 * blocks) (the
// AIVs of all blocks). Each worker ping-pongs two buffer sets (x, y, z): while V adds tile t in
// set b, MTE2 loads tile t + 1 into set 1 - b and MTE3 stores tile t - 1. Flags per set b:
//   V -> MTE2 (b)  x_b / y_b have been read by the add, the next load may overwrite them
//   MTE2 -> V (b)  the load has landed
//   MTE3 -> V (b)  z_b has been stored, the next add may overwrite it
//   V -> MTE3 (b)  the add has written z_b
// l2_cache = "disable" reads X and Y past L2 (T.annotate_l2_cache, AscendC's SetL2CacheHint):
// asc-devkit's add example does so in the cases C9 and C10 publish (docs/calibration.md, "GM
// side"); Z is written through L2 either way.
#include "tl/kernel_registry.h"
#include "tl/lang.h"

namespace tl::examples {

PrimFunc elementwise_add(int M, int N, int tile, int blocks, DType dtype, L2CacheMode reads) {
  if (N % tile != 0) throw Error(fmt::format("elementwise_add: N={} must be a multiple of tile={}", N, tile));
  const int per_row = N / tile, tiles = checked_product("elementwise_add: the tile count M * (N / tile)", {M, per_row});
  const int workers = 2 * blocks;
  const int rounds = ceildiv(ceildiv(tiles, workers), 2);  // two tiles (one per buffer set) per round
  auto X = T::Tensor("X", {M, N}, dtype);
  auto Y = T::Tensor("Y", {M, N}, dtype);
  auto Z = T::Tensor("Z", {M, N}, dtype);
  // Column tails: a tile that is not whole 32-byte blocks (N = 1001 fp16) lives in a UB row
  // padded to the next block, moves with the padded copy (DataCopyPad) both ways, and is added
  // as `tile` elements (vector instructions count their elements).
  const int per_block = 32 / static_cast<int>(dtype_bytes(dtype));
  const int ub_cols = ceildiv(tile, per_block) * per_block;
  const T::CopyOptions tail = ub_cols == tile ? T::CopyOptions{} : T::CopyOptions{.pad_value = 0.0};
  return T::prim_func("elementwise_add", {X, Y, Z}, [&] {
    if (reads != L2CacheMode::Normal) T::annotate_l2_cache({{X, reads}, {Y, reads}});
    T::Kernel(blocks, [&](Expr cid, Expr vid) {
      T::Scope(Core::Vector, [&] {
        auto ub_row = [&](const char* name) { return T::alloc_ub(name, {1, ub_cols}, dtype).region({0, 0}, {1, tile}); };
        BufferRegion x[2] = {ub_row("x0"), ub_row("x1")};
        BufferRegion y[2] = {ub_row("y0"), ub_row("y1")};
        BufferRegion z[2] = {ub_row("z0"), ub_row("z1")};
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
              T::copy(X.at({row, col}), x[b], tail);
              T::copy(Y.at({row, col}), y[b], tail);
              T::set_flag(Pipe::MTE2, Pipe::V, b);
              T::wait_flag(Pipe::MTE2, Pipe::V, b);
              T::wait_flag(Pipe::MTE3, Pipe::V, b);
              T::tile::add(z[b], x[b], y[b]);
              T::set_flag(Pipe::V, Pipe::MTE2, b);
              T::set_flag(Pipe::V, Pipe::MTE3, b);
              T::wait_flag(Pipe::V, Pipe::MTE3, b);
              T::copy(z[b], Z.at({row, col}), tail);
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
    .name = "elementwise_add",
    .summary = "expert elementwise add on the AIVs, double buffered (timing calibration C9)",
    .params = {{"M", "96", "rows"},
               {"N", "8192", "columns"},
               {"tile", "8192", "elements per tile (a divisor of N; any count: rows that are not whole 32-byte "
                                "blocks use padded UB rows and DataCopyPad)",
                ParamRule::tile()},
               {"blocks", "24", "blocks (2 AIVs each)", ParamRule::blocks()},
               {"dtype", "float16", "X, Y, Z dtype", {.one_of = {"float16", "float32", "int16", "int32"}}},
               {"l2_cache", "normal", "L2 cache mode of X and Y (T.annotate_l2_cache)",
                {.one_of = {"normal", "disable"}}}},
    .build = [](const KernelArgs& a) {
      return elementwise_add(a.get("M"), a.get("N"), a.get("tile"), a.get("blocks"), a.get_dtype("dtype"),
                             *parse_l2_cache(a.get_str("l2_cache")));
    },
});

}  // namespace tl::examples
