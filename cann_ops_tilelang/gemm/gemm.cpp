// GEMM's public function (include/cann_ops_tilelang/gemm.h): validation, the empty-tensor rule,
// block sizes from the Target's cube memories, output allocation, and the launch of
// gemm_kernel.cpp's kernel through the compiled-kernel cache.
#include <fmt/format.h>

#include "cann_ops_tilelang/gemm.h"
#include "tl/gm_fill.h"

namespace cann_ops_tilelang {

tl::GmFill output_fill();  // core.cpp: Unwritten unless the launches are timing-only

namespace {

int64_t round16(int64_t v) {
  return (v + 15) / 16 * 16;
}

}  // namespace

std::string GemmKey::str() const {
  return fmt::format("dtype={},out={},N={},K={},ta={},tb={},bM={},bN={},bK={},stages={},blocks={}",
                     tl::dtype_name(dtype), tl::dtype_name(out_dtype), n, k, trans_a, trans_b,
                     block_m, block_n, block_k, stages, blocks);
}

GemmKey gemm_key(tl::DType dtype, tl::DType out_dtype, int64_t n, int64_t k, bool trans_a,
                 bool trans_b, const tl::Target& target, const Checker& check) {
  using tl::MemScope;
  const int64_t es = tl::dtype_bytes(dtype), l0c = target.cap(MemScope::L0C),
                l1 = target.cap(MemScope::L1),
                l0ab = std::min(target.cap(MemScope::L0A), target.cap(MemScope::L0B));
  GemmKey key{.dtype = dtype,
              .out_dtype = out_dtype,
              .n = n,
              .k = k,
              .trans_a = trans_a,
              .trans_b = trans_b,
              .blocks = target.num_aic};
  // The L0C tile [bM, bN] fp32 fills L0C (128 x 256 on A2); a narrow N gets narrower tiles,
  // so fewer columns are multiplied for nothing. bM stays 128: M is dynamic.
  key.block_m = 128;
  key.block_n =
      std::min<int64_t>(round16(n), std::max<int64_t>(16, l0c / (4 * key.block_m)) / 16 * 16);
  // The L1 panels of `stages` K steps: A [bM, bK] and B [bK, bN]; bK at most 256 (the lowering
  // splits a panel into L0A/L0B chunks of half L0A / L0B each, two slots).
  key.block_k = std::min<int64_t>(256, round16(k));
  while (key.block_k > 16 && key.stages * (key.block_m + key.block_n) * key.block_k * es > l1)
    key.block_k -= 16;
  if (key.block_m * key.block_n * 4 > l0c ||
      2 * 16 * std::max(key.block_m, key.block_n) * es > l0ab)
    check.fail("b", fmt::format("cannot be tiled on {}: its cube memories are too small (L0C {} "
                                "bytes, L0A/L0B {} bytes)",
                                target.name, l0c, l0ab));
  return key;
}

tl::Tensor gemm(const tl::Tensor& a, const tl::Tensor& b, const GemmConfig& cfg,
                const tl::Loc& loc) {
  Checker c("gemm", loc);
  c.tensor("a", a);
  c.dtype("a", a, {tl::DType::Float16, tl::DType::BFloat16});
  if (a.ndim() != 2)
    c.fail("a", fmt::format("has the wrong rank: expected 2 dimensions, got {}", a.ndim()));
  c.tensor("b", b);
  c.same_device("b", b, "a", a);
  c.same_dtype("b", b, "a", a);
  if (b.ndim() != 2)
    c.fail("b", fmt::format("has the wrong rank: expected 2 dimensions, got {}", b.ndim()));
  const tl::DType out_dt = cfg.out_dtype.value_or(a.dtype());
  if (out_dt != tl::DType::Float16 && out_dt != tl::DType::BFloat16 && out_dt != tl::DType::Float32)
    c.fail("out_dtype", fmt::format("is not supported: expected float16 or bfloat16 or float32, "
                                    "got {}",
                                    tl::dtype_name(out_dt)));
  const int64_t M = a.dim(cfg.trans_a ? 1 : 0), K = a.dim(cfg.trans_a ? 0 : 1),
                Kb = b.dim(cfg.trans_b ? 1 : 0), N = b.dim(cfg.trans_b ? 0 : 1);
  if (Kb != K)
    c.fail("b", fmt::format("has the wrong shape: expected {} (K of 'a'{}) in dimension {}{}, got "
                            "shape [{}, {}]",
                            K, cfg.trans_a ? ", transposed" : "", cfg.trans_b ? 1 : 0,
                            cfg.trans_b ? " (transposed)" : "", b.dim(0), b.dim(1)));
  tl::Device& dev = *a.device();
  if (M == 0 || N == 0) return tl::Tensor::empty(dev, {M, N}, out_dt);  // no launch
  if (K == 0) return tl::full(dev, {M, N}, out_dt, 0.0);  // a sum over nothing; no launch
  auto key = gemm_key(a.dtype(), out_dt, N, K, cfg.trans_a, cfg.trans_b, dev.target(), c);
  auto kernel = cached_kernel("gemm/" + key.str(), dev.target(), [&] { return gemm_kernel(key); });
  // The kernel stores every element of C once (its persistent workers cover all the output
  // tiles, the edge tiles clipped) and never reads it, so C needs no zero fill: a fresh 8 MB C
  // was 3 % of a 2048^3 call's host CPU in the kernel's page zeroing (tl/gm_fill.h;
  // docs/virtual_npu.md, branch hostgemm3; TL_GM_POISON checks it in the tests).
  tl::Tensor out = [&] {
    tl::ScopedGmFill unwritten(output_fill());
    return tl::Tensor::empty(dev, {M, N}, out_dt);
  }();
  launch(kernel, dev, {a, b, out});
  return out;
}

OpCost gemm_cost(int64_t m, int64_t n, int64_t k, tl::DType dtype, tl::DType out_dtype) {
  const double es = tl::dtype_bytes(dtype);
  return {.bytes = (static_cast<double>(m) * k + static_cast<double>(k) * n) * es +
                   static_cast<double>(m) * n * tl::dtype_bytes(out_dtype),
          .cube_flops = 2.0 * m * n * k};
}

}  // namespace cann_ops_tilelang
