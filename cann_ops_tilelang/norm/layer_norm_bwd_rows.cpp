// The LayerNorm backward kernel's whole-row schedule (the key's chunk 0, chosen by
// layer_norm_bwd_key first, when the input slots of a tile fit UB beside W, the dW and dB partials
// and the tile's rows in fp32; else the chunked kernel, layer_norm_bwd_kernel.cpp, which reads x
// three times and dy twice). It is RMSNorm's whole-row schedule (rms_norm_bwd_rows.cpp,
// docs/ops.md "RMSNorm") with LayerNorm's arithmetic: each rM-row tile of x and dy is loaded once,
// into a ring of 3 or 5 slots (one or two tiles ahead), widened to fp32 once and kept so for the
// whole tile; dx is narrowed into the tile's dy slot and stored with one copy. Its Python twin
// is layer_norm_bwd_rows_kernel in python/cann_ops_tilelang/kernels/layer_norm_bwd_rows.py.
//
// The kernel is close to vector bound, so it is written for the fewest vector passes over a row.
// With xc = x - mean, g' = rstd dy w (dy scaled by rstd once: dW's term and g both need it),
//   widen x, dy; sum x -> mean; xc; sum xc^2 -> rstd; dB partial += dy
//   dy *= rstd; dW partial += dy xc (mul_add_dst); g' = dy w; sum g'; sum g' xc
//   dx = g' - sum(g') / H - xc sum(g' xc) rstd^2 / H (a row_expand_sub and an axpy); narrow
// which is rstd (g - mean(g) - xhat mean(g xhat)) with xhat = xc rstd. The mean and the axpy's
// factor are computed by the scalar unit from the sums (one V -> S wait each), so they cost no
// vector instruction and no barrier; rstd / sqrt(H) = rsqrt(sum xc^2 + H eps) takes two [rM]
// vector ops (the AscendC emitter has no scalar rsqrt), its sqrt(H) carried by W (scaled once)
// and the dW partial (scaled back once). Each sum of products forms the first column
// quarter's product and adds the other quarters' with mul_add_dst, so the products take a
// quarter row (a 7168 bf16 row leaves no more room: W, dW and dB are fp32 rows). The sums are
// whole-row reduce_sums (14 + 7 + 1 a further repeat + 32 cycles, docs/calibration.md "Vector
// cost rows": cheaper than trees). The mean is subtracted before the variance is summed (no
// E[x^2] - E[x]^2 cancellation). UB addresses are explicit: the two sources of every vector
// instruction start 256 bytes apart modulo 512 (no bank-group conflict, docs/calibration.md).
#include <cmath>

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
constexpr int kEvIn = 0, kEvOut = 1, kEvScalar = 2, kEvTail = 3;
constexpr int kEvIn2 = 4;  // with two tiles in flight, the odd tiles' MTE2 -> V (a flag is a bit)

}  // namespace

LnBwdRowsLayout layer_norm_bwd_rows_layout(tl::DType dt, int64_t H, int64_t rM, int64_t slots) {
  UbPlacer place;  // UB by hand, each buffer at a chosen residue modulo 512
  const int64_t tile = rM * H * tl::dtype_bytes(dt), row32 = rM * H * 4;
  LnBwdRowsLayout l;
  l.wf = place(H * 4, 0);
  l.dwb = place(2 * H * 4, 0);  // dB H * 4 bytes on: at dW's residue when 128 divides H
  l.in = place(slots * tile, 0);
  l.xf = place(row32, 0);
  l.gf = place(row32, 256);  // x's and W's opposite: the products, g' = dy w, dB += dy
  l.pp = place(row32 / 4, 256);
  l.mu = place(rM * 4, 256);  // mu, rs and sx are read by the scalar unit
  l.rs = place(rM * 4, 0);
  l.sg = place(rM * 4, 0);  // dy's opposite (g' - mean)
  l.sx = place(rM * 4, 0);
  l.rt = place(rM * 4, 0);  // dy's opposite (dy rstd)
  l.end = place.at;
  return l;
}

tl::PrimFunc layer_norm_bwd_rows_kernel(const LayerNormBwdKey& k) {
  using tl::DType;
  const DType dt = k.dtype, f32 = DType::Float32;
  const bool wide = dt != f32;
  const int H = ir_size(k.hidden, "hidden"), rM = ir_size(k.rows_per_tile, "rows_per_tile"),
            q = H / 4, blocks = ir_size(k.blocks, "blocks");
  const int S = ir_size(k.slots, "slots"), A = (S - 1) / 2;  // slots, tiles loaded ahead
  TL_ASSERT(H % 32 == 0 && k.chunk == 0 && S % 2 == 1 && S >= 3 && (wide || S == 3),
            "layer_norm_bwd rows: H {} chunk {} slots {}", H, k.chunk, S);
  const double inv_h = 1.0 / static_cast<double>(H), sqrt_h = std::sqrt(static_cast<double>(H));

  // The signature RMSNorm's backward has, the partials DWBP [2 * blocks, 2 * H] (rms_norm_parts.h).
  const RmsNormBwdParams sig = layer_norm_bwd_params(dt, H, blocks, 2 * H);
  const auto& [M, DY, X, W, DX, DWBP, eps, params] = sig;

  return T::prim_func("layer_norm_bwd", params, [&] {
    // x and dy are read once: past L2, so only dx counts in the footprint that makes writes
    // cost HBM time (docs/ops.md, "RMSNorm", step 8).
    T::annotate_l2_cache({{X, tl::L2CacheMode::Disable}, {DY, tl::L2CacheMode::Disable}});
    Expr num_blocks = min(Expr(blocks), ceildiv(M, rM));
    T::Kernel(num_blocks, [&](Expr cid, Expr vid) {
      T::Scope(tl::Core::Vector, [&] {
        const LnBwdRowsLayout at = layer_norm_bwd_rows_layout(dt, H, rM, S);
        auto wf = T::alloc_ub("wf_ub", {H}, f32, at.wf);  // W in fp32
        // This AIV's dW | dB partial: one row, as DWBP's.
        auto dwb = T::alloc_ub("dwb_ub", {2 * H}, f32, at.dwb);
        // S input slots, loads in turn (x of a tile, then its dy), A tiles ahead.
        auto in = T::alloc_ub("in_ub", {S * rM, H}, dt, at.in);
        auto xf = T::alloc_ub("xf_ub", {rM, H}, f32, at.xf);  // x, then xc
        auto gf = T::alloc_ub("gf_ub", {rM, H}, f32, at.gf);  // dy, g', dx
        auto pp = T::alloc_ub("pp_ub", {rM, q}, f32, at.pp);  // the products' quarter row
        auto mu = T::alloc_ub("mu_ub", {rM}, f32, at.mu);     // sum x
        auto rs = T::alloc_ub("rs_ub", {rM}, f32, at.rs);     // sum xc^2
        auto sg = T::alloc_ub("sg_ub", {rM}, f32, at.sg);     // sum g', then / H
        auto sx = T::alloc_ub("sx_ub", {rM}, f32, at.sx);     // sum g' xc
        auto rt = T::alloc_ub("rt_ub", {rM}, f32, at.rt);     // rstd / sqrt(H)
        // W as loaded is dead once widened: it shares x's fp32 bytes.
        load_weight_f32(W, wf, kEvTail, at.xf);
        T::pipe_barrier(Pipe::V);
        T::tile::mul(wf, wf, sqrt_h);  // dy is scaled by rstd / sqrt(H)
        T::tile::fill(dwb, 0.0);

        auto slot = [&](Expr first_row) { return in.region({first_row, 0}, {rM, H}); };
        auto load = [&](const Buffer& src, Expr first_row, Expr row0) {  // rM rows to a slot
          T::copy(src.at({row0, 0}), slot(first_row));
        };
        auto quarter = [&](const Buffer& b, int i) { return b.region({0, i * q}, {rM, q}); };
        auto row = [&](const Buffer& b, Expr r) { return b.region({r, 0}, {1, H}); };

        // The tile as loaded into fp32; dx's buffer (fp32: gf) free once its last store is done.
        const WholeRowTiles tiles{in, xf, gf, rM, H, kEvOut};
        auto widen = [&](const tl::BufferRegion& xs, const tl::BufferRegion& gs) {
          widen_tile(tiles, xs, gs);
        };
        // The sum of each row of a * b into out: the first column quarters' product into pp,
        // the other quarters' added by mul_add_dst, then one reduce_sum. Ends with it issued.
        auto product_sum = [&](const Buffer& a, const Buffer& b, const Buffer& out) {
          T::tile::mul(pp, quarter(a, 0), quarter(b, 0));
          for (int i = 1; i < 4; ++i) {
            T::pipe_barrier(Pipe::V);
            T::tile::mul_add_dst(pp, quarter(a, i), quarter(b, i));
          }
          T::pipe_barrier(Pipe::V);
          T::reduce_sum(pp, out, -1);
        };
        // The rest of the tile; `rows` of its rows are valid (all rM but in the tail).
        auto compute = [&](Expr rows, const tl::TileArg& out) {
          T::pipe_barrier(Pipe::V);
          T::reduce_sum(xf, mu, -1);          // sum x
          T::serial("r", rows, [&](Expr r) {  // dB += dy, valid rows in order
            T::tile::add(dwb.region({H}, {H}), dwb.region({H}, {H}), row(gf, r));
            T::pipe_barrier(Pipe::V);
          });
          T::pipe_barrier(Pipe::V);  // the sums are read by vector instructions too
          set_then_wait(Pipe::V, Pipe::S, kEvScalar);
          T::serial("r", rM, [&](Expr r) {  // xc = x - sum x / H
            T::tile::add(row(xf, r), row(xf, r), -(mu.load({r}) * Expr(inv_h)));
          });
          T::pipe_barrier(Pipe::V);
          product_sum(xf, xf, rs);  // sum xc^2
          T::pipe_barrier(Pipe::V);
          // rt = rsqrt(sum xc^2 + H eps) = rstd / sqrt(H): W and the dW partial carry sqrt(H)
          // (the AscendC emitter has no scalar rsqrt: docs/ascendc.md).
          T::tile::add(rt, rs, eps * Expr(static_cast<double>(H)));
          T::pipe_barrier(Pipe::V);
          T::tile::rsqrt(rt, rt);
          T::pipe_barrier(Pipe::V);
          T::tile::row_expand_mul(gf, gf, rt);  // dy rstd / sqrt(H)
          T::pipe_barrier(Pipe::V);
          T::serial("r", rows, [&](Expr r) {  // dW / sqrt(H) += dy rstd xc / sqrt(H), in order
            T::tile::mul_add_dst(dwb.region({0}, {H}), row(gf, r), row(xf, r));
            T::pipe_barrier(Pipe::V);
          });
          T::pipe_barrier(Pipe::V);
          T::serial("r", rM, [&](Expr r) {  // g' = dy rstd w (wf: w sqrt(H))
            T::tile::mul(row(gf, r), row(gf, r), wf);
          });
          T::pipe_barrier(Pipe::V);
          T::reduce_sum(gf, sg, -1);  // sum g', beside the product
          product_sum(gf, xf, sx);    // sum g' xc
          T::tile::mul(sg, sg, inv_h);
          T::pipe_barrier(Pipe::V);
          T::tile::row_expand_sub(gf, gf, sg);  // g' - mean(g'), beside the reduction
          T::pipe_barrier(Pipe::V);             // the factors are read by vector instructions too
          set_then_wait(Pipe::V, Pipe::S, kEvScalar);
          T::serial("r", rM, [&](Expr r) {  // dx = ... - coef xc
            // coef = sum(g' xc) rstd^2 / H = sum(g' xc) / (sum xc^2 + H eps)
            Expr coef = sx.load({r}) / (rs.load({r}) + eps * Expr(static_cast<double>(H)));
            T::tile::axpy(row(gf, r), row(xf, r), -coef);
          });
          if (wide) {
            T::pipe_barrier(Pipe::V);
            T::wait_flag(Pipe::MTE3, Pipe::V, kEvOut);
            T::tile::cast(out, gf, "CAST_RINT");
          }
        };
        // S = 2A + 1 slots of rM rows in a ring: tile i's x in slot 2i mod S, its dy in
        // 2i + 1 mod S, and its 16-bit dx narrowed into its dy slot. A = 1 is
        // rms_norm_bwd_rows.cpp's schedule: tile i + 1's dy goes to tile i's x slot once tile i
        // is widened, tile i + 2's x to its dy slot once its dx is stored (fp32 I/O, dx in gf:
        // at once). A = 2 (16-bit rows with room for five slots): tile i + 2's dy goes to tile
        // i's x slot once widened, then its x to tile i - 1's dy slot once that dx is stored
        // (MTE2 runs its queue in order: dy, ready first, goes first); a tile's loads have two
        // tiles' time to land, so their latency no longer lies between two tiles (docs/ops.md,
        // "LayerNorm").
        auto workers = T::let("workers", num_blocks * 2);
        auto worker = T::let("worker", cid * 2 + vid);
        auto full_tiles = T::let("full_tiles", M / rM);
        auto mine = T::let("mine", ceildiv(max(full_tiles - worker, 0), workers));
        auto row_of = [&](Expr i) { return (worker + i * workers) * rM; };
        // The MTE2 -> V event of tile j's loads: two tiles' sets may be pending at once.
        auto landed = [&](Expr j) { return A == 1 ? Expr(kEvIn) : j % 2 * kEvIn2; };
        T::set_flag(Pipe::MTE3, Pipe::V, kEvOut);  // dx's buffer starts free
        for (int j = 0; j < A; ++j) {
          T::If(mine > j, [&] {
            load(X, Expr(2 * j * rM), row_of(Expr(j)));
            load(DY, Expr((2 * j + 1) * rM), row_of(Expr(j)));
            T::set_flag(Pipe::MTE2, Pipe::V, A == 1 ? kEvIn : j % 2 * kEvIn2);
          });
        }
        T::If(mine > A, [&] {
          if (A > 1)
            T::set_flag(Pipe::MTE3, Pipe::MTE2, kEvOut);  // the last slot starts free
          else
            load(X, Expr(2 * rM), row_of(Expr(1)));
        });
        T::serial("i", mine, [&](Expr i) {
          auto xo = T::let("xo", i * 2 % S * rM);        // this tile's x slot, then dy of i + A
          auto go = T::let("go", (i * 2 + 1) % S * rM);  // its dy slot, then dx
          T::wait_flag(Pipe::MTE2, Pipe::V, landed(i));
          widen(slot(xo), slot(go));
          T::If(i + A < mine, [&] {  // tile i + A's dy (and x) load while this one computes
            set_then_wait(Pipe::V, Pipe::MTE2, kEvIn);
            load(DY, xo, row_of(i + A));
            if (A > 1) {  // x into the slot tile i - 1's dx left, once stored
              T::wait_flag(Pipe::MTE3, Pipe::MTE2, kEvOut);
              auto xn = T::let("xn", (i * 2 + (S - 1)) % S * rM);
              load(X, xn, row_of(i + A));
            }
            T::set_flag(Pipe::MTE2, Pipe::V, landed(i + A));  // tile i + A's x and dy landed
            if (!wide) T::If(i + 2 < mine, [&] { load(X, go, row_of(i + 2)); });
          });
          const tl::TileArg out = wide ? tl::TileArg(slot(go)) : tl::TileArg(gf);
          compute(Expr(rM), out);
          set_then_wait(Pipe::V, Pipe::MTE3, kEvOut);
          T::copy(out, DX.at({row_of(i), 0}));
          T::set_flag(Pipe::MTE3, Pipe::V, kEvOut);
          if (A > 1) {
            T::If(i + 1 + A < mine, [&] { T::set_flag(Pipe::MTE3, Pipe::MTE2, kEvOut); });
          } else if (wide) {
            T::If(i + 2 < mine, [&] {  // x of tile i + 2 into the dy slot, once dx is stored
              set_then_wait(Pipe::MTE3, Pipe::MTE2, kEvOut);
              load(X, go, row_of(i + 2));
            });
          }
        });
        T::wait_flag(Pipe::MTE3, Pipe::V, kEvOut);
        // The tail tile (M % rM rows) continues the round robin; its rows past M are
        // zero-filled first and only its valid rows enter the partials.
        whole_row_tail(tiles, X, DY, DX, M, full_tiles, worker, workers, kEvTail, compute);
        T::pipe_barrier(Pipe::V);
        T::tile::mul(dwb.region({0}, {H}), dwb.region({0}, {H}), sqrt_h);  // its terms' 1 / sqrt(H)
        set_then_wait(Pipe::V, Pipe::MTE3, kEvTail);
        T::copy(dwb, DWBP.at({worker, 0}));
      });
    });
  });
}

}  // namespace cann_ops_tilelang
