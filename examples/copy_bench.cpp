// GM -> UB copy bandwidth kernel: calibration row C11 of the timing model (12288 x 12288 fp16,
// 302 MB, tile [64, 1024], 48 AIVs; docs/calibration.md). Each AIV copies its tiles (round
// robin over the 2 * blocks AIVs) into one UB tile; nothing consumes them. Consecutive copies
// overwrite the same UB bytes on MTE2, whose instructions may overlap: a pipe_barrier(MTE2)
// orders each copy after the previous one (a [64, 1024] fp16 tile is 128 KB, two do not fit
// the 192 KB UB).
#include "tl/kernel_registry.h"
#include "tl/lang.h"

namespace tl::examples {

PrimFunc copy_gm_ub(int M, int N, int tM, int tN, int blocks, DType dtype) {
  if (M % tM != 0 || N % tN != 0)
    throw Error(fmt::format("copy_gm_ub: M={} and N={} must be multiples of tM={} and tN={}", M, N, tM, tN));
  const int per_row = N / tN;
  const int tiles = checked_product("copy_gm_ub: the tile count (M / tM) * (N / tN)", {M / tM, per_row});
  const int workers = 2 * blocks;
  auto X = T::Tensor("X", {M, N}, dtype);
  return T::prim_func("copy_gm_ub", {X}, [&] {
    T::Kernel(blocks, [&](Expr cid, Expr vid) {
      T::Scope(Core::Vector, [&] {
        auto x = T::alloc_ub("x", {tM, tN}, dtype);
        Var w = T::let("w", cid * 2 + vid);
        T::serial("r", ceildiv(tiles, workers), [&](Expr r) {
          Expr t = r * workers + w;
          T::If(t < tiles, [&] {
            T::If(r > 0, [&] { T::pipe_barrier(Pipe::MTE2); });
            T::copy(X.at({t / per_row * tM, t % per_row * tN}), x);
          });
        });
      });
    });
  });
}

TL_REGISTER_KERNEL({
    .name = "copy_gm_ub",
    .summary = "GM -> UB copy bandwidth on the AIVs (timing calibration C11)",
    .params = {{"M", "1536", "rows"},
               {"N", "12288", "columns"},
               {"tM", "64", "tile rows", ParamRule::tile()},
               {"tN", "1024", "tile columns", ParamRule::tile()},
               {"blocks", "24", "blocks (2 AIVs each)", ParamRule::blocks()},
               {"dtype", "float16", "X dtype",
                {.one_of = {"float16", "bfloat16", "float32", "int8", "uint8", "int16", "int32"}}}},
    .build = [](const KernelArgs& a) {
      return copy_gm_ub(a.get("M"), a.get("N"), a.get("tM"), a.get("tN"), a.get("blocks"), a.get_dtype("dtype"));
    },
});

}  // namespace tl::examples
