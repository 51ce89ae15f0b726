// FlashAttention forward's public function (include/cann_ops_tilelang/attention.h): validation,
// the empty-tensor rule, launch parameters from the Target (flash_attention_key: tile sizes and
// the AIC count), output allocation, and the launch of flash_attention_kernel.cpp's kernel
// through the compiled-kernel cache and launch() (so benchmarks and `tlc op --profile` see it).
#include <fmt/format.h>

#include <cmath>

#include "cann_ops_tilelang/attention.h"

namespace cann_ops_tilelang {
namespace {

const std::vector<tl::DType> kDtypes{tl::DType::Float16, tl::DType::BFloat16};

const char* layout_name(AttentionLayout l) {
  return l == AttentionLayout::BSHD ? "BSHD" : "BHSD";
}

struct Dims {
  int64_t b = 0, s = 0, h = 0, d = 0;
};

Dims dims_of(const tl::Tensor& t, AttentionLayout l) {
  const auto& sh = t.shape();
  return l == AttentionLayout::BSHD ? Dims{sh[0], sh[1], sh[2], sh[3]}
                                    : Dims{sh[0], sh[2], sh[1], sh[3]};
}

void check_qkv(const Checker& c, std::string_view arg, const tl::Tensor& t, const tl::Tensor& q,
               AttentionLayout layout) {
  c.tensor(arg, t);
  if (arg != "q") {
    c.same_device(arg, t, "q", q);
    c.same_dtype(arg, t, "q", q);
  } else {
    c.dtype(arg, t, kDtypes);
  }
  if (t.ndim() != 4) {
    c.fail(arg, fmt::format("has the wrong rank: expected 4 dimensions ({}), got {}",
                            layout_name(layout), t.ndim()));
  }
  if (arg != "q") c.shape(arg, t, q.shape());
}

}  // namespace

std::string FlashAttentionKey::str() const {
  return fmt::format(
      "dtype={},H={},D={},causal={},layout={},scale={:.9g},bM={},bN={},stages={},"
      "skew={},blocks={}",
      tl::dtype_name(dtype), heads, dim, causal, layout_name(layout), scale, block_m, block_n,
      stages, skew, blocks);
}

FlashAttentionKey flash_attention_key(tl::DType dtype, int64_t heads, int64_t dim, bool causal,
                                      AttentionLayout layout, double scale,
                                      const tl::Target& target, int64_t seq) {
  // Score tiles of 128 q rows x 128 keys (docs/ops.md, "FlashAttention forward", fa_opt's
  // tiles): each K and V tile serves 128 queries, so the cube's MTE2 moves half the K/V bytes a
  // score of 64 x 256 did. 128 x 256 does not fit L0C (s and P V in fp32: 128 + 64 KB). The
  // pipeline keeps one UB copy of s and of P V (its slots drop what does not fit A2's 192 KB).
  // 3 stages with the cube two kv steps ahead (skew 2): its K/V loads and QK^T(t + 2) go before
  // its wait for P(t), off the step's cross-core round trip, which bounds the step now that the
  // vector rows are measured (docs/ops.md, the fagm round: B4 S4096 6213.7 -> 5861.2 µs, causal
  // 3278.4 -> 3128.7, B1 S1024 127.2 -> 118.7; 4 stages with skew 2 or 3 and 3 with skew 1 gain
  // less).
  constexpr int64_t kBlockM = 128, kBlockN = 128;
  (void)seq;  // one schedule for every length (the key keeps it for the long-sequence choice)
  return {.dtype = dtype,
          .heads = heads,
          .dim = dim,
          .causal = causal,
          .layout = layout,
          .scale = scale,
          .block_m = kBlockM,
          .block_n = kBlockN,
          .stages = 3,
          .skew = 2,
          .blocks = target.num_aic};
}

tl::Tensor flash_attention_idx(tl::Device& dev, const FlashAttentionKey& key) {
  std::vector<double> idx(static_cast<size_t>(key.block_m * key.block_n));
  for (int64_t i = 0; i < key.block_m; ++i)
    for (int64_t c = 0; c < key.block_n; ++c)
      idx[static_cast<size_t>(i * key.block_n + c)] = static_cast<double>(key.causal ? c - i : c);
  return tl::from_vector(dev, {key.block_m, key.block_n}, tl::DType::Float16, idx);
}

FlashAttentionResult flash_attention(const tl::Tensor& q, const tl::Tensor& k, const tl::Tensor& v,
                                     const FlashAttentionConfig& cfg, const tl::Loc& loc) {
  Checker c("flash_attention", loc);
  check_qkv(c, "q", q, q, cfg.layout);
  check_qkv(c, "k", k, q, cfg.layout);
  check_qkv(c, "v", v, q, cfg.layout);
  const Dims d = dims_of(q, cfg.layout);
  if (d.d != 64 && d.d != 128) {
    c.fail("q", fmt::format("has an unsupported head dimension: expected D = 64 or 128 (the last "
                            "dimension), got {}",
                            d.d));
  }
  const double scale = cfg.scale.value_or(1.0 / std::sqrt(static_cast<double>(d.d)));
  if (!(scale > 0) || !std::isfinite(scale))
    c.fail("scale", fmt::format("is out of range: expected a finite scale > 0, got {}", scale));
  tl::Device& dev = *q.device();
  FlashAttentionResult out;
  out.o = tl::Tensor::empty(dev, q.shape(), q.dtype());
  out.lse = tl::Tensor::empty(dev, {d.b, d.h, d.s}, tl::DType::Float32);
  if (d.b == 0 || d.s == 0 || d.h == 0) return out;  // empty outputs, no launch

  const FlashAttentionKey key =
      flash_attention_key(q.dtype(), d.h, d.d, cfg.causal, cfg.layout, scale, dev.target(), d.s);
  auto kernel = cached_kernel("flash_attention/" + key.str(), dev.target(),
                              [&] { return flash_attention_kernel(key); });
  auto view = [&](const tl::Tensor& t) {
    return cfg.layout == AttentionLayout::BSHD ? t.reshape({d.b, d.s, d.h * d.d}) : t;
  };
  std::vector<tl::Arg> args{view(q),     view(k), view(v),
                            view(out.o), out.lse, flash_attention_idx(dev, key)};
  launch(kernel, dev, args);
  return out;
}

OpCost flash_attention_cost(int64_t batch, int64_t seq, int64_t heads, int64_t dim, tl::DType dtype,
                            bool causal) {
  const double bh = static_cast<double>(batch) * heads, s = static_cast<double>(seq);
  // Score pairs: S^2, or S (S + 1) / 2 below and on the diagonal when causal.
  const double pairs = causal ? s * (s + 1) / 2 : s * s;
  const double es = tl::dtype_bytes(dtype);
  // Q K^T and P V: 2 D flops each per pair. Q, K, V read and O written once, lse written.
  // The softmax: scale, max, subtract, exp, sum, cast: about 6 element operations per pair.
  return {.bytes = bh * (4 * s * dim * es + 4 * s),
          .cube_flops = bh * pairs * 4 * dim,
          .vector_ops = bh * pairs * 6};
}

}  // namespace cann_ops_tilelang
