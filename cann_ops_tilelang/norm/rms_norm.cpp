// RMSNorm's public functions (include/cann_ops_tilelang/norm.h): validation, the empty-tensor
// rule, launch parameters from the Target, output allocation, and the launches of the kernels
// of rms_norm_fwd_kernel.cpp / rms_norm_bwd_kernel.cpp through the compiled-kernel cache.
#include <fmt/format.h>

#include "cann_ops_tilelang/norm.h"

namespace cann_ops_tilelang {
namespace {

constexpr int64_t kRowsPerTile = 8;                // 8 fp32 row statistics fill one 32-byte block
constexpr int64_t kChunkCap = 1024;                // wider chunks save few instructions and cost UB
constexpr int64_t kResidentRows[] = {8, 4, 2, 1};  // the resident forward's row tiles

const std::vector<tl::DType> kDtypes{tl::DType::BFloat16, tl::DType::Float16, tl::DType::Float32};

int64_t round32(int64_t bytes) {
  return (bytes + 31) / 32 * 32;
}

/// Flattens [..., H] to [rows, H].
tl::Tensor rows_view(const tl::Tensor& t) {
  const int64_t h = t.shape().back();
  return t.reshape({h == 0 ? 0 : t.numel() / h, h});
}

std::vector<int64_t> lead_shape(const tl::Tensor& t) {
  return std::vector<int64_t>(t.shape().begin(), t.shape().end() - 1);
}

/// The checks rms_norm and rms_norm_backward share for x and weight.
void check_x_w(const Checker& c, const tl::Tensor& x, const tl::Tensor& w) {
  c.tensor("x", x);
  c.dtype("x", x, kDtypes);
  c.min_rank("x", x, 1);
  if (x.shape().back() == 0)
    c.fail("x", "has an empty last dimension: expected a hidden size of at least 1, got 0");
  c.row_alignment("x", x);
  c.tensor("weight", w);
  c.same_device("weight", w, "x", x);
  c.same_dtype("weight", w, "x", x);
  c.shape("weight", w, {x.shape().back()});
}

RmsNormKey choose(tl::DType dtype, int64_t hidden, const tl::Target& target, const Checker& check,
                  const std::function<int64_t(int64_t)>& ub_use) {
  auto budget = vector_budget(target);
  const int64_t quantum = 32 / tl::dtype_bytes(dtype);
  RmsNormKey k{
      .dtype = dtype, .hidden = hidden, .rows_per_tile = kRowsPerTile, .blocks = budget.blocks};
  k.chunk = widest_chunk(hidden, quantum, kChunkCap,
                         [&](int64_t c) { return ub_use(c) <= budget.ub_bytes; });
  if (k.chunk == 0) {
    check.fail(
        "x",
        fmt::format("has a hidden size the kernel cannot hold in UB: expected at most about {} {} "
                    "elements on {} (UB {} bytes), got {}",
                    budget.ub_bytes / (3 * tl::dtype_bytes(dtype) + 12), tl::dtype_name(dtype),
                    target.name, budget.ub_bytes, hidden));
  }
  return k;
}

}  // namespace

std::string RmsNormKey::str() const {
  return fmt::format("dtype={},H={},rM={},bN={},blocks={},residual={},rstd={},resident={}",
                     tl::dtype_name(dtype), hidden, rows_per_tile, chunk, blocks, residual, rstd,
                     resident);
}

RmsNormKey rms_norm_fwd_key(tl::DType dtype, int64_t hidden, bool residual, bool rstd,
                            const tl::Target& target, const Checker& check) {
  const int64_t es = tl::dtype_bytes(dtype), wide = dtype != tl::DType::Float32;
  // The resident schedule (rms_norm_fwd_resident.cpp) where two row tiles fit: x read once.
  // Of the row counts that fit, the one with the largest fp32 chunk tile (rows x chunk: fewer,
  // longer vector instructions), the more rows on a tie.
  const auto budget = vector_budget(target);
  const int64_t inputs = residual ? 2 : 1;
  RmsNormKey best{.dtype = dtype, .hidden = hidden, .blocks = budget.blocks};
  for (int64_t rM : kResidentRows) {
    const int64_t fixed = round32(hidden * 4) + 32 +  // wf, ss, the slots
                          2 * inputs * round32(rM * hidden * es) +
                          10 * 256;  // the kernel's bank-group alignment of each buffer
    const int64_t c = widest_chunk(hidden, 32 / es, kChunkCap, [&](int64_t c) {
      // xf, acc and rf or xg; W as loaded shares their bytes without a residual.
      const int64_t temps = 3 * rM * c * 4, w = wide * round32(hidden * es);
      return fixed + (residual ? temps + w : std::max(temps, w)) <= budget.ub_bytes;
    });
    if (c > 0 && rM * c > best.rows_per_tile * best.chunk) {
      best.rows_per_tile = rM;
      best.chunk = c;
    }
  }
  if (best.chunk > 0) {
    best.residual = residual;
    best.rstd = rstd;
    best.resident = true;
    return best;
  }
  auto k = choose(dtype, hidden, target, check, [&](int64_t c) {
    const int64_t tile = kRowsPerTile * c;
    int64_t b = round32(hidden * 4) + wide * round32(hidden * es) + 32;  // wf, w, ss
    b += 3 * tile * 4 + tile * es + wide * tile * es;                    // xf acc wb, yb, xb
    if (residual) b += tile * 4 + wide * tile * es + tile * es;          // rf, rb, hb
    return b;
  });
  k.residual = residual;
  k.rstd = rstd;
  return k;
}

RmsNormKey rms_norm_bwd_key(tl::DType dtype, int64_t hidden, const tl::Target& target,
                            const Checker& check) {
  const int64_t es = tl::dtype_bytes(dtype), wide = dtype != tl::DType::Float32;
  // The whole-row schedule (rms_norm_bwd_rows.cpp, chunk 0) where three input slots fit beside W,
  // the dW partial, the tile in fp32 and its products' two column halves, the most rows that fit;
  // the halves are whole 32-byte blocks (H a multiple of 16). It needs the fewest vector passes
  // (docs/ops.md, "RMSNorm").
  const auto budget = vector_budget(target);
  RmsNormKey best{.dtype = dtype, .hidden = hidden, .blocks = budget.blocks};
  for (int64_t rM : kResidentRows) {
    if (hidden % 16 != 0) break;
    const int64_t bytes = 2 * round32(hidden * 4) + 2 * 32 +  // wf dw, rs cf
                          3 * round32(rM * hidden * es) +     // input slots (dx in one)
                          3 * rM * hidden * 4 +               // xf gf, the products
                          10 * 512;                           // bank-group alignment
    if (bytes <= budget.ub_bytes) {
      best.rows_per_tile = rM;
      best.chunk = 0;
      best.resident = true;
      return best;
    }
  }
  // Else the chunked resident schedule (rms_norm_bwd_resident.cpp) where two tiles of x and dy
  // fit beside W and the dW partial (fp32 rows of 7168): x and dy read once. The largest chunk
  // tile (rows x chunk) wins; the chunk is not capped (each chunk costs the pass's barriers,
  // and UB bounds it anyway).
  for (int64_t rM : kResidentRows) {
    const int64_t fixed = 2 * round32(hidden * 4) + 3 * 32 +         // wf dw, rs cf rs2
                          4 * round32(rM * hidden * es) + 12 * 256;  // slots, bank alignment
    const int64_t c = widest_chunk(hidden, 32 / es, hidden, [&](int64_t c) {
      // xf gf t a1 a2; W as loaded shares their bytes.
      return fixed + std::max(5 * rM * c * 4, wide * round32(hidden * es)) <= budget.ub_bytes;
    });
    if (c > 0 && rM * c > best.rows_per_tile * best.chunk) {
      best.rows_per_tile = rM;
      best.chunk = c;
    }
  }
  if (best.chunk > 0) {
    best.resident = true;
    return best;
  }
  return choose(dtype, hidden, target, check, [&](int64_t c) {
    const int64_t tile = kRowsPerTile * c;
    int64_t b = 2 * round32(hidden * 4) + wide * round32(hidden * es) + 64;  // wf dw, w, rs cf
    b += 5 * tile * 4 + tile * es + wide * 2 * tile * es;  // xf gf t1 t2 wb, dxb, xb gb
    return b;
  });
}

RmsNormResult rms_norm(const tl::Tensor& x, const tl::Tensor& weight, const tl::Tensor& residual,
                       const RmsNormConfig& cfg, const tl::Loc& loc) {
  Checker c("rms_norm", loc);
  check_x_w(c, x, weight);
  if (residual.defined()) {
    c.tensor("residual", residual);
    c.same_device("residual", residual, "x", x);
    c.same_dtype("residual", residual, "x", x);
    c.shape("residual", residual, x.shape());
  }
  if (!(cfg.eps >= 0))
    c.fail("eps", fmt::format("is out of range: expected eps >= 0, got {}", cfg.eps));
  tl::Device& dev = *x.device();
  const int64_t H = x.shape().back();
  RmsNormResult out;
  out.y = tl::Tensor::empty(dev, x.shape(), x.dtype());
  if (residual.defined()) out.residual = tl::Tensor::empty(dev, x.shape(), x.dtype());
  const tl::Tensor x2 = rows_view(x);
  const int64_t M = x2.dim(0);
  const int64_t padded = (M + kRowsPerTile - 1) / kRowsPerTile * kRowsPerTile;
  tl::Tensor rstd_full;
  if (cfg.return_rstd) {
    rstd_full = tl::Tensor::empty(dev, {padded}, tl::DType::Float32);
    out.rstd = rstd_full.slice(0, 0, M).reshape(lead_shape(x));
  }
  if (M == 0) return out;  // no rows: empty outputs, no launch

  auto key = rms_norm_fwd_key(x.dtype(), H, residual.defined(), cfg.return_rstd, dev.target(), c);
  auto kernel = cached_kernel("rms_norm_fwd/" + key.str(), dev.target(),
                              [&] { return rms_norm_fwd_kernel(key); });
  std::vector<tl::Arg> args{x2};
  if (residual.defined()) args.emplace_back(rows_view(residual));
  args.emplace_back(weight);
  args.emplace_back(rows_view(out.y));
  if (residual.defined()) args.emplace_back(rows_view(out.residual));
  if (cfg.return_rstd) args.emplace_back(rstd_full);
  args.emplace_back(cfg.eps);
  launch(kernel, dev, args);
  return out;
}

RmsNormGrads rms_norm_backward(const tl::Tensor& dy, const tl::Tensor& x, const tl::Tensor& weight,
                               double eps, const tl::Loc& loc) {
  Checker c("rms_norm_backward", loc);
  check_x_w(c, x, weight);
  c.tensor("dy", dy);
  c.same_device("dy", dy, "x", x);
  c.same_dtype("dy", dy, "x", x);
  c.shape("dy", dy, x.shape());
  if (!(eps >= 0)) c.fail("eps", fmt::format("is out of range: expected eps >= 0, got {}", eps));
  tl::Device& dev = *x.device();
  const int64_t H = x.shape().back();
  RmsNormGrads g{.dx = tl::Tensor::empty(dev, x.shape(), x.dtype()), .dw = {}};
  const tl::Tensor x2 = rows_view(x);
  if (x2.dim(0) == 0) {  // no rows: dW is a sum over nothing
    g.dw = tl::Tensor::empty(dev, {H}, x.dtype());
    return g;
  }
  auto key = rms_norm_bwd_key(x.dtype(), H, dev.target(), c);
  const int64_t partials = 2 * key.blocks;
  auto bwd = cached_kernel("rms_norm_bwd/" + key.str(), dev.target(),
                           [&] { return rms_norm_bwd_kernel(key); });
  // The partials' reduction deals its chunks to the AIVs: the narrowest chunk that leaves at most
  // one per AIV (7168: 32 of 224 columns; each costs a GM latency and P adds, whatever its
  // width), at most 1024 columns.
  RmsNormKey rkey = key;
  rkey.resident = false;
  const int64_t q = 32 / tl::dtype_bytes(x.dtype());
  rkey.chunk = widest_chunk(H, q, kChunkCap, [](int64_t) { return true; });
  for (int64_t c = q; c <= kChunkCap; c += q)
    if (H % c == 0 && H / c <= partials) {
      rkey.chunk = c;
      break;
    }
  auto red = cached_kernel(fmt::format("rms_norm_dw_reduce/{}/P={}", rkey.str(), partials),
                           dev.target(), [&] { return rms_norm_dw_reduce_kernel(rkey, partials); });
  tl::Tensor dwp = tl::Tensor::empty(dev, {partials, H}, tl::DType::Float32);  // zeros: idle AIVs
  launch(bwd, dev, {rows_view(dy), x2, weight, rows_view(g.dx), dwp, eps});
  g.dw = tl::Tensor::empty(dev, {H}, x.dtype());
  launch(red, dev, {dwp, g.dw});
  return g;
}

OpCost rms_norm_cost(int64_t rows, int64_t hidden, tl::DType dtype, bool residual, bool rstd) {
  const double es = tl::dtype_bytes(dtype), mh = static_cast<double>(rows) * hidden;
  // x, y (+ residual, h) once each, the weight once, rstd; square, sum, scale, weight: 4 ops.
  return {.bytes = (residual ? 4 : 2) * mh * es + hidden * es + (rstd ? 4.0 * rows : 0),
          .vector_ops = (residual ? 5 : 4) * mh};
}

OpCost rms_norm_backward_cost(int64_t rows, int64_t hidden, tl::DType dtype) {
  const double es = tl::dtype_bytes(dtype), mh = static_cast<double>(rows) * hidden;
  // dy, x, dx once each, the weight and dw once; g, g*x, sums, dx, dw terms: about 9 ops.
  return {.bytes = 3 * mh * es + 2.0 * hidden * es, .vector_ops = 9 * mh};
}

}  // namespace cann_ops_tilelang
