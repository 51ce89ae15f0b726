// LayerNorm's public function (include/cann_ops_tilelang/norm.h): validation, the empty-tensor
// rule, launch parameters from the Target (the row tile from its UB size), output allocation,
// and the launch of layer_norm_kernel.cpp's kernel through the compiled-kernel cache.
#include <fmt/format.h>

#include "cann_ops_tilelang/norm.h"

namespace cann_ops_tilelang {
namespace {

const std::vector<tl::DType> kDtypes{tl::DType::BFloat16, tl::DType::Float16, tl::DType::Float32};

int64_t round_up(int64_t v, int64_t q) {
  return (v + q - 1) / q * q;
}

tl::Tensor rows_view(const tl::Tensor& t) {
  const int64_t h = t.shape().back();
  return t.reshape({h == 0 ? 0 : t.numel() / h, h});
}

/// UB bytes of one AIV for bM-row tiles (split_aiv halves tiles of 8 rows or more; smaller
/// ones go to the AIVs whole, alternately): x as loaded, its fp32 copy, the squares, the
/// narrowed output; W and B as loaded and in fp32; statistics and a margin.
int64_t ub_use(tl::DType dt, int64_t H, int64_t bM, bool w, bool b) {
  const int64_t es = tl::dtype_bytes(dt), wide = dt != tl::DType::Float32;
  const int64_t rows = bM >= 8 ? bM / 2 : bM;
  const int64_t in_row = round_up(H * es, 32), f_row = round_up(H * 4, 32);
  const int64_t per_row = in_row + wide * f_row + f_row + wide * in_row;
  return rows * per_row + (int64_t{w} + b) * (in_row + wide * f_row) + 8 * 1024;
}

}  // namespace

std::string LayerNormKey::str() const {
  return fmt::format("dtype={},H={},bM={},blocks={},weight={},bias={},stats={}",
                     tl::dtype_name(dtype), hidden, rows_per_tile, blocks, weight, bias, stats);
}

LayerNormKey layer_norm_key(tl::DType dtype, int64_t hidden, bool weight, bool bias, bool stats,
                            const tl::Target& target, const Checker& check) {
  const auto budget = vector_budget(target);
  for (int64_t bM : {8, 4, 2, 1}) {
    if (ub_use(dtype, hidden, bM, weight, bias) <= budget.ub_bytes)
      return {.dtype = dtype,
              .hidden = hidden,
              .rows_per_tile = bM,
              .blocks = budget.blocks,
              .weight = weight,
              .bias = bias,
              .stats = stats};
  }
  check.fail("x", fmt::format("has a hidden size the kernel cannot hold in UB: expected a row "
                              "that fits {} bytes of UB on {} (about {} {} elements), got {}",
                              budget.ub_bytes, target.name,
                              (budget.ub_bytes - 8 * 1024) / (2 * tl::dtype_bytes(dtype) + 12),
                              tl::dtype_name(dtype), hidden));
}

LayerNormResult layer_norm(const tl::Tensor& x, const tl::Tensor& weight, const tl::Tensor& bias,
                           const LayerNormConfig& cfg, const tl::Loc& loc) {
  Checker c("layer_norm", loc);
  c.tensor("x", x);
  c.dtype("x", x, kDtypes);
  c.min_rank("x", x, 1);
  if (x.shape().back() == 0)
    c.fail("x", "has an empty last dimension: expected a hidden size of at least 1, got 0");
  for (auto [arg, t] : {std::pair{"weight", &weight}, std::pair{"bias", &bias}}) {
    if (!t->defined()) continue;
    c.tensor(arg, *t);
    c.same_device(arg, *t, "x", x);
    c.same_dtype(arg, *t, "x", x);
    c.shape(arg, *t, {x.shape().back()});
  }
  if (!(cfg.eps >= 0))
    c.fail("eps", fmt::format("is out of range: expected eps >= 0, got {}", cfg.eps));
  tl::Device& dev = *x.device();
  const int64_t H = x.shape().back();
  const tl::Tensor x2 = rows_view(x);
  const int64_t M = x2.dim(0);
  LayerNormResult out;
  out.y = tl::Tensor::empty(dev, x.shape(), x.dtype());
  std::vector<int64_t> lead(x.shape().begin(), x.shape().end() - 1);
  if (cfg.return_stats) {
    out.mean = tl::Tensor::empty(dev, lead, tl::DType::Float32);
    out.rstd = tl::Tensor::empty(dev, lead, tl::DType::Float32);
  }
  if (M == 0) return out;  // no rows: empty outputs, no launch
  auto key = layer_norm_key(x.dtype(), H, weight.defined(), bias.defined(), cfg.return_stats,
                            dev.target(), c);
  auto kernel = cached_kernel("layer_norm/" + key.str(), dev.target(),
                              [&] { return layer_norm_kernel(key); });
  std::vector<tl::Arg> args{x2};
  if (weight.defined()) args.emplace_back(weight);
  if (bias.defined()) args.emplace_back(bias);
  args.emplace_back(rows_view(out.y));
  if (cfg.return_stats) {
    args.emplace_back(out.mean.reshape({M}));
    args.emplace_back(out.rstd.reshape({M}));
  }
  args.emplace_back(cfg.eps);
  kernel.launch(dev, args);
  return out;
}

}  // namespace cann_ops_tilelang
