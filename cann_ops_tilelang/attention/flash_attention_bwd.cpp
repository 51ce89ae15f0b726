// FlashAttention backward's public function (include/cann_ops_tilelang/attention.h, docs/ops.md
// "FlashAttention backward"): validation, the empty-tensor rule, launch parameters from the
// Target (flash_attention_bwd_key), output and Delta allocation, and the launches of
// flash_attention_bwd_kernel.cpp's kernels (the dq pass, which also writes Delta, then the
// dk / dv pass, then the cast pass on dq, dk and dv) through the compiled-kernel cache and
// launch().
#include <fmt/format.h>

#include <cmath>

#include "cann_ops_tilelang/attention.h"

namespace cann_ops_tilelang {
namespace {

const char* layout_name(AttentionLayout l) {
  return l == AttentionLayout::BSHD ? "BSHD" : "BHSD";
}

}  // namespace

FlashAttentionKey flash_attention_bwd_key(tl::DType dtype, int64_t heads, int64_t dim, bool causal,
                                          AttentionLayout layout, double scale,
                                          const tl::Target& target) {
  // 64 x 64 score tiles: the dk / dv pass keeps two fp32 accumulators of bN x D on the vector
  // side (dK and dV) beside four score-sized tiles (S, dP, P, dS), each double-buffered by the
  // pipelined loop; with bN = 128 and D = 128 the accumulators alone are 128 KB of one AIV's
  // half, more than A2's 192 KB UB leaves with the rest. Each AIV's half of a tile (32 rows) is
  // a whole number of 32-byte blocks per row.
  return {.dtype = dtype,
          .heads = heads,
          .dim = dim,
          .causal = causal,
          .layout = layout,
          .scale = scale,
          .block_m = 64,
          .block_n = 64,
          .stages = 2,
          .blocks = target.num_aic};
}

FlashAttentionGrads flash_attention_backward(const tl::Tensor& dout, const tl::Tensor& q,
                                             const tl::Tensor& k, const tl::Tensor& v,
                                             const tl::Tensor& o, const tl::Tensor& lse,
                                             const FlashAttentionConfig& cfg,
                                             const std::optional<tl::Tensor>& dlse,
                                             const tl::Loc& loc) {
  Checker c("flash_attention_backward", loc);
  c.tensor("q", q);
  c.dtype("q", q, {tl::DType::Float16, tl::DType::BFloat16});
  if (q.ndim() != 4) {
    c.fail("q", fmt::format("has the wrong rank: expected 4 dimensions ({}), got {}",
                            layout_name(cfg.layout), q.ndim()));
  }
  for (auto [name, t] : {std::pair<const char*, const tl::Tensor*>{"k", &k},
                         {"v", &v},
                         {"o", &o},
                         {"dout", &dout}}) {
    c.tensor(name, *t);
    c.same_device(name, *t, "q", q);
    c.same_dtype(name, *t, "q", q);
    c.shape(name, *t, q.shape());
  }
  const auto& sh = q.shape();
  const bool bshd = cfg.layout == AttentionLayout::BSHD;
  const int64_t B = sh[0], S = bshd ? sh[1] : sh[2], H = bshd ? sh[2] : sh[1], D = sh[3];
  c.tensor("lse", lse);
  c.same_device("lse", lse, "q", q);
  c.dtype("lse", lse, {tl::DType::Float32});
  c.shape("lse", lse, {B, H, S});
  if (dlse) {
    c.tensor("dlse", *dlse);
    c.same_device("dlse", *dlse, "q", q);
    c.dtype("dlse", *dlse, {tl::DType::Float32});
    c.shape("dlse", *dlse, {B, H, S});
  }
  if (D != 64 && D != 128) {
    c.fail("q", fmt::format("has an unsupported head dimension: expected D = 64 or 128 (the last "
                            "dimension), got {}",
                            D));
  }
  const double scale = cfg.scale.value_or(1.0 / std::sqrt(static_cast<double>(D)));
  if (!(scale > 0) || !std::isfinite(scale))
    c.fail("scale", fmt::format("is out of range: expected a finite scale > 0, got {}", scale));
  tl::Device& dev = *q.device();
  FlashAttentionGrads g;
  g.dq = tl::Tensor::empty(dev, q.shape(), q.dtype());
  g.dk = tl::Tensor::empty(dev, q.shape(), q.dtype());
  g.dv = tl::Tensor::empty(dev, q.shape(), q.dtype());
  if (B == 0 || S == 0 || H == 0) return g;  // empty outputs, no launch

  const FlashAttentionKey key =
      flash_attention_bwd_key(q.dtype(), H, D, cfg.causal, cfg.layout, scale, dev.target());
  const bool with_dlse = dlse.has_value();
  auto dq_kernel =
      cached_kernel(fmt::format("flash_attention_bwd_dq/{},dlse={}", key.str(), with_dlse),
                    dev.target(), [&] { return flash_attention_bwd_dq_kernel(key, with_dlse); });
  auto dkdv_kernel = cached_kernel("flash_attention_bwd_dkdv/" + key.str(), dev.target(),
                                   [&] { return flash_attention_bwd_dkdv_kernel(key); });
  auto cast_kernel =
      cached_kernel(fmt::format("flash_attention_bwd_cast/dtype={},D={},rM={},blocks={}",
                                tl::dtype_name(key.dtype), key.dim, key.block_m, key.blocks),
                    dev.target(), [&] { return flash_attention_bwd_cast_kernel(key); });
  // dq, dk, dv in fp32 first: the cast pass rounds them (the fixpipe's conversion would turn a
  // NaN gradient into 0).
  auto f32 = [&] { return tl::Tensor::empty(dev, q.shape(), tl::DType::Float32); };
  tl::Tensor dq32 = f32(), dk32 = f32(), dv32 = f32();
  auto view = [&](const tl::Tensor& t) { return bshd ? t.reshape({B, S, H * D}) : t; };
  // Delta = rowsum(dout * o) per query, written by the dq pass, read by the dk / dv pass.
  tl::Tensor delta = tl::Tensor::empty(dev, {B, H, S}, tl::DType::Float32);
  std::optional<tl::Tensor> rows;  // ROWS: 0 ... bM - 1, the causal mask's row indices
  if (cfg.causal) rows = tl::arange(dev, {key.block_m}, tl::DType::Int32);
  std::vector<tl::Arg> dq_args{view(q), view(k), view(v), view(o), view(dout), lse};
  if (dlse) dq_args.emplace_back(*dlse);
  dq_args.emplace_back(delta);
  dq_args.emplace_back(view(dq32));
  std::vector<tl::Arg> dkdv_args{view(q), view(k), view(v),    view(dout),
                                 lse,     delta,   view(dk32), view(dv32)};
  if (rows) {
    dq_args.emplace_back(*rows);
    dkdv_args.emplace_back(*rows);
  }
  launch(dq_kernel, dev, dq_args);
  launch(dkdv_kernel, dev, dkdv_args);
  const int64_t nrows = B * S * H;  // both layouts: rows of D contiguous values
  const std::pair<const tl::Tensor*, const tl::Tensor*> casts[] = {
      {&dq32, &g.dq}, {&dk32, &g.dk}, {&dv32, &g.dv}};
  for (const auto& [from, to] : casts)
    launch(cast_kernel, dev, {from->reshape({nrows, D}), to->reshape({nrows, D})});
  return g;
}

OpCost flash_attention_backward_cost(int64_t batch, int64_t seq, int64_t heads, int64_t dim,
                                     tl::DType dtype, bool causal) {
  const double bh = static_cast<double>(batch) * heads, s = static_cast<double>(seq);
  const double pairs = causal ? s * (s + 1) / 2 : s * s;
  const double es = tl::dtype_bytes(dtype);
  // Five products of 2 D flops per score pair. q, k, v, o, dout read, dq, dk, dv written, lse
  // read. P = exp(scale s - lse) and dS = P (dP - Delta): about 5 element operations per pair.
  return {.bytes = bh * (8 * s * dim * es + 4 * s),
          .cube_flops = bh * pairs * 10 * dim,
          .vector_ops = bh * pairs * 5};
}

}  // namespace cann_ops_tilelang
