// The FlashAttention forward kernel generator of cann_ops_tilelang (the tile-kernel layer,
// docs/ops.md "FlashAttention forward"). Developer mode, from examples/flash_attention_dev.cpp:
// per kv step the cube computes the scores s = Q K^T into L0C, the vector unit (both AIVs, each
// half of the q rows) turns them into P with the online softmax (running max m, denominator l,
// the output's rescale alpha), the cube computes P V, and the vector unit accumulates it. The
// compiler places the tiles, makes the GM workspaces s, p and P V cross cores through, their
// flags and credits, and double-buffers the kv loop (T::Pipelined; docs/developer_mode.md,
// "Data that crosses cores"). Its Python twin, python/cann_ops_tilelang/kernels/attention.py,
// builds the identical IR (python/tests/test_opslib_attention.py).
//
// Work split: `blocks` persistent workers (the target's AICs) take the (batch, head, q tile)
// triples in turn (T::Persistent). B and S are dynamic: the last q tile's and kv tile's copies
// are clipped by the compiler and their L1 padding zero-filled (legalize_copies); the keys past
// S get -inf scores here (the padding's 0 scores would otherwise take weight). Causal: a q tile
// stops its kv loop at the diagonal tile, and the keys past the query's row get -inf -- every
// query keeps key 0, so no row is all -inf and m stays finite after the first step.
//
// Masks are element loops whose condition reads only loop indices and scalars, built inside the
// kv loop: a tile made once before the loop and read by a row-split element loop is what the
// split_aiv bug of issue 30 (docs/ops.md) got wrong on AIV1.
#include <cmath>
#include <optional>

#include "cann_ops_tilelang/attention.h"
#include "tl/arith.h"
#include "tl/lang.h"

namespace cann_ops_tilelang {

tl::PrimFunc flash_attention_kernel(const FlashAttentionKey& key) {
  using tl::Expr;
  namespace T = tl::T;
  const tl::DType dt = key.dtype, f32 = tl::DType::Float32;
  const int H = ir_size(key.heads, "heads"), D = ir_size(key.dim, "dim"),
            bM = ir_size(key.block_m, "block_m"), bN = ir_size(key.block_n, "block_n"),
            stages = ir_size(key.stages, "stages"), blocks = ir_size(key.blocks, "blocks");
  const bool bshd = key.layout == AttentionLayout::BSHD;
  const Expr scale = tl::imm(f32, tl::arith::round_float(f32, key.scale));
  auto B = T::dynamic("B");
  auto S = T::dynamic("S");
  // BSHD: a row of [B, S, H * D] holds every head's D values; head h is columns h*D ... h*D+D-1.
  auto qkv = [&](const char* name) {
    return bshd ? T::Tensor(name, {B, S, H * D}, dt) : T::Tensor(name, {B, H, S, D}, dt);
  };
  auto Q = qkv("Q"), K = qkv("K"), V = qkv("V"), O = qkv("O");
  auto LSE = T::Tensor("LSE", {B, H, S}, f32);
  // Causal: ROWS [bM] int32 holds 0 ... bM - 1 (the host writes it). The mask compares a key's
  // column with the query's row; a row index made in the kernel (an index vector) would pin
  // every row to AIV 0 (split_aiv), a loaded tile splits like the scores.
  std::vector<tl::ParamRef> params{Q, K, V, O, LSE};
  std::optional<tl::Buffer> ROWS;
  if (key.causal) {
    ROWS = T::Tensor("ROWS", {bM}, tl::DType::Int32);
    params.push_back(*ROWS);
  }
  auto at = [&](const tl::Buffer& t, Expr b, Expr h, Expr row) {
    return bshd ? t.at({b, row, h * D}) : t.at({b, h, row, 0});
  };
  return T::prim_func("flash_attention_fwd", params, [&] {
    T::Kernel(
        blocks,
        [&](Expr cid) {
          auto q = T::alloc_shared("q", {bM, D}, dt);
          auto k = T::alloc_shared("k", {bN, D}, dt);
          auto v = T::alloc_shared("v", {bN, D}, dt);
          auto s = T::alloc_fragment("s", {bM, bN}, f32);  // scores, then P in fp32
          auto p = T::alloc_shared("p", {bM, bN}, dt);     // P for the cube
          auto o = T::alloc_fragment("o", {bM, D}, f32);   // this step's P V
          auto acc = T::alloc_fragment("acc", {bM, D}, f32);
          auto m = T::alloc_fragment("m", {bM}, f32), mj = T::alloc_fragment("mj", {bM}, f32);
          auto alpha = T::alloc_fragment("alpha", {bM}, f32);
          auto rs = T::alloc_fragment("rs", {bM}, f32), l = T::alloc_fragment("l", {bM}, f32);
          auto lse = T::alloc_fragment("lse", {bM}, f32);
          auto out = T::alloc_shared("out", {bM, D}, dt);
          std::optional<tl::Buffer> rows;
          if (key.causal) rows = T::alloc_shared("rows", {bM}, tl::DType::Int32);
          T::Persistent({B, H, ceildiv(S, bM)}, blocks, cid, [&](std::vector<Expr> t) {
            Expr b = t[0], h = t[1], qx = t[2];
            T::copy(at(Q, b, h, qx * bM), q);
            T::clear(acc);
            T::fill(m, tl::neg_inf(f32));
            T::clear(l);
            Expr kv_tiles =
                key.causal ? tl::min(ceildiv(S, bN), ceildiv((qx + 1) * bM, bN)) : ceildiv(S, bN);
            T::Pipelined("kv", kv_tiles, stages, [&](Expr kv) {
              T::copy(at(K, b, h, kv * bN), k);
              T::copy(at(V, b, h, kv * bN), v);
              T::gemm(q, k, s, {.transpose_B = true, .init = true});
              if (key.causal) {
                // Loaded every step, inside the loop: a tile loaded once before the loop and read
                // by the row-split element loop is the split_aiv bug of docs/ops.md. Keys past
                // the query get -inf; a key at or before it is before S too (rows past S are
                // clipped from the output).
                // Only a kv tile with a key past the q tile's first query pays for the mask.
                T::If(
                    kv * bN + bN > qx * bM + 1,
                    [&] {
                      T::copy(*ROWS, *rows);
                      T::Parallel({bM, bN}, [&](Expr i, Expr c) {
                        s(i, c) = select(kv * bN + c <= qx * bM + (*rows)(i), s(i, c) * scale,
                                         tl::neg_inf(f32));
                      });
                    },
                    [&] {
                      T::Parallel({bM, bN}, [&](Expr i, Expr c) { s(i, c) = s(i, c) * scale; });
                    });
              } else {
                // Keys past S (the clipped last tile's zero padding) get no weight; only a tile
                // that reaches past S pays for the mask (an index compare and a select).
                T::If(
                    kv * bN + bN > S,
                    [&] {
                      T::Parallel({bM, bN}, [&](Expr i, Expr c) {
                        s(i, c) = select(kv * bN + c < S, s(i, c) * scale, tl::neg_inf(f32));
                      });
                    },
                    [&] {
                      T::Parallel({bM, bN}, [&](Expr i, Expr c) { s(i, c) = s(i, c) * scale; });
                    });
              }
              T::reduce_max(s, mj, -1);
              T::tile::max(mj, mj, m);
              T::Parallel({bM, bN}, [&](Expr i, Expr c) { s(i, c) = s(i, c) - mj(i); });
              T::Parallel(bM, [&](Expr i) { alpha(i) = m(i) - mj(i); });
              T::tile::exp(s, s);
              T::tile::exp(alpha, alpha);
              T::Parallel(bM, [&](Expr i) { m(i) = mj(i); });
              T::reduce_sum(s, rs, -1);
              T::Parallel({bM, bN}, [&](Expr i, Expr c) { p(i, c) = cast(dt, s(i, c)); });
              T::gemm(p, v, o, {.init = true});
              T::Parallel(bM, [&](Expr i) { l(i) = l(i) * alpha(i) + rs(i); });
              T::Parallel({bM, D},
                          [&](Expr i, Expr c) { acc(i, c) = acc(i, c) * alpha(i) + o(i, c); });
            });
            T::Parallel({bM, D}, [&](Expr i, Expr c) { out(i, c) = cast(dt, acc(i, c) / l(i)); });
            T::tile::ln(lse, l);  // the chip's Ln, chosen explicitly
            T::Parallel(bM, [&](Expr i) { lse(i) = lse(i) + m(i); });
            T::copy(out, at(O, b, h, qx * bM));
            T::copy(lse, LSE.at({b, h, qx * bM}));
          });
        },
        {.threads = 2});
  });
}

}  // namespace cann_ops_tilelang
