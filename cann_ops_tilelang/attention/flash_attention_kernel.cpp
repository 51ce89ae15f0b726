// The FlashAttention forward kernel generator of cann_ops_tilelang (the tile-kernel layer,
// docs/ops.md "FlashAttention forward"). Developer mode, from examples/flash_attention_dev.cpp:
// per kv step the cube computes the scores s = Q K^T into L0C, the vector unit (both AIVs, each
// half of the q rows) turns them into P with the online softmax (running max m, denominator l,
// the output's rescale alpha), the cube computes P V, and the vector unit accumulates it. The
// compiler places the tiles, makes the GM workspaces s, p and P V cross cores through, their
// flags and credits, and double-buffers the kv loop (T::Pipelined; docs/developer_mode.md,
// "Data that crosses cores"). Its Python twin, python/cann_ops_tilelang/kernels/attention.py,
// builds the identical IR (python/tests/test_opslib_attention.py).
//
// Work split: `blocks` persistent workers (the target's AICs) take the (batch, head, q tile)
// triples in turn; non-causal, each worker's (q tile, kv step) pairs are one pipelined loop, so
// the pipeline does not drain at q tile boundaries; causal with square tiles pairs q tiles qx and
// nq - 1 - qx (nq + 1 kv steps together, whatever qx) and runs the worker's pairs as one loop
// too; other causal tiles (T::Persistent, one kv loop a q tile) deal the q tiles with the most kv
// steps first. B and S
// are dynamic: the last q tile's and kv tile's copies are clipped by the compiler and their L1
// padding zero-filled (legalize_copies); the keys past S get -inf scores here (the padding's 0
// scores would otherwise take weight). Causal: a q tile stops its kv loop at the diagonal tile,
// and the keys past the query's row get -inf -- every query keeps key 0, so no row is all -inf
// and m stays finite after the first step.
//
// Vector work per kv step (docs/ops.md "What bounds it"):
// the scale, the row max and sum as trees of whole-tile ops down to one 256-byte repeat a row
// before the (slower) row reductions, the exp, the cast to P; the mask only on the steps that
// need one, from the host-written IDX tile (two ops, no temporaries beyond a bitmask).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "cann_ops_tilelang/attention.h"
#include "tl/arith.h"
#include "tl/lang.h"

namespace cann_ops_tilelang {

tl::PrimFunc flash_attention_kernel(const FlashAttentionKey& key) {
  using tl::Expr;
  namespace T = tl::T;
  const tl::DType dt = key.dtype, f32 = tl::DType::Float32;
  const int H = ir_size(key.heads, "heads"), D = ir_size(key.dim, "dim"),
            bM = ir_size(key.block_m, "block_m"), bN = ir_size(key.block_n, "block_n"),
            stages = ir_size(key.stages, "stages"), skew = ir_size(key.skew, "skew"),
            blocks = ir_size(key.blocks, "blocks");
  // IDX and the mask's bound are integers in (-bM, bN): exact in float16 up to 2048. The row
  // trees pair column blocks: bN a power of two.
  if (bM > 2048 || bN > 2048 || bN < 2 || (bN & (bN - 1)) != 0) {
    throw tl::Error(
        fmt::format("flash_attention_kernel: block_m and block_n must be at most "
                    "2048 (the float16 mask indices) and block_n a power of two "
                    "(the row trees), got {} x {}",
                    bM, bN));
  }
  const bool bshd = key.layout == AttentionLayout::BSHD;
  const Expr scale = tl::imm(f32, tl::arith::round_float(f32, key.scale));
  auto B = T::dynamic("B");
  auto S = T::dynamic("S");
  // BSHD: a row of [B, S, H * D] holds every head's D values; head h is columns h*D ... h*D+D-1.
  auto qkv = [&](const char* name) {
    return bshd ? T::Tensor(name, {B, S, H * D}, dt) : T::Tensor(name, {B, H, S, D}, dt);
  };
  auto Q = qkv("Q"), K = qkv("K"), V = qkv("V"), O = qkv("O");
  auto LSE = T::Tensor("LSE", {B, H, S}, f32);
  // IDX [bM, bN] float16, host-written: c - i when causal (a key's offset from its query), c
  // when not. A masked step compares it with one scalar (exact: every value and bound is an
  // integer below 2^11) and selects in place: two vector ops and a bitmask, where an index
  // made in the kernel took eight int32 / fp32 tiles and twelve ops (docs/ops.md), and would
  // pin every row to AIV 0 (split_aiv).
  auto IDX = T::Tensor("IDX", {bM, bN}, tl::DType::Float16);
  std::vector<tl::ParamRef> params{Q, K, V, O, LSE, IDX};
  auto at = [&](const tl::Buffer& t, Expr b, Expr h, Expr row) {
    return bshd ? t.at({b, row, h * D}) : t.at({b, h, row, 0});
  };
  // Columns [c0, c0 + w) of every row of a [bM, ...] tile.
  auto cols = [&](const tl::Buffer& t, int c0, int w) { return t.region({0, c0}, {bM, w}); };
  return T::prim_func("flash_attention_fwd", params, [&] {
    T::Kernel(
        blocks,
        [&](Expr cid) {
          auto q = T::alloc_shared("q", {bM, D}, dt);
          auto k = T::alloc_shared("k", {bN, D}, dt);
          auto v = T::alloc_shared("v", {bN, D}, dt);
          auto s = T::alloc_fragment("s", {bM, bN}, f32);  // scores, then P in fp32
          auto p = T::alloc_shared("p", {bM, bN}, dt);     // P for the cube
          auto o = T::alloc_fragment("o", {bM, D}, f32);   // this step's P V
          auto acc = T::alloc_fragment("acc", {bM, D}, f32);
          // The row vectors' order places mj 256 bytes after s's bank group (the planner
          // packs these vectors in order after the tiles, which all start on 512-byte
          // boundaries): the subtraction s - mj then reads its two sources from opposite bank
          // groups (536 -> 280 cycles a step; docs/ops.md, docs/hardware.md section 4). Each
          // AIV's share of a row vector is bM / 2 x 4 bytes: 128 at bM = 64 (m, rs, then mj),
          // 256 at bM = 128 (m, then mj).
          auto m = T::alloc_fragment("m", {bM}, f32);
          tl::Buffer rs, mj;
          if (bM * 2 >= 256) {
            mj = T::alloc_fragment("mj", {bM}, f32);
            rs = T::alloc_fragment("rs", {bM}, f32);
          } else {
            rs = T::alloc_fragment("rs", {bM}, f32);
            mj = T::alloc_fragment("mj", {bM}, f32);
          }
          auto alpha = T::alloc_fragment("alpha", {bM}, f32);
          auto l = T::alloc_fragment("l", {bM}, f32);
          auto lse = T::alloc_fragment("lse", {bM}, f32);
          auto out = T::alloc_shared("out", {bM, D}, dt);
          auto idx = T::alloc_shared("idx", {bM, bN}, tl::DType::Float16);
          auto half = T::alloc_fragment("half", {bM, bN / 2}, f32);  // the max tree's first level
          // Causal with square tiles runs one flattened loop too (below); other causal tiles keep
          // one kv loop a q tile.
          const bool paired = key.causal && bM == bN;
          tl::Buffer mlast;  // the flattened loop's row maxima for lse
          if (!key.causal || paired) mlast = T::alloc_fragment("mlast", {bM}, f32);
          // One q tile's output: o = acc / l and lse = ln l + the row maxima `mx`.
          auto finish = [&](Expr b, Expr h, Expr qx, const tl::Buffer& mx) {
            // In place in acc (dead after this): no fp32 temporary for the quotient, which the
            // flattened loop, with out and lse live across it, has no UB room for.
            T::Parallel({bM, D}, [&](Expr i, Expr c) { acc(i, c) = acc(i, c) / l(i); });
            T::Parallel({bM, D}, [&](Expr i, Expr c) { out(i, c) = cast(dt, acc(i, c)); });
            T::tile::ln(lse, l);  // the chip's Ln, chosen explicitly
            T::Parallel(bM, [&](Expr i) { lse(i) = lse(i) + mx(i); });
            T::copy(out, at(O, b, h, qx * bM));
            T::copy(lse, LSE.at({b, h, qx * bM}));
          };
          // One kv step of q tile (b, h, qx). `last` (the flattened loop's): the step that ends
          // the q tile, which then writes its output after the step's accumulate.
          auto step = [&](Expr b, Expr h, Expr qx, Expr kv, Expr last) {
            T::copy(at(K, b, h, kv * bN), k);
            T::copy(at(V, b, h, kv * bN), v);
            T::gemm(q, k, s, {.transpose_B = true, .init = true});
            T::Parallel({bM, bN}, [&](Expr i, Expr c) { s(i, c) = s(i, c) * scale; });
            // Only a step with a key past S (or, causal, past the q tile's first query) pays
            // for the mask; IDX is loaded in the step (a tile loaded once before the loop and
            // read by the row-split element loop is the split_aiv bug of docs/ops.md).
            // Causal: key kv bN + c is visible to query qx bM + i iff c - i <= qx bM - kv bN.
            Expr masked = key.causal ? kv * bN + bN > qx * bM + 1 : kv * bN + bN > S;
            Expr bound = key.causal ? qx * bM - kv * bN : S - kv * bN;
            T::If(masked, [&] {
              T::copy(IDX, idx);
              T::Parallel({bM, bN}, [&](Expr i, Expr c) {
                // Through float32: the AscendC emitter has int -> float32 and float32 ->
                // float16 scalar casts (one rounding each, both exact here).
                Expr lim = cast(tl::DType::Float16, cast(f32, bound));
                s(i, c) = select(key.causal ? idx(i, c) <= lim : idx(i, c) < lim, s(i, c),
                                 tl::neg_inf(f32));
              });
            });
            // Row maxima and sums as trees: whole-tile max / add of column blocks (2 cycles a
            // repeat) down to pw = 64 columns (256 bytes, one repeat a row), then the row
            // reduction (7 cycles a repeat; docs/hardware.md section 4). The first level pairs
            // adjacent blocks, 256 bytes apart: no UB bank-group conflict (same section).
            const int pw = std::min(64, bN / 2);
            for (int c0 = 0; c0 < bN; c0 += 2 * pw)
              T::tile::max(cols(half, c0 / 2, pw), cols(s, c0, pw), cols(s, c0 + pw, pw));
            int w = bN / 2;
            for (; w > pw; w /= 2)
              T::tile::max(cols(half, 0, w / 2), cols(half, 0, w / 2), cols(half, w / 2, w / 2));
            T::reduce_max(cols(half, 0, w), mj, -1);
            T::tile::max(mj, mj, m);
            T::Parallel({bM, bN}, [&](Expr i, Expr c) { s(i, c) = s(i, c) - mj(i); });
            T::Parallel(bM, [&](Expr i) { alpha(i) = m(i) - mj(i); });
            T::tile::exp(s, s);
            T::tile::exp(alpha, alpha);
            T::Parallel(bM, [&](Expr i) { m(i) = mj(i); });
            // The flattened loop's q tile ends in the second part, two steps after the cube and
            // the softmax have moved on: its lse takes this step's maxima from their own slots.
            if (last.defined()) T::Parallel(bM, [&](Expr i) { mlast(i) = mj(i); });
            T::Parallel({bM, bN}, [&](Expr i, Expr c) { p(i, c) = cast(dt, s(i, c)); });
            // The sums' tree in place (s is dead once P is made), compacting: each level adds
            // adjacent blocks 2k and 2k + 1 into block k, so both sources of every add are
            // 256 bytes apart (pairs at a doubling stride put the second level's sources 512
            // bytes apart, a bank-group conflict: twice the cycles, docs/hardware.md section
            // 4). Block k is written after blocks 2k and 2k + 1 are read, and no later op of
            // the level reads it (they read blocks >= 2k + 2).
            for (int n = bN / pw; n > 1; n /= 2)
              for (int k2 = 0; k2 < n / 2; ++k2)
                T::tile::add(cols(s, k2 * pw, pw), cols(s, 2 * k2 * pw, pw),
                             cols(s, (2 * k2 + 1) * pw, pw));
            T::reduce_sum(cols(s, 0, pw), rs, -1);
            T::gemm(p, v, o, {.init = true});
            // acc first: its read of o puts P V's crossing (the pipeline's split between the
            // vector side's two parts) before l's update too, so that l, which the flattened
            // loop's q tile end reads and clears, is touched in the second part only.
            T::Parallel({bM, D},
                        [&](Expr i, Expr c) { acc(i, c) = acc(i, c) * alpha(i) + o(i, c); });
            T::Parallel(bM, [&](Expr i) { l(i) = l(i) * alpha(i) + rs(i); });
            if (last.defined())
              T::If(last, [&] {
                finish(b, h, qx, mlast);
                T::clear(acc);  // for the worker's next q tile
                T::clear(l);
              });
          };
          if (!key.causal) {
            // Non-causal: every q tile has the same kv steps, so the worker's (q tile, kv step)
            // pairs are one pipelined loop. The pipeline then runs on across q tile boundaries
            // (the next tile's first QK^T before the last P V of this one) instead of draining and
            // refilling once per q tile (docs/ops.md, the fagm round). The worker takes q tiles
            // cid, cid + blocks, ... as T::Persistent deals them.
            Expr nq = ceildiv(S, bM), kvt = ceildiv(S, bN), total = B * H * nq;
            Expr mine = ceildiv(tl::max(total - cid, 0), blocks);
            T::clear(acc);
            T::clear(l);
            T::Pipelined("g", mine * kvt, stages, {.skew = skew}, [&](Expr g) {
              Expr tile = g / kvt * blocks + cid, kv = g % kvt;
              Expr b = tile / (H * nq), h = tile / nq % H, qx = tile % nq;
              T::If(kv == 0, [&] {
                T::copy(at(Q, b, h, qx * bM), q);
                T::fill(m, tl::neg_inf(f32));
              });
              step(b, h, qx, kv, kv == kvt - 1);
            });
            return;
          }
          if (paired) {
            // Causal, bM == bN: q tile qx has qx + 1 kv steps, so tiles qx and nq - 1 - qx
            // together have nq + 1, the same for every pair: the worker's pairs are one pipelined
            // loop of equal units, as non-causal (the pipeline runs on across q tiles, and every
            // worker gets the same number of steps to within one unit). An odd nq counts a tile
            // -1 of 0 steps (d = 1), paired with the last tile: units of nq steps. Unit u of a
            // head: tile u - d (u + 1 - d steps: sa), then tile nq - 1 - u.
            // Loop-invariant lets: every use of qx and kv in the step would otherwise recompute
            // them (the scalar unit pays per operator as written, docs/calibration.md).
            Expr nq = T::let("qtiles", ceildiv(S, bM)), d = T::let("odd", nq % 2),
                 half_n = T::let("units", (nq + d) / 2), len = T::let("steps", nq + 1 - d);
            Expr total = B * H * half_n;
            Expr mine = ceildiv(tl::max(total - cid, 0), blocks);
            T::clear(acc);
            T::clear(l);
            T::Pipelined("g", mine * len, stages, {.skew = skew}, [&](Expr g) {
              Expr unit = g / len * blocks + cid, r = g % len;
              Expr b = unit / (H * half_n), h = unit / half_n % H, u = unit % half_n;
              Expr sa = u + 1 - d, first = r < sa;
              Expr qx = tl::select(first, u - d, nq - 1 - u);
              Expr kv = tl::select(first, r, r - sa);
              T::If(kv == 0, [&] {
                T::copy(at(Q, b, h, qx * bM), q);
                T::fill(m, tl::neg_inf(f32));
              });
              step(b, h, qx, kv, kv == qx);  // tile qx's last step is its diagonal one
            });
            return;
          }
          // Causal, other tiles: the q tiles with the most kv steps first (qx from the last), so
          // the workers' last tiles are the short ones and they end together.
          T::Persistent({ceildiv(S, bM), B, H}, blocks, cid, [&](std::vector<Expr> t) {
            Expr b = t[1], h = t[2], qx = ceildiv(S, bM) - 1 - t[0];
            T::copy(at(Q, b, h, qx * bM), q);
            T::clear(acc);
            T::fill(m, tl::neg_inf(f32));
            T::clear(l);
            Expr kv_tiles = tl::min(ceildiv(S, bN), ceildiv((qx + 1) * bM, bN));
            T::Pipelined("kv", kv_tiles, stages, {.skew = skew},
                         [&](Expr kv) { step(b, h, qx, kv, Expr()); });
            finish(b, h, qx, m);
          });
        },
        {.threads = 2});
  });
}

}  // namespace cann_ops_tilelang
