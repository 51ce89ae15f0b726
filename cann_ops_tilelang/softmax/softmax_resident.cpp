// The softmax / log-softmax kernels' resident schedule, forward and backward (the key's
// `resident`, chosen by softmax_key when two row tiles in the I/O dtype and the tile's fp32
// widening fit UB; N a multiple of 32): each rM-row tile of x (of y and dy) is loaded into UB
// once and widened to fp32 once; the forward's exp is computed once per element and kept in UB
// for the normalisation, so the inputs are read from GM once and the vector pipe makes the
// fewest passes over them (docs/ops.md, "Softmax and log-softmax"). The forward sums exp(x)
// with no max subtracted (no max tree, no subtraction: 16 cycles per 64 elements instead of 20)
// and checks each row's sum once (a V -> S wait a tile); a row outside the range where that is
// exact (huge or very negative logits, -inf rows, +inf) takes the max-subtracted fallback. The tile
// slots are double-buffered (for_each_row_tile_2slots, as the resident RMSNorm kernels): the next
// tile's load is issued before this tile's compute. The result is narrowed over x (dy) in its slot
// and the tile stored with one copy.
//
//   softmax      y = e / sum(e), e = exp(x)           dx = p - sum(p) y, p = dy y
//   log_softmax  y = x - log(sum(e))                  dx = dy - sum(dy) exp(y)
//   (fallback rows: e = exp(x - max), log_softmax y = x - (max + log(sum(e))))
//
// Other rows (ragged N, rows larger than UB) keep the developer-mode kernels of
// softmax_kernel.cpp. Its Python twin is
// softmax_resident_kernel in python/cann_ops_tilelang/kernels/softmax_resident.py (identical
// IR, tested).
//
// The fp32 tile is kept as two halves of columns, e0 and e1, 256 bytes apart modulo 512 (no
// bank-group conflict); the row max and sum are softmax_tree.h's tree of elementwise max / add
// over the halves, then one short reduction.
//
// Synchronisation: the slot flags of for_each_row_tile_2slots (MTE3 -> MTE2, MTE2 -> V on ids 0
// and 1); each tile's store waits V -> MTE3 on its slot's id; the tail tile (M % rM rows) runs
// synchronously in slot 0 on id 3, zero-filled and loaded row by row.
#include <functional>
#include <limits>
#include <optional>
#include <vector>

#include "cann_ops_tilelang/softmax.h"
#include "softmax_tree.h"
#include "tl/lang.h"

namespace cann_ops_tilelang {
namespace {

using tl::Buffer;
using tl::DType;
using tl::Expr;
using tl::Pipe;
namespace T = tl::T;
using namespace softmax_tree;
constexpr int kEvTail = 3;
constexpr int kEvCheck = 2;  // the forward's V -> S wait before its per-row check
// The forward sums exp(x) with no max subtracted; a row's sum must lie in [lo, hi). Softmax:
// [1, 2^115) (s >= 1 as with the max subtracted: an exp(x) below fp32's normal range is then a y
// below it too, so no y loses bits to it; 1 / s a normal float). Log-softmax: [2^-57, 2^126)
// (e^-39.5 to e^87.3: every exp(x) finite, and the terms lost below fp32's normal range weigh
// less than 1e-15 of the sum, as in the streamed kernel).
constexpr double kSumSoftLo = 1.0, kSumSoftHi = 0x1p115, kSumLogLo = 0x1p-57, kSumLogHi = 0x1p126;

}  // namespace

tl::PrimFunc softmax_resident_kernel(const SoftmaxKey& k) {
  const DType dt = k.dtype, f32 = DType::Float32;
  const bool wide = dt != f32, bwd = k.backward;
  const int N = ir_size(k.cols, "cols"), rM = ir_size(k.rows_per_tile, "rows_per_tile"),
            blocks = ir_size(k.blocks, "blocks"), h = N / 2, q = h / 2;
  if (N % 32 != 0 || k.chunk != k.cols)
    throw tl::Error(fmt::format(
        "softmax_resident_kernel: the key must be one pass over a multiple of 32 columns, got {}",
        k.str()));
  auto M = T::dynamic("M");
  std::vector<Buffer> ins;  // the tensors read: X, or Y and DY
  if (!bwd) {
    ins = {T::Tensor("X", {M, N}, dt)};
  } else {
    ins = {T::Tensor("Y", {M, N}, dt), T::Tensor("DY", {M, N}, dt)};
  }
  auto OUT = T::Tensor(bwd ? "DX" : "Y", {M, N}, dt);
  std::vector<tl::ParamRef> params(ins.begin(), ins.end());
  params.push_back(OUT);
  const std::string name = std::string(k.log ? "log_softmax" : "softmax") + (bwd ? "_bwd" : "_fwd");
  return T::prim_func(name, params, [&] {
    Expr num_blocks = min(Expr(blocks), ceildiv(M, rM));
    T::Kernel(num_blocks, [&](Expr cid, Expr vid) {
      T::Scope(tl::Core::Vector, [&] {
        UbPlacer place;
        const int64_t tile = int64_t{rM} * N * tl::dtype_bytes(dt), half = int64_t{rM} * h * 4;
        // Slot s holds input i at slots[s][i]; the result overwrites the last input.
        const int nin = static_cast<int>(ins.size());
        std::vector<Buffer> slots[2];
        for (int sl = 0; sl < 2; ++sl)
          for (int i = 0; i < nin; ++i)
            slots[sl].push_back(
                T::alloc_ub(fmt::format("{}{}_ub", bwd ? (i ? "dy" : "y") : "x", sl), {rM, N}, dt,
                            place(tile, 256 * i)));
        // The fp32 halves: x (forward); y and dy (backward), each pair 256 bytes apart and
        // dy's halves 256 bytes from y's (dy * y, dy - s y).
        auto e0 = T::alloc_ub(bwd ? "yf0_ub" : "e0_ub", {rM, h}, f32, place(half, 0));
        auto e1 = T::alloc_ub(bwd ? "yf1_ub" : "e1_ub", {rM, h}, f32, place(half, 256));
        std::optional<Buffer> g0, g1;
        if (bwd) {
          g0 = T::alloc_ub("gf0_ub", {rM, h}, f32, place(half, 256));
          g1 = T::alloc_ub("gf1_ub", {rM, h}, f32, place(half, 0));
        }
        const Tree tr = alloc_tree(place, rM, q);
        // A 16-bit log-softmax forward keeps x's fp32 halves for y = x - log(sum): the exp of its
        // column quarters goes into t0, p0, t1, p1 (each pair 256 bytes apart), the tree's first
        // level adds t0 + p0 and t1 + p1, and x is not widened again (16 cycles per 64 elements
        // instead of 18).
        const bool quarters = !bwd && k.log && wide;
        std::optional<Buffer> p0, p1;
        if (quarters) {
          p0 = T::alloc_ub("p0_ub", {rM, q}, f32, place(int64_t{rM} * q * 4, 256));
          p1 = T::alloc_ub("p1_ub", {rM, q}, f32, place(int64_t{rM} * q * 4, 0));
        }
        // Row statistics; a row-expand's per-row operand sits 256 bytes from its tile's half.
        auto st = [&](const char* nm, int64_t residue) {
          return T::alloc_ub(nm, {rM}, f32, place(rM * 4, residue));
        };
        auto c = [&](const Buffer& b, int c0) { return cols(b, rM, c0, h); };
        // The tile's halves in fp32 (a cast; an add of 0 copies fp32).
        auto widen = [&](const Buffer& x, const Buffer& lo, const Buffer& hi) {
          if (wide) {
            T::tile::cast(lo, c(x, 0));
            T::tile::cast(hi, c(x, h));
          } else {
            T::tile::add(lo, c(x, 0), 0.0);
            T::tile::add(hi, c(x, h), 0.0);
          }
        };
        auto narrow = [&](const Buffer& x, const Buffer& lo, const Buffer& hi) {
          T::tile::cast(c(x, 0), lo, "CAST_RINT");
          T::tile::cast(c(x, h), hi, "CAST_RINT");
        };
        std::function<void(const std::vector<Buffer>&, int)> compute;  // slot, call site
        auto lowest = tl::imm(f32, -std::numeric_limits<float>::max());

        if (!bwd) {
          auto s = st("s_ub", 0);  // the row sum of exp(x)
          auto one = st("one_ub", 256);
          auto r0 = st("r0_ub", 256);  // 1 / sum, or log(sum) (a fallback row's: its own)
          auto r1 = st("r1_ub", 0);
          // A fallback row's statistics: its halves' maxima (then sums) and the max subtracted.
          auto fa = st("fa_ub", 0);
          auto fb = st("fb_ub", 256);
          auto fm = st("fm_ub", 0);
          T::tile::fill(one, 1.0);
          // The rare row j whose sum of exp(x) leaves the range the unshifted sum is exact in:
          // its exp again with its max subtracted (at least the lowest float: -inf logits give
          // exp(-inf) = 0, never exp(-inf + inf) = NaN). Two whole-half reductions (7 cycles a
          // repeat): slow, and only for such rows. A 16-bit tile was scaled (softmax) or had r
          // subtracted (log-softmax) before the check, so the row's result is computed here from
          // its own r (1 / sum, or max + log(sum)); an fp32 tile's r goes into its rows of r0, r1
          // by the scalar unit (vector operands start 32-byte aligned).
          auto fallback = [=](const Buffer& x, Expr j) {
            auto row = [&](const Buffer& b) { return b.region({j, 0}, {1, h}); };
            auto one_el = [&](const Buffer& b) { return b.region({0}, {1}); };
            auto widen_row = [&] {
              if (wide) {
                T::tile::cast(row(e0), x.region({j, 0}, {1, h}));
                T::tile::cast(row(e1), x.region({j, h}, {1, h}));
              } else {
                T::tile::add(row(e0), x.region({j, 0}, {1, h}), 0.0);
                T::tile::add(row(e1), x.region({j, h}, {1, h}), 0.0);
              }
            };
            T::pipe_barrier(Pipe::V);
            widen_row();
            T::pipe_barrier(Pipe::V);
            T::reduce_max(row(e0), one_el(fa), -1);
            T::reduce_max(row(e1), one_el(fb), -1);
            T::pipe_barrier(Pipe::V);
            T::tile::max(one_el(fm), one_el(fa), one_el(fb));  // NaN stays NaN
            T::pipe_barrier(Pipe::V);
            T::tile::max(one_el(fm), one_el(fm), lowest);
            T::pipe_barrier(Pipe::V);
            T::tile::row_expand_sub(row(e0), row(e0), one_el(fm));
            T::tile::row_expand_sub(row(e1), row(e1), one_el(fm));
            T::pipe_barrier(Pipe::V);
            T::tile::exp(row(e0), row(e0));
            T::tile::exp(row(e1), row(e1));
            T::pipe_barrier(Pipe::V);
            T::reduce_sum(row(e0), one_el(fa), -1);
            T::reduce_sum(row(e1), one_el(fb), -1);
            T::pipe_barrier(Pipe::V);
            T::tile::add(one_el(fa), one_el(fa), one_el(fb));
            T::pipe_barrier(Pipe::V);
            if (!k.log) {
              T::tile::div(one_el(fa), one_el(one), one_el(fa));
            } else {
              T::tile::ln(one_el(fa), one_el(fa));
              T::pipe_barrier(Pipe::V);
              T::tile::add(one_el(fa), one_el(fm), one_el(fa));
              if (wide) widen_row();  // y = x - r: x again over its exp
            }
            if (wide) {
              T::pipe_barrier(Pipe::V);
              if (!k.log) {
                T::tile::row_expand_mul(row(e0), row(e0), one_el(fa));
                T::tile::row_expand_mul(row(e1), row(e1), one_el(fa));
              } else {
                T::tile::row_expand_sub(row(e0), row(e0), one_el(fa));
                T::tile::row_expand_sub(row(e1), row(e1), one_el(fa));
              }
              return;
            }
            set_then_wait(Pipe::V, Pipe::S, kEvCheck);
            T::store(r0, {j}, fa.load({0}));
            T::store(r1, {j}, fa.load({0}));
            set_then_wait(Pipe::S, Pipe::V, kEvCheck);
          };
          compute = [=](const std::vector<Buffer>& sl, int site) {
            const Buffer& x = sl[0];
            T::pipe_barrier(Pipe::V);  // the previous tile's reads of e0, e1 are done
            widen(x, e0, e1);
            T::pipe_barrier(Pipe::V);
            // No max subtracted: the check below.
            if (quarters) {
              T::tile::exp(cols(tr.t0, rM, 0, q), cols(e0, rM, 0, q));
              T::tile::exp(cols(*p0, rM, 0, q), cols(e0, rM, q, q));
              T::tile::exp(cols(tr.t1, rM, 0, q), cols(e1, rM, 0, q));
              T::tile::exp(cols(*p1, rM, 0, q), cols(e1, rM, q, q));
              T::pipe_barrier(Pipe::V);
              row_tree_from(false, tr.t0, *p0, tr.t1, *p1, 0, 0, tr, rM, q, s);
            } else {
              T::tile::exp(e0, e0);
              T::tile::exp(e1, e1);
              T::pipe_barrier(Pipe::V);
              row_tree(false, e0, e1, tr, rM, h, s);
            }
            T::pipe_barrier(Pipe::V);
            // The check reads the sums once the flag below fires; the vector work queued after
            // the flag (a 16-bit tile's scaling, or its subtraction of log(sum)) runs while the
            // scalar unit checks, so the wait exposes no idle vector pipe.
            if (!k.log) {
              T::tile::div(r0, one, s);  // a divide per row only
              T::tile::div(r1, one, s);
            } else {
              T::tile::ln(r0, s);
              T::tile::ln(r1, s);
            }
            T::set_flag(Pipe::V, Pipe::S, kEvCheck);
            if (wide) {
              T::pipe_barrier(Pipe::V);
              if (!k.log) {
                T::tile::row_expand_mul(e0, e0, r0);
                T::tile::row_expand_mul(e1, e1, r1);
              } else {
                T::tile::row_expand_sub(e0, e0, r0);
                T::tile::row_expand_sub(e1, e1, r1);
              }
            }
            T::wait_flag(Pipe::V, Pipe::S, kEvCheck);
            // The unshifted sum is as good as the max-subtracted one when it lies in [lo, hi)
            // (kSum* above); else that row's fallback. A NaN sum stays here: a NaN logit makes
            // the row NaN either way (so does the NaN a timing-only launch reads from its
            // poisoned UB: it times the common case).
            T::serial("j", rM, [&](Expr j) {
              // A let: the scalar load at a cycle of its own. Named as the twin's parser names
              // the three call sites' copies.
              auto sum =
                  T::let(site == 0 ? std::string("sum") : fmt::format("sum_{}", site), s.load({j}));
              const double lo = k.log ? kSumLogLo : kSumSoftLo;
              const double hi = k.log ? kSumLogHi : kSumSoftHi;
              T::If(sum < Expr(lo) || sum >= Expr(hi), [&] { fallback(x, j); });
            });
            T::pipe_barrier(Pipe::V);
            if (wide) {
              narrow(x, e0, e1);
            } else if (!k.log) {
              T::tile::row_expand_mul(c(x, 0), e0, r0);
              T::tile::row_expand_mul(c(x, h), e1, r1);
            } else {
              T::tile::row_expand_sub(c(x, 0), c(x, 0), r0);
              T::tile::row_expand_sub(c(x, h), c(x, h), r1);
            }
          };
        } else {
          auto s0 = st("s0_ub", 256);  // sum(dy y), or sum(dy)
          auto s1 = st("s1_ub", 0);
          const Buffer &y0 = e0, &y1 = e1, &gl = *g0, &gh = *g1;
          compute = [=](const std::vector<Buffer>& sl, int) {
            const Buffer &y = sl[0], &dy = sl[1];
            T::pipe_barrier(Pipe::V);  // the previous tile's reads of the halves are done
            widen(y, y0, y1);
            widen(dy, gl, gh);
            T::pipe_barrier(Pipe::V);
            if (!k.log) {  // p = dy y over dy's halves
              T::tile::mul(gl, gl, y0);
              T::tile::mul(gh, gh, y1);
              T::pipe_barrier(Pipe::V);
            } else {  // exp(y), issued with the tree's first level
              T::tile::exp(y0, y0);
              T::tile::exp(y1, y1);
            }
            row_tree(false, gl, gh, tr, rM, h, s0);
            T::pipe_barrier(Pipe::V);
            T::tile::add(s1, s0, 0.0);
            T::pipe_barrier(Pipe::V);
            T::tile::row_expand_mul(y0, y0, s0);  // s y, or s exp(y)
            T::tile::row_expand_mul(y1, y1, s1);
            T::pipe_barrier(Pipe::V);
            if (wide) {
              T::tile::sub(gl, gl, y0);
              T::tile::sub(gh, gh, y1);
              T::pipe_barrier(Pipe::V);
              narrow(dy, gl, gh);
            } else {
              T::tile::sub(c(dy, 0), gl, y0);
              T::tile::sub(c(dy, h), gh, y1);
            }
          };
        }

        auto load = [&](const std::vector<Buffer>& sl, Expr row0) {
          for (int i = 0; i < nin; ++i) T::copy(ins[i].at({row0, 0}), sl[i]);
        };
        for_each_row_tile_2slots(
            M, rM, num_blocks, cid, vid, [&](int sl, Expr row0) { load(slots[sl], row0); },
            [&](int sl, Expr row0) {
              compute(slots[sl], sl);
              set_then_wait(Pipe::V, Pipe::MTE3, sl);
              T::copy(slots[sl].back(), OUT.at({row0, 0}));
            },
            // The tail tile is zero-filled first so the rows past M hold zeros, never stale data.
            [&](Expr row0, Expr rows) {
              set_then_wait(Pipe::MTE3, Pipe::V, kEvTail);  // slot 0's last store has read it
              for (const Buffer& b : slots[0]) T::tile::fill(b, 0.0);
              set_then_wait(Pipe::V, Pipe::MTE2, kEvTail);
              for (int i = 0; i < nin; ++i)
                T::serial("j", rows, [&](Expr j) {
                  T::copy(ins[i].at({row0 + j, 0}), slots[0][i].region({j, 0}, {1, N}));
                });
              set_then_wait(Pipe::MTE2, Pipe::V, kEvTail);
              compute(slots[0], 2);
              set_then_wait(Pipe::V, Pipe::MTE3, kEvTail);
              T::serial("j", rows, [&](Expr j) {
                T::copy(slots[0].back().region({j, 0}, {1, N}), OUT.at({row0 + j, 0}));
              });
            });
      });
    });
  });
}

}  // namespace cann_ops_tilelang
