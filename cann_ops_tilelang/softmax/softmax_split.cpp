// The softmax / log-softmax backward's split schedule (the key's `split`, chosen by softmax_key for
// 16-bit rows larger than UB whose half, one input of it, fits UB beside the chunk slots): the two
// AIVs of a block share each row, AIV v its columns [v N / 2, (v + 1) N / 2), and each holds its
// half of one input resident in UB while the other input streams through five chunk slots, so the
// resident input is read from GM once instead of twice (docs/ops.md, "Softmax on A2 against the
// roofline": the streamed backward re-reads y and dy, and a row of both, 517 KB at 129280 bf16,
// does not fit one AIV's UB). The inputs read once bypass L2 (CACHE_MODE_DISABLE), so what does
// enter it is what is reused: softmax's dy, whose second read then hits (docs/ops.md, "The split
// backward's L2 round"). The halves' partial sums meet through a GM workspace and a mode-1
// cross-core flag (the two AIVs' rendezvous, docs/hardware.md), and each AIV adds the two in the
// same order, so both halves scale by the same sum. Its Python twin is softmax_split_kernel in
// python/cann_ops_tilelang/kernels/softmax_split.py (identical IR, tested).
//
//   softmax      resident y; pass 1 s = sum(dy y) over dy's chunks, pass 2 dx = (dy - s) y over
//                them again (dy is read twice, y once)
//   log_softmax  resident dy; pass 1 s = sum(dy) from UB, pass 2 dx = dy - s exp(y) over y's
//                chunks (y and dy read once each: the two-reads-one-write bound)
//
// Synchronisation: the slots as softmax_streamed.cpp's (per slot s, ids 0, 1, 2, 7, 5: MTE2 -> V,
// V -> MTE3, MTE3 -> MTE2); the resident half in two pieces: V -> MTE2 (id 3) once a pass-2 step
// has widened a piece's last chunk, then the next row's load of that piece, MTE2 -> V (ids 3 and 6)
// waited before that row first reads it; the exchange, id 4: V -> MTE3 (this half's sum to the
// workspace), the cross flag (set on MTE3, mode 1), MTE2 -> V (both sums back); log-softmax's -s
// for Axpy, V -> S id 5, which an odd block's start-up stagger also takes once, before its first
// load (the scalar unit issues nothing until the fills are done). The workspace's two parities
// alternate by row, so a half's next write never meets its partner's read of the previous row's
// sums.
#include <functional>
#include <numeric>
#include <optional>
#include <utility>
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
using softmax_tree::cols;
// Chunk slots: the load of the step kAhead on is issued before this step's compute, into the slot
// stored kSlots - kAhead steps ago: its store is done (a wait_flag holds the scalar unit, so a
// reload of the slot stored just before would hold back this step's vector work). Three loads
// ahead, not two: a 6464-byte load's GM latency (~730 cycles) and its share of HBM outlast two
// ~400-cycle steps (docs/ops.md, "The split backward's L2 round": 4 slots / 2 ahead 680.0 us, 5 / 3
// 654.6, 5 / 4 658.1 at 1024 x 129280). A sixth slot does not fit UB beside the resident half.
constexpr int kSlots = 5, kAhead = 3;
// A slot's event id on its three pipe pairs: 0-2, 7, then 5 (3, 4 and 6 are the pieces' and the
// exchange's on MTE2 -> V; 5 on V -> S, log-softmax's -s, is another pair).
constexpr int slot_ev(int sl) {
  constexpr int ids[kSlots] = {0, 1, 2, 7, 5};
  return ids[sl];
}
constexpr int kEvRes = 3, kEvSum = 4, kEvNeg = 5;
constexpr int kStaggerFills = 5;     // per chunk of a half row: odd blocks' head start (below)
constexpr int kEvPiece[2] = {3, 6};  // the resident half's two pieces, MTE2 -> V
constexpr int kCrossId = 0;          // the halves' rendezvous (mode 1)

}  // namespace

tl::PrimFunc softmax_split_kernel(const SoftmaxKey& k) {
  const DType dt = k.dtype, f32 = DType::Float32;
  const bool log = k.log;
  const int N = ir_size(k.cols, "cols"), bN = ir_size(k.chunk, "chunk"),
            blocks = ir_size(k.blocks, "blocks"), H = N / 2, h = bN / 2;
  if (!k.backward || dt == f32 || N % 64 != 0 || bN % 32 != 0 || H % bN != 0)
    throw tl::Error(fmt::format(
        "softmax_split_kernel: the key must be a 16-bit backward whose half row is a multiple of "
        "32 columns divided by the chunk, a multiple of 32, got {}",
        k.str()));
  const int C = H / bN, spr = log ? C : 2 * C;  // chunks per half row, steps per row
  auto M = T::dynamic("M");
  auto Y = T::Tensor("Y", {M, N}, dt), DY = T::Tensor("DY", {M, N}, dt);
  auto DX = T::Tensor("DX", {M, N}, dt);
  // The resident input and the streamed one.
  const Buffer &RES = log ? DY : Y, &STR = log ? Y : DY;
  const std::string name = log ? "log_softmax_bwd" : "softmax_bwd";
  return T::prim_func(name, {Y, DY, DX}, [&] {
    // What is read or written once goes past L2 (AscendC's SetL2CacheHint, CACHE_MODE_DISABLE;
    // docs/calibration.md, "L2 cache hint"), so L2 holds what is reused. Softmax: y (resident,
    // read once) and dx bypass it and only dy enters it, so dy's second read, a few steps after
    // its first, hits (the model: L2's 192 MB against dy's 265 MB of footprint, not the three
    // tensors' 794 MB; the chip, whose L2 keeps recently used lines, would hit it anyway).
    // Log-softmax reads y and dy once: both bypass, and dx's writes are the footprint.
    if (log)
      T::annotate_l2_cache({{Y, tl::L2CacheMode::Disable}, {DY, tl::L2CacheMode::Disable}});
    else
      T::annotate_l2_cache({{Y, tl::L2CacheMode::Disable}, {DX, tl::L2CacheMode::Disable}});
    Expr num_blocks = min(Expr(blocks), M);
    // Each half's sum, 8 floats (one 32-byte block) at [block, row parity, half].
    auto ws = T::alloc_workspace("sums_ws", {Expr(blocks * 2 * 2 * 8)}, f32);
    T::Kernel(num_blocks, [&](Expr cid, Expr vid) {
      T::Scope(tl::Core::Vector, [&] {
        UbPlacer place;
        const int es = static_cast<int>(tl::dtype_bytes(dt));
        auto res = T::alloc_ub(log ? "dyr_ub" : "yr_ub", {1, H}, dt, place(int64_t{H} * es, 0));
        std::vector<Buffer> slots;
        for (int sl = 0; sl < kSlots; ++sl)
          slots.push_back(T::alloc_ub(fmt::format("{}{}_ub", log ? "y" : "dy", sl), {1, bN}, dt,
                                      place(int64_t{bN} * es, 256)));
        // The streamed chunk's fp32 halves and the resident chunk's, 256 bytes apart pairwise.
        const int64_t half = int64_t{h} * 4;
        auto e0 = T::alloc_ub("ef0_ub", {1, h}, f32, place(half, 0));
        auto e1 = T::alloc_ub("ef1_ub", {1, h}, f32, place(half, 256));
        auto r0 = T::alloc_ub("rf0_ub", {1, h}, f32, place(half, 256));
        auto r1 = T::alloc_ub("rf1_ub", {1, h}, f32, place(half, 0));
        auto st = [&](const char* nm, int64_t residue) {
          return T::alloc_ub(nm, {1}, f32, place(4, residue));
        };
        auto s = st("s_ub", 0);      // the running sum, then the row's
        auto cs = st("cs_ub", 256);  // a chunk's sum
        auto s0 = st("s0_ub", 256);  // s beside the halves it scales (log: -s, Axpy's alpha)
        auto s1 = st("s1_ub", 0);
        auto pw = T::alloc_ub("pw_ub", {8}, f32, place(32, 0));   // this half's sum, to GM
        auto pr = T::alloc_ub("pr_ub", {16}, f32, place(64, 0));  // both halves' sums, from GM
        auto c = [&](const Buffer& b, int c0, int w) { return cols(b, 1, c0, w); };
        auto widen = [&](tl::TileArg lo_src, tl::TileArg hi_src, const Buffer& lo,
                         const Buffer& hi) {
          T::tile::cast(lo, lo_src);
          T::tile::cast(hi, hi_src);
        };
        auto widen_res = [&](Expr chunk) {
          // The resident chunk's halves: columns chunk bN + (0, h) of the half row.
          T::tile::cast(r0, res.region({Expr(0), chunk * bN}, {1, h}));
          T::tile::cast(r1, res.region({Expr(0), chunk * bN + h}, {1, h}));
        };
        auto narrow = [&](const Buffer& x, const Buffer& lo, const Buffer& hi) {
          T::tile::cast(c(x, 0, h), lo, "CAST_RINT");
          T::tile::cast(c(x, h, h), hi, "CAST_RINT");
        };

        // This block's rows: cid, cid + blocks, ...; step n of them is row n / spr; softmax's
        // pass 1 for n % spr < C, chunk n % C.
        auto mine = T::let("mine", ceildiv(M - cid, num_blocks));
        auto row_of = [&](Expr n) { return cid + n / spr * num_blocks; };
        Expr col0 = vid * H;
        // A GM copy of w columns, split where it starts off the 512-byte request grid (as
        // softmax_streamed.cpp's gm_copy; docs/calibration.md, "GM alignment").
        auto gm_copy = [&](bool to_gm, const Buffer& gm, Expr row, Expr col, const Buffer& ub,
                           int w, int u0 = 0) {
          const int g = static_cast<int>(
              std::gcd(std::gcd(int64_t{N} * es, int64_t{H} * es), std::gcd(int64_t{w} * es, 512)));
          auto one = [&](Expr cc, int c0, int ww) {
            if (to_gm)
              T::copy(c(ub, u0 + c0, ww), gm.at({row, cc}));
            else
              T::copy(gm.at({row, cc}), c(ub, u0 + c0, ww));
          };
          if (g == 512) return one(col, 0, w);
          // The offset modulo 512 (rows are whole 512-byte multiples when N es is: then the
          // column alone), tested as an else-if chain, the last residue untested: the scalar
          // unit evaluates every test it reaches, and it issues every copy (docs/ops.md).
          Expr off = (int64_t{N} * es % 512 == 0 ? col * es : (row * N + col) * es) % 512;
          std::function<void(int)> from = [&](int r) {
            auto body = [&] {
              const int hd = (512 - r) % 512 / es;
              if (hd > 0) one(col, 0, hd);
              one(col + hd, hd, w - hd);
            };
            if (r + g >= 512) return body();
            T::If(off == r, body, [&] { from(r + g); });
          };
          from(0);
        };
        // The resident half in two pieces of whole chunks, [0, pb) and [pb, C) (one if pb is 0),
        // each with its own flag: the next row's first piece loads while this row's pass 2
        // finishes the second, and pass 1 starts on the first while the second arrives. Softmax
        // splits at a quarter (the second piece, loaded behind pass 1's dy chunks, stalls it
        // less than the first stalls pass 2, whose dx stores already fill HBM: 654.6 -> 645.0 us
        // at 1024 x 129280); log-softmax, whose pass 1 reads UB only, at a half.
        const int pb = log ? C / 2 : C / 4;
        std::vector<std::pair<int, int>> pieces;
        if (pb > 0) pieces.push_back({0, pb});
        pieces.push_back({pb, C});
        auto load_piece = [&](Expr row, int i) {
          const auto [a, b] = pieces[i];
          gm_copy(false, RES, row, a == 0 ? col0 : col0 + a * bN, res, (b - a) * bN, a * bN);
        };
        // Before chunk ch's first use in a row: the wait for its piece, at the piece's start.
        auto wait_piece = [&](Expr ch) {
          for (int i = 0; i < static_cast<int>(pieces.size()); ++i)
            T::If(ch == pieces[i].first, [&] { T::wait_flag(Pipe::MTE2, Pipe::V, kEvPiece[i]); });
        };
        auto load = [&](int sl, Expr n) {
          gm_copy(false, STR, row_of(n), col0 + n % C * bN, slots[sl], bN);
        };
        // Pass 1 over chunk ch: its sum into s (first: the row's first chunk).
        auto pass1 = [&](Expr ch, std::optional<Buffer> slot, Expr first) {
          T::pipe_barrier(Pipe::V);
          T::If(first, [&] { T::tile::fill(s, 0.0); });
          widen_res(ch);
          if (slot) widen(c(*slot, 0, h), c(*slot, h, h), e0, e1);
          T::pipe_barrier(Pipe::V);
          if (slot) {  // dy y over y's halves
            T::tile::mul(r0, r0, e0);
            T::tile::mul(r1, r1, e1);
            T::pipe_barrier(Pipe::V);
          }
          // The halves added, then one reduction (7 cycles a repeat, docs/calibration.md): no
          // tree, whose buffers UB has no room for beside the resident half.
          T::tile::add(r0, r0, r1);
          T::pipe_barrier(Pipe::V);
          T::reduce_sum(r0, cs, -1);
          T::pipe_barrier(Pipe::V);
          T::tile::add(s, s, cs);
        };
        // The row's sum from both halves, added in the same order on both AIVs.
        auto exchange = [&](Expr j) {
          Expr par = j % 2;
          T::pipe_barrier(Pipe::V);
          T::tile::add(pw.region({Expr(0)}, {1}), s, 0.0);
          set_then_wait(Pipe::V, Pipe::MTE3, kEvSum);
          T::copy(pw, ws.at({((cid * 2 + par) * 2 + vid) * 8}));
          T::set_cross_flag(Pipe::MTE3, kCrossId, 1);
          T::wait_cross_flag(kCrossId);
          T::copy(ws.at({(cid * 2 + par) * 16}), pr);
          set_then_wait(Pipe::MTE2, Pipe::V, kEvSum);
          T::tile::add(s, pr.region({Expr(0)}, {1}), pr.region({Expr(8)}, {1}));
          T::pipe_barrier(Pipe::V);
          if (!log) {
            T::tile::add(s0, s, 0.0);
            T::tile::add(s1, s, 0.0);
          } else {  // -s, read by the scalar unit in each pass-2 step (Axpy's alpha)
            T::tile::mul(s0, s, -1.0);
            set_then_wait(Pipe::V, Pipe::S, kEvNeg);
          }
        };
        auto pass2 = [&](Expr ch, const Buffer& slot, int id) {
          T::pipe_barrier(Pipe::V);
          widen_res(ch);
          widen(c(slot, 0, h), c(slot, h, h), e0, e1);
          T::pipe_barrier(Pipe::V);
          if (!log) {  // (dy - s) y: dy streamed (e), y resident (r)
            T::tile::row_expand_sub(e0, e0, s0);
            T::tile::row_expand_sub(e1, e1, s1);
            T::pipe_barrier(Pipe::V);
            T::tile::mul(e0, e0, r0);
            T::tile::mul(e1, e1, r1);
            T::pipe_barrier(Pipe::V);
            narrow(slot, e0, e1);
          } else {  // dy - s exp(y): y streamed (e), dy resident (r); one Axpy a half
            auto ns = T::let(id == 0 ? std::string("ns") : fmt::format("ns_{}", id), s0.load({0}));
            T::tile::exp(e0, e0);
            T::tile::exp(e1, e1);
            T::pipe_barrier(Pipe::V);
            T::tile::axpy(r0, e0, ns);
            T::tile::axpy(r1, e1, ns);
            T::pipe_barrier(Pipe::V);
            narrow(slot, r0, r1);
          }
        };
        auto work = [&](int sl, Expr n) {
          Expr kk = n % spr, j = n / spr;
          auto second = [&] {
            if (log)  // pass 1 from UB, then the exchange
              T::If(kk == 0, [&] {
                T::serial("p", C, [&](Expr p) {
                  wait_piece(p);
                  pass1(p, std::nullopt, p == 0);
                });
                exchange(j);
              });
            else
              T::If(kk == C, [&] { exchange(j); });
            Expr ch = log ? kk : kk - C;
            pass2(ch, slots[sl], sl);
            // A piece of the resident half is read: the next row's loads over it (a copy per
            // chunk, each after a V -> MTE2 wait in MTE2's queue, measured slower: docs/ops.md).
            T::If(j + 1 < mine, [&] {
              for (int i = 0; i < static_cast<int>(pieces.size()); ++i)
                T::If(ch == pieces[i].second - 1, [&] {
                  set_then_wait(Pipe::V, Pipe::MTE2, kEvRes);
                  load_piece(cid + (j + 1) * num_blocks, i);
                  T::set_flag(Pipe::MTE2, Pipe::V, kEvPiece[i]);
                });
            });
            set_then_wait(Pipe::V, Pipe::MTE3, slot_ev(sl));
            gm_copy(true, DX, row_of(n), col0 + ch * bN, slots[sl], bN);
          };
          if (log) {
            second();
          } else {
            T::If(
                kk < C,
                [&] {
                  wait_piece(kk);
                  pass1(kk, slots[sl], kk == 0);
                  set_then_wait(Pipe::V, Pipe::MTE3, slot_ev(sl));  // the slot is read
                },
                second);
          }
        };
        // Odd blocks start later, by kStaggerFills x C fills of a chunk's fp32 half (5,000 cycles
        // at 129280 columns, a fifth of a row), where every block has two rows or more. In phase,
        // every AIV's exchange and the restart of its stores after it (no GM traffic) fall at
        // once and HBM idles (14 % of the time at 1024 x 129280); half a chip out of phase fills
        // those gaps (docs/ops.md, "The split backward's L2 round": 645.0 -> 611.1 us; AscendC's
        // hardware constraints page advises staggered GM access, 错峰访问).
        T::If(M >= num_blocks * 2 && cid % 2 == 1, [&] {
          T::serial("stagger", kStaggerFills * C, [&](Expr) {
            T::pipe_barrier(Pipe::V);  // the fills write the same bytes
            T::tile::fill(e0, 0.0);
          });
          set_then_wait(Pipe::V, Pipe::S, kEvNeg);  // the scalar unit issues nothing before
        });
        T::tile::fill(pw, 0.0);  // the block's 7 padding floats, copied with the sum
        Expr total = mine * spr;
        for (int i = 0; i < static_cast<int>(pieces.size()); ++i) {
          load_piece(cid, i);
          T::set_flag(Pipe::MTE2, Pipe::V, kEvPiece[i]);
        }
        for (int sl = 0; sl < kSlots; ++sl)
          T::set_flag(Pipe::MTE3, Pipe::MTE2, slot_ev(sl));  // all free
        for (int sl = 0; sl < kAhead; ++sl)
          T::If(total > sl, [&] {
            T::wait_flag(Pipe::MTE3, Pipe::MTE2, slot_ev(sl));
            load(sl, Expr(sl));
            T::set_flag(Pipe::MTE2, Pipe::V, slot_ev(sl));
          });
        T::serial("i", ceildiv(total, kSlots), [&](Expr i) {
          for (int sl = 0; sl < kSlots; ++sl) {
            Expr n = i * kSlots + sl;
            const int ahead = (sl + kAhead) % kSlots;
            T::If(n < total, [&] {
              T::If(n + kAhead < total, [&] {
                T::wait_flag(Pipe::MTE3, Pipe::MTE2, slot_ev(ahead));
                load(ahead, n + kAhead);
                T::set_flag(Pipe::MTE2, Pipe::V, slot_ev(ahead));
              });
              T::wait_flag(Pipe::MTE2, Pipe::V, slot_ev(sl));
              work(sl, n);
              T::set_flag(Pipe::MTE3, Pipe::MTE2, slot_ev(sl));
            });
          }
        });
        for (int sl = 0; sl < kSlots; ++sl) T::wait_flag(Pipe::MTE3, Pipe::MTE2, slot_ev(sl));
      });
    });
  });
}

}  // namespace cann_ops_tilelang
