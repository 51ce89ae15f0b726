// RoPE's public functions (include/cann_ops_tilelang/rope.h): validation, the empty-tensor
// rule, launch parameters from the Target (tile sizes from UB, blocks from the core count),
// output allocation and the launch of rope_kernel.cpp's kernel through the compiled-kernel
// cache and launch() (so benchmarks and `tlc op --profile` see it).
#include <fmt/format.h>

#include <cstring>

#include "cann_ops_tilelang/rope.h"

namespace cann_ops_tilelang {
namespace {

const std::vector<tl::DType> kDtypes{tl::DType::BFloat16, tl::DType::Float16, tl::DType::Float32};
// Tokens per tile: 16 (a [16, R] region is 16 repeats of 256 B at R = 64: the per-head vector
// instructions' repeats outweigh their issue cost), up to 32 when every head fits (64 left one
// tile per AIV on 32 of 48 at 2001 x 1 x 128 with positions: 3.4 us, 3.0 with 32).
constexpr int64_t kTokens = 16, kMaxTokens = 32;
// Bytes of x per tile slot aimed at: copies of 16 KB and more run at the GM plateau
// (docs/calibration.md), bigger tiles only cost UB.
constexpr int64_t kSlotBytes = 32 * 1024;

/// The checks rope and rope_backward share (x is dy for the backward).
void check_args(const Checker& c, const char* xname, const tl::Tensor& x, const tl::Tensor& cos,
                const tl::Tensor& sin, const tl::Tensor& pos, const RopeConfig& cfg) {
  c.tensor(xname, x);
  c.dtype(xname, x, kDtypes);
  if (x.ndim() != 3)
    c.fail(xname, fmt::format("has the wrong rank: expected 3 dimensions [tokens, heads, "
                              "head_dim], got {}",
                              x.ndim()));
  c.tensor("cos", cos);
  c.same_device("cos", cos, xname, x);
  c.dtype("cos", cos, {tl::DType::Float32});
  if (cos.ndim() != 2)
    c.fail("cos", fmt::format("has the wrong rank: expected 2 dimensions [rows, rot_dim], got {}",
                              cos.ndim()));
  c.tensor("sin", sin);
  c.same_device("sin", sin, xname, x);
  c.dtype("sin", sin, {tl::DType::Float32});
  c.shape("sin", sin, cos.shape());
  const int64_t D = x.dim(2), R = cos.dim(1), es = tl::dtype_bytes(x.dtype());
  if (D * es % 32 != 0 || D == 0)
    c.fail(xname, fmt::format("has a head_dim that breaks the 32-byte row alignment: expected a "
                              "positive multiple of {} {} elements, got {}",
                              32 / es, tl::dtype_name(x.dtype()), D));
  const int64_t quantum = cfg.style == RopeStyle::Half ? 16 : 8;  // half-rows of 32 bytes
  if (R <= 0 || R > D || R % quantum != 0)
    c.fail("cos", fmt::format("has a rot_dim the kernel cannot rotate: expected a multiple of {} "
                              "in [{}, head_dim = {}] ({} style), got {}",
                              quantum, quantum, D,
                              cfg.style == RopeStyle::Half ? "half" : "interleaved", R));
  if (cfg.rotate_last && (D - R) * es % 32 != 0)
    c.fail("cos", fmt::format("puts the rotated part off the 32-byte grid: expected head_dim - "
                              "rot_dim a multiple of {} {} elements, got {} - {} = {}",
                              32 / es, tl::dtype_name(x.dtype()), D, R, D - R));
  const int64_t M = x.dim(0), rows = cos.dim(0);
  if (!pos.defined()) {
    if (rows < M)
      c.fail("cos", fmt::format("has too few rows for the tokens without positions: expected at "
                                "least {} rows (token t uses row t), got {}",
                                M, rows));
    return;
  }
  c.tensor("positions", pos);
  c.same_device("positions", pos, xname, x);
  c.dtype("positions", pos, {tl::DType::Int32});
  c.shape("positions", pos, {M});
  // Positions address the tables: one out of range would read past them.
  const auto* p = reinterpret_cast<const int32_t*>(pos.data());
  for (int64_t t = 0; t < M; ++t)
    if (p[t] < 0 || p[t] >= rows)
      c.fail("positions",
             fmt::format("has a value out of range: expected 0 <= positions[t] < {} (cos rows), "
                         "got positions[{}] = {}",
                         rows, t, p[t]));
}

tl::Tensor run(const char* op, const char* xname, const tl::Tensor& x, const tl::Tensor& cos,
               const tl::Tensor& sin, const tl::Tensor& pos, const RopeConfig& cfg, bool backward,
               const tl::Loc& loc) {
  Checker c(op, loc);
  check_args(c, xname, x, cos, sin, pos, cfg);
  tl::Device& dev = *x.device();
  tl::Tensor y = tl::Tensor::empty(dev, x.shape(), x.dtype());
  const int64_t M = x.dim(0), H = x.dim(1), D = x.dim(2);
  if (M == 0 || H == 0) return y;  // nothing to rotate: an empty y, no launch
  auto key = rope_key(x.dtype(), H, D, cos.dim(1), cfg, backward, pos.defined(), dev.target(), c);
  auto kernel = cached_kernel("rope/" + key.str(), dev.target(), [&] { return rope_kernel(key); });
  std::vector<tl::Arg> args{x.reshape({M, H * D}), cos, sin};
  if (pos.defined()) args.emplace_back(pos);
  args.emplace_back(y.reshape({M, H * D}));
  launch(kernel, dev, args);
  return y;
}

}  // namespace

RopeKey rope_key(tl::DType dtype, int64_t heads, int64_t head_dim, int64_t rot_dim,
                 const RopeConfig& cfg, bool backward, bool positions, const tl::Target& target,
                 const Checker& check) {
  auto budget = vector_budget(target);
  const int64_t es = tl::dtype_bytes(dtype), wide = dtype != tl::DType::Float32;
  const bool inter = cfg.style == RopeStyle::Interleaved;
  RopeKey k{.dtype = dtype,
            .heads = heads,
            .head_dim = head_dim,
            .rot_dim = rot_dim,
            .rot_offset = cfg.rotate_last ? head_dim - rot_dim : 0,
            .interleaved = inter,
            .backward = backward,
            .positions = positions,
            .blocks = budget.blocks};
  // UB: three slots of x (bT x bH x D); the cos, sin and w rows of two token tiles; the fp32
  // [bT, R] temporaries (y and q, or y and xf for 16-bit half; +-sgn interleaved);
  // interleaved also has the partner rows g (and xf, y's place, for 16-bit I/O) as whole fp32 tiles
  // and four [bH x D] index rows; 4 KB of UB are left for the compiler's pads.
  auto bytes = [&](int64_t bT, int64_t bH) {
    const int64_t bhd = bH * head_dim;
    const int64_t row = rot_dim * 4, tile = bhd * 4;  // an fp32 [R] row, an fp32 [bH x D] row
    const int64_t temps = (wide && inter ? tile : 2 * row) + (inter ? row + tile : 0);
    return 3 * bT * bhd * es + 6 * bT * row + bT * temps + (inter ? 4 * tile : 0);
  };
  const int64_t cap = budget.ub_bytes - 4096;
  // 16 tokens and the widest head chunk whose slot stays within kSlotBytes; with every head in
  // the chunk, more tokens while the slot stays within it. Interleaved: 8 tokens and half the
  // slot (a wider chunk lengthens the per-token-row gathers, whose issue cost is per row).
  // Measured on A2 (docs/ops.md, RoPE): 2001 x 32 x 128 fp16 half took 45.8 us with 8 x 32
  // slots of 64 KB, 28.5 us with 16 x 8 (two slots then; 20.5 us now); interleaved rot 128
  // 28.8 us with 16 x 4, 27.8 with 8 x 8, 29.7 with 8 x 4 (before the UB placement; 19.0 now).
  const int64_t tokens = inter ? kTokens / 2 : kTokens;
  const int64_t slot_cap = inter ? kSlotBytes / 2 : kSlotBytes;
  for (int64_t bT = tokens; bT >= 1; bT /= 2) {
    for (int64_t bH = heads; bH >= 1; --bH) {
      if (heads % bH != 0 || bytes(bT, bH) > cap || (bH > 1 && bT * bH * head_dim * es > slot_cap))
        continue;
      while (bH == heads && bT < kMaxTokens && bytes(bT * 2, bH) <= cap &&
             bT * 2 * bH * head_dim * es <= slot_cap)
        bT *= 2;
      k.tokens_per_tile = bT;
      k.heads_per_tile = bH;
      return k;
    }
  }
  check.fail("x", fmt::format("has heads the kernel cannot tile on {}: one head of {} elements "
                              "with rot_dim {} does not fit UB",
                              target.name, head_dim, rot_dim));
}

OpCost rope_cost(int64_t tokens, int64_t heads, int64_t head_dim, int64_t rot_dim, tl::DType dtype,
                 bool positions) {
  const double es = tl::dtype_bytes(dtype), m = static_cast<double>(tokens);
  return {.bytes = 2 * m * heads * head_dim * es + 2 * m * rot_dim * 4 + (positions ? 4 * m : 0),
          .vector_ops = 3 * m * heads * rot_dim};
}

tl::Tensor rope(const tl::Tensor& x, const tl::Tensor& cos, const tl::Tensor& sin,
                const tl::Tensor& positions, const RopeConfig& cfg, const tl::Loc& loc) {
  return run("rope", "x", x, cos, sin, positions, cfg, false, loc);
}

tl::Tensor rope_backward(const tl::Tensor& dy, const tl::Tensor& cos, const tl::Tensor& sin,
                         const tl::Tensor& positions, const RopeConfig& cfg, const tl::Loc& loc) {
  return run("rope_backward", "dy", dy, cos, sin, positions, cfg, true, loc);
}

}  // namespace cann_ops_tilelang
