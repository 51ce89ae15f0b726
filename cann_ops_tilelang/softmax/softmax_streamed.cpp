// The softmax / log-softmax kernels' streamed schedule, forward and backward (the key's
// `streamed`, chosen by softmax_key for rows larger than UB, N a multiple of 32 with a wide
// enough divisor for the chunk): a row is read in bN-column chunks twice, pass 1 the row
// statistics, pass 2 the result, and every chunk load is prefetched across chunks, passes
// and rows: a worker's chunk steps (2 N / bN per row) go through three UB slots, the load of
// the step after next issued before this step's compute, so two loads are in flight while the
// vector pipe works: with two slots the GM latency and HBM share of one chunk's load outlasted
// its compute (docs/ops.md, "Softmax and log-softmax"). A worker
// takes whole rows (rM = 1: no tail tile). Its Python twin is softmax_streamed_kernel in
// python/cann_ops_tilelang/kernels/softmax_streamed.py (identical IR, tested).
//
//   softmax      pass 1  s = sum exp(x), no max subtracted (checked once a row: finish; out of
//                        range, the max-subtracted fallback), summed elementwise in two running
//                        sums at the tree's last width and reduced once a row
//                pass 2  y = exp(x - log s); the row's last chunk first, as exp(x) exp(-log s)
//                        from the exp(x) pass 1 left in UB
//   log_softmax  pass 2  y = x - log s
//   backward     pass 1  s = sum(dy y) (softmax), sum(dy) (log-softmax: dy alone is loaded)
//                pass 2  dx = (dy - s) y, or dy - s exp(y) (an Axpy with alpha = -s)
// Chunk copies that start off the 512-byte GM grid are split at it (gm_copy).
//
// The fallback's max is at least the lowest float, so -inf logits give exp(-inf) = 0, never
// exp(-inf + inf) = NaN; a row of nothing but -inf is NaN (log 0 = -inf), as torch gives. Each
// chunk is widened into two fp32 column halves 256 bytes apart (no bank-group conflict) and
// reduced by softmax_tree.h's tree.
//
// Synchronisation, per slot s (ids 0, 1, 2): its load MTE2 -> V; V -> MTE3 once its compute is
// done (then its store, in pass 2); the slot is free for its next load after that, MTE3 ->
// MTE2, set once for every slot before the loop and waited once after it. Steps go in threes,
// so each slot's code and event ids are constants.
#include <functional>
#include <limits>
#include <numeric>
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
constexpr int kSlots = 3;       // chunk slots: two loads in flight beside the compute
constexpr int kEvFallback = 3;  // the forward's check (V -> S) and fallback loads
// The forward's pass 1 sums exp(x) with no max subtracted; its log must lie in [lo, hi).
constexpr double kLogLo = -40.0, kLogHi = 88.0;
// The softmax forward's cached first pass-2 step multiplies by exp(-log s): below this log s
// that factor is a normal float (fp32's smallest normal is e^-87.3).
constexpr double kCachedHi = 80.0;

}  // namespace

tl::PrimFunc softmax_streamed_kernel(const SoftmaxKey& k) {
  const DType dt = k.dtype, f32 = DType::Float32;
  const bool wide = dt != f32, bwd = k.backward, log = k.log;
  const int N = ir_size(k.cols, "cols"), bN = ir_size(k.chunk, "chunk"),
            blocks = ir_size(k.blocks, "blocks"), h = bN / 2, q = h / 2;
  if (bN % 32 != 0 || N % bN != 0 || k.rows_per_tile != 1)
    throw tl::Error(
        fmt::format("softmax_streamed_kernel: the key must have one row per tile and "
                    "chunks of a multiple of 32 columns dividing N, got {}",
                    k.str()));
  const int C = N / bN, steps_per_row = 2 * C;
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
  const std::string name = std::string(log ? "log_softmax" : "softmax") + (bwd ? "_bwd" : "_fwd");
  return T::prim_func(name, params, [&] {
    Expr num_blocks = min(Expr(blocks), ceildiv(M, 2));
    T::Kernel(num_blocks, [&](Expr cid, Expr vid) {
      T::Scope(tl::Core::Vector, [&] {
        UbPlacer place;
        const int64_t chunk = int64_t{bN} * tl::dtype_bytes(dt), half = int64_t{h} * 4;
        // Slot s holds input i at slots[s][i]; the result overwrites the last input.
        const int nin = static_cast<int>(ins.size());
        std::vector<Buffer> slots[kSlots];
        for (int sl = 0; sl < kSlots; ++sl)
          for (int i = 0; i < nin; ++i)
            slots[sl].push_back(
                T::alloc_ub(fmt::format("{}{}_ub", bwd ? (i ? "dy" : "y") : "x", sl), {1, bN}, dt,
                            place(chunk, 256 * i)));
        // The fp32 halves: x (forward); y and dy (backward), dy's 256 bytes from y's.
        auto e0 = T::alloc_ub(bwd ? "yf0_ub" : "e0_ub", {1, h}, f32, place(half, 0));
        auto e1 = T::alloc_ub(bwd ? "yf1_ub" : "e1_ub", {1, h}, f32, place(half, 256));
        std::optional<Buffer> g0, g1;
        if (bwd) {
          g0 = T::alloc_ub("gf0_ub", {1, h}, f32, place(half, 256));
          g1 = T::alloc_ub("gf1_ub", {1, h}, f32, place(half, 0));
        }
        const Tree tr = alloc_tree(place, 1, q);
        // Row statistics, one value each; a row-expand's operand sits 256 bytes from its half.
        auto st = [&](const char* nm, int64_t residue) {
          return T::alloc_ub(nm, {1}, f32, place(4, residue));
        };
        auto c = [&](const Buffer& b, int c0) { return cols(b, 1, c0, h); };
        // The chunk's halves in fp32 (a cast; an add of 0 copies fp32), and back over the slot.
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
          if (wide) {
            T::tile::cast(c(x, 0), lo, "CAST_RINT");
            T::tile::cast(c(x, h), hi, "CAST_RINT");
          } else {
            T::tile::add(c(x, 0), lo, 0.0);
            T::tile::add(c(x, h), hi, 0.0);
          }
        };
        auto lowest = tl::imm(f32, -std::numeric_limits<float>::max());
        // pass1(slot, first): this chunk into the row statistics (first: the row's first chunk);
        // finish(): the statistics pass 2 uses; pass2(slot): the result over the slot.
        std::function<void(const std::vector<Buffer>&, Expr)> pass1;
        // finish(row, slot id, slot): the softmax forward's also does pass 2's first step.
        std::function<void(Expr, int, const std::vector<Buffer>&)> finish;
        std::function<void(const std::vector<Buffer>&, int)> pass2;  // its slot's buffers, id

        if (!bwd) {
          auto s = st("s_ub", 0);      // the running sum of exp(x), then its log
          auto cs = st("cs_ub", 256);  // the last chunk's sum
          auto mo = st("mo_ub", 0);    // the fallback's row max (at least the lowest float)
          auto mc = st("mc_ub", 256);  // the fallback's piece max, or its piece sum
          auto r0 = st("r0_ub", 256);  // log(sum exp(x)), subtracted in pass 2
          auto r1 = st("r1_ub", 0);
          // The row's running sum of exp(x), elementwise at the tree's last width (row_tree_acc:
          // no reduction a chunk), reduced once a row by finish.
          const int wl = tree_last_width(q);
          auto acc0 = T::alloc_ub("acc0_ub", {1, wl}, f32, place(int64_t{wl} * 4, 256));
          auto acc1 = T::alloc_ub("acc1_ub", {1, wl}, f32, place(int64_t{wl} * 4, 0));
          // exp(-log s) = 1 / s beside each half (softmax: pass 2's first step, cached).
          auto q0 = st("q0_ub", 256);
          auto q1 = st("q1_ub", 0);
          // The fallback's pieces of h columns: 16-bit loads land in fb (its own bytes: UB has
          // room for h 16-bit columns beside the slots) and are widened into e0; fp32 loads
          // land in e0.
          std::optional<Buffer> fb;
          if (wide)
            fb = T::alloc_ub("fb_ub", {1, h}, dt, place(int64_t{h} * tl::dtype_bytes(dt), 0));
          pass1 = [=](const std::vector<Buffer>& sl, Expr first) {
            const Buffer& x = sl[0];
            T::pipe_barrier(Pipe::V);  // the previous step's reads of the halves are done
            T::If(first, [&] {         // beside the widening
              T::tile::fill(acc0, 0.0);
              T::tile::fill(acc1, 0.0);
            });
            widen(x, e0, e1);
            T::pipe_barrier(Pipe::V);
            T::tile::exp(e0, e0);  // no max subtracted: finish checks the sum
            T::tile::exp(e1, e1);
            T::pipe_barrier(Pipe::V);
            row_tree_acc(e0, e1, tr, 1, h, acc0, acc1);
          };
          // The rare row whose sum of exp(x) overflows, underflows or is NaN: its statistics
          // again, max-subtracted, in two sweeps over the row in pieces of h columns loaded
          // synchronously beside the slots' loads (event id kEvFallback on both pipe pairs).
          auto fallback = [=](Expr row) {
            T::tile::fill(mo, lowest);
            T::tile::fill(s, 0.0);
            T::set_flag(Pipe::V, Pipe::MTE2, kEvFallback);
            for (int sweep = 0; sweep < 2; ++sweep)
              T::serial("p", 2 * C, [&](Expr p) {
                T::wait_flag(Pipe::V, Pipe::MTE2, kEvFallback);
                T::copy(ins[0].at({row, p * h}), wide ? *fb : e0);
                set_then_wait(Pipe::MTE2, Pipe::V, kEvFallback);
                if (wide) {
                  T::tile::cast(e0, *fb);
                  T::pipe_barrier(Pipe::V);
                }
                if (sweep == 0) {
                  T::reduce_max(e0, mc, -1);
                  T::pipe_barrier(Pipe::V);
                  T::tile::max(mo, mo, mc);  // NaN stays NaN; -inf pieces keep mo
                } else {
                  T::tile::row_expand_sub(e0, e0, mo);
                  T::pipe_barrier(Pipe::V);
                  T::tile::exp(e0, e0);
                  T::pipe_barrier(Pipe::V);
                  T::reduce_sum(e0, mc, -1);
                  T::pipe_barrier(Pipe::V);
                  T::tile::add(s, s, mc);
                }
                T::set_flag(Pipe::V, Pipe::MTE2, kEvFallback);
              });
            T::wait_flag(Pipe::V, Pipe::MTE2, kEvFallback);
            T::pipe_barrier(Pipe::V);
            T::tile::ln(s, s);
            T::pipe_barrier(Pipe::V);
            T::tile::add(r0, mo, s);
            T::tile::add(r1, mo, s);
          };
          auto fwd_pass2 = [=](const std::vector<Buffer>& sl, int) {
            const Buffer& x = sl[0];
            T::pipe_barrier(Pipe::V);
            widen(x, e0, e1);
            T::pipe_barrier(Pipe::V);
            T::tile::row_expand_sub(e0, e0, r0);
            T::tile::row_expand_sub(e1, e1, r1);
            T::pipe_barrier(Pipe::V);
            if (!log) {
              T::tile::exp(e0, e0);
              T::tile::exp(e1, e1);
              T::pipe_barrier(Pipe::V);
            }
            narrow(x, e0, e1);
          };
          // Softmax's pass 2 takes the row's last chunk first (chunk_of below): its exp(x) is
          // still in e0, e1 from pass 1, so y = exp(x) / s is one row-expand multiply by
          // exp(-log s) (no widening, subtraction nor exp: 10 of its 14 cycles per 64
          // elements). Where log s >= kCachedHi (s's reciprocal near fp32's normal range) or the
          // fallback ran (e0 holds its pieces), the step is the plain one.
          auto cached_step = [=](const std::vector<Buffer>& sl) {
            T::tile::mul(q0, s, -1.0);
            T::tile::mul(q1, s, -1.0);
            T::pipe_barrier(Pipe::V);
            T::tile::exp(q0, q0);
            T::tile::exp(q1, q1);
            T::pipe_barrier(Pipe::V);
            T::tile::row_expand_mul(e0, e0, q0);
            T::tile::row_expand_mul(e1, e1, q1);
            T::pipe_barrier(Pipe::V);
            narrow(sl[0], e0, e1);
          };
          finish = [=](Expr row, int sl, const std::vector<Buffer>& slot) {
            T::pipe_barrier(Pipe::V);
            T::tile::add(tr.red, acc0, acc1);
            T::pipe_barrier(Pipe::V);
            T::reduce_sum(tr.red, s, -1);
            T::pipe_barrier(Pipe::V);
            T::tile::ln(s, s);
            T::pipe_barrier(Pipe::V);  // r0, r1 or the fallback's fills follow on V
            // Without the max subtracted the sum is exact enough when its log lies in
            // [kLogLo, kLogHi): finite (each exp(x) too) and at least e^-40, so the terms lost
            // below fp32's normal range weigh less than 1e-15 of it. Else (an overflow, a row of
            // very negative or -inf logits) the fallback. A NaN sum stays on this path: a NaN
            // logit makes the row NaN either way (so does the NaN a timing-only launch, which
            // computes no data, reads from its poisoned UB: it times the common case).
            set_then_wait(Pipe::V, Pipe::S, kEvFallback);
            // A let: the scalar load at a cycle of its own (docs/virtual_npu.md, "Timed mode").
            // Named as the twin's parser names the three slots' copies.
            auto lse =
                T::let(sl == 0 ? std::string("lse") : fmt::format("lse_{}", sl), s.load({0}));
            T::If(
                lse < Expr(kLogLo) || lse >= Expr(kLogHi),
                [&] {
                  fallback(row);
                  if (!log) fwd_pass2(slot, sl);
                },
                [&] {
                  T::tile::add(r0, s, 0.0);
                  T::tile::add(r1, s, 0.0);
                  // A NaN log s (a NaN row; a timing-only launch's poisoned UB) takes the
                  // cached step: the row is NaN either way.
                  if (!log)
                    T::If(
                        lse >= Expr(kCachedHi), [&] { fwd_pass2(slot, sl); },
                        [&] { cached_step(slot); });
                });
          };
          pass2 = fwd_pass2;
        } else {
          auto s = st("s_ub", 0);      // the running sum
          auto cs = st("cs_ub", 256);  // this chunk's sum
          // s beside the halves it scales: dy's (softmax: dy - s) or y's (log: s exp(y)).
          auto s0 = st("s0_ub", log ? 256 : 0);
          auto s1 = st("s1_ub", log ? 0 : 256);
          const Buffer &y0 = e0, &y1 = e1, &gl = *g0, &gh = *g1;
          pass1 = [=](const std::vector<Buffer>& sl, Expr first) {
            T::pipe_barrier(Pipe::V);
            T::If(first, [&] { T::tile::fill(s, 0.0); });
            if (!log) widen(sl[0], y0, y1);
            widen(sl[1], gl, gh);
            T::pipe_barrier(Pipe::V);
            if (!log) {  // dy y over dy's halves
              T::tile::mul(gl, gl, y0);
              T::tile::mul(gh, gh, y1);
              T::pipe_barrier(Pipe::V);
            }
            row_tree(false, gl, gh, tr, 1, h, cs);
            T::pipe_barrier(Pipe::V);
            T::tile::add(s, s, cs);
          };
          finish = [=](Expr, int, const std::vector<Buffer>&) {
            T::pipe_barrier(Pipe::V);
            if (!log) {
              T::tile::add(s0, s, 0.0);
              T::tile::add(s1, s, 0.0);
            } else {  // -s, read by the scalar unit in each pass-2 step (Axpy's alpha)
              T::tile::mul(s0, s, -1.0);
              set_then_wait(Pipe::V, Pipe::S, kEvFallback);
            }
          };
          pass2 = [=](const std::vector<Buffer>& sl, int id) {
            T::pipe_barrier(Pipe::V);
            widen(sl[0], y0, y1);
            widen(sl[1], gl, gh);
            T::pipe_barrier(Pipe::V);
            if (!log) {  // (dy - s) y
              T::tile::row_expand_sub(gl, gl, s0);
              T::tile::row_expand_sub(gh, gh, s1);
              T::pipe_barrier(Pipe::V);
              T::tile::mul(gl, gl, y0);
              T::tile::mul(gh, gh, y1);
            } else {  // dy - s exp(y): one Axpy (dst += alpha src) a half, alpha = -s
              // A let: the scalar load at a cycle of its own, named as the twin's parser names
              // the three slots' copies (finish's V -> S wait orders it after -s is written).
              auto ns =
                  T::let(id == 0 ? std::string("ns") : fmt::format("ns_{}", id), s0.load({0}));
              T::tile::exp(y0, y0);
              T::tile::exp(y1, y1);
              T::pipe_barrier(Pipe::V);
              T::tile::axpy(gl, y0, ns);
              T::tile::axpy(gh, y1, ns);
            }
            T::pipe_barrier(Pipe::V);
            narrow(sl[1], gl, gh);
          };
        }

        // This worker's rows: worker, worker + workers, ...; step n of them is row n / (2 C),
        // pass 1 for n % (2 C) < C, chunk n % C.
        auto workers = T::let("workers", num_blocks * 2);
        auto worker = T::let("worker", cid * 2 + vid);
        auto mine = T::let("mine", ceildiv(max(M - worker, 0), workers));
        auto row_of = [&](Expr n) { return worker + n / steps_per_row * workers; };
        // The chunk of step n: pass 1 in order; the softmax forward's pass 2 the last chunk
        // first (its exp(x) is still in UB from pass 1), then 0, 1, ...
        const bool cached = !bwd && !log;
        auto chunk_of = [&](Expr n) {
          Expr kk = n % steps_per_row;
          return cached ? (kk - kk / C) % C : n % C;
        };
        // A chunk's GM copy (a load, or the store of the result when to_gm), split where the
        // chunk starts off the 512-byte request grid: a copy off the grid moves at 70 % of the
        // bandwidth (docs/calibration.md, "GM alignment"; asc-devkit's best practice "GM地址尽量
        // 512B对齐"), so the head up to the next 512-byte boundary goes alone and the rest of
        // the chunk starts on the grid. The tensors' bases are aligned; a chunk's offset
        // (row N + col) es modulo 512 is one of the multiples of g below, one `if` each.
        const int es = static_cast<int>(tl::dtype_bytes(dt));
        const int g = static_cast<int>(std::gcd(std::gcd(int64_t{N} * es, chunk), int64_t{512}));
        auto gm_copy = [&](bool to_gm, const Buffer& gm, Expr row, Expr col, const Buffer& ub) {
          auto one = [&](Expr c, int c0, int w) {
            if (to_gm)
              T::copy(cols(ub, 1, c0, w), gm.at({row, c}));
            else
              T::copy(gm.at({row, c}), cols(ub, 1, c0, w));
          };
          if (g == 512) return one(col, 0, bN);
          for (int r = 0; r < 512; r += g)
            T::If((row * N + col) * es % 512 == r, [&] {
              const int hd = (512 - r) % 512 / es;  // the head's columns
              if (hd > 0) one(col, 0, hd);
              one(col + hd, hd, bN - hd);
            });
        };
        // pass1: the step's pass where it is known here (the first steps: no kernel `if`).
        auto load = [&](int sl, Expr n, std::optional<bool> pass1 = std::nullopt) {
          Expr row = row_of(n), col = chunk_of(n) * bN;
          auto all = [&] {
            for (int i = 0; i < nin; ++i) gm_copy(false, ins[i], row, col, slots[sl][i]);
          };
          auto dy_only = [&] { gm_copy(false, ins[1], row, col, slots[sl][1]); };
          if (!(bwd && log))
            all();
          else if (pass1)  // pass 1 reads dy alone
            *pass1 ? dy_only() : all();
          else
            T::If(n % steps_per_row < C, dy_only, all);
        };
        auto work = [&](int sl, Expr n) {
          Expr kk = n % steps_per_row;
          T::If(
              kk < C,
              [&] {
                pass1(slots[sl], kk == 0);
                set_then_wait(Pipe::V, Pipe::MTE3, sl);  // the slot is read: free after MTE3's wait
              },
              [&] {
                if (cached)  // finish does the first pass-2 step
                  T::If(
                      kk == C, [&] { finish(row_of(n), sl, slots[sl]); },
                      [&] { pass2(slots[sl], sl); });
                else {
                  T::If(kk == C, [&] { finish(row_of(n), sl, slots[sl]); });
                  pass2(slots[sl], sl);
                }
                set_then_wait(Pipe::V, Pipe::MTE3, sl);
                gm_copy(true, OUT, row_of(n), (cached ? chunk_of(n) : kk - C) * bN,
                        slots[sl].back());
              });
        };
        Expr total = mine * steps_per_row;
        for (int sl = 0; sl < kSlots; ++sl) T::set_flag(Pipe::MTE3, Pipe::MTE2, sl);  // all free
        for (int sl = 0; sl + 1 < kSlots; ++sl)
          T::If(total > sl, [&] {
            T::wait_flag(Pipe::MTE3, Pipe::MTE2, sl);
            load(sl, Expr(sl), sl % steps_per_row < C);
            T::set_flag(Pipe::MTE2, Pipe::V, sl);
          });
        T::serial("i", ceildiv(total, kSlots), [&](Expr i) {
          for (int sl = 0; sl < kSlots; ++sl) {
            Expr n = i * kSlots + sl;
            const int ahead = (sl + kSlots - 1) % kSlots;
            T::If(n < total, [&] {
              T::If(n + (kSlots - 1) < total, [&] {
                T::wait_flag(Pipe::MTE3, Pipe::MTE2, ahead);
                load(ahead, n + (kSlots - 1));
                T::set_flag(Pipe::MTE2, Pipe::V, ahead);
              });
              T::wait_flag(Pipe::MTE2, Pipe::V, sl);
              work(sl, n);
              T::set_flag(Pipe::MTE3, Pipe::MTE2, sl);
            });
          }
        });
        for (int sl = 0; sl < kSlots; ++sl) T::wait_flag(Pipe::MTE3, Pipe::MTE2, sl);
      });
    });
  });
}

}  // namespace cann_ops_tilelang
