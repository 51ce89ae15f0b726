// The softmax / log-softmax kernel generator of cann_ops_tilelang (the tile-kernel layer,
// docs/ops.md), forward and backward. Developer mode: the kernels are written for whole tiles
// and the compiler makes every size right -- the last row tile's copies are clipped, rows that
// are not whole 32-byte blocks (N = 130 bf16) are padded copies, and the row reductions count
// the logical columns only, so no undefined lane reaches a result (docs/developer_mode.md,
// "Tails"); it also places the tiles, splits each row tile between the two AIVs and inserts
// every flag. Its Python twin, python/cann_ops_tilelang/kernels/softmax.py, builds the
// identical IR (python/tests/test_opslib_twin.py).
//
// Two schedules, chosen by the key (softmax_key, softmax.cpp): a row that fits UB is read once
// (chunk == cols); a longer row (vocabulary 129280) is read in chunks of bN columns twice:
// pass 1 keeps an online max m and sum s (s = s * exp(m_old - m_new) + sum exp(x - m_new)),
// pass 2 writes the result. The max used for subtraction is the lowest finite float where the
// running max is -inf, so a chunk (or row) of -inf logits gives exp(-inf) = 0, not
// exp(-inf + inf) = NaN; a whole row of -inf still gives NaN (0 / 0), as torch does.
#include <limits>
#include <optional>

#include "cann_ops_tilelang/softmax.h"
#include "tl/lang.h"

namespace cann_ops_tilelang {
namespace {

using tl::Buffer;
using tl::DType;
using tl::Expr;
namespace T = tl::T;
constexpr int kStages = 2;  // the next tile (or chunk) loads while this one computes

}  // namespace

tl::PrimFunc softmax_kernel(const SoftmaxKey& k) {
  if (k.resident) return softmax_resident_kernel(k);
  if (k.streamed) return softmax_streamed_kernel(k);
  if (k.split) return softmax_split_kernel(k);
  const DType dt = k.dtype, f32 = DType::Float32;
  const bool wide = dt != f32;  // 16-bit I/O: widened into fp32 fragments by a cast
  const int N = ir_size(k.cols, "cols"), bM = ir_size(k.rows_per_tile, "rows_per_tile"),
            bN = ir_size(k.chunk, "chunk"), blocks = ir_size(k.blocks, "blocks"),
            chunks = ir_size(k.chunks(), "chunks");
  const bool one_pass = chunks == 1;
  const std::string name =
      std::string(k.log ? "log_softmax" : "softmax") + (k.backward ? "_bwd" : "_fwd");

  auto M = T::dynamic("M");
  std::vector<tl::ParamRef> params;
  std::optional<Buffer> X, Y, DY, DX;
  if (!k.backward) {
    X = T::Tensor("X", {M, N}, dt);
    Y = T::Tensor("Y", {M, N}, dt);
    params = {*X, *Y};
  } else {
    Y = T::Tensor("Y", {M, N}, dt);
    DY = T::Tensor("DY", {M, N}, dt);
    DX = T::Tensor("DX", {M, N}, dt);
    params = {*Y, *DY, *DX};
  }

  // Past the tensor (rows past M, columns past N) a loaded tile holds the pad value: -inf for
  // the forward (nothing to the max, exp(-inf) = 0 to the sum), 0 for the backward's sums.
  const double pad = k.backward ? 0.0 : -std::numeric_limits<double>::infinity();
  return T::prim_func(name, params, [&] {
    auto row_tiles = T::let("row_tiles", ceildiv(M, bM));
    // Every launch has `blocks` blocks (a block past the row tiles runs no iteration): a
    // constant stride between a block's tiles lets the compiler prove that the iterations
    // write disjoint rows, so the two AIVs can take alternate tiles when a tile's rows cannot
    // be split between them.
    T::Kernel(
        blocks,
        [&](Expr cid) {
          // The tiles, named once for both passes: `*_in` as loaded, `*_f` its fp32 widening
          // (the same tile for fp32), `*_out` the narrowed result (x_f itself for fp32).
          auto in_tile = [&](const char* nm) { return T::alloc_shared(nm, {bM, bN}, dt); };
          auto f_tile = [&](const char* nm, const Buffer& in) {
            return wide ? T::alloc_fragment(nm, {bM, bN}, f32) : in;
          };
          std::optional<Buffer> x_in, x_f, e, y_in, y_f, dy_in, dy_f, dyy;
          if (!k.backward) {
            x_in = in_tile("x_in");
            x_f = f_tile("x_f", *x_in);
            e = k.log && one_pass ? T::alloc_fragment("e", {bM, bN}, f32) : *x_f;
          } else {
            y_in = in_tile("y_in");
            y_f = f_tile("y_f", *y_in);
            dy_in = in_tile("dy_in");
            dy_f = f_tile("dy_f", *dy_in);
            if (!k.log) dyy = T::alloc_fragment("dyy", {bM, bN}, f32);
          }
          const Buffer& res = k.backward ? *y_f : *x_f;  // the result, computed in place
          Buffer out = wide ? T::alloc_shared(k.backward ? "dx_out" : "y_out", {bM, bN}, dt) : res;
          auto s = T::alloc_fragment("s", {bM}, f32);  // the row sum
          std::optional<Buffer> m, ms, mc, rs, alpha;
          if (!k.backward) {
            m = T::alloc_fragment("m", {bM}, f32);    // the row max
            ms = T::alloc_fragment("ms", {bM}, f32);  // the max subtracted (finite)
            if (!one_pass) {
              mc = T::alloc_fragment("mc", {bM}, f32);        // the max after this chunk
              rs = T::alloc_fragment("rs", {bM}, f32);        // this chunk's sum
              alpha = T::alloc_fragment("alpha", {bM}, f32);  // the old sum's rescale
            }
          }
          auto load = [&](const Buffer& src, const Buffer& in, const Buffer& f, Expr row,
                          Expr col) {
            T::copy(src.at({row, col}), in, {.pad_value = pad});
            if (wide) T::Parallel({bM, bN}, [&](Expr i, Expr j) { f(i, j) = cast(f32, in(i, j)); });
          };
          auto store = [&](const Buffer& dst, Expr row, Expr col) {
            if (wide)
              T::Parallel({bM, bN}, [&](Expr i, Expr j) { out(i, j) = cast(dt, res(i, j)); });
            T::copy(out, dst.at({row, col}));
          };
          auto one = tl::imm(f32, 1.0);
          // max(m, lowest): -inf becomes the lowest finite float, so x - ms is -inf (exp 0) for
          // x = -inf instead of NaN; a finite or NaN max passes unchanged.
          auto safe_max = [&](const Buffer& mx) {
            T::tile::max(*ms, mx, tl::imm(f32, -std::numeric_limits<float>::max()));
          };

          // Forward, one pass: the whole row in UB.
          auto fwd_one = [&](Expr row) {
            const Buffer& xf = *x_f;
            load(*X, *x_in, xf, row, 0);
            T::reduce_max(xf, *m, -1);
            safe_max(*m);
            T::Parallel({bM, bN}, [&](Expr i, Expr j) { xf(i, j) = xf(i, j) - (*ms)(i); });
            T::tile::exp(*e, xf);
            T::reduce_sum(*e, s, -1);
            if (k.log) {
              T::tile::ln(s, s);
              T::Parallel({bM, bN}, [&](Expr i, Expr j) { xf(i, j) = xf(i, j) - s(i); });
            } else {
              T::Parallel(bM, [&](Expr i) { s(i) = one / s(i); });  // a divide per row only
              T::Parallel({bM, bN}, [&](Expr i, Expr j) { xf(i, j) = xf(i, j) * s(i); });
            }
            store(*Y, row, 0);
          };

          // Forward, two passes over column chunks: online max and sum, then the result.
          auto fwd_chunks = [&](Expr row) {
            const Buffer& xf = *x_f;
            T::fill(*m, tl::neg_inf(f32));
            T::clear(s);
            T::Pipelined("c", chunks, kStages, [&](Expr c) {
              load(*X, *x_in, xf, row, c * bN);
              T::reduce_max(xf, *mc, -1);
              T::tile::max(*mc, *mc, *m);
              safe_max(*mc);
              T::Parallel(bM, [&](Expr i) { (*alpha)(i) = (*m)(i) - (*ms)(i); });
              T::tile::exp(*alpha, *alpha);
              T::Parallel({bM, bN}, [&](Expr i, Expr j) { xf(i, j) = xf(i, j) - (*ms)(i); });
              T::tile::exp(xf, xf);
              T::reduce_sum(xf, *rs, -1);
              T::Parallel(bM, [&](Expr i) { s(i) = s(i) * (*alpha)(i) + (*rs)(i); });
              T::Parallel(bM, [&](Expr i) { (*m)(i) = (*mc)(i); });
            });
            safe_max(*m);
            if (k.log) {
              T::tile::ln(s, s);
              T::Parallel(bM, [&](Expr i) { s(i) = s(i) + (*ms)(i); });  // log-sum-exp
            } else {
              T::Parallel(bM, [&](Expr i) { s(i) = one / s(i); });
            }
            T::Pipelined("c", chunks, kStages, [&](Expr c) {
              load(*X, *x_in, xf, row, c * bN);
              if (k.log) {
                T::Parallel({bM, bN}, [&](Expr i, Expr j) { xf(i, j) = xf(i, j) - s(i); });
              } else {
                T::Parallel({bM, bN}, [&](Expr i, Expr j) { xf(i, j) = xf(i, j) - (*ms)(i); });
                T::tile::exp(xf, xf);
                T::Parallel({bM, bN}, [&](Expr i, Expr j) { xf(i, j) = xf(i, j) * s(i); });
              }
              store(*Y, row, c * bN);
            });
          };

          // Backward: the row sum (of dy * y, or of dy), then dx.
          auto bwd_load = [&](Expr row, Expr col) {
            load(*Y, *y_in, *y_f, row, col);
            load(*DY, *dy_in, *dy_f, row, col);
          };
          auto bwd_sum = [&](bool accumulate) {
            if (k.log) {
              T::reduce_sum(*dy_f, s, -1, !accumulate);
            } else {
              const Buffer &t = *dyy, &yf = *y_f, &gf = *dy_f;
              T::Parallel({bM, bN}, [&](Expr i, Expr j) { t(i, j) = gf(i, j) * yf(i, j); });
              T::reduce_sum(t, s, -1, !accumulate);
            }
          };
          auto bwd_dx = [&](Expr row, Expr col) {
            const Buffer &yf = *y_f, &gf = *dy_f;
            if (k.log) {
              T::tile::exp(yf, yf);
              T::Parallel({bM, bN}, [&](Expr i, Expr j) { yf(i, j) = gf(i, j) - yf(i, j) * s(i); });
            } else {
              T::Parallel({bM, bN},
                          [&](Expr i, Expr j) { yf(i, j) = yf(i, j) * (gf(i, j) - s(i)); });
            }
            store(*DX, row, col);
          };
          auto bwd_one = [&](Expr row) {
            bwd_load(row, 0);
            bwd_sum(false);
            bwd_dx(row, 0);
          };
          auto bwd_chunks = [&](Expr row) {
            T::clear(s);
            T::Pipelined("c", chunks, kStages, [&](Expr c) {
              bwd_load(row, c * bN);
              bwd_sum(true);
            });
            T::Pipelined("c", chunks, kStages, [&](Expr c) {
              bwd_load(row, c * bN);
              bwd_dx(row, c * bN);
            });
          };

          // This block's row tiles: cid, cid + blocks, ...
          auto tile = [&](Expr t) {
            Expr row = (cid + t * blocks) * bM;
            if (!k.backward)
              one_pass ? fwd_one(row) : fwd_chunks(row);
            else
              one_pass ? bwd_one(row) : bwd_chunks(row);
          };
          Expr my_tiles = ceildiv(max(row_tiles - cid, 0), blocks);
          if (one_pass)
            T::Pipelined("t", my_tiles, kStages, tile);
          else
            T::serial("t", my_tiles, tile);
        },
        {.threads = 2});
  });
}

}  // namespace cann_ops_tilelang
