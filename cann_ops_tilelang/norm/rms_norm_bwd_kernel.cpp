// The RMSNorm backward kernel generators of cann_ops_tilelang (docs/ops.md): dX per row and
// dW partials per AIV, then a reduction of the partials in a fixed order, so dW is
// deterministic. Expert mode for the reason of the forward kernel (rows of 7168 do not fit UB
// in fp32 several times over): chunks of bN columns, two passes over each row tile. Their Python
// twins are in python/cann_ops_tilelang/kernels/rms_norm.py (identical IR, test_opslib_twin.py).
//
// Per rM-row tile (g = dy * w):
//   pass 1  s1 = sum(x^2), s2 = sum(g * x) per row; rstd = rsqrt(s1 / H + eps) is recomputed
//           here rather than read from the forward pass (x is read in this pass anyway, and an
//           rstd input would need padding to whole 32-byte tiles);
//           coef = s2 * rstd^3 / H
//   pass 2  dx = g * rstd - x * coef; dW partial[chunk] += rows of dy * x * rstd
// The tail tile is zero-filled before its rows are loaded: rows past M contribute zeros to dW.
// Each AIV stores its whole fp32 dW partial row (zeros if it had no tile) to DWP[worker]; the
// reduce kernel sums DWP's rows 0 .. P-1 in order per column chunk.
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

}  // namespace

tl::PrimFunc rms_norm_bwd_kernel(const RmsNormKey& k) {
  if (k.resident)
    return k.chunk == 0 ? rms_norm_bwd_rows_kernel(k) : rms_norm_bwd_resident_kernel(k);
  using tl::DType;
  const DType dt = k.dtype, f32 = DType::Float32;
  const bool wide = dt != f32;
  // int sizes: int32 immediates, as the Python twin's ints are (ir_size, core.h).
  const int H = ir_size(k.hidden, "hidden"), rM = ir_size(k.rows_per_tile, "rows_per_tile"),
            bN = ir_size(k.chunk, "chunk"), chunks = H / bN, blocks = ir_size(k.blocks, "blocks");

  // The signature the three schedules share (rms_norm_parts.h).
  const RmsNormBwdParams sig = rms_norm_bwd_params(dt, H, blocks);
  const auto& [M, DY, X, W, DX, DWP, eps, params] = sig;

  return T::prim_func("rms_norm_bwd", params, [&] {
    Expr num_blocks = min(Expr(blocks), ceildiv(M, rM));
    T::Kernel(num_blocks, [&](Expr cid, Expr vid) {
      T::Scope(tl::Core::Vector, [&] {
        auto wf = T::alloc_ub("wf_ub", {H}, f32);        // W in fp32
        auto dw = T::alloc_ub("dw_ub", {H}, f32);        // this AIV's dW partial
        auto xf = T::alloc_ub("xf_ub", {rM, bN}, f32);   // x chunk
        auto gf = T::alloc_ub("gf_ub", {rM, bN}, f32);   // dy chunk, then g = dy * w
        auto t1 = T::alloc_ub("t1_ub", {rM, bN}, f32);   // pass 1: sum x^2; pass 2: dy * x * rstd
        auto t2 = T::alloc_ub("t2_ub", {rM, bN}, f32);   // pass 1: sum g * x; pass 2: x * coef
        auto wb = T::alloc_ub("wb_ub", {rM, bN}, f32);   // W chunk broadcast over the rows
        auto dxb = T::alloc_ub("dxb_ub", {rM, bN}, dt);  // dx chunk to store
        auto rs = T::alloc_ub("rs_ub", {rM}, f32);       // rstd
        auto cf = T::alloc_ub("cf_ub", {rM}, f32);       // coef
        Buffer xb = wide ? T::alloc_ub("xb_ub", {rM, bN}, dt) : xf;
        Buffer gb = wide ? T::alloc_ub("gb_ub", {rM, bN}, dt) : gf;
        load_weight_f32(W, wf, kEvIn);
        T::tile::fill(dw, 0.0);

        auto tile_rows = [&](Expr row0, std::optional<Expr> nrows) {
          auto load = [&](const Buffer& src, const Buffer& dst, Expr c) {
            if (!nrows) {
              T::copy(src.at({row0, c * bN}), dst);
            } else {
              T::serial("j", *nrows, [&](Expr j) {
                T::copy(src.at({row0 + j, c * bN}), dst.region({j, 0}, {1, bN}));
              });
            }
          };
          // Chunk c of x into xf and of dy into gf; wb = W's chunk on every row.
          auto load_chunk = [&](Expr c) {
            if (nrows) {  // rows past M: zeros, so they add nothing to dW
              T::tile::fill(xb, 0.0);
              T::tile::fill(gb, 0.0);
            }
            set_then_wait(Pipe::V, Pipe::MTE2, kEvIn);
            load(X, xb, c);
            load(DY, gb, c);
            set_then_wait(Pipe::MTE2, Pipe::V, kEvIn);
            if (wide) {
              T::tile::cast(xf, xb);
              T::tile::cast(gf, gb);
            }
            T::tile::broadcast(wb, wf.region({c * bN}, {bN}));
          };

          // Pass 1: s1 = sum(x^2) and s2 = sum(g * x), per column slot.
          T::tile::fill(t1, 0.0);
          T::tile::fill(t2, 0.0);
          T::serial("c", chunks, [&](Expr c) {
            load_chunk(c);
            T::pipe_barrier(Pipe::V);
            T::tile::mul(gf, gf, wb);  // g
            // Vector instructions overlap: the next one overwrites wb, which this one reads
            // (without the barrier, a WAR hazard: wrong dx and dW in simulated-time order).
            T::pipe_barrier(Pipe::V);
            T::tile::mul(wb, xf, xf);  // x^2 (wb is free until the next chunk)
            T::pipe_barrier(Pipe::V);
            T::tile::mul(gf, gf, xf);  // g * x
            T::tile::add(t1, t1, wb);
            T::pipe_barrier(Pipe::V);
            T::tile::add(t2, t2, gf);
          });
          T::pipe_barrier(Pipe::V);
          T::reduce_sum(t1, rs, -1);
          T::reduce_sum(t2, cf, -1);
          T::pipe_barrier(Pipe::V);
          T::tile::mul(rs, rs, 1.0 / static_cast<double>(H));
          T::pipe_barrier(Pipe::V);
          T::tile::add(rs, rs, eps);
          T::pipe_barrier(Pipe::V);
          T::tile::rsqrt(rs, rs);  // rstd
          T::pipe_barrier(Pipe::V);
          T::tile::mul(cf, cf, rs);
          T::pipe_barrier(Pipe::V);
          T::tile::mul(cf, cf, rs);
          T::pipe_barrier(Pipe::V);
          T::tile::mul(cf, cf, rs);
          T::pipe_barrier(Pipe::V);
          T::tile::mul(cf, cf, 1.0 / static_cast<double>(H));  // coef = s2 * rstd^3 / H

          // Pass 2: dW partial and dx.
          T::serial("c", chunks, [&](Expr c) {
            load_chunk(c);
            T::pipe_barrier(Pipe::V);
            // gf is overwritten only after the barrier, once dy * x has read it (a WAR hazard
            // before: the g product was in the first group); g * rstd = dy * (w * rstd).
            T::tile::mul(t1, gf, xf);             // dy * x
            T::tile::row_expand_mul(t2, xf, cf);  // x * coef
            T::tile::row_expand_mul(wb, wb, rs);  // w * rstd
            T::pipe_barrier(Pipe::V);
            T::tile::row_expand_mul(t1, t1, rs);  // dy * x * rstd
            T::tile::mul(gf, gf, wb);             // g * rstd
            T::pipe_barrier(Pipe::V);
            T::serial("r", rM, [&](Expr r) {  // rows in order: a fixed summation order
              T::tile::add(dw.region({c * bN}, {bN}), dw.region({c * bN}, {bN}),
                           t1.region({r, 0}, {1, bN}));
              T::pipe_barrier(Pipe::V);
            });
            set_then_wait(Pipe::MTE3, Pipe::V, kEvOut);  // the previous store has read dxb
            if (wide) {
              T::tile::sub(gf, gf, t2);
              T::pipe_barrier(Pipe::V);
              T::tile::cast(dxb, gf, "CAST_RINT");
            } else {
              T::tile::sub(dxb, gf, t2);
            }
            set_then_wait(Pipe::V, Pipe::MTE3, kEvOut);
            if (!nrows) {
              T::copy(dxb, DX.at({row0, c * bN}));
            } else {
              T::serial("j", *nrows, [&](Expr j) {
                T::copy(dxb.region({j, 0}, {1, bN}), DX.at({row0 + j, c * bN}));
              });
            }
          });
        };

        auto worker = for_each_row_tile(M, rM, num_blocks, cid, vid, tile_rows);
        set_then_wait(Pipe::V, Pipe::MTE3, kEvOut);
        T::copy(dw, DWP.at({worker, 0}));
      });
    });
  });
}

tl::PrimFunc rms_norm_dw_reduce_kernel(const RmsNormKey& k, int64_t partials) {
  using tl::DType;
  const DType dt = k.dtype, f32 = DType::Float32;
  const int H = ir_size(k.hidden, "hidden"), bN = ir_size(k.chunk, "chunk"), chunks = H / bN,
            blocks = ir_size(k.blocks, "blocks"), P = ir_size(partials, "partials");
  auto DWP = T::Tensor("DWP", {P, H}, f32);
  auto DW = T::Tensor("DW", {H}, dt);
  return T::prim_func("rms_norm_dw_reduce", {DWP, DW}, [&] {
    Expr num_blocks = min(Expr(blocks), ceildiv(Expr(chunks), 2));
    T::Kernel(num_blocks, [&](Expr cid, Expr vid) {
      T::Scope(tl::Core::Vector, [&] {
        // The partial rows of a chunk come in groups of G, one strided copy each (at most 64 KB):
        // a copy per row would pay the GM latency P times (docs/calibration.md).
        const int G = std::min(P, std::max(1, 65536 / (bN * 4)));
        auto acc = T::alloc_ub("acc_ub", {bN}, f32);
        auto part = T::alloc_ub("part_ub", {G, bN}, f32);
        auto out = dt == f32 ? acc : T::alloc_ub("out_ub", {bN}, dt);
        T::Persistent({Expr(chunks)}, num_blocks * 2, cid * 2 + vid, [&](std::vector<Expr> c) {
          set_then_wait(Pipe::MTE3, Pipe::V,
                        kEvOut);  // the previous chunk's store has read acc / out
          T::tile::fill(acc, 0.0);
          for (int g0 = 0; g0 < P; g0 += G) {
            const int n = std::min(G, P - g0);
            set_then_wait(Pipe::V, Pipe::MTE2, kEvIn);  // the adds before have read part
            T::copy(DWP.region({g0, c[0] * bN}, {n, bN}), part.region({0, 0}, {n, bN}));
            set_then_wait(Pipe::MTE2, Pipe::V, kEvIn);
            T::serial("p", n, [&](Expr r) {  // rows in order: deterministic dW
              T::tile::add(acc, acc, part.region({r, 0}, {1, bN}));
              T::pipe_barrier(Pipe::V);
            });
          }
          if (dt != f32) {
            T::pipe_barrier(Pipe::V);
            T::tile::cast(out, acc, "CAST_RINT");
          }
          set_then_wait(Pipe::V, Pipe::MTE3, kEvOut);
          T::copy(out, DW.at({c[0] * bN}));
        });
      });
    });
  });
}

}  // namespace cann_ops_tilelang
