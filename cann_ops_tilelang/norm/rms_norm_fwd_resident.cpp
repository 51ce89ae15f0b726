// The RMSNorm forward kernel's resident schedule (the key's `resident`, chosen by
// rms_norm_fwd_key when two row tiles of the I/O dtype fit UB): each rM-row tile of x (and of
// the residual) is loaded into UB once, as it is in GM, and stays there for both passes, so x
// is read from GM once instead of twice (docs/ops.md, "Simulated time on A2 against the
// roofline"). The tile slots are double-buffered: the load of a worker's next tile is issued
// before the compute of this one, so MTE2 works while V computes. The result overwrites the
// tile in its slot chunk by chunk, and the whole tile is stored with one copy. The two-pass
// chunked schedule (rms_norm_fwd_kernel.cpp) stays for rows that do not fit. Its Python twin is
// rms_norm_fwd_kernel in python/cann_ops_tilelang/kernels/rms_norm.py (identical IR, tested).
//
// Synchronisation (event ids per pipe pair): slot s's load MTE2 -> V on id s; its store V ->
// MTE3 on id s; the slot is free again for the next load once its store is done, MTE3 -> MTE2
// on id s, both set once before the loop and waited once after it so every set has its wait.
// The rstd store waits at once (id 2); the tail tile, after the loop, is synchronous in slot 0.
#include <optional>

#include "cann_ops_tilelang/core.h"
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
constexpr int kEvRstd = 2, kEvTail = 3;

}  // namespace

tl::PrimFunc rms_norm_fwd_resident_kernel(const RmsNormKey& k) {
  using tl::DType;
  const DType dt = k.dtype, f32 = DType::Float32;
  const bool wide = dt != f32;
  const int H = ir_size(k.hidden, "hidden"), rM = ir_size(k.rows_per_tile, "rows_per_tile"),
            bN = ir_size(k.chunk, "chunk"), chunks = H / bN, blocks = ir_size(k.blocks, "blocks");

  // The signature both schedules share (rms_norm_fwd_params.h).
  const RmsNormFwdParams sig = rms_norm_fwd_params(k, H);
  const auto& [M, X, W, Y, R, HO, Rstd, eps, params] = sig;

  return T::prim_func("rms_norm_fwd", params, [&] {
    Expr num_blocks = min(Expr(blocks), ceildiv(M, rM));
    T::Kernel(num_blocks, [&](Expr cid, Expr vid) {
      T::Scope(tl::Core::Vector, [&] {
        // Explicit UB addresses: a vector instruction whose two sources start in the same
        // bank groups pays its repeats twice (asc-devkit "avoid bank conflicts", 2201: 16
        // groups of 32-byte banks; docs/calibration.md), so each pair of sources an
        // instruction reads starts 256 bytes apart modulo 512: x, xf at 0, the others at 256
        // (W at 0 beside rf with a residual, whose y chunk is multiplied by it).
        UbPlacer place;  // UB by hand, each buffer at a chosen residue modulo 512
        const int64_t es = tl::dtype_bytes(dt), tile = int64_t{rM} * H * es, chunk = rM * bN * 4;
        auto wf = T::alloc_ub("wf_ub", {H}, f32, place(H * 4, k.residual ? 0 : 256));
        // The two tile slots: x (and the residual) as loaded; y (and h) overwrite them.
        Buffer xs[2] = {T::alloc_ub("x0_ub", {rM, H}, dt, place(tile, 0)),
                        T::alloc_ub("x1_ub", {rM, H}, dt, place(tile, 0))};
        std::optional<Buffer> rs[2];
        if (k.residual) {
          rs[0] = T::alloc_ub("r0_ub", {rM, H}, dt, place(tile, 256));
          rs[1] = T::alloc_ub("r1_ub", {rM, H}, dt, place(tile, 256));
        }
        const int64_t a_xf = place(chunk, 0);
        auto xf = T::alloc_ub("xf_ub", {rM, bN}, f32, a_xf);                 // h chunk in fp32
        auto acc = T::alloc_ub("acc_ub", {rM, bN}, f32, place(chunk, 256));  // sums of squares
        std::optional<Buffer> rf, xg;
        if (k.residual)  // r chunk, then y chunk
          rf = T::alloc_ub("rf_ub", {rM, bN}, f32, place(chunk, 256));
        else  // the odd chunk of a pair
          xg = T::alloc_ub("xg_ub", {rM, bN}, f32, place(chunk, 0));
        auto ss = T::alloc_ub("ss_ub", {rM}, f32, place(rM * 4, 256));  // sums of squares, rstd
        // W as loaded is dead once widened: without a residual it shares the chunk
        // temporaries' bytes (the first compute's barrier orders them).
        load_weight_f32(W, wf, kEvTail, wide && k.residual ? place(H * es, 0) : a_xf);

        // Tile copies: one per tile, one per valid row of the tail (nrows set).
        auto load = [&](int s, Expr row0, std::optional<Expr> nrows) {
          auto one = [&](const Buffer& src, const Buffer& dst) {
            if (!nrows) {
              T::copy(src.at({row0, 0}), dst);
            } else {
              T::serial("j", *nrows, [&](Expr j) {
                T::copy(src.at({row0 + j, 0}), dst.region({j, 0}, {1, H}));
              });
            }
          };
          one(X, xs[s]);
          if (R) one(*R, *rs[s]);
        };
        auto store = [&](int s, Expr row0, std::optional<Expr> nrows) {
          auto one = [&](const Buffer& src, const Buffer& dst) {
            if (!nrows) {
              T::copy(src, dst.at({row0, 0}));
            } else {
              T::serial("j", *nrows, [&](Expr j) {
                T::copy(src.region({j, 0}, {1, H}), dst.at({row0 + j, 0}));
              });
            }
          };
          one(xs[s], Y);
          if (HO) one(*rs[s], *HO);
        };

        auto col = [&](const Buffer& b, Expr c0) { return b.region({0, c0}, {rM, bN}); };
        // acc's row sums -> rstd in ss (stored to Rstd when asked).
        auto rstd = [&](Expr row0) {
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
        };
        // Without a residual, chunks go in pairs (xf the even one, xg the odd one) and each
        // step of the two is issued together: one barrier per step serves both, half the
        // barriers of chunk after chunk (a barrier waits out the V pipe's head and tail).
        auto paired = [&](const Buffer& x, Expr row0) {
          const int pairs = chunks / 2;
          // x's chunk at c0 in fp32: t, or x's own chunk for fp32.
          auto in = [&](const Buffer& t, Expr c0) -> tl::TileArg {
            if (!wide) return col(x, c0);
            T::tile::cast(t, col(x, c0));
            return t;
          };
          // Pass 1: sum of squares; the first pair (or the only chunk) writes acc.
          auto pass1_pair = [&](Expr c0, Expr c1, bool first) {
            T::pipe_barrier(Pipe::V);
            tl::TileArg ha = in(xf, c0), hb = in(*xg, c1);
            T::pipe_barrier(Pipe::V);
            T::tile::mul(first ? acc : xf, ha, ha);
            T::tile::mul(*xg, hb, hb);
            T::pipe_barrier(Pipe::V);
            if (!first) {
              T::tile::add(acc, acc, xf);
              T::pipe_barrier(Pipe::V);
            }
            T::tile::add(acc, acc, *xg);
          };
          auto pass1_one = [&](Expr c0, bool first) {
            T::pipe_barrier(Pipe::V);
            tl::TileArg h = in(xf, c0);
            T::pipe_barrier(Pipe::V);
            T::tile::mul(first ? acc : xf, h, h);
            if (first) return;
            T::pipe_barrier(Pipe::V);
            T::tile::add(acc, acc, xf);
          };
          if (pairs == 0) {
            pass1_one(Expr(0), true);
          } else {
            pass1_pair(Expr(0), Expr(bN), true);
            T::serial("p", 1, pairs - 1,
                      [&](Expr p) { pass1_pair(p * (2 * bN), p * (2 * bN) + bN, false); });
            if (chunks % 2) pass1_one(Expr((chunks - 1) * bN), false);
          }
          rstd(row0);
          // Pass 2: y = x * rstd * w (W's chunk row by row: a broadcast tile of W would cost
          // a vector pass and UB), narrowed into x's chunk; fp32 writes y there directly.
          auto scale = [&](std::vector<std::pair<const Buffer*, Expr>> ts) {
            T::pipe_barrier(Pipe::V);
            std::vector<tl::TileArg> hs;
            for (auto& [t, c0] : ts) hs.push_back(in(*t, c0));
            T::pipe_barrier(Pipe::V);
            for (size_t n = 0; n < ts.size(); ++n) T::tile::row_expand_mul(*ts[n].first, hs[n], ss);
            T::pipe_barrier(Pipe::V);
            T::serial("r", rM, [&](Expr i) {
              for (auto& [t, c0] : ts) {
                if (wide)
                  T::tile::mul(t->region({i, 0}, {1, bN}), t->region({i, 0}, {1, bN}),
                               wf.region({c0}, {bN}));
                else
                  T::tile::mul(x.region({i, c0}, {1, bN}), t->region({i, 0}, {1, bN}),
                               wf.region({c0}, {bN}));
              }
            });
            if (!wide) return;
            T::pipe_barrier(Pipe::V);
            for (auto& [t, c0] : ts) T::tile::cast(col(x, c0), *t, "CAST_RINT");
          };
          T::serial("p", pairs, [&](Expr p) {
            Expr c0 = p * (2 * bN);
            scale({{&xf, c0}, {&*xg, c0 + bN}});
          });
          if (chunks % 2) scale({{&xf, Expr((chunks - 1) * bN)}});
        };

        // The tile in slot s: statistics, then y in place of x (and h in place of r).
        auto compute = [&](int s, Expr row0) {
          const Buffer &x = xs[s], *r = k.residual ? &*rs[s] : nullptr;
          // h's chunk at column c0 in fp32: xf, or x's own chunk (fp32 without a residual).
          auto h_chunk = [&](Expr c0) -> tl::TileArg {
            if (!wide && !r) return col(x, c0);
            if (!wide) {
              T::tile::add(xf, col(x, c0), col(*r, c0));
              return xf;
            }
            T::tile::cast(xf, col(x, c0));
            if (r) {
              T::tile::cast(*rf, col(*r, c0));
              T::pipe_barrier(Pipe::V);
              T::tile::add(xf, xf, *rf);
            }
            return xf;
          };
          // Vector instructions overlap: every chunk starts after the last one's reads of its
          // temporaries, and the tile after the previous tile's (a WAR hazard without it).
          if (!r) {
            paired(x, row0);
            return;
          }
          // Pass 1: sum of squares; chunk 0 writes acc, the others add to it.
          T::pipe_barrier(Pipe::V);
          {
            tl::TileArg h = h_chunk(Expr(0));
            T::pipe_barrier(Pipe::V);
            T::tile::mul(acc, h, h);
          }
          T::serial("c", 1, chunks - 1, [&](Expr c) {
            T::pipe_barrier(Pipe::V);
            tl::TileArg h = h_chunk(c * bN);
            T::pipe_barrier(Pipe::V);
            T::tile::mul(xf, h, h);
            T::pipe_barrier(Pipe::V);
            T::tile::add(acc, acc, xf);
          });
          rstd(row0);
          // Pass 2: y = h * rstd * w, narrowed into x's chunk, h narrowed into r's.
          T::serial("c", chunks, [&](Expr c) {
            T::pipe_barrier(Pipe::V);
            tl::TileArg h = h_chunk(c * bN);
            T::pipe_barrier(Pipe::V);
            const Buffer& t = *rf;  // y in fp32
            if (wide)
              T::tile::cast(col(*r, c * bN), h, "CAST_RINT");
            else
              T::tile::add(col(*r, c * bN), h, 0.0);
            T::tile::row_expand_mul(t, h, ss);
            T::pipe_barrier(Pipe::V);
            // W's chunk row by row (a broadcast tile of W would cost a vector pass and UB);
            // fp32 without narrowing writes y straight into x's chunk.
            T::serial("r", rM, [&](Expr i) {
              if (wide)
                T::tile::mul(t.region({i, 0}, {1, bN}), t.region({i, 0}, {1, bN}),
                             wf.region({c * bN}, {bN}));
              else
                T::tile::mul(x.region({i, c * bN}, {1, bN}), t.region({i, 0}, {1, bN}),
                             wf.region({c * bN}, {bN}));
            });
            if (wide) {
              T::pipe_barrier(Pipe::V);
              T::tile::cast(col(x, c * bN), t, "CAST_RINT");
            }
          });
        };

        // The tail tile is zero-filled first so the rows past M hold zeros, never stale data.
        for_each_row_tile_2slots(
            M, rM, num_blocks, cid, vid, [&](int s, Expr row0) { load(s, row0, std::nullopt); },
            [&](int s, Expr row0) {
              compute(s, row0);
              set_then_wait(Pipe::V, Pipe::MTE3, s);
              store(s, row0, std::nullopt);
            },
            [&](Expr row0, Expr rows) {
              set_then_wait(Pipe::MTE3, Pipe::V, kEvTail);  // slot 0's last store has read it
              T::tile::fill(xs[0], 0.0);
              if (R) T::tile::fill(*rs[0], 0.0);
              set_then_wait(Pipe::V, Pipe::MTE2, kEvTail);
              load(0, row0, rows);
              set_then_wait(Pipe::MTE2, Pipe::V, kEvTail);
              compute(0, row0);
              set_then_wait(Pipe::V, Pipe::MTE3, kEvTail);
              store(0, row0, rows);
            });
      });
    });
  });
}

}  // namespace cann_ops_tilelang
