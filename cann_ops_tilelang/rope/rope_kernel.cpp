// The RoPE kernel generator of cann_ops_tilelang (the tile-kernel layer, docs/ops.md "RoPE").
// Expert mode: the kernel loads a wide tile of bT tokens x bH heads in one copy, then runs the
// rotation head by head on [bT, rot_dim] regions, so that each token's cos/sin row is loaded
// once per token tile and worker and lines up with the x region row for row: no broadcast of
// the tables across heads is materialised (developer mode would materialise one: docs/ops.md,
// RoPE). Three x slots are buffered by hand (one event per slot), the table rows in two more
// (by token tile parity); UB addresses are placed against bank-group conflicts. Its Python twin,
// python/cann_ops_tilelang/kernels/rope.py, builds the identical IR
// (python/tests/test_opslib_rope.py).
//
// Math (include/cann_ops_tilelang/rope.h): y = r c + rotate(r) s on the rotated part r of each
// head. With p the pair partner (j ^ 1 interleaved, j +- R/2 half) and sgn(j) = -1 on the first
// element of a pair (even j, first half), rotate(r)[j] = sgn(j) r[p(j)]; the adjoint is
// dr[j] = dy[j] c[j] + sgn(p(j)) dy[p(j)] s[p(j)]. Half: y[j] = r[j] c[j] + q[p(j)] with
// q = r w, w[k] = sgn(p(k)) s[p(k)] (forward) or sgn(k) s[k] (backward), and the permutation
// of q is two half-width adds; with 16-bit I/O, y = r c, then y[j] += r[p(j)] w'[j] with
// w'[j] = w[p(j)], two half-width multiply-adds. Interleaved: y = r c + g w with g[j] = r[p(j)], w
// = sgn s (forward) or w[j] = sgn(p(j)) s[p(j)] (backward); g comes from one gather per token row
// (every head of the row at once): a gather over the whole tile is refused, since the compiler
// cannot prove a tile's rows inside the dynamic M and a gather has no identity for the tail
// tile's pad rows (clip_pad_values), while a one-row gather reads a row all inside or all past M.
//
// Work split: items are (token tile, head chunk), ceil(M / bT) * (H / bH) of them, token tile
// major; the 2 min(blocks, ceil(items / 2)) AIVs take contiguous runs of them (sizes differing
// by at most one), so a worker's consecutive items share a token tile and its table rows: they
// are loaded with the worker's first item of a tile and released (V -> MTE2, event = parity)
// after its last. Each AIV cycles its three x slots. The compiler clips the last token tile's
// copies to M (clip_expert_copies): rows past M load as zeros and are never stored.
#include <map>
#include <optional>
#include <vector>

#include "cann_ops_tilelang/rope.h"
#include "tl/lang.h"

namespace cann_ops_tilelang {
namespace {

using tl::Buffer;
using tl::DType;
using tl::Expr;
using tl::Pipe;
namespace T = tl::T;
constexpr DType f32 = DType::Float32;
// Tile slots; slot s uses event s for its load -> compute -> store -> next load chain.
constexpr int kSlots = 3;

/// One tile slot: x in the I/O dtype (rotated in place, then stored).
struct Slot {
  Buffer x;
  int ev;
};

}  // namespace

std::string RopeKey::str() const {
  return fmt::format(
      "dtype={},H={},D={},R={},off={},interleaved={},backward={},positions={},bT={},bH={},"
      "blocks={}",
      tl::dtype_name(dtype), heads, head_dim, rot_dim, rot_offset, interleaved, backward, positions,
      tokens_per_tile, heads_per_tile, blocks);
}

tl::PrimFunc rope_kernel(const RopeKey& k) {
  const DType dt = k.dtype;
  const bool wide = dt != f32;
  const int H = ir_size(k.heads, "heads"), D = ir_size(k.head_dim, "head_dim"),
            R = ir_size(k.rot_dim, "rot_dim"), off = ir_size(k.rot_offset, "rot_offset"),
            bT = ir_size(k.tokens_per_tile, "tokens_per_tile"),
            bH = ir_size(k.heads_per_tile, "heads_per_tile"), blocks = ir_size(k.blocks, "blocks");
  const int chunks = H / bH, bHD = bH * D, h2 = R / 2;

  auto M = T::dynamic("M");
  auto NR = T::dynamic("NR");
  auto X = T::Tensor("X", {M, H * D}, dt);
  auto C = T::Tensor("C", {NR, R}, f32);
  auto S = T::Tensor("S", {NR, R}, f32);
  std::optional<Buffer> P;
  std::vector<tl::ParamRef> params{X, C, S};
  if (k.positions) params.push_back(*(P = T::Tensor("P", {M}, DType::Int32)));
  auto Y = T::Tensor("Y", {M, H * D}, dt);
  params.push_back(Y);

  return T::prim_func(k.backward ? "rope_bwd" : "rope_fwd", params, [&] {
    Expr items = ceildiv(M, bT) * chunks;
    Expr num_blocks = min(Expr(blocks), ceildiv(items, 2));
    T::Kernel(num_blocks, [&](Expr cid, Expr vid) {
      T::Scope(tl::Core::Vector, [&] {
        std::vector<Slot> slots;
        // UB addresses by hand (UbPlacer): the two sources of each 16-bit path instruction
        // start 256 bytes apart modulo 512, so they sit in different bank groups
        // (docs/calibration.md, "UB bank conflicts"): c against xf (r c), g against w (g w)
        // and xf's other half against w (half), xf against the gather offsets, s and w
        // against sgn. With the planner's addresses 2001 x 32 x 128 rot 128 interleaved took
        // 27.7 us, 19.1 us placed; half rot 64 with positions 20.5 -> 19.1 us.
        UbPlacer place;
        const int64_t es = tl::dtype_bytes(dt);
        for (int i = 0; i < kSlots; ++i)
          slots.push_back(
              {T::alloc_ub(fmt::format("x{}_ub", i), {bT, bHD}, dt, place(bT * bHD * es, 0)), i});
        // The token tiles' table rows and w (rows [par bT, par bT + bT) for token tile parity
        // par): loaded once per token tile and worker, shared by its head chunks.
        auto ct = T::alloc_ub("c_ub", {2 * bT, R}, f32, place(2 * bT * R * 4, 256));
        auto st = T::alloc_ub("s_ub", {2 * bT, R}, f32, place(2 * bT * R * 4, 0));
        auto wt = T::alloc_ub("w_ub", {2 * bT, R}, f32, place(2 * bT * R * 4, 0));
        std::optional<Buffer> yf, q, xf, g, sg, offs;
        if (!(wide && k.interleaved))
          yf = T::alloc_ub("y_ub", {bT, R}, f32, place(bT * R * 4, 0));  // r c, the result
        if (wide)
          xf = T::alloc_ub("xf_ub", {bT, k.interleaved ? bHD : R}, f32,
                           place(bT * (k.interleaved ? bHD : R) * 4, 0));
        else
          q = T::alloc_ub("q_ub", {bT, R}, f32, place(bT * R * 4, 0));  // r * w, partner * w
        if (k.interleaved) {
          // The partner rows g (x[j ^ 1], every head at once) come from one gather per token
          // row: a gather of the whole [bT, bHD] tile is refused, since the compiler cannot
          // prove the tile's rows inside the dynamic M (the tail tile's pad rows) and a gather
          // has no identity; a one-row gather reads rows all inside or all past M.
          g = T::alloc_ub("g_ub", {bT, bHD}, f32, place(bT * bHD * 4, 256));
          sg = T::alloc_ub("sg_ub", {bT, R}, f32,
                           place(bT * R * 4, 256));  // sgn(j) forward, -sgn(j) backward
          // sgn(j) (-1 even, +1 odd) and the partner offsets (j ^ 1) * 4 bytes, built once:
          // j / 2 - floor(j / 2) is 0 or 1/2, so sgn = 4 (j / 2 - floor(j / 2)) - 1. Heads and
          // rotated parts start at even j, so j's parity is its parity in the rotated part.
          auto ix = T::alloc_ub("ix_ub", {bHD}, f32, place(bHD * 4, 0));
          auto hf = T::alloc_ub("hf_ub", {bHD}, f32, place(bHD * 4, 256));
          auto fl = T::alloc_ub("fl_ub", {bHD}, f32, place(bHD * 4, 0));
          auto oi = T::alloc_ub("offs_i_ub", {bHD}, DType::Int32, place(bHD * 4, 256));
          offs = T::view("offs_ub", oi, DType::UInt32);
          T::tile::createvecindex(ix, 0.0);
          T::pipe_barrier(Pipe::V);
          T::tile::mul(hf, ix, 0.5);
          T::pipe_barrier(Pipe::V);
          T::tile::cast(oi, hf, "CAST_FLOOR");
          T::pipe_barrier(Pipe::V);
          T::tile::cast(fl, oi, "CAST_RINT");
          T::pipe_barrier(Pipe::V);
          T::tile::sub(hf, hf, fl);
          T::pipe_barrier(Pipe::V);
          T::tile::mul(hf, hf, 4.0);
          T::pipe_barrier(Pipe::V);
          T::tile::add(hf, hf, -1.0);  // sgn(j)
          T::pipe_barrier(Pipe::V);
          T::tile::broadcast(*sg, hf.region({0}, {R}));
          T::tile::sub(ix, ix, hf);  // the partner j - sgn(j)
          T::pipe_barrier(Pipe::V);
          if (k.backward) T::tile::mul(*sg, *sg, -1.0);
          T::tile::mul(ix, ix, 4.0);
          T::pipe_barrier(Pipe::V);
          T::tile::cast(oi, ix, "CAST_RINT");
          T::pipe_barrier(Pipe::V);
        }

        // Let names as the twin's macro gets them: a second let of a name gets _1, _2, ...
        std::map<std::string, int> lets;
        auto let = [&](const std::string& n, Expr v) {
          const int i = lets[n]++;
          return T::let(i == 0 ? n : fmt::format("{}_{}", n, i), std::move(v));
        };
        auto workers = T::let("workers", num_blocks * 2);
        auto worker = T::let("worker", cid * 2 + vid);
        // A contiguous run of items per worker (token tile major), so that its consecutive
        // items share a token tile and its table rows: [first, first + mine).
        auto first = T::let("first", items * worker / workers);
        auto mine = T::let("mine", items * (worker + 1) / workers - first);

        // Item `it` in slot `sl` (the worker's item i): load (the token tile's table rows if
        // the item is the worker's first of that tile), rotate every head of the chunk, store. The
        // compiler clips the tail tile's copies to M (clip_expert_copies): its rows past M are
        // loaded as pad_value and never stored.
        auto load = [&](Expr it, const Slot& sl, bool first_item) {
          auto t0 = let("t0", it / chunks * bT);
          auto col = let("col", it % chunks * bHD);
          auto par = let("par", it / chunks % 2);
          T::wait_flag(Pipe::MTE3, Pipe::MTE2, sl.ev);  // the slot's last store is done
          // ... also for the V pipe: a copy with a pad value fills the tail of a partial tile on
          // V before its MTE2 load, overwriting x's slot while its last store may still read it
          // (a WAR the hazard checker found on a tail block; no cost: the MTE2 wait above
          // already holds the issue until that store is done).
          T::wait_flag(Pipe::MTE3, Pipe::V, sl.ev);
          auto tables = [&] {
            // The tables of the token tile two back (same rows) are read no more; the barrier
            // orders a pad fill (V) after those reads.
            T::wait_flag(Pipe::V, Pipe::MTE2, par);
            T::pipe_barrier(Pipe::V);
            auto c = ct.region({par * bT, 0}, {bT, R});
            auto s = st.region({par * bT, 0}, {bT, R});
            if (P) {  // the tokens' rows one by one (a row past M keeps what the slot held)
              auto nt = let("nt", min(M - t0, bT));
              T::serial("j", nt, [&](Expr j) {
                auto row = let("row", P->load({t0 + j}));
                T::copy(C.at({row, 0}), ct.region({par * bT + j, 0}, {1, R}));
                T::copy(S.at({row, 0}), st.region({par * bT + j, 0}, {1, R}));
              });
            } else {
              T::copy(C.at({t0, 0}), c, {.pad_value = 0.0});
              T::copy(S.at({t0, 0}), s, {.pad_value = 0.0});
            }
          };
          if (first_item)
            tables();
          else
            T::If(it % chunks == 0, tables);
          // x last: with positions the 2 bT row copies nearly fill the 32-deep MTE2 queue, and
          // the scalar unit stalls on a full queue until its head completes; queued first, the
          // big x copy held the issue of the current item's vector work for its whole length
          // (2001 x 32 x 128 fp16 with positions: 27.1 us that way, 24.1 us this way).
          T::copy(X.at({t0, col}), sl.x, {.pad_value = 0.0});
          T::set_flag(Pipe::MTE2, Pipe::V, sl.ev);
        };
        // Rotates the item loaded into `sl` and stores it.
        auto compute_store = [&](Expr it, Expr i, const Slot& sl) {
          auto t0 = let("t0", it / chunks * bT);
          auto col = let("col", it % chunks * bHD);
          auto par = let("par", it / chunks % 2);
          auto c = ct.region({par * bT, 0}, {bT, R});
          auto s = st.region({par * bT, 0}, {bT, R});
          auto w = wt.region({par * bT, 0}, {bT, R});
          T::wait_flag(Pipe::MTE2, Pipe::V, sl.ev);
          // w, once per token tile (the file comment's table)
          T::If(i == 0 || it % chunks == 0, [&] {
            if (k.interleaved) {
              if (k.backward) {
                T::serial("j", bT, [&](Expr j) {
                  T::tile::gather(wt.region({par * bT + j, 0}, {1, R}),
                                  st.region({par * bT + j, 0}, {1, R}), offs->region({0}, {R}));
                });
                T::pipe_barrier(Pipe::V);
                T::tile::mul(w, w, *sg);
              } else {
                T::tile::mul(w, s, *sg);
              }
            } else {
              // The 16-bit path adds r[p(j)] w'[j] with w'[j] = sgn(j) s[j] forward (the
              // backward's w'[j] = sgn(p(j)) s[p(j)]); the 32-bit one adds q[p(j)], q = r w,
              // whose w is the other of the two.
              auto half = [&](int c0) { return wt.region({par * bT, c0}, {bT, h2}); };
              auto shalf = [&](int c0) { return st.region({par * bT, c0}, {bT, h2}); };
              if (k.backward == wide) {
                T::tile::mul(half(0), shalf(h2), 1.0);
                T::tile::mul(half(h2), shalf(0), -1.0);
              } else {
                T::tile::mul(half(0), shalf(0), -1.0);
                T::tile::mul(half(h2), shalf(h2), 1.0);
              }
            }
          });
          if (k.interleaved) {
            if (wide) {
              // x widened into xf, the partner rows gathered from it, then y computed in place
              // in xf, every head's instruction of a step queued under one barrier: y = r c,
              // y += g w (mul_add_dst), the narrowing into x.
              T::pipe_barrier(Pipe::V);  // the previous item's narrowing has read xf
              T::tile::cast(*xf, sl.x);
              T::pipe_barrier(Pipe::V);
              T::serial("t", bT, [&](Expr t) {
                T::tile::gather(g->region({t, 0}, {1, bHD}), xf->region({t, 0}, {1, bHD}), *offs);
              });
              auto r = [&](Expr h) { return xf->region({0, h * D + off}, {bT, R}); };
              T::pipe_barrier(Pipe::V);
              T::serial("h", bH, [&](Expr h) { T::tile::mul(r(h), r(h), c); });
              T::pipe_barrier(Pipe::V);
              T::serial("h", bH, [&](Expr h) {
                T::tile::mul_add_dst(r(h), g->region({0, h * D + off}, {bT, R}), w);
              });
              T::pipe_barrier(Pipe::V);
              T::serial("h", bH, [&](Expr h) {
                T::tile::cast(sl.x.region({0, h * D + off}, {bT, R}), r(h), "CAST_RINT");
              });
            } else {
              T::serial("t", bT, [&](Expr t) {
                T::tile::gather(g->region({t, 0}, {1, bHD}), sl.x.region({t, 0}, {1, bHD}), *offs);
              });
              T::serial("h", bH, [&](Expr h) {
                T::pipe_barrier(Pipe::V);  // the previous head's last op has read q, y
                T::tile::mul(*yf, sl.x.region({0, h * D + off}, {bT, R}), c);
                T::tile::mul(*q, g->region({0, h * D + off}, {bT, R}), w);
                T::pipe_barrier(Pipe::V);
                T::tile::add(sl.x.region({0, h * D + off}, {bT, R}), *yf, *q);
              });
            }
          } else {
            T::serial("h", bH, [&](Expr h) {
              auto xr = sl.x.region({0, h * D + off}, {bT, R});
              T::pipe_barrier(Pipe::V);  // the previous head's last op has read q, y, xf
              if (wide) {
                // y = r c, then y[j] += r[p(j)] w'[j] as two half-width multiply-adds (one pass
                // fewer than q = r w and two adds), then the narrowing
                T::tile::cast(*xf, xr);
                T::pipe_barrier(Pipe::V);
                T::tile::mul(*yf, *xf, c);
                T::pipe_barrier(Pipe::V);
                T::tile::mul_add_dst(yf->region({0, 0}, {bT, h2}), xf->region({0, h2}, {bT, h2}),
                                     wt.region({par * bT, 0}, {bT, h2}));
                T::tile::mul_add_dst(yf->region({0, h2}, {bT, h2}), xf->region({0, 0}, {bT, h2}),
                                     wt.region({par * bT, h2}, {bT, h2}));
                T::pipe_barrier(Pipe::V);
                T::tile::cast(xr, *yf, "CAST_RINT");
              } else {
                // y[j] = r[j] c[j] + q[p(j)], into x's region
                T::tile::mul(*q, xr, w);
                T::tile::mul(*yf, xr, c);
                T::pipe_barrier(Pipe::V);
                auto dst = [&](int c0) { return sl.x.region({0, h * D + off + c0}, {bT, h2}); };
                T::tile::add(dst(0), yf->region({0, 0}, {bT, h2}), q->region({0, h2}, {bT, h2}));
                T::tile::add(dst(h2), yf->region({0, h2}, {bT, h2}), q->region({0, 0}, {bT, h2}));
              }
            });
          }
          // The token tile's last item of this worker: its table rows and w are free.
          T::If(i + 1 == mine || (it + 1) % chunks == 0,
                [&] { T::set_flag(Pipe::V, Pipe::MTE2, par); });
          T::set_flag(Pipe::V, Pipe::MTE3, sl.ev);
          T::wait_flag(Pipe::V, Pipe::MTE3, sl.ev);
          T::copy(sl.x, Y.at({t0, col}));
          T::set_flag(Pipe::MTE3, Pipe::MTE2, sl.ev);  // the slot is free again
          T::set_flag(Pipe::MTE3, Pipe::V, sl.ev);
        };

        for (int i = 0; i < kSlots; ++i) T::set_flag(Pipe::MTE3, Pipe::MTE2, i);
        for (int i = 0; i < kSlots; ++i) T::set_flag(Pipe::MTE3, Pipe::V, i);
        for (int i = 0; i < 2; ++i) T::set_flag(Pipe::V, Pipe::MTE2, i);
        // Software-pipelined in program order: a wait_flag holds the scalar unit's issue, and an
        // item's vector work fills the V queue (32 deep, docs/calibration.md), so item i + 1's
        // load is issued before item i's vector work, into the slot of item i - 2, whose store
        // is done by then (2001 x 32 x 128 fp16: 28.5 us with the load after the work and two
        // slots, 44.2 us with it before and two slots: the load waits for item i - 1's store).
        T::If(0 < mine, [&] { load(first, slots[0], true); });
        T::serial("p", ceildiv(mine, kSlots), [&](Expr p) {
          for (int i = 0; i < kSlots; ++i) {
            auto step = [&] {
              T::If(p * kSlots + i + 1 < mine,
                    [&] { load(first + (p * kSlots + i + 1), slots[(i + 1) % kSlots], false); });
              compute_store(first + (p * kSlots + i), p * kSlots + i, slots[i]);
            };
            if (i == 0)
              step();
            else
              T::If(p * kSlots + i < mine, step);
          }
        });
        for (int i = 0; i < kSlots; ++i) T::wait_flag(Pipe::MTE3, Pipe::MTE2, i);
        for (int i = 0; i < kSlots; ++i) T::wait_flag(Pipe::MTE3, Pipe::V, i);
        for (int i = 0; i < 2; ++i) T::wait_flag(Pipe::V, Pipe::MTE2, i);
      });
    });
  });
}

}  // namespace cann_ops_tilelang
