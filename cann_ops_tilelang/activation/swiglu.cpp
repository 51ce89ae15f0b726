// SwiGLU's public functions (include/cann_ops_tilelang/activation.h): validation, the
// empty-tensor rule, launch parameters from the Target, output allocation, and the launches of
// the kernels of swiglu_kernel.cpp through the compiled-kernel cache.
#include <fmt/format.h>

#include <cmath>

#include "cann_ops_tilelang/activation.h"
#include "tl/gm_fill.h"

namespace cann_ops_tilelang {

tl::GmFill output_fill();  // core.cpp: Unwritten unless the launches are timing-only
namespace {

constexpr int64_t kRowsPerTile = 16;  // 8 per AIV: a [8] fp32 row vector is one 32-byte block
constexpr int64_t kChunkCap = 1024;   // wider tiles save few instructions and cost UB

const std::vector<tl::DType> kDtypes{tl::DType::BFloat16, tl::DType::Float16, tl::DType::Float32};

/// y's shape: x's with the last dimension halved (Columns) or the rows halved (Rows).
std::vector<int64_t> y_shape(const tl::Tensor& x, const SwigluConfig& cfg) {
  auto s = x.shape();
  if (cfg.split == SwigluSplit::Columns)
    s.back() /= 2;
  else
    s[0] /= 2;
  return s;
}

/// The checks swiglu and swiglu_backward share; returns y's shape.
std::vector<int64_t> check_x(const Checker& c, const tl::Tensor& x, const tl::Tensor& w,
                             const SwigluConfig& cfg) {
  c.tensor("x", x);
  c.dtype("x", x, kDtypes);
  if (cfg.split == SwigluSplit::Columns) {
    c.min_rank("x", x, 1);
    if (x.shape().back() % 2 != 0 || x.shape().back() == 0)
      c.fail("x", fmt::format("has a last dimension that cannot be split into a | b: expected an "
                              "even size of at least 2, got {}",
                              x.shape().back()));
  } else {
    if (x.ndim() != 2)
      c.fail("x", fmt::format("has the wrong rank for a split on rows: expected 2 dimensions "
                              "[2T, H], got {}",
                              x.ndim()));
    if (x.dim(0) % 2 != 0)
      c.fail("x", fmt::format("has a row count that cannot be split into a over b: expected an "
                              "even number of rows, got {}",
                              x.dim(0)));
    if (x.dim(1) == 0)
      c.fail("x", "has an empty last dimension: expected a hidden size of at least 1, got 0");
  }
  auto ys = y_shape(x, cfg);
  const int64_t H = ys.back(), es = tl::dtype_bytes(x.dtype());
  if (H * es % 32 != 0)
    c.fail("x", fmt::format("has halves that break the 32-byte row alignment: expected H (the "
                            "width of a and b) a multiple of {} {} elements, got H = {}",
                            32 / es, tl::dtype_name(x.dtype()), H));
  // L >= 2^-60: the backward's clamp masks are exact there (swiglu_kernel.cpp).
  if (cfg.clamp && !(*cfg.clamp >= 0x1p-60 && std::isfinite(*cfg.clamp)))
    c.fail("clamp", fmt::format("is out of range: expected a finite limit >= 2^-60 (8.7e-19), "
                                "got {}",
                                *cfg.clamp));
  if (w.defined()) {
    c.tensor("weight", w);
    c.same_device("weight", w, "x", x);
    c.dtype("weight", w, {tl::DType::Float32});
    c.shape("weight", w, std::vector<int64_t>(ys.begin(), ys.end() - 1));
  }
  return ys;
}

}  // namespace

std::string SwigluKey::str() const {
  return fmt::format("dtype={},H={},bM={},bN={},blocks={},rows={},clamp={},weight={}",
                     tl::dtype_name(dtype), hidden, rows_per_tile, chunk, blocks, rows, clamp,
                     weight);
}

SwigluKey swiglu_key(tl::DType dtype, int64_t hidden, bool backward, const SwigluConfig& cfg,
                     bool weight, const tl::Target& target, const Checker& check) {
  auto budget = vector_budget(target);
  const int64_t es = tl::dtype_bytes(dtype), wide = dtype != tl::DType::Float32;
  // Bytes per column of a tile on one AIV: I/O tiles double-buffered (forward) or triple
  // (backward), single fp32 scratch, with a tenth of UB left for the row vectors and the
  // compiler's pads.
  // Backward: a, b, dy loaded (the results are written back over a and b); fp32 scratch gf af
  // bf (16-bit I/O), s (in bf's place with a clamp and 16-bit I/O), db, b' (clamp), u (weight);
  // two bitmasks of a bit per element (clamp).
  const int64_t scratch =
      3 * wide + (cfg.clamp && wide ? 0 : 1) + 1 + (weight ? 1 : 0) + (cfg.clamp ? 1 : 0);
  auto per_col = [&](int64_t half) {
    return backward ? half * (3 * kSwigluBwdStages * es + 4 * scratch) + (cfg.clamp ? half / 4 : 0)
                    : half * (6 * es + 8 * wide);
  };
  SwigluKey k{.dtype = dtype,
              .hidden = hidden,
              .rows_per_tile = kRowsPerTile,
              .blocks = budget.blocks,
              .rows = cfg.split == SwigluSplit::Rows,
              .clamp = cfg.clamp.has_value(),
              .weight = weight};
  auto fits = [&](int64_t rows) {
    return [&, rows](int64_t c) { return c * per_col(rows / 2) <= budget.ub_bytes * 9 / 10; };
  };
  // The backward's chunk is a multiple of 512 bytes where the hidden size allows: every tile's
  // rows then start on GM's 512-byte grid (docs/calibration.md, "GM alignment": a copy off it
  // moves bytes / 0.7). The 9-row tiles with 576-column chunks it had before (fp32 tiles of an
  // odd number of 256-byte halves, alternating UB bank groups) put three chunks in four off
  // the grid; with three stages and aligned chunks, 8 rows per AIV are faster (docs/ops.md,
  // "SwiGLU"). Otherwise, and for the forward, the widest chunk of whole 32-byte blocks.
  if (backward) k.chunk = widest_chunk(hidden, 512 / es, kChunkCap, fits(kRowsPerTile));
  if (k.chunk == 0) k.chunk = widest_chunk(hidden, 32 / es, kChunkCap, fits(kRowsPerTile));
  if (k.chunk == 0)
    check.fail("x", fmt::format("has a hidden size the kernel cannot tile on {}: got H = {}",
                                target.name, hidden));
  return k;
}

tl::Tensor swiglu(const tl::Tensor& x, const tl::Tensor& weight, const SwigluConfig& cfg,
                  const tl::Loc& loc) {
  Checker c("swiglu", loc);
  auto ys = check_x(c, x, weight, cfg);
  tl::Device& dev = *x.device();
  const int64_t H = ys.back(), M = H == 0 ? 0 : x.numel() / 2 / H;
  // The kernel stores every element of Y once and never reads it: no zero fill
  // (GmFill::Unwritten, tl/gm_fill.h; TL_GM_POISON checks it in the tests).
  tl::Tensor y = [&] {
    tl::ScopedGmFill unwritten(output_fill());
    return tl::Tensor::empty(dev, ys, x.dtype());
  }();
  if (M == 0) return y;  // no tokens: an empty y, no launch
  auto key = swiglu_key(x.dtype(), H, false, cfg, weight.defined(), dev.target(), c);
  auto kernel = cached_kernel("swiglu_fwd/" + key.str(), dev.target(),
                              [&] { return swiglu_fwd_kernel(key); });
  std::vector<tl::Arg> args;
  if (key.rows) {
    args = {x.slice(0, 0, M), x.slice(0, M, M)};
  } else {
    args = {x.reshape({M, 2 * H})};
  }
  if (weight.defined()) args.emplace_back(weight.reshape({M}));
  args.emplace_back(y.reshape({M, H}));
  if (cfg.clamp) args.emplace_back(*cfg.clamp);
  launch(kernel, dev, args);
  return y;
}

SwigluGrads swiglu_backward(const tl::Tensor& dy, const tl::Tensor& x, const tl::Tensor& weight,
                            const SwigluConfig& cfg, const tl::Loc& loc) {
  Checker c("swiglu_backward", loc);
  auto ys = check_x(c, x, weight, cfg);
  c.tensor("dy", dy);
  c.same_device("dy", dy, "x", x);
  c.same_dtype("dy", dy, "x", x);
  c.shape("dy", dy, ys);
  tl::Device& dev = *x.device();
  const int64_t H = ys.back(), M = H == 0 ? 0 : x.numel() / 2 / H;
  SwigluGrads g{.dx = tl::Tensor::empty(dev, x.shape(), x.dtype()), .dweight = {}};
  if (weight.defined()) g.dweight = tl::Tensor::empty(dev, weight.shape(), tl::DType::Float32);
  if (M == 0) return g;  // no tokens: empty gradients, no launch
  auto key = swiglu_key(x.dtype(), H, true, cfg, weight.defined(), dev.target(), c);
  auto bwd = cached_kernel("swiglu_bwd/" + key.str(), dev.target(),
                           [&] { return swiglu_bwd_kernel(key); });
  const int64_t chunks = H / key.chunk;
  std::vector<tl::Arg> args{dy.reshape({M, H})};
  if (key.rows)
    args.insert(args.end(), {x.slice(0, 0, M), x.slice(0, M, M)});
  else
    args.emplace_back(x.reshape({M, 2 * H}));
  if (weight.defined()) args.emplace_back(weight.reshape({M}));
  if (key.rows)
    args.insert(args.end(), {g.dx.slice(0, 0, M), g.dx.slice(0, M, M)});
  else
    args.emplace_back(g.dx.reshape({M, 2 * H}));
  tl::Tensor dwp;
  if (weight.defined()) {
    dwp = tl::Tensor::empty(dev, {chunks, M}, tl::DType::Float32);
    args.emplace_back(dwp);
  }
  if (cfg.clamp) args.emplace_back(*cfg.clamp);
  launch(bwd, dev, args);
  if (weight.defined()) {
    auto red = cached_kernel(fmt::format("swiglu_dw_reduce/{}/P={}", key.str(), chunks),
                             dev.target(), [&] { return swiglu_dw_reduce_kernel(key, chunks); });
    launch(red, dev, {dwp, g.dweight.reshape({M})});
  }
  return g;
}

OpCost swiglu_cost(int64_t tokens, int64_t hidden, tl::DType dtype, bool backward, bool weight,
                   bool clamp) {
  const double es = tl::dtype_bytes(dtype), th = static_cast<double>(tokens) * hidden;
  // Forward: x (2 T H) read, y (T H) written; silu(a) b: about 4 ops per output (+2 clamping,
  // +1 weighting). Backward: dy, x read and dx written (5 T H); about 10 ops per output.
  double bytes = (backward ? 5 : 3) * th * es, ops = (backward ? 10 : 4) * th;
  if (weight) bytes += (backward ? 8.0 : 4.0) * tokens, ops += th;
  if (clamp) ops += 2 * th;
  return {.bytes = bytes, .vector_ops = ops};
}

}  // namespace cann_ops_tilelang
