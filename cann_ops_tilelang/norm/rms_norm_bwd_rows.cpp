// The RMSNorm backward kernel's whole-row schedule (the key's `resident` with chunk 0, chosen by
// rms_norm_bwd_key first, when a tile of x, dy and dx fits UB beside W, the dW partial, the
// tile's rows in fp32 and its products' two column halves; else the chunked resident schedule,
// rms_norm_bwd_resident.cpp, then the chunked one, rms_norm_bwd_kernel.cpp): each rM-row tile
// of x and dy is loaded once, widened to fp32 once (fp32 I/O: copied) and kept so for the whole
// tile; its next tile's load is issued once it is widened and lands while it computes; dx is
// narrowed into a buffer of its own (fp32: the fp32 dy) and stored with one copy, which the next
// tile's dx waits for. Its Python twin is rms_norm_bwd_rows_kernel in
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
    Expr num_blocks = min(Expr(blocks), ceildiv(M, rM));
    T::Kernel(num_blocks, [&](Expr cid, Expr vid) {
      T::Scope(tl::Core::Vector, [&] {
        UbPlacer place;  // UB by hand, each buffer at a chosen residue modulo 512
        const int64_t tile = int64_t{rM} * H * tl::dtype_bytes(dt), row32 = int64_t{rM} * H * 4;
        auto wf = T::alloc_ub("wf_ub", {H}, f32, place(H * 4, 0));    // W in fp32
        auto dw = T::alloc_ub("dw_ub", {H}, f32, place(H * 4, 256));  // this AIV's dW partial
        auto xs = T::alloc_ub("x_ub", {rM, H}, dt, place(tile, 0));   // the tile as loaded
        auto gs = T::alloc_ub("g_ub", {rM, H}, dt, place(tile, 256));
        const int64_t a_xf = place(row32, 0);
        auto xf = T::alloc_ub("xf_ub", {rM, H}, f32, a_xf);  // the tile in fp32
        auto gf = T::alloc_ub("gf_ub", {rM, H}, f32, place(row32, 256));
        auto pa = T::alloc_ub("pa_ub", {rM, h}, f32, place(row32 / 2, 0));    // the products'
        auto pb = T::alloc_ub("pb_ub", {rM, h}, f32, place(row32 / 2, 256));  // column halves
        // dx as stored (fp32: gf itself).
        auto out = wide ? T::alloc_ub("dx_ub", {rM, H}, dt, place(tile, 0)) : gf;
        auto rs = T::alloc_ub("rs_ub", {rM}, f32, place(rM * 4, 0));  // s1, then rstd
        auto cf = T::alloc_ub("cf_ub", {rM}, f32, place(rM * 4, 0));  // s2
        // W as loaded is dead once widened: it shares x's fp32 bytes.
        load_weight_f32(W, wf, kEvTail, a_xf);
        T::tile::fill(dw, 0.0);

        auto copy_rows = [&](const Buffer& src, const Buffer& dst, Expr row0,
                             std::optional<Expr> nrows, bool to_ub) {
          cann_ops_tilelang::copy_rows(src, dst, row0, nrows, to_ub, H);
        };
        auto load = [&](Expr row0, std::optional<Expr> nrows) {
          copy_rows(X, xs, row0, nrows, true);
          copy_rows(DY, gs, row0, nrows, true);
        };
        auto half = [&](const Buffer& b, int i) { return b.region({0, i * h}, {rM, h}); };
        auto row = [&](const Buffer& b, Expr r, int w) { return b.region({r, 0}, {1, w}); };

        // The tile as loaded into fp32; dx's buffer (fp32: gf) free once its last store is done.
        auto widen = [&] {
          T::pipe_barrier(Pipe::V);  // the last tile's instructions have read what this writes
          if (wide) {
            T::tile::cast(xf, xs);
            T::tile::cast(gf, gs);
          } else {
            T::wait_flag(Pipe::MTE3, Pipe::V, kEvOut);
            T::tile::add(xf, xs, 0.0);
            T::tile::add(gf, gs, 0.0);
          }
        };
        // The rest of the tile; `rows` of its rows are valid (all rM but in the tail).
        auto compute = [&](Expr rows) {
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

        // One buffer per input: the next tile's load is issued once this tile is widened, and
        // lands while this tile computes; dx is stored from its own buffer (fp32: gf), whose
        // store the next tile's dx waits for.
        auto workers = T::let("workers", num_blocks * 2);
        auto worker = T::let("worker", cid * 2 + vid);
        auto full_tiles = T::let("full_tiles", M / rM);
        auto mine = T::let("mine", ceildiv(max(full_tiles - worker, 0), workers));
        auto row_of = [&](Expr i) { return (worker + i * workers) * rM; };
        T::set_flag(Pipe::MTE3, Pipe::V, kEvOut);  // dx's buffer starts free
        T::If(mine > 0, [&] {
          load(worker * rM, std::nullopt);
          T::set_flag(Pipe::MTE2, Pipe::V, kEvIn);
        });
        T::serial("i", mine, [&](Expr i) {
          T::wait_flag(Pipe::MTE2, Pipe::V, kEvIn);
          widen();
          T::set_flag(Pipe::V, Pipe::MTE2, kEvIn);
          T::If(i + 1 < mine, [&] {  // the next tile loads while this one computes
            T::wait_flag(Pipe::V, Pipe::MTE2, kEvIn);
            load(row_of(i + 1), std::nullopt);
            T::set_flag(Pipe::MTE2, Pipe::V, kEvIn);
          });
          compute(Expr(rM));
          set_then_wait(Pipe::V, Pipe::MTE3, kEvOut);
          copy_rows(out, DX, row_of(i), std::nullopt, false);
          T::set_flag(Pipe::MTE3, Pipe::V, kEvOut);
        });
        T::If(mine > 0, [&] { T::wait_flag(Pipe::V, Pipe::MTE2, kEvIn); });
        T::wait_flag(Pipe::MTE3, Pipe::V, kEvOut);
        // The tail tile (M % rM rows) continues the round robin; its rows past M are
        // zero-filled first and only its valid rows enter the dW partial.
        auto tail = T::let("tail", M % rM);
        T::If(tail > 0 && worker == full_tiles % workers, [&] {
          T::set_flag(Pipe::MTE3, Pipe::V, kEvOut);
          T::pipe_barrier(Pipe::V);
          T::tile::fill(xs, 0.0);
          T::tile::fill(gs, 0.0);
          set_then_wait(Pipe::V, Pipe::MTE2, kEvTail);
          load(full_tiles * rM, tail);
          set_then_wait(Pipe::MTE2, Pipe::V, kEvTail);
          widen();
          compute(tail);
          set_then_wait(Pipe::V, Pipe::MTE3, kEvTail);
          copy_rows(out, DX, full_tiles * rM, tail, false);
        });
        set_then_wait(Pipe::V, Pipe::MTE3, kEvTail);
        T::copy(dw, DWP.at({worker, 0}));
      });
    });
  });
}

}  // namespace cann_ops_tilelang
