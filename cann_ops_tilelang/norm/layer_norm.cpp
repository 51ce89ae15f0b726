// LayerNorm's public functions (include/cann_ops_tilelang/norm.h): validation, the empty-tensor
// rule, launch parameters from the Target (the row tile or column chunk from its UB size), output
// allocation, and the launches of layer_norm_kernel.cpp's and layer_norm_bwd_kernel.cpp's
// kernels through the compiled-kernel cache and launch() (so profiles and benchmarks see them).
#include <fmt/format.h>

#include "cann_ops_tilelang/norm.h"
#include "rms_norm_parts.h"
#include "tl/gm_fill.h"

namespace cann_ops_tilelang {

tl::GmFill output_fill();  // core.cpp: Unwritten unless the launches are timing-only
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
/// narrowed output (`stages` copies of x as loaded: 2 lets the pipeline load the next tile
/// while this one computes); W and B as loaded and in fp32; statistics and a margin.
int64_t ub_use(tl::DType dt, int64_t H, int64_t bM, bool w, bool b, int64_t stages) {
  const int64_t es = tl::dtype_bytes(dt), wide = dt != tl::DType::Float32;
  const int64_t rows = bM >= 8 ? bM / 2 : bM;
  const int64_t in_row = round_up(H * es, 32), f_row = round_up(H * 4, 32);
  const int64_t per_row = stages * in_row + wide * f_row + f_row + wide * in_row;
  return rows * per_row + (int64_t{w} + b) * (in_row + wide * f_row) + 8 * 1024;
}

/// The backward's row width in UB: H, or for a ragged row (bN does not divide H) H rounded up
/// to whole bN-column chunks; whole rows (bN 0): H.
int64_t padded_hidden(int64_t H, int64_t bN) {
  return bN == 0 ? H : (H + bN - 1) / bN * bN;
}

/// UB bytes of one AIV for the backward kernel with bN-column chunks of 8-row tiles: wf, dW | dB
/// and w as loaded; xf gf t1 t2 t3 wb in fp32, dxb, xb and gb as loaded; four row statistics.
int64_t bwd_ub_use(tl::DType dt, int64_t H, int64_t bN) {
  const int64_t es = tl::dtype_bytes(dt), wide = dt != tl::DType::Float32, tile = 8 * bN;
  int64_t b = 3 * round_up(H * 4, 32) + wide * round_up(H * es, 32) + 4 * 32;
  return b + 6 * tile * 4 + tile * es + wide * 2 * tile * es;
}

}  // namespace

std::string LayerNormKey::str() const {
  return fmt::format("dtype={},H={},bM={},blocks={},weight={},bias={},stats={}",
                     tl::dtype_name(dtype), hidden, rows_per_tile, blocks, weight, bias, stats);
}

LayerNormKey layer_norm_key(tl::DType dtype, int64_t hidden, bool weight, bool bias, bool stats,
                            const tl::Target& target, const Checker& check) {
  const auto budget = vector_budget(target);
  // The widest row tile whose load can be double-buffered first: with one buffer the next
  // tile's load waits for this one's store and MTE2 never streams (4099 x 5120: 2-row tiles
  // 92.2 us, 1-row tiles double-buffered 59.9 us; docs/ops.md, "LayerNorm"); else the widest
  // that fits at all.
  for (int64_t stages : {2, 1})
    for (int64_t bM : {8, 4, 2, 1}) {
      if (ub_use(dtype, hidden, bM, weight, bias, stages) <= budget.ub_bytes)
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
  // The kernel stores every row of Y once and never reads it: no zero fill (GmFill::Unwritten,
  // tl/gm_fill.h; TL_GM_POISON checks it in the tests).
  out.y = [&] {
    tl::ScopedGmFill unwritten(output_fill());
    return tl::Tensor::empty(dev, x.shape(), x.dtype());
  }();
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
  launch(kernel, dev, args);
  return out;
}

OpCost layer_norm_cost(int64_t rows, int64_t hidden, tl::DType dtype, bool weight, bool bias,
                       bool stats) {
  const double es = tl::dtype_bytes(dtype), mh = static_cast<double>(rows) * hidden;
  // x and y once each, weight and bias once, the statistics; sum, subtract, square, sum, scale
  // (+ weight, + bias): 5 to 7 ops an element.
  return {.bytes = 2 * mh * es + (int64_t{weight} + bias) * hidden * es + (stats ? 8.0 * rows : 0),
          .vector_ops = (5 + int64_t{weight} + bias) * mh};
}

std::string LayerNormBwdKey::str() const {
  return fmt::format("dtype={},H={},rM={},bN={},blocks={},slots={}", tl::dtype_name(dtype), hidden,
                     rows_per_tile, chunk, blocks, slots);
}

LayerNormBwdKey layer_norm_bwd_key(tl::DType dtype, int64_t hidden, const tl::Target& target,
                                   const Checker& check) {
  const auto budget = vector_budget(target);
  LayerNormBwdKey k{.dtype = dtype, .hidden = hidden, .rows_per_tile = 8, .blocks = budget.blocks};
  // The whole-row schedule (chunk 0) where it fits, the most rows that do: x and dy read once,
  // the fewest vector passes (docs/ops.md, "LayerNorm"). Its products take column quarters of
  // whole 32-byte blocks (H a multiple of 32).
  // Five slots (loads two tiles ahead) before three where 16-bit rows leave room.
  const bool wide = dtype != tl::DType::Float32;
  for (int64_t rM : {8, 4, 2, 1})
    for (int64_t slots : {5, 3}) {
      if (hidden % 32 != 0 || (slots == 5 && !wide)) continue;
      if (layer_norm_bwd_rows_layout(dtype, hidden, rM, slots).end <= budget.ub_bytes) {
        k.rows_per_tile = rM;
        k.slots = slots;
        return k;
      }
    }
  const int64_t q = 32 / tl::dtype_bytes(dtype);
  if (hidden % q == 0) {
    k.chunk = widest_chunk(hidden, q, 1024, [&](int64_t c) {
      return bwd_ub_use(dtype, hidden, c) <= budget.ub_bytes;
    });
  } else {
    // A row that is not whole 32-byte blocks: the widest chunk that fits, the row held as
    // ceil(H / bN) chunks with a column mask (layer_norm_bwd_kernel.cpp).
    for (int64_t c = std::min<int64_t>(1024, (hidden + q - 1) / q * q); c >= q && !k.chunk; c -= q)
      if (bwd_ub_use(dtype, padded_hidden(hidden, c), c) + c * 4 <= budget.ub_bytes) k.chunk = c;
  }
  if (k.chunk == 0)
    check.fail("x", fmt::format("has a hidden size the kernel cannot hold in UB: expected at most "
                                "about {} {} elements on {} (UB {} bytes), got {}",
                                budget.ub_bytes / (3 * 4 + tl::dtype_bytes(dtype)),
                                tl::dtype_name(dtype), target.name, budget.ub_bytes, hidden));
  return k;
}

RmsNormKey layer_norm_dwb_reduce_key(const LayerNormBwdKey& k) {
  const int64_t cols = 2 * padded_hidden(k.hidden, k.chunk);
  int64_t chunk = k.chunk;
  if (chunk == 0) {
    // Whole rows: as rms_norm_backward's reduction, the narrowest chunk that leaves at most one
    // per AIV (each costs a GM latency and P adds, whatever its width), at most 1024 columns.
    const int64_t q = 32 / tl::dtype_bytes(k.dtype), partials = 2 * k.blocks;
    chunk = widest_chunk(cols, q, 1024, [](int64_t) { return true; });
    for (int64_t c = q; c <= 1024; c += q)
      if (cols % c == 0 && cols / c <= partials) {
        chunk = c;
        break;
      }
  }
  return {.dtype = k.dtype,
          .hidden = cols,
          .rows_per_tile = k.rows_per_tile,
          .chunk = chunk,
          .blocks = k.blocks};
}

LayerNormGrads layer_norm_backward(const tl::Tensor& dy, const tl::Tensor& x,
                                   const tl::Tensor& weight, double eps, const tl::Loc& loc) {
  Checker c("layer_norm_backward", loc);
  c.tensor("x", x);
  c.dtype("x", x, kDtypes);
  c.min_rank("x", x, 1);
  if (x.shape().back() == 0)
    c.fail("x", "has an empty last dimension: expected a hidden size of at least 1, got 0");
  c.tensor("weight", weight);
  c.same_device("weight", weight, "x", x);
  c.same_dtype("weight", weight, "x", x);
  c.shape("weight", weight, {x.shape().back()});
  c.tensor("dy", dy);
  c.same_device("dy", dy, "x", x);
  c.same_dtype("dy", dy, "x", x);
  c.shape("dy", dy, x.shape());
  if (!(eps >= 0)) c.fail("eps", fmt::format("is out of range: expected eps >= 0, got {}", eps));
  tl::Device& dev = *x.device();
  const int64_t H = x.shape().back();
  const tl::Tensor x2 = rows_view(x);
  LayerNormGrads g{.dx = tl::Tensor::empty(dev, x.shape(), x.dtype()), .dw = {}, .db = {}};
  if (x2.dim(0) == 0) {  // no rows: dW and dB are sums over nothing (zeros), no launch
    const tl::Tensor dwb = tl::Tensor::empty(dev, {2 * H}, x.dtype());
    g.dw = dwb.slice(0, 0, H);
    g.db = dwb.slice(0, H, H);
    return g;
  }
  auto key = layer_norm_bwd_key(x.dtype(), H, dev.target(), c);
  // dW | dB as the reduction writes them: two rows of Hp columns (H but for a ragged row).
  const int64_t hp = padded_hidden(H, key.chunk);
  const tl::Tensor dwb = tl::Tensor::empty(dev, {2 * hp}, x.dtype());
  g.dw = dwb.slice(0, 0, H);
  g.db = dwb.slice(0, hp, H);
  const auto rkey = layer_norm_dwb_reduce_key(key);
  const int64_t partials = 2 * key.blocks;
  auto bwd = cached_kernel("layer_norm_bwd/" + key.str(), dev.target(),
                           [&] { return layer_norm_bwd_kernel(key); });
  auto red = cached_kernel(fmt::format("rms_norm_dw_reduce/{}/P={}", rkey.str(), partials),
                           dev.target(), [&] { return rms_norm_dw_reduce_kernel(rkey, partials); });
  // Zeros: an AIV with no tile stores its zero partial anyway, but the reduction reads them all.
  tl::Tensor dwbp = tl::Tensor::empty(dev, {partials, 2 * hp}, tl::DType::Float32);
  launch(bwd, dev, {rows_view(dy), x2, weight, rows_view(g.dx), dwbp, eps});
  launch(red, dev, {dwbp, dwb});
  return g;
}

OpCost layer_norm_backward_cost(int64_t rows, int64_t hidden, tl::DType dtype) {
  const double es = tl::dtype_bytes(dtype), mh = static_cast<double>(rows) * hidden;
  // dy, x, dx once each, the weight, dw and db once; centre, g, three sums, dx (3 ops), dW and
  // dB terms: about 12 ops an element.
  return {.bytes = 3 * mh * es + 3.0 * hidden * es, .vector_ops = 12 * mh};
}

}  // namespace cann_ops_tilelang
