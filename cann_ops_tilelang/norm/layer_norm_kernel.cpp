// The LayerNorm forward kernel generator of cann_ops_tilelang (the tile-kernel layer,
// docs/ops.md). Developer mode, one pass: a row tile is read once and kept in UB in fp32; the
// mean is subtracted before the variance is summed (two-pass statistics over UB data, no
// E[x^2] - E[x]^2 cancellation); the compiler places the tiles, splits them between the AIVs,
// inserts the flags, clips the last row tile and pads rows that are not whole 32-byte blocks,
// its row sums counting the logical columns only (docs/developer_mode.md, "Tails"). The
// optional weight, bias and the mean / rstd outputs are compile-time branches of the key.
#include <optional>

#include "cann_ops_tilelang/norm.h"
#include "tl/lang.h"

namespace cann_ops_tilelang {

tl::PrimFunc layer_norm_kernel(const LayerNormKey& k) {
  using tl::Buffer;
  using tl::DType;
  using tl::Expr;
  namespace T = tl::T;
  const DType dt = k.dtype, f32 = DType::Float32;
  const bool wide = dt != f32;
  const int H = ir_size(k.hidden, "hidden"), bM = ir_size(k.rows_per_tile, "rows_per_tile"),
            blocks = ir_size(k.blocks, "blocks");

  // Rows that are not whole 32-byte blocks need the padded copy (zeros past H keep the row sums
  // exact); whole rows do not, and a padded copy waits for the V pipe (docs/ops.md, "SwiGLU"):
  // the pipeline stopped prefetching the next tile.
  const bool ragged = H * tl::dtype_bytes(dt) % 32 != 0;
  auto M = T::dynamic("M");
  auto X = T::Tensor("X", {M, H}, dt);
  std::optional<Buffer> W, B, Mean, Rstd;
  if (k.weight) W = T::Tensor("W", {H}, dt);
  if (k.bias) B = T::Tensor("B", {H}, dt);
  auto Y = T::Tensor("Y", {M, H}, dt);
  if (k.stats) {
    Mean = T::Tensor("Mean", {M}, f32);
    Rstd = T::Tensor("Rstd", {M}, f32);
  }
  auto eps = T::Scalar("eps", f32);
  std::vector<tl::ParamRef> params{X};
  if (W) params.push_back(*W);
  if (B) params.push_back(*B);
  params.push_back(Y);
  if (Mean) params.push_back(*Mean);
  if (Rstd) params.push_back(*Rstd);
  params.push_back(eps);

  return T::prim_func("layer_norm_fwd", params, [&] {
    auto row_tiles = T::let("row_tiles", ceildiv(M, bM));
    // `blocks` blocks always, a constant stride between a block's tiles (softmax_kernel.cpp).
    T::Kernel(
        blocks,
        [&](Expr cid) {
          auto x_in = T::alloc_shared("x_in", {bM, H}, dt);
          Buffer x_f = wide ? T::alloc_fragment("x_f", {bM, H}, f32) : x_in;
          auto sq = T::alloc_fragment("sq", {bM, H}, f32);
          Buffer y_out = wide ? T::alloc_shared("y_out", {bM, H}, dt) : x_f;
          auto mean = T::alloc_fragment("mean", {bM}, f32);
          auto rstd = T::alloc_fragment("rstd", {bM}, f32);
          // W and B in fp32, loaded once per block.
          auto param = [&](const Buffer& src, const char* in_name, const char* f_name) {
            auto in = T::alloc_shared(in_name, {H}, dt);
            T::copy(src, in);
            if (!wide) return in;
            auto f = T::alloc_fragment(f_name, {H}, f32);
            T::Parallel(H, [&](Expr j) { f(j) = cast(f32, in(j)); });
            return f;
          };
          std::optional<Buffer> w_f, b_f;
          if (W) w_f = param(*W, "w_in", "w_f");
          if (B) b_f = param(*B, "b_in", "b_f");
          const double inv_h = 1.0 / static_cast<double>(H);

          T::Pipelined("t", ceildiv(max(row_tiles - cid, 0), blocks), 2, [&](Expr t) {
            Expr row = (cid + t * blocks) * bM;
            T::copy(X.at({row, 0}), x_in,
                    ragged ? T::CopyOptions{.pad_value = 0.0} : T::CopyOptions{});
            if (wide)
              T::Parallel({bM, H}, [&](Expr i, Expr j) { x_f(i, j) = cast(f32, x_in(i, j)); });
            T::reduce_sum(x_f, mean, -1);
            T::Parallel(bM, [&](Expr i) { mean(i) = mean(i) * inv_h; });
            T::Parallel({bM, H}, [&](Expr i, Expr j) { x_f(i, j) = x_f(i, j) - mean(i); });
            T::Parallel({bM, H}, [&](Expr i, Expr j) { sq(i, j) = x_f(i, j) * x_f(i, j); });
            T::reduce_sum(sq, rstd, -1);
            T::Parallel(bM, [&](Expr i) { rstd(i) = rstd(i) * inv_h + eps; });
            T::tile::rsqrt(rstd, rstd);
            T::Parallel({bM, H}, [&](Expr i, Expr j) { x_f(i, j) = x_f(i, j) * rstd(i); });
            if (w_f)
              T::Parallel({bM, H}, [&](Expr i, Expr j) { x_f(i, j) = x_f(i, j) * (*w_f)(j); });
            if (b_f)
              T::Parallel({bM, H}, [&](Expr i, Expr j) { x_f(i, j) = x_f(i, j) + (*b_f)(j); });
            if (wide)
              T::Parallel({bM, H}, [&](Expr i, Expr j) { y_out(i, j) = cast(dt, x_f(i, j)); });
            T::copy(y_out, Y.at({row, 0}));
            if (Mean) {
              T::copy(mean, Mean->at({row}));
              T::copy(rstd, Rstd->at({row}));
            }
          });
        },
        {.threads = 2});
  });
}

}  // namespace cann_ops_tilelang
