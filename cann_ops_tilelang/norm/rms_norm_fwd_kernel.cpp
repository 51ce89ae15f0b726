// The RMSNorm forward kernel generator of cann_ops_tilelang (the tile-kernel layer,
// docs/ops.md). Expert mode: a row of H = 7168 in fp32 does not fit UB several times over, so
// the row is read in fp32 chunks of bN columns, twice (pass 1: sum of squares; pass 2:
// normalise), which developer mode's whole-row tiles cannot express within UB. Its Python twin,
// python/cann_ops_tilelang/kernels/rms_norm.py, builds the identical IR
// (python/tests/test_opslib_twin.py).
//
// Work split (the design of examples/rms_norm_dynamic.cpp): M, the row count, is the dynamic
// symbol bound from X at launch; rows come in rM-row tiles dealt round-robin to the AIVs of
// min(blocks, ceil(M / rM)) blocks; the tail tile (M % rM rows) goes to the next worker in the
// round robin, which zero-fills its UB tiles and copies the valid rows one by one, so the rows
// past M hold zeros, never stale data, and are never stored except into the padded rstd.
// Every set_flag is followed at once by its wait_flag (event ids: 0 loads, 1 stores of Y and
// h, 2 the rstd store), so the full-tile and tail paths compose in any order.
#include <optional>

#include "cann_ops_tilelang/norm.h"
#include "rms_norm_fwd_params.h"
#include "rms_norm_parts.h"
#include "tl/lang.h"

namespace cann_ops_tilelang {
namespace {

using tl::Buffer;
using tl::Expr;
using tl::Pipe;
namespace T = tl::T;
constexpr int kEvIn = 0, kEvOut = 1, kEvRstd = 2;

/// Sync pair: `src` work before this point is done before `dst` work after it.
}  // namespace

tl::PrimFunc rms_norm_fwd_kernel(const RmsNormKey& k) {
  if (k.resident) return rms_norm_fwd_resident_kernel(k);
  using tl::DType;
  const DType dt = k.dtype, f32 = DType::Float32;
  const bool wide = dt != f32;  // 16-bit I/O: loaded into byte tiles, widened by a cast
  // int sizes: int32 immediates, as the Python twin's ints are (ir_size, core.h).
  const int H = ir_size(k.hidden, "hidden"), rM = ir_size(k.rows_per_tile, "rows_per_tile"),
            bN = ir_size(k.chunk, "chunk"), chunks = H / bN, blocks = ir_size(k.blocks, "blocks");

  // The signature both schedules share (rms_norm_fwd_params.h).
  const RmsNormFwdParams sig = rms_norm_fwd_params(k, H);
  const auto& [M, X, W, Y, R, HO, Rstd, eps, params] = sig;

  return T::prim_func("rms_norm_fwd", params, [&] {
    Expr num_blocks = min(Expr(blocks), ceildiv(M, rM));
    T::Kernel(num_blocks, [&](Expr cid, Expr vid) {
      T::Scope(tl::Core::Vector, [&] {
        auto wf = T::alloc_ub("wf_ub", {H}, f32);         // W in fp32, kept for all rows
        auto xf = T::alloc_ub("xf_ub", {rM, bN}, f32);    // h chunk in fp32
        auto acc = T::alloc_ub("acc_ub", {rM, bN}, f32);  // sum of squares per column slot
        auto wb = T::alloc_ub("wb_ub", {rM, bN}, f32);    // W chunk broadcast over the rows
        auto yb = T::alloc_ub("yb_ub", {rM, bN}, dt);     // output chunk
        auto ss = T::alloc_ub("ss_ub", {rM}, f32);        // row sums of squares, then rstd
        Buffer xb = wide ? T::alloc_ub("xb_ub", {rM, bN}, dt) : xf;  // X chunk as loaded
        std::optional<Buffer> rf, rb, hb;
        if (k.residual) {
          rf = T::alloc_ub("rf_ub", {rM, bN}, f32);
          rb = wide ? T::alloc_ub("rb_ub", {rM, bN}, dt) : *rf;
          hb = T::alloc_ub("hb_ub", {rM, bN}, dt);  // h chunk to store
        }
        load_weight_f32(W, wf, kEvIn);

        // The rM-row tile at row0 (nrows: unset for a full tile, else the tail's valid rows).
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
          auto store = [&](const Buffer& src, const Buffer& dst, Expr c) {
            if (!nrows) {
              T::copy(src, dst.at({row0, c * bN}));
            } else {
              T::serial("j", *nrows, [&](Expr j) {
                T::copy(src.region({j, 0}, {1, bN}), dst.at({row0 + j, c * bN}));
              });
            }
          };
          // Chunk c of h into xf (fp32); with a residual, h rounded to dt is stored (pass 1).
          auto load_h = [&](Expr c, bool store_h) {
            if (nrows) {  // rows past M: zeros, not stale data
              T::tile::fill(xb, 0.0);
              if (rb) T::tile::fill(*rb, 0.0);
            }
            set_then_wait(Pipe::V, Pipe::MTE2, kEvIn);  // the last V op has read xb (and rb)
            load(X, xb, c);
            if (R) load(*R, *rb, c);
            set_then_wait(Pipe::MTE2, Pipe::V, kEvIn);
            if (wide) T::tile::cast(xf, xb);
            if (!k.residual) return;
            if (wide) T::tile::cast(*rf, *rb);
            T::pipe_barrier(Pipe::V);
            T::tile::add(xf, xf, *rf);
            if (!store_h) return;
            set_then_wait(Pipe::MTE3, Pipe::V, kEvOut);  // the previous store has read hb
            T::pipe_barrier(Pipe::V);
            if (wide)
              T::tile::cast(*hb, xf, "CAST_RINT");
            else
              T::tile::add(*hb, xf, 0.0);
            set_then_wait(Pipe::V, Pipe::MTE3, kEvOut);
            store(*hb, *HO, c);
          };

          // Pass 1: sum of squares.
          T::tile::fill(acc, 0.0);
          T::serial("c", chunks, [&](Expr c) {
            load_h(c, true);
            T::pipe_barrier(Pipe::V);
            T::tile::mul(xf, xf, xf);
            T::pipe_barrier(Pipe::V);
            T::tile::add(acc, acc, xf);
          });
          T::pipe_barrier(Pipe::V);
          T::reduce_sum(acc, ss, -1);
          T::pipe_barrier(Pipe::V);
          T::tile::mul(ss, ss, 1.0 / static_cast<double>(H));
          T::pipe_barrier(Pipe::V);
          T::tile::add(ss, ss, eps);
          T::pipe_barrier(Pipe::V);
          T::tile::rsqrt(ss, ss);
          if (Rstd) {  // the whole tile: Rstd has ceil(M / rM) * rM rows
            set_then_wait(Pipe::V, Pipe::MTE3, kEvRstd);
            T::copy(ss, Rstd->at({row0}));
            set_then_wait(Pipe::MTE3, Pipe::V, kEvRstd);  // stored before the next tile rewrites ss
          }

          // Pass 2: normalise, scale by W, narrow and store.
          T::serial("c", chunks, [&](Expr c) {
            load_h(c, false);
            T::tile::broadcast(wb, wf.region({c * bN}, {bN}));
            T::pipe_barrier(Pipe::V);
            T::tile::row_expand_mul(xf, xf, ss);
            set_then_wait(Pipe::MTE3, Pipe::V, kEvOut);  // the previous store has read yb
            T::pipe_barrier(Pipe::V);
            if (wide) {
              T::tile::mul(xf, xf, wb);
              T::pipe_barrier(Pipe::V);
              T::tile::cast(yb, xf, "CAST_RINT");
            } else {
              T::tile::mul(yb, xf, wb);
            }
            set_then_wait(Pipe::V, Pipe::MTE3, kEvOut);
            store(yb, Y, c);
          });
        };

        for_each_row_tile(M, rM, num_blocks, cid, vid, tile_rows);
      });
    });
  });
}

}  // namespace cann_ops_tilelang
