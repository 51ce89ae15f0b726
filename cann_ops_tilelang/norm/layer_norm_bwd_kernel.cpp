// The LayerNorm backward kernel generator of cann_ops_tilelang (docs/ops.md), its chunked schedule
// (the whole-row one, chosen first where rows fit UB, is layer_norm_bwd_rows.cpp): dX per row and
// fp32 dW | dB partials per AIV; the partials are summed in a fixed order by the RMSNorm dW
// reduction (rms_norm_bwd_kernel.cpp) run over 2H columns, so dW and dB are deterministic.
// Expert mode, as rms_norm_bwd: rows of 7168 do not fit UB in fp32 several times over, so a row
// tile is read in chunks of bN columns, three passes per rM-row tile (xc = x - mean, g = dy * w):
//   pass 1  mean = sum(x) / H                       (x only)
//   pass 2  var = sum(xc^2) / H, sg = sum(g), sgx = sum(g * xc); rstd = rsqrt(var + eps);
//           coef = sgx * rstd^3 / H, off = sg * rstd / H
//   pass 3  dx = g * rstd - xc * coef - off; dW partial += dy * xc * rstd, dB partial += dy
// The mean is subtracted before the variance is summed (no E[x^2] - E[x]^2 cancellation: inputs
// with a large offset keep fp32 accuracy), and mean / rstd are recomputed from x rather than
// read from the forward pass (as rms_norm_bwd does). The tail tile is zero-filled and loaded row
// by row; only its valid rows are added to the partials, so rows past M add nothing (not even a
// NaN: with eps = 0 a zero row's rstd is inf). Rows that are not whole 32-byte blocks (H = 7,
// 33, 1000 bf16, ...) are held in UB as Hp = ceil(H / bN) bN columns: the last chunk's copies
// move the row's H - (chunks - 1) bN columns (GM -> UB padded copies over zero-filled buffers,
// UB -> GM clipped), the pad columns of x - mean are multiplied by a 0 / 1 column mask before the
// variance is summed, and the dW | dB partials are [2 Hp] rows whose pad columns the op never
// returns. Every vector op is followed by a V barrier: the
// vector instructions overlap in the timing model, and the ops here mostly read what the one
// before wrote (docs/virtual_npu.md).
#include <optional>

#include "cann_ops_tilelang/norm.h"
#include "rms_norm_parts.h"
#include "tl/lang.h"

namespace cann_ops_tilelang {
namespace {

using tl::Buffer;
using tl::Expr;
using tl::Pipe;
namespace T = tl::T;
constexpr int kEvIn = 0, kEvOut = 1;

void vbar() {
  T::pipe_barrier(Pipe::V);
}

}  // namespace

tl::PrimFunc layer_norm_bwd_kernel(const LayerNormBwdKey& k) {
  if (k.chunk == 0) return layer_norm_bwd_rows_kernel(k);
  using tl::DType;
  const DType dt = k.dtype, f32 = DType::Float32;
  const bool wide = dt != f32;
  const int H = ir_size(k.hidden, "hidden"), rM = ir_size(k.rows_per_tile, "rows_per_tile"),
            bN = ir_size(k.chunk, "chunk"), blocks = ir_size(k.blocks, "blocks");
  // A ragged row (bN does not divide H: H is not whole 32-byte blocks) is held as Hp columns.
  const int chunks = (H + bN - 1) / bN, Hp = chunks * bN, last = H - (chunks - 1) * bN;
  const bool ragged = Hp != H;
  const double inv_h = 1.0 / static_cast<double>(H);

  // The signature RMSNorm's backward has, the partials DWBP [2 * blocks, 2 * Hp]
  // (rms_norm_parts.h).
  const RmsNormBwdParams sig = layer_norm_bwd_params(dt, H, blocks, 2 * Hp);
  const auto& [M, DY, X, W, DX, DWBP, eps, params] = sig;

  return T::prim_func("layer_norm_bwd", params, [&] {
    Expr num_blocks = min(Expr(blocks), ceildiv(M, rM));
    T::Kernel(num_blocks, [&](Expr cid, Expr vid) {
      T::Scope(tl::Core::Vector, [&] {
        auto wf = T::alloc_ub("wf_ub", {Hp}, f32);        // W in fp32
        auto dwb = T::alloc_ub("dwb_ub", {2 * Hp}, f32);  // this AIV's dW | dB partial
        auto xf = T::alloc_ub("xf_ub", {rM, bN}, f32);    // x chunk, then xc = x - mean
        auto gf = T::alloc_ub("gf_ub", {rM, bN}, f32);    // dy chunk, then g = dy * w
        auto t1 = T::alloc_ub("t1_ub", {rM, bN}, f32);    // pass 1: sum x; 2: sum xc^2; 3: dW term
        auto t2 = T::alloc_ub("t2_ub", {rM, bN}, f32);    // pass 2: sum g; pass 3: xc * coef
        auto t3 = T::alloc_ub("t3_ub", {rM, bN}, f32);    // pass 2: sum g * xc
        auto wb = T::alloc_ub("wb_ub", {rM, bN}, f32);    // W chunk broadcast, a temporary
        auto dxb = T::alloc_ub("dxb_ub", {rM, bN}, dt);   // dx chunk to store
        auto mu = T::alloc_ub("mu_ub", {rM}, f32);        // mean
        auto rs = T::alloc_ub("rs_ub", {rM}, f32);        // rstd
        auto cf = T::alloc_ub("cf_ub", {rM}, f32);        // coef
        auto of = T::alloc_ub("of_ub", {rM}, f32);        // off
        Buffer xb = wide ? T::alloc_ub("xb_ub", {rM, bN}, dt) : xf;
        Buffer gb = wide ? T::alloc_ub("gb_ub", {rM, bN}, dt) : gf;
        // A ragged row's W and loads are padded with zeros to the block.
        // the padded copy fills the last 32-byte block, a fill before it the columns past that.
        const T::CopyOptions pad = ragged ? T::CopyOptions{.pad_value = 0.0} : T::CopyOptions{};
        auto load_w = [&](const Buffer& b) {
          if (!ragged) return T::copy(W, b);
          T::tile::fill(b, 0.0);
          set_then_wait(Pipe::V, Pipe::MTE2, kEvIn);
          T::copy(W, b.region({0}, {H}), pad);
        };
        if (wide) {
          auto w_b = T::alloc_ub("w_ub", {Hp}, dt);
          load_w(w_b);
          set_then_wait(Pipe::MTE2, Pipe::V, kEvIn);
          T::tile::cast(wf, w_b);
        } else {
          load_w(wf);
          set_then_wait(Pipe::MTE2, Pipe::V, kEvIn);
        }
        std::optional<Buffer> mk;  // ragged: 1 on the last chunk's valid columns, 0 on its pad
        if (ragged) {
          mk = T::alloc_ub("mk_ub", {bN}, f32);
          T::tile::arith_progression(*mk, 0.0, 1.0);
          vbar();
          T::tile::mul(*mk, *mk, -1.0);
          vbar();
          T::tile::add(*mk, *mk, static_cast<double>(last));
          vbar();
          T::tile::clamp(*mk, *mk, 0.0, 1.0);
        }
        T::tile::fill(dwb, 0.0);

        auto tile_rows = [&](Expr row0, std::optional<Expr> nrows) {
          // Chunk c's columns of the tile's rows: all bN but in a ragged row's last chunk.
          auto width = [&](Expr c) { return ragged ? min(Expr(bN), H - c * bN) : Expr(bN); };
          auto load = [&](const Buffer& src, const Buffer& dst, Expr c) {
            if (!nrows && !ragged) {
              T::copy(src.at({row0, c * bN}), dst);
            } else if (!nrows) {
              T::copy(src.region({row0, c * bN}, {rM, width(c)}),
                      dst.region({0, 0}, {rM, width(c)}), pad);
            } else {
              T::serial("j", *nrows, [&](Expr j) {
                T::copy(src.region({row0 + j, c * bN}, {1, width(c)}),
                        dst.region({j, 0}, {1, width(c)}), pad);
              });
            }
          };
          // Chunk c of x into xf (minus the mean when `centre`), of dy into gf when `with_dy`.
          auto load_chunk = [&](Expr c, bool with_dy, bool centre) {
            vbar();  // the vector ops before have read xf / gf (and xb / gb)
            auto zeros = [&] {
              T::tile::fill(xb, 0.0);
              if (with_dy) T::tile::fill(gb, 0.0);
            };
            if (nrows)  // rows past M: zeros
              zeros();
            else if (ragged)  // and the columns past a ragged row
              T::If(c == chunks - 1, zeros);
            set_then_wait(Pipe::V, Pipe::MTE2, kEvIn);
            load(X, xb, c);
            if (with_dy) load(DY, gb, c);
            set_then_wait(Pipe::MTE2, Pipe::V, kEvIn);
            if (wide) {
              T::tile::cast(xf, xb);
              if (with_dy) T::tile::cast(gf, gb);
              vbar();
            }
            if (centre) {
              T::tile::row_expand_sub(xf, xf, mu);
              vbar();
            }
          };

          // Pass 1: the mean.
          T::tile::fill(t1, 0.0);
          T::serial("c", chunks, [&](Expr c) {
            load_chunk(c, false, false);
            T::tile::add(t1, t1, xf);
          });
          vbar();
          T::reduce_sum(t1, mu, -1);
          vbar();
          T::tile::mul(mu, mu, inv_h);

          // Pass 2: sum(xc^2), sum(g), sum(g * xc).
          T::tile::fill(t1, 0.0);
          T::tile::fill(t2, 0.0);
          T::tile::fill(t3, 0.0);
          T::serial("c", chunks, [&](Expr c) {
            load_chunk(c, true, true);
            if (mk) {  // the pad columns of x - mean are -mean: out of the variance
              T::If(c == chunks - 1, [&] {
                T::serial("r", rM, [&](Expr r) {
                  T::tile::mul(xf.region({r, 0}, {1, bN}), xf.region({r, 0}, {1, bN}), *mk);
                });
              });
            }
            T::tile::broadcast(wb, wf.region({c * bN}, {bN}));
            vbar();
            T::tile::mul(gf, gf, wb);  // g
            vbar();
            T::tile::mul(wb, xf, xf);  // xc^2
            T::tile::add(t2, t2, gf);
            vbar();
            T::tile::mul(gf, gf, xf);  // g * xc
            T::tile::add(t1, t1, wb);
            vbar();
            T::tile::add(t3, t3, gf);
          });
          vbar();
          T::reduce_sum(t1, rs, -1);
          T::reduce_sum(t2, of, -1);
          T::reduce_sum(t3, cf, -1);
          vbar();
          T::tile::mul(rs, rs, inv_h);
          vbar();
          T::tile::add(rs, rs, eps);
          vbar();
          T::tile::rsqrt(rs, rs);  // rstd
          vbar();
          T::tile::mul(of, of, rs);
          T::tile::mul(cf, cf, rs);
          vbar();
          T::tile::mul(of, of, inv_h);  // off = sg * rstd / H
          T::tile::mul(cf, cf, rs);
          vbar();
          T::tile::mul(cf, cf, rs);
          vbar();
          T::tile::mul(cf, cf, inv_h);  // coef = sgx * rstd^3 / H

          // Pass 3: the dW | dB partials and dx.
          T::serial("c", chunks, [&](Expr c) {
            load_chunk(c, true, true);
            T::tile::broadcast(wb, wf.region({c * bN}, {bN}));
            T::tile::row_expand_mul(t1, xf, rs);  // xhat
            T::tile::row_expand_mul(t2, xf, cf);  // xc * coef
            vbar();
            T::tile::mul(t1, t1, gf);             // dy * xhat
            T::tile::row_expand_mul(wb, wb, rs);  // w * rstd
            vbar();
            T::serial("r", nrows ? *nrows : Expr(rM), [&](Expr r) {  // rows in order
              T::tile::add(dwb.region({c * bN}, {bN}), dwb.region({c * bN}, {bN}),
                           t1.region({r, 0}, {1, bN}));
              T::tile::add(dwb.region({c * bN + Hp}, {bN}), dwb.region({c * bN + Hp}, {bN}),
                           gf.region({r, 0}, {1, bN}));
              vbar();
            });
            T::tile::mul(gf, gf, wb);  // g * rstd
            vbar();
            T::tile::sub(gf, gf, t2);
            vbar();
            set_then_wait(Pipe::MTE3, Pipe::V, kEvOut);  // the previous store has read dxb
            if (wide) {
              T::tile::row_expand_sub(gf, gf, of);
              vbar();
              T::tile::cast(dxb, gf, "CAST_RINT");
            } else {
              T::tile::row_expand_sub(dxb, gf, of);
            }
            set_then_wait(Pipe::V, Pipe::MTE3, kEvOut);
            if (!nrows && !ragged) {
              T::copy(dxb, DX.at({row0, c * bN}));
            } else if (!nrows) {
              T::copy(dxb.region({0, 0}, {rM, width(c)}), DX.region({row0, c * bN}, {rM, width(c)}),
                      pad);
            } else {
              T::serial("j", *nrows, [&](Expr j) {
                T::copy(dxb.region({j, 0}, {1, width(c)}),
                        DX.region({row0 + j, c * bN}, {1, width(c)}), pad);
              });
            }
          });
        };

        auto worker = for_each_row_tile(M, rM, num_blocks, cid, vid, tile_rows);
        vbar();
        set_then_wait(Pipe::V, Pipe::MTE3, kEvOut);
        T::copy(dwb, DWBP.at({worker, 0}));
      });
    });
  });
}

}  // namespace cann_ops_tilelang
