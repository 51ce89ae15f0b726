// The FlashAttention backward kernel generators of cann_ops_tilelang (the tile-kernel layer,
// docs/ops.md "FlashAttention backward"). Two developer-mode kernels, launched one after the
// other by flash_attention_backward (flash_attention_bwd.cpp):
//
// - dq pass (flash_attention_bwd_dq_kernel): the persistent workers take the (batch, head, q
//   tile) triples as the forward does. Per q tile the vector unit first computes
//   Delta = rowsum(dO * O) (fp32) and stores it to GM for the second pass; then per kv step the
//   cube recomputes S = Q K^T and dP = dO V^T, the vector unit P = exp(scale S - lse) (the
//   forward's lse, so no running max) and dS = scale P (dP - Delta), and the cube dQ += dS K,
//   accumulated in L0C and rounded to the dtype by the fixpipe on its way to GM. With `dlse` (the
//   caller used lse, whose gradient is P per score), Delta - dlse takes Delta's place.
// - dk/dv pass (flash_attention_bwd_dkdv_kernel): the workers take the (batch, head, kv tile)
//   triples. Per q step the cube computes S and dP again, the vector unit P and dS (Delta read
//   from the dq pass), and the cube dV += P^T dO and dK += dS^T Q (transposed L1 -> L0A loads),
//   both accumulated in L0C over the q steps. Only S, dP (fp32, to the vector unit) and P, dS
//   (the dtype, to the cube) cross cores: four channels, eight cross-core flags of the eleven a
//   kernel has (accumulating on the vector side took two channels more, and failed to compile).
//
// Both write dQ, dK, dV in fp32 and a third, vector-only kernel (flash_attention_bwd_cast_kernel)
// rounds them to the dtype: the fixpipe's own fp32 -> fp16 / bf16 conversion saturates, turning
// NaN into 0 and inf into the largest finite value (docs/virtual_npu.md; asc-devkit's Fixpipe
// boundary-value table), which would hide a NaN gradient; the vector unit's cast keeps it.
//
// Why two passes and not one with dQ atomically added into GM: docs/ops.md ("FlashAttention
// backward") -- fp32 atomic adds from many cores land in an order the chip does not fix, so dQ
// would differ from run to run, and an fp32 dQ in GM needs a third cast pass; the price is two
// more cube products per score (7 instead of 5), on a kernel that is not cube-bound.
//
// Tails: B and S are dynamic; the last q and kv tiles' copies are clipped by the compiler, the
// L1 padding of Q, dO, K and V is zero-filled, and the clipped lse / Delta / dO / O tiles of
// the vector unit load pad values (kInf below; docs/developer_mode.md, "Tails"). The dq
// pass gives the keys past S a -inf score (P = 0) in the tile that reaches past S. Causal: the
// dq pass stops at the diagonal kv tile, the dk/dv pass starts at the q tile holding the kv
// tile's first key, and scores of keys past the query get -inf, compared with the host-written
// ROWS tile (0 ... bM - 1) as the forward does (a kernel-made row index pins the rows to AIV 0).
// The Python twins, python/cann_ops_tilelang/kernels/attention_bwd.py, build the identical IR
// (python/tests/test_opslib_attention_bwd.py).
#include <limits>
#include <optional>

#include "cann_ops_tilelang/attention.h"
#include "tl/arith.h"
#include "tl/lang.h"

namespace cann_ops_tilelang {
namespace {

// The rows of a clipped q tile past S load lse = +inf, dO, O and Delta = 0 (pad_value): their P
// is exactly 0 and their dS 0, so they add nothing to the products over q rows (P^T dO, dS^T Q),
// and no element loop reads a stale row (mask_tails would narrow the masking loops to the
// valid rows, a symbolic count the vector compare cannot take).
constexpr double kInf = std::numeric_limits<double>::infinity();

// What both passes share: the sizes of the key, the dynamic B and S, the tensors' shapes.
struct Common {
  tl::DType dt, f32 = tl::DType::Float32;
  int H, D, bM, bN, stages, skew, blocks;
  bool bshd, causal;
  tl::Expr scale;
  tl::Expr B, S;

  explicit Common(const FlashAttentionKey& key)
      : dt(key.dtype),
        H(ir_size(key.heads, "heads")),
        D(ir_size(key.dim, "dim")),
        bM(ir_size(key.block_m, "block_m")),
        bN(ir_size(key.block_n, "block_n")),
        stages(ir_size(key.stages, "stages")),
        skew(ir_size(key.skew, "skew")),
        blocks(ir_size(key.blocks, "blocks")),
        bshd(key.layout == AttentionLayout::BSHD),
        causal(key.causal),
        scale(tl::imm(f32, tl::arith::round_float(f32, key.scale))),
        B(tl::T::dynamic("B")),
        S(tl::T::dynamic("S")) {}

  // BSHD: a row of [B, S, H * D] holds every head's D values; head h is columns h*D ... h*D+D-1.
  tl::Buffer qkv(const char* name, std::optional<tl::DType> dtype = {}) const {
    namespace T = tl::T;
    const tl::DType d = dtype.value_or(dt);
    return bshd ? T::Tensor(name, {B, S, H * D}, d) : T::Tensor(name, {B, H, S, D}, d);
  }
  tl::TileArg at(const tl::Buffer& t, tl::Expr b, tl::Expr h, tl::Expr row) const {
    return bshd ? t.at({b, row, h * D}) : t.at({b, h, row, 0});
  }
};

}  // namespace

tl::PrimFunc flash_attention_bwd_dq_kernel(const FlashAttentionKey& key, bool dlse) {
  using tl::Expr;
  namespace T = tl::T;
  const Common c(key);
  const tl::DType dt = c.dt, f32 = c.f32;
  const int D = c.D, bM = c.bM, bN = c.bN;
  const Expr S = c.S, scale = c.scale;
  auto Q = c.qkv("Q"), K = c.qkv("K"), V = c.qkv("V"), O = c.qkv("O"), DO = c.qkv("DO"),
       DQ = c.qkv("DQ", f32);
  auto LSE = T::Tensor("LSE", {c.B, c.H, S}, f32), DELTA = T::Tensor("DELTA", {c.B, c.H, S}, f32);
  std::vector<tl::ParamRef> params{Q, K, V, O, DO, LSE};
  std::optional<tl::Buffer> DLSE;  // lse's own gradient, when the caller used lse
  if (dlse) {
    DLSE = T::Tensor("DLSE", {c.B, c.H, S}, f32);
    params.push_back(*DLSE);
  }
  params.push_back(DELTA);
  params.push_back(DQ);
  std::optional<tl::Buffer> ROWS;
  if (c.causal) {
    ROWS = T::Tensor("ROWS", {bM}, tl::DType::Int32);
    params.push_back(*ROWS);
  }
  return T::prim_func("flash_attention_bwd_dq", params, [&] {
    T::Kernel(
        c.blocks,
        [&](Expr cid) {
          auto q = T::alloc_shared("q", {bM, D}, dt);
          auto dot = T::alloc_shared("dot", {bM, D}, dt);  // dO for the cube
          auto k = T::alloc_shared("k", {bN, D}, dt);
          auto v = T::alloc_shared("v", {bN, D}, dt);
          auto dov = T::alloc_shared("dov", {bM, D}, dt);  // dO and O for Delta
          auto ov = T::alloc_shared("ov", {bM, D}, dt);
          auto prod = T::alloc_fragment("prod", {bM, D}, f32);
          auto s = T::alloc_fragment("s", {bM, bN}, f32);  // scores, then P in fp32
          auto dp = T::alloc_fragment("dp", {bM, bN}, f32);
          auto ds = T::alloc_shared("ds", {bM, bN}, dt);      // dS for the cube
          auto acc = T::alloc_fragment("acc", {bM, D}, f32);  // dQ, accumulated in L0C
          auto lse = T::alloc_fragment("lse", {bM}, f32);
          auto delta = T::alloc_fragment("delta", {bM}, f32);
          std::optional<tl::Buffer> dl;
          if (dlse) dl = T::alloc_fragment("dl", {bM}, f32);
          std::optional<tl::Buffer> rows;
          if (c.causal) rows = T::alloc_shared("rows", {bM}, tl::DType::Int32);
          T::Persistent({c.B, c.H, ceildiv(S, bM)}, c.blocks, cid, [&](std::vector<Expr> t) {
            Expr b = t[0], h = t[1], qx = t[2];
            T::copy(c.at(DO, b, h, qx * bM), dov, {.pad_value = 0.0});
            T::copy(c.at(O, b, h, qx * bM), ov, {.pad_value = 0.0});
            T::Parallel({bM, D}, [&](Expr i, Expr j) {
              prod(i, j) = cast(f32, dov(i, j)) * cast(f32, ov(i, j));
            });
            T::reduce_sum(prod, delta, -1);
            if (dlse) {  // d lse_i / d (scale s_ij) = P_ij: dS = P (dP - (Delta - dlse))
              T::copy(DLSE->at({b, h, qx * bM}), *dl, {.pad_value = 0.0});
              T::Parallel(bM, [&](Expr i) { delta(i) = delta(i) - (*dl)(i); });
            }
            T::copy(delta, DELTA.at({b, h, qx * bM}));
            T::copy(c.at(Q, b, h, qx * bM), q);
            T::copy(c.at(DO, b, h, qx * bM), dot);
            T::copy(LSE.at({b, h, qx * bM}), lse, {.pad_value = kInf});
            T::clear(acc);
            Expr kv_tiles =
                c.causal ? tl::min(ceildiv(S, bN), ceildiv((qx + 1) * bM, bN)) : ceildiv(S, bN);
            T::Pipelined("kv", kv_tiles, c.stages, {.skew = c.skew}, [&](Expr kv) {
              T::copy(c.at(K, b, h, kv * bN), k);
              T::copy(c.at(V, b, h, kv * bN), v);
              T::gemm(q, k, s, {.transpose_B = true, .init = true});
              T::gemm(dot, v, dp, {.transpose_B = true, .init = true});
              // s = scale S - lse, -inf where masked (the exp makes it P = 0). Only a tile that
              // needs the mask pays for it, as in the forward.
              if (c.causal) {
                T::If(
                    kv * bN + bN > qx * bM + 1,
                    [&] {
                      T::copy(*ROWS, *rows);
                      T::Parallel({bM, bN}, [&](Expr i, Expr j) {
                        s(i, j) = select(kv * bN + j <= qx * bM + (*rows)(i),
                                         s(i, j) * scale - lse(i), tl::neg_inf(f32));
                      });
                    },
                    [&] {
                      T::Parallel({bM, bN},
                                  [&](Expr i, Expr j) { s(i, j) = s(i, j) * scale - lse(i); });
                    });
              } else {
                T::If(
                    kv * bN + bN > S,
                    [&] {
                      T::Parallel({bM, bN}, [&](Expr i, Expr j) {
                        s(i, j) =
                            select(kv * bN + j < S, s(i, j) * scale - lse(i), tl::neg_inf(f32));
                      });
                    },
                    [&] {
                      T::Parallel({bM, bN},
                                  [&](Expr i, Expr j) { s(i, j) = s(i, j) * scale - lse(i); });
                    });
              }
              T::tile::exp(s, s);
              T::Parallel({bM, bN}, [&](Expr i, Expr j) {
                ds(i, j) = cast(dt, s(i, j) * (dp(i, j) - delta(i)) * scale);
              });
              T::gemm(ds, k, acc);
            });
            T::copy(acc, c.at(DQ, b, h, qx * bM));  // fp32: see the cast pass
          });
        },
        {.threads = 2});
  });
}

tl::PrimFunc flash_attention_bwd_dkdv_kernel(const FlashAttentionKey& key) {
  using tl::Expr;
  namespace T = tl::T;
  const Common c(key);
  const tl::DType dt = c.dt, f32 = c.f32;
  const int D = c.D, bM = c.bM, bN = c.bN;
  const Expr S = c.S, scale = c.scale;
  auto Q = c.qkv("Q"), K = c.qkv("K"), V = c.qkv("V"), DO = c.qkv("DO"), DK = c.qkv("DK", f32),
       DV = c.qkv("DV", f32);
  auto LSE = T::Tensor("LSE", {c.B, c.H, S}, f32), DELTA = T::Tensor("DELTA", {c.B, c.H, S}, f32);
  std::vector<tl::ParamRef> params{Q, K, V, DO, LSE, DELTA, DK, DV};
  std::optional<tl::Buffer> ROWS;
  if (c.causal) {
    ROWS = T::Tensor("ROWS", {bM}, tl::DType::Int32);
    params.push_back(*ROWS);
  }
  return T::prim_func("flash_attention_bwd_dkdv", params, [&] {
    T::Kernel(
        c.blocks,
        [&](Expr cid) {
          auto k = T::alloc_shared("k", {bN, D}, dt);
          auto v = T::alloc_shared("v", {bN, D}, dt);
          auto q = T::alloc_shared("q", {bM, D}, dt);
          auto dot = T::alloc_shared("dot", {bM, D}, dt);
          auto s = T::alloc_fragment("s", {bM, bN}, f32);  // scores, then P in fp32
          auto dp = T::alloc_fragment("dp", {bM, bN}, f32);
          auto p = T::alloc_shared("p", {bM, bN}, dt);              // P for the cube
          auto ds = T::alloc_shared("ds", {bM, bN}, dt);            // dS for the cube
          auto dv_acc = T::alloc_fragment("dv_acc", {bN, D}, f32);  // accumulated in L0C
          auto dk_acc = T::alloc_fragment("dk_acc", {bN, D}, f32);
          auto lse = T::alloc_fragment("lse", {bM}, f32);
          auto delta = T::alloc_fragment("delta", {bM}, f32);
          std::optional<tl::Buffer> rows;
          if (c.causal) rows = T::alloc_shared("rows", {bM}, tl::DType::Int32);
          T::Persistent({c.B, c.H, ceildiv(S, bN)}, c.blocks, cid, [&](std::vector<Expr> t) {
            Expr b = t[0], h = t[1], kx = t[2];
            T::copy(c.at(K, b, h, kx * bN), k);
            T::copy(c.at(V, b, h, kx * bN), v);
            T::clear(dv_acc);
            T::clear(dk_acc);
            // Causal: the q tiles before the one holding key kx * bN see none of this tile.
            Expr q_first = c.causal ? Expr(kx * bN / bM) : Expr(0);
            T::Pipelined("qi", ceildiv(S, bM) - q_first, c.stages, {.skew = c.skew}, [&](Expr qi) {
              Expr qx = q_first + qi;
              T::copy(c.at(Q, b, h, qx * bM), q);
              T::copy(c.at(DO, b, h, qx * bM), dot);
              T::copy(LSE.at({b, h, qx * bM}), lse, {.pad_value = kInf});
              T::copy(DELTA.at({b, h, qx * bM}), delta, {.pad_value = 0.0});
              T::gemm(q, k, s, {.transpose_B = true, .init = true});
              T::gemm(dot, v, dp, {.transpose_B = true, .init = true});
              // The keys past S need no mask here: they are dK and dV rows past S, never stored.
              if (c.causal) {
                T::If(
                    kx * bN + bN > qx * bM + 1,
                    [&] {
                      T::copy(*ROWS, *rows);
                      T::Parallel({bM, bN}, [&](Expr i, Expr j) {
                        s(i, j) = select(kx * bN + j <= qx * bM + (*rows)(i),
                                         s(i, j) * scale - lse(i), tl::neg_inf(f32));
                      });
                    },
                    [&] {
                      T::Parallel({bM, bN},
                                  [&](Expr i, Expr j) { s(i, j) = s(i, j) * scale - lse(i); });
                    });
              } else {
                T::Parallel({bM, bN}, [&](Expr i, Expr j) { s(i, j) = s(i, j) * scale - lse(i); });
              }
              T::tile::exp(s, s);
              T::Parallel({bM, bN}, [&](Expr i, Expr j) { p(i, j) = cast(dt, s(i, j)); });
              T::Parallel({bM, bN}, [&](Expr i, Expr j) {
                ds(i, j) = cast(dt, s(i, j) * (dp(i, j) - delta(i)) * scale);
              });
              T::gemm(p, dot, dv_acc, {.transpose_A = true});
              T::gemm(ds, q, dk_acc, {.transpose_A = true});
            });
            T::copy(dk_acc, c.at(DK, b, h, kx * bN));  // fp32: see the cast pass
            T::copy(dv_acc, c.at(DV, b, h, kx * bN));
          });
        },
        {.threads = 2});
  });
}

tl::PrimFunc flash_attention_bwd_cast_kernel(const FlashAttentionKey& key) {
  using tl::Expr;
  namespace T = tl::T;
  const tl::DType dt = key.dtype, f32 = tl::DType::Float32;
  const int D = ir_size(key.dim, "dim"), rM = ir_size(key.block_m, "block_m"),
            blocks = ir_size(key.blocks, "blocks");
  auto M = T::dynamic("M");
  auto X = T::Tensor("X", {M, D}, f32), Y = T::Tensor("Y", {M, D}, dt);
  return T::prim_func("flash_attention_bwd_cast", {X, Y}, [&] {
    T::Kernel(blocks,
              [&](Expr cid) {
                auto x = T::alloc_shared("x", {rM, D}, f32);
                auto y = T::alloc_shared("y", {rM, D}, dt);
                T::Persistent({ceildiv(M, rM)}, blocks, cid, [&](std::vector<Expr> t) {
                  T::copy(X.at({t[0] * rM, 0}), x);
                  T::Parallel({rM, D}, [&](Expr i, Expr j) { y(i, j) = cast(dt, x(i, j)); });
                  T::copy(y, Y.at({t[0] * rM, 0}));
                });
              },
              {.threads = 2});
  });
}

}  // namespace cann_ops_tilelang
