// The RMSNorm backward kernel's whole-row schedule (the key's `resident` with chunk 0, chosen by
// rms_norm_bwd_key first, when three input slots of a tile fit UB beside W, the dW partial, the
// tile's rows in fp32 and its products' two column halves; else the chunked resident schedule,
// rms_norm_bwd_resident.cpp, then the chunked one, rms_norm_bwd_kernel.cpp): each rM-row tile
// of x and dy is loaded once, widened to fp32 once (fp32 I/O: copied) and kept so for the whole
// tile; the slots take x a tile ahead and dy while the tile before computes (the kernel's loop
// says how); dx is narrowed into the tile's dy slot (fp32: the fp32 dy) and stored with one
// copy. Its Python twin is rms_norm_bwd_rows_kernel in
// python/cann_ops_tilelang/kernels/rms_norm_bwd_rows.py.
//
// The kernel is vector bound (docs/ops.md, "RMSNorm"), so it is written for the fewest vector
// passes over a row: with p = dy x, s1 = sum x^2 and s2 = sum g x = sum p w (g = dy w),
//   widen x, dy; x^2 -> tree -> s1, rstd = rsqrt(s1 / H + eps)
//   p = dy x; dW partial += p rstd (axpy, the valid rows in order); g = dy w
//   p w -> tree -> s2; g rstd; dx = g rstd - (s2 rstd^3 / H) x (axpy); narrow dx
// eleven passes and two trees. rstd and the axpys' factors are read from UB by the scalar unit
// (one V -> S wait per tile), so the factors cost no vector pass. The products' two column
// halves are the tile's dead 16-bit slots (fp32 I/O: buffers of their own), and each sum is an
// in-place tree over the halves (elementwise adds down to at most 512 columns, then one
// reduce_sum: a whole-row reduction costs 7 cycles a repeat against 2, docs/calibration.md).
// UB addresses are explicit: the two sources of every vector instruction start 256 bytes apart
// modulo 512 (no bank-group conflict, docs/calibration.md).
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

/// The sum of each row of the [rM, h] halves a and b (256 bytes apart) into out [rM], in place:
/// each level adds the two halves' first halves into a's and their second halves into b's, so
/// the next pair is a's first half and b's second half (still 256 bytes apart while the widths
/// are multiples of 128 columns); the last pair is added into a and reduced. Ends with the
/// reduction issued.
void pair_tree_sum(const Buffer& a, const Buffer& b, int rM, int h, const Buffer& out) {
  int w = h, ob = 0;  // the pair: a[:, 0:w], b[:, ob:ob + w]
  while (w % 16 == 0 && w > 512) {
    const int hw = w / 2;
    T::tile::add(a.region({0, 0}, {rM, hw}), a.region({0, 0}, {rM, hw}),
                 b.region({0, ob}, {rM, hw}));
    T::tile::add(b.region({0, ob + hw}, {rM, hw}), a.region({0, hw}, {rM, hw}),
                 b.region({0, ob + hw}, {rM, hw}));
    T::pipe_barrier(Pipe::V);
    ob += hw;
    w = hw;
  }
  T::tile::add(a.region({0, 0}, {rM, w}), a.region({0, 0}, {rM, w}), b.region({0, ob}, {rM, w}));
  T::pipe_barrier(Pipe::V);
  T::reduce_sum(a.region({0, 0}, {rM, w}), out, -1);
}

}  // namespace

tl::PrimFunc rms_norm_bwd_rows_kernel(const RmsNormKey& k) {
  using tl::DType;
  const DType dt = k.dtype, f32 = DType::Float32;
  const bool wide = dt != f32;
  const int H = ir_size(k.hidden, "hidden"), rM = ir_size(k.rows_per_tile, "rows_per_tile"),
            h = H / 2, blocks = ir_size(k.blocks, "blocks");
  TL_ASSERT(H % 16 == 0 && k.chunk == 0, "rms_norm_bwd rows: H {} chunk {}", H, k.chunk);

  // The signature the three schedules share (rms_norm_parts.h).
  const RmsNormBwdParams sig = rms_norm_bwd_params(dt, H, blocks);
  const auto& [M, DY, X, W, DX, DWP, eps, params] = sig;

  return T::prim_func("rms_norm_bwd", params, [&] {
    // x and dy are read once: past L2 (AscendC's SetL2CacheHint, CACHE_MODE_DISABLE), so only
    // dx enters it and the footprint that makes writes cost HBM time (docs/calibration.md, "GM
    // side") is dx's, not the 3 tensors' (docs/ops.md, "RMSNorm").
    T::annotate_l2_cache({{X, tl::L2CacheMode::Disable}, {DY, tl::L2CacheMode::Disable}});
    Expr num_blocks = min(Expr(blocks), ceildiv(M, rM));
    T::Kernel(num_blocks, [&](Expr cid, Expr vid) {
      T::Scope(tl::Core::Vector, [&] {
        UbPlacer place;  // UB by hand, each buffer at a chosen residue modulo 512
        const int64_t tile = int64_t{rM} * H * tl::dtype_bytes(dt), row32 = int64_t{rM} * H * 4;
        auto wf = T::alloc_ub("wf_ub", {H}, f32, place(H * 4, 0));    // W in fp32
        auto dw = T::alloc_ub("dw_ub", {H}, f32, place(H * 4, 256));  // this AIV's dW partial
        // Three input slots, loads in turn (x of a tile, then its dy): x arrives a tile early.
        auto in = T::alloc_ub("in_ub", {3 * rM, H}, dt, place(3 * tile, 0));
        const int64_t a_xf = place(row32, 0);
        auto xf = T::alloc_ub("xf_ub", {rM, H}, f32, a_xf);  // the tile in fp32
        auto gf = T::alloc_ub("gf_ub", {rM, H}, f32, place(row32, 256));
        auto pa = T::alloc_ub("pa_ub", {rM, h}, f32, place(row32 / 2, 0));    // the products'
        auto pb = T::alloc_ub("pb_ub", {rM, h}, f32, place(row32 / 2, 256));  // column halves
        auto rs = T::alloc_ub("rs_ub", {rM}, f32, place(rM * 4, 0));          // s1, then rstd
        auto cf = T::alloc_ub("cf_ub", {rM}, f32, place(rM * 4, 0));          // s2
        // W as loaded is dead once widened: it shares x's fp32 bytes.
        load_weight_f32(W, wf, kEvTail, a_xf);
        T::tile::fill(dw, 0.0);

        auto slot = [&](Expr first_row) { return in.region({first_row, 0}, {rM, H}); };
        auto load = [&](const Buffer& src, Expr first_row, Expr row0) {  // rM rows to a slot
          T::copy(src.at({row0, 0}), slot(first_row));
        };
        auto half = [&](const Buffer& b, int i) { return b.region({0, i * h}, {rM, h}); };
        auto row = [&](const Buffer& b, Expr r, int w) { return b.region({r, 0}, {1, w}); };

        // The tile as loaded into fp32; dx's buffer (fp32: gf) free once its last store is done.
        const WholeRowTiles tiles{in, xf, gf, rM, H, kEvOut};
        auto widen = [&](const tl::BufferRegion& xs, const tl::BufferRegion& gs) {
          widen_tile(tiles, xs, gs);
        };
        // The rest of the tile; `rows` of its rows are valid (all rM but in the tail).
        auto compute = [&](Expr rows, const tl::TileArg& out) {
          T::pipe_barrier(Pipe::V);
          T::tile::mul(pa, half(xf, 0), half(xf, 0));  // x^2
          T::tile::mul(pb, half(xf, 1), half(xf, 1));
          T::pipe_barrier(Pipe::V);
          pair_tree_sum(pa, pb, rM, h, rs);  // s1
          T::pipe_barrier(Pipe::V);
          T::tile::mul(rs, rs, 1.0 / static_cast<double>(H));
          T::tile::mul(pa, half(gf, 0), half(xf, 0));  // p = dy x
          T::tile::mul(pb, half(gf, 1), half(xf, 1));
          T::pipe_barrier(Pipe::V);
          T::tile::add(rs, rs, eps);
          T::pipe_barrier(Pipe::V);
          T::tile::rsqrt(rs, rs);    // rstd, read by the scalar unit from here on
          T::pipe_barrier(Pipe::V);  // the factors are read by vector instructions too
          set_then_wait(Pipe::V, Pipe::S, kEvScalar);
          T::serial("r", rM, [&](Expr r) {  // g = dy w
            T::tile::mul(row(gf, r, H), row(gf, r, H), wf);
          });
          T::serial("r", rows, [&](Expr r) {  // dW += p rstd, valid rows in order
            T::tile::axpy(dw.region({0}, {h}), row(pa, r, h), rs.load({r}));
            T::tile::axpy(dw.region({h}, {h}), row(pb, r, h), rs.load({r}));
            T::pipe_barrier(Pipe::V);
          });
          T::pipe_barrier(Pipe::V);
          T::tile::mul(pa, half(gf, 0), half(xf, 0));  // g x
          T::tile::mul(pb, half(gf, 1), half(xf, 1));
          T::pipe_barrier(Pipe::V);
          T::serial("r", rM, [&](Expr r) {  // g rstd, beside the tree
            T::tile::mul(row(gf, r, H), row(gf, r, H), rs.load({r}));
          });
          pair_tree_sum(pa, pb, rM, h, cf);  // s2
          T::pipe_barrier(Pipe::V);          // the factors are read by vector instructions too
          set_then_wait(Pipe::V, Pipe::S, kEvScalar);
          T::serial("r", rM, [&](Expr r) {  // dx = g rstd - coef x, coef = s2 rstd^3 / H
            Expr rstd = rs.load({r});
            Expr coef = cf.load({r}) * rstd * rstd * rstd * Expr(1.0 / static_cast<double>(H));
            T::tile::axpy(row(gf, r, H), row(xf, r, H), -coef);
          });
          if (wide) {
            T::pipe_barrier(Pipe::V);
            T::wait_flag(Pipe::MTE3, Pipe::V, kEvOut);
            T::tile::cast(out, gf, "CAST_RINT");
          }
        };

        // Three slots of rM rows: tile i's x is in slot 2i mod 3, its dy in 2i + 1 mod 3. Once
        // tile i is widened, its x slot takes tile i + 1's dy at once, and its dy slot takes
        // its 16-bit dx (fp32: dx stays in gf) and, once that is stored, tile i + 2's x. So only
        // dy's load lies between two tiles' widening, x's landing a tile earlier; with a slot
        // per input MTE2 paid both loads' latency and data there, every tile (docs/ops.md,
        // "RMSNorm").
        auto workers = T::let("workers", num_blocks * 2);
        auto worker = T::let("worker", cid * 2 + vid);
        auto full_tiles = T::let("full_tiles", M / rM);
        auto mine = T::let("mine", ceildiv(max(full_tiles - worker, 0), workers));
        auto row_of = [&](Expr i) { return (worker + i * workers) * rM; };
        T::set_flag(Pipe::MTE3, Pipe::V, kEvOut);  // dx's buffer starts free
        T::If(mine > 0, [&] {
          load(X, Expr(0), worker * rM);
          load(DY, Expr(rM), worker * rM);
          T::set_flag(Pipe::MTE2, Pipe::V, kEvIn);
          T::If(mine > 1, [&] { load(X, Expr(2 * rM), row_of(1)); });
        });
        T::serial("i", mine, [&](Expr i) {
          auto xo = T::let("xo", i * 2 % 3 * rM);        // this tile's x slot, then dy of i + 1
          auto go = T::let("go", (i * 2 + 1) % 3 * rM);  // its dy slot, then x of i + 2
          T::wait_flag(Pipe::MTE2, Pipe::V, kEvIn);
          widen(slot(xo), slot(go));
          T::set_flag(Pipe::V, Pipe::MTE2, kEvIn);
          T::If(i + 1 < mine, [&] {  // the next tile's dy loads while this one computes
            T::wait_flag(Pipe::V, Pipe::MTE2, kEvIn);
            load(DY, xo, row_of(i + 1));
            T::set_flag(Pipe::MTE2, Pipe::V, kEvIn);  // tile i + 1's x and dy have landed
            if (!wide) T::If(i + 2 < mine, [&] { load(X, go, row_of(i + 2)); });
          });
          const tl::TileArg out = wide ? tl::TileArg(slot(go)) : tl::TileArg(gf);
          compute(Expr(rM), out);
          set_then_wait(Pipe::V, Pipe::MTE3, kEvOut);
          T::copy(out, DX.at({row_of(i), 0}));
          T::set_flag(Pipe::MTE3, Pipe::V, kEvOut);
          if (wide) {
            T::If(i + 2 < mine, [&] {  // x of tile i + 2 into the dy slot, once dx is stored
              set_then_wait(Pipe::MTE3, Pipe::MTE2, kEvOut);
              load(X, go, row_of(i + 2));
            });
          }
        });
        T::If(mine > 0, [&] { T::wait_flag(Pipe::V, Pipe::MTE2, kEvIn); });
        T::wait_flag(Pipe::MTE3, Pipe::V, kEvOut);
        // The tail tile (M % rM rows) continues the round robin; its rows past M are
        // zero-filled first and only its valid rows enter the dW partial.
        whole_row_tail(tiles, X, DY, DX, M, full_tiles, worker, workers, kEvTail, compute);
        set_then_wait(Pipe::V, Pipe::MTE3, kEvTail);
        T::copy(dw, DWP.at({worker, 0}));
      });
    });
  });
}

}  // namespace cann_ops_tilelang
