// Developer-mode row softmax, Y[i, :] = exp(X[i, :] - max_j X[i, j]) / sum_j exp(...), fp32, `tiles`
// row tiles per block: the row statistics are T::reduce_max / T::reduce_sum on developer tiles,
// the broadcasts are element loops, and the exp is T::tile::exp (the chip's approximation,
// chosen explicitly). The compiler places the tiles in UB, vectorises and inserts the flags
// (docs/developer_mode.md). The division is one exact divide per row and a multiply per element:
// the vector unit divides at a quarter of its multiply rate, and softmax is V-bound.
// Any M and N: the compiler clips the last block's copies and pads rows that are not whole
// 32-byte blocks; the row max and sum reduce the logical width only (docs/developer_mode.md "Tails").
#include "tl/kernel_registry.h"
#include "tl/lang.h"

namespace tl::examples {

PrimFunc softmax_dev(int M, int N, int bM, int tiles, int num_stages) {
  auto X = T::Tensor("X", {M, N}, f32);
  auto Y = T::Tensor("Y", {M, N}, f32);
  const int row_tiles = ceildiv(M, bM);
  return T::prim_func("softmax_dev", {X, Y}, [&] {
    T::Kernel(ceildiv(row_tiles, tiles), [&](Expr cid) {
      auto x = T::alloc_shared("x", {bM, N}, f32);
      auto m = T::alloc_fragment("m", {bM}, f32);
      auto s = T::alloc_fragment("s", {bM}, f32);
      // This block's row tiles; the next tile loads while this one computes and the last stores.
      T::Pipelined("t", min(Expr(tiles), row_tiles - cid * tiles), num_stages, [&](Expr t) {
        Expr row = (cid * tiles + t) * bM;
        T::copy(X.at({row, 0}), x);
        T::reduce_max(x, m, -1);
        T::Parallel({bM, N}, [&](Expr i, Expr j) { x(i, j) = x(i, j) - m(i); });
        T::tile::exp(x, x);
        T::reduce_sum(x, s, -1);
        T::Parallel(bM, [&](Expr i) { s(i) = imm(f32, 1.0) / s(i); });  // one divide per row, not per element
        T::Parallel({bM, N}, [&](Expr i, Expr j) { x(i, j) = x(i, j) * s(i); });
        T::copy(x, Y.at({row, 0}));
      });
    }, {.threads = 2});
  });
}

TL_REGISTER_KERNEL({
    .name = "softmax_dev",
    .summary = "developer row softmax (fp32): reductions, broadcasts and an explicit tile exp; the compiler does the rest",
    .params = {{"M", "128", "rows"},
               {"N", "1024", "columns (softmax dimension)"},
               {"bM", "8", "rows per tile (32-byte fp32 row statistics)", ParamRule::tile(8)},
               {"tiles", "1", "row tiles per block (a T.Pipelined loop: the next tile loads while this one computes)"},
               {"num_stages", "2", "T.Pipelined stages of the row-tile loop (1: serial)", {.min = 1, .max = 4}}},
    .build = [](const KernelArgs& a) {
      return softmax_dev(a.get("M"), a.get("N"), a.get("bM"), a.get("tiles"), a.get("num_stages"));
    },
});

}  // namespace tl::examples
