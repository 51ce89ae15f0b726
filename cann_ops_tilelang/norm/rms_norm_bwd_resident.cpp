// The RMSNorm backward kernel's resident schedule (the key's `resident`, chosen by
// rms_norm_bwd_key when two row tiles of x and dy fit UB beside W and the dW partial): each
// rM-row tile of x and dy is loaded once and stays in UB for both passes (the chunked schedule,
// rms_norm_bwd_kernel.cpp, reads both twice), in two slots so the next tile loads while this
// one computes; dx overwrites dy in its slot and the tile is stored with one copy. The pipeline
// and its events are the resident forward's (rms_norm_fwd_resident.cpp). Its Python twin is
// rms_norm_bwd_kernel in python/cann_ops_tilelang/kernels/rms_norm_bwd_resident.py.
//
// Per tile (g = dy * w), bN-column fp32 chunks:
//   pass 1  s1 = sum x^2, s2 = sum g x; rstd = rsqrt(s1 / H + eps), coef = s2 rstd^3 / H
//   pass 2  dx = g rstd - x coef; this AIV's dW partial += the valid rows of dy x rstd, in order
// UB addresses are explicit: the two sources of every vector instruction start 256 bytes apart
// modulo 512 (no bank-group conflict, docs/calibration.md).
#include <optional>

#include "cann_ops_tilelang/core.h"
#include "cann_ops_tilelang/norm.h"
#include "rms_norm_parts.h"
#include "tl/lang.h"

namespace cann_ops_tilelang {
namespace {

using tl::Buffer;
using tl::Expr;
using tl::Pipe;
namespace T = tl::T;
constexpr int kEvTail = 3;

}  // namespace

tl::PrimFunc rms_norm_bwd_resident_kernel(const RmsNormKey& k) {
  using tl::DType;
  const DType dt = k.dtype, f32 = DType::Float32;
  const bool wide = dt != f32;
  const int H = ir_size(k.hidden, "hidden"), rM = ir_size(k.rows_per_tile, "rows_per_tile"),
            bN = ir_size(k.chunk, "chunk"), chunks = H / bN, blocks = ir_size(k.blocks, "blocks");

  // The signature the three schedules share (rms_norm_parts.h).
  const RmsNormBwdParams sig = rms_norm_bwd_params(dt, H, blocks);
  const auto& [M, DY, X, W, DX, DWP, eps, params] = sig;

  return T::prim_func("rms_norm_bwd", params, [&] {
    Expr num_blocks = min(Expr(blocks), ceildiv(M, rM));
    T::Kernel(num_blocks, [&](Expr cid, Expr vid) {
      T::Scope(tl::Core::Vector, [&] {
        UbPlacer place;  // UB by hand, each buffer at a chosen residue modulo 512
        const int64_t es = tl::dtype_bytes(dt), tile = int64_t{rM} * H * es, chunk = rM * bN * 4;
        auto wf = T::alloc_ub("wf_ub", {H}, f32, place(H * 4, 0));    // W in fp32
        auto dw = T::alloc_ub("dw_ub", {H}, f32, place(H * 4, 256));  // this AIV's dW partial
        // The two tile slots of x and of dy (dx overwrites dy).
        Buffer xs[2] = {T::alloc_ub("x0_ub", {rM, H}, dt, place(tile, 0)),
                        T::alloc_ub("x1_ub", {rM, H}, dt, place(tile, 0))};
        Buffer gs[2] = {T::alloc_ub("g0_ub", {rM, H}, dt, place(tile, 0)),
                        T::alloc_ub("g1_ub", {rM, H}, dt, place(tile, 0))};
        const int64_t a_xf = place(chunk, 0);
        auto xf = T::alloc_ub("xf_ub", {rM, bN}, f32, a_xf);               // x chunk
        auto gf = T::alloc_ub("gf_ub", {rM, bN}, f32, place(chunk, 256));  // dy, g, dx chunk
        auto t = T::alloc_ub("t_ub", {rM, bN}, f32, place(chunk, 0));      // x^2; dy x rstd
        auto a1 = T::alloc_ub("a1_ub", {rM, bN}, f32, place(chunk, 256));  // sum x^2 per column
        auto a2 = T::alloc_ub("a2_ub", {rM, bN}, f32, place(chunk, 0));    // sum g x per column
        auto rs = T::alloc_ub("rs_ub", {rM}, f32, place(rM * 4, 256));     // rstd
        auto cf = T::alloc_ub("cf_ub", {rM}, f32, place(rM * 4, 256));     // coef
        auto rs2 = T::alloc_ub("rs2_ub", {rM}, f32, place(rM * 4, 0));     // rstd beside gf
        // W as loaded is dead once widened: it shares the chunk temporaries' bytes.
        load_weight_f32(W, wf, kEvTail, a_xf);
        T::tile::fill(dw, 0.0);

        auto copy_rows = [&](const Buffer& src, const Buffer& dst, Expr row0,
                             std::optional<Expr> nrows, bool to_ub) {
          cann_ops_tilelang::copy_rows(src, dst, row0, nrows, to_ub, H);
        };
        auto load = [&](int s, Expr row0, std::optional<Expr> nrows) {
          copy_rows(X, xs[s], row0, nrows, true);
          copy_rows(DY, gs[s], row0, nrows, true);
        };
        auto col = [&](const Buffer& b, Expr c0) { return b.region({0, c0}, {rM, bN}); };
        // A slot's chunk in fp32 (fp32 I/O: copied, so the chunk code is one for all dtypes).
        auto in = [&](const Buffer& f, const Buffer& slot, Expr c0) {
          if (wide)
            T::tile::cast(f, col(slot, c0));
          else
            T::tile::add(f, col(slot, c0), 0.0);
        };
        auto times_w = [&](Expr c0) {  // gf = gf * W's chunk, row by row
          T::serial("r", rM, [&](Expr i) {
            T::tile::mul(gf.region({i, 0}, {1, bN}), gf.region({i, 0}, {1, bN}),
                         wf.region({c0}, {bN}));
          });
        };

        // The tile in slot s; `rows` of its rows are valid (all rM but in the tail).
        auto compute = [&](int s, Expr rows) {
          const Buffer &x = xs[s], &g = gs[s];
          // Pass 1: chunk 0 writes the sums, the others add to them. Vector instructions
          // overlap: each chunk starts after the last one's reads (a WAR hazard without it).
          auto pass1 = [&](Expr c0, bool first) {
            T::pipe_barrier(Pipe::V);
            in(xf, x, c0);
            in(gf, g, c0);
            T::pipe_barrier(Pipe::V);
            T::tile::mul(first ? a1 : t, xf, xf);
            times_w(c0);
            T::pipe_barrier(Pipe::V);
            T::tile::mul(first ? a2 : gf, gf, xf);
            if (first) return;
            T::tile::add(a1, a1, t);
            T::pipe_barrier(Pipe::V);
            T::tile::add(a2, a2, gf);
          };
          pass1(Expr(0), true);
          T::serial("c", 1, chunks - 1, [&](Expr c) { pass1(c * bN, false); });
          T::pipe_barrier(Pipe::V);
          T::reduce_sum(a1, rs, -1);
          T::reduce_sum(a2, cf, -1);
          T::pipe_barrier(Pipe::V);
          T::tile::mul(rs, rs, 1.0 / static_cast<double>(H));
          T::pipe_barrier(Pipe::V);
          T::tile::add(rs, rs, eps);
          T::pipe_barrier(Pipe::V);
          T::tile::rsqrt(rs, rs);  // rstd
          T::pipe_barrier(Pipe::V);
          T::tile::mul(cf, cf, rs);
          T::tile::add(rs2, rs, 0.0);
          T::pipe_barrier(Pipe::V);
          T::tile::mul(cf, cf, rs);
          T::pipe_barrier(Pipe::V);
          T::tile::mul(cf, cf, rs);
          T::pipe_barrier(Pipe::V);
          T::tile::mul(cf, cf, 1.0 / static_cast<double>(H));  // coef = s2 * rstd^3 / H

          // Pass 2: dW partial and dx (over dy's chunk).
          T::serial("c", chunks, [&](Expr c) {
            Expr c0 = c * bN;
            T::pipe_barrier(Pipe::V);
            in(xf, x, c0);
            in(gf, g, c0);
            T::pipe_barrier(Pipe::V);
            T::tile::mul(t, gf, xf);  // dy * x
            T::pipe_barrier(Pipe::V);
            T::tile::row_expand_mul(xf, xf, cf);  // x * coef
            times_w(c0);                          // g
            T::tile::row_expand_mul(t, t, rs);    // dy * x * rstd
            T::pipe_barrier(Pipe::V);
            T::tile::row_expand_mul(gf, gf, rs2);  // g * rstd
            T::serial("r", rows, [&](Expr i) {     // valid rows in order: a fixed sum order
              T::tile::add(dw.region({c0}, {bN}), dw.region({c0}, {bN}), t.region({i, 0}, {1, bN}));
              T::pipe_barrier(Pipe::V);
            });
            T::pipe_barrier(Pipe::V);
            if (wide) {
              T::tile::sub(gf, gf, xf);
              T::pipe_barrier(Pipe::V);
              T::tile::cast(col(g, c0), gf, "CAST_RINT");
            } else {
              T::tile::sub(col(g, c0), gf, xf);
            }
          });
        };

        // The tail tile's rows past M are zero-filled first; only its valid rows enter the dW
        // partial.
        auto worker = for_each_row_tile_2slots(
            M, rM, num_blocks, cid, vid, [&](int s, Expr row0) { load(s, row0, std::nullopt); },
            [&](int s, Expr row0) {
              compute(s, Expr(rM));
              set_then_wait(Pipe::V, Pipe::MTE3, s);
              copy_rows(gs[s], DX, row0, std::nullopt, false);
            },
            [&](Expr row0, Expr rows) {
              set_then_wait(Pipe::MTE3, Pipe::V, kEvTail);  // slot 0's last store has read it
              T::tile::fill(xs[0], 0.0);
              T::tile::fill(gs[0], 0.0);
              set_then_wait(Pipe::V, Pipe::MTE2, kEvTail);
              load(0, row0, rows);
              set_then_wait(Pipe::MTE2, Pipe::V, kEvTail);
              compute(0, rows);
              set_then_wait(Pipe::V, Pipe::MTE3, kEvTail);
              copy_rows(gs[0], DX, row0, rows, false);
            });
        set_then_wait(Pipe::V, Pipe::MTE3, kEvTail);
        T::copy(dw, DWP.at({worker, 0}));
      });
    });
  });
}

}  // namespace cann_ops_tilelang
