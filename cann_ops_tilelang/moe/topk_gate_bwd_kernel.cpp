// The top-k gate's backward kernel generator (the tile-kernel layer, docs/ops.md "MoE top-k
// gate", backward). Expert mode, vector cores only. Given the gradient of the weights dW [T, k],
// the logits and the forward's indices, it recomputes the scores s, fetches the chosen scores
// w with T::tile::gather (as the forward does), turns dW into the gradient of w (through the
// normalisation and the routed scale), scatters it into a dense [T, E] row of score gradients
// on the scalar unit (k adds per token: the tile language has no vector scatter), and applies
// the scoring function's derivative. The selection (the bias, the sort) has no gradient: the
// indices are given. Twin (identical IR): python/cann_ops_tilelang/kernels/topk_gate_bwd.py.
//
// Work split as the forward (topk_gate_kernel.cpp): rM-token tiles dealt round-robin to the
// AIVs, T the dynamic symbol bound from Z; the tail tile is zero-filled (its pad rows gather
// expert 0 and carry a zero gradient) and loaded and stored row by row.
#include "cann_ops_tilelang/moe.h"
#include "tl/lang.h"

namespace cann_ops_tilelang {
namespace {

using tl::Buffer;
using tl::Expr;
using tl::Pipe;
namespace T = tl::T;
constexpr int kEvIn = 0, kEvOut = 1, kEvScalar = 2;

}  // namespace

tl::PrimFunc topk_gate_bwd_kernel(const TopkGateKey& key) {
  using tl::DType;
  const DType dt = key.dtype, f32 = DType::Float32, i32 = DType::Int32;
  const bool wide = dt != f32;
  const int E = ir_size(key.experts, "experts"), K = ir_size(key.k, "k"),
            rM = ir_size(key.rows_per_tile, "rows_per_tile"),
            blocks = ir_size(key.blocks, "blocks");

  auto M = T::dynamic("M");
  auto Z = T::Tensor("Z", {M, E}, dt);
  auto DW = T::Tensor("DW", {M, K}, f32);
  auto Idx = T::Tensor("Idx", {M, K}, i32);
  auto DZ = T::Tensor("DZ", {M, E}, dt);
  auto scale = T::Scalar("scale", f32);

  return T::prim_func("topk_gate_bwd", {Z, DW, Idx, DZ, scale}, [&] {
    Expr num_blocks = min(Expr(blocks), ceildiv(M, rM));
    T::Kernel(num_blocks, [&](Expr cid, Expr vid) {
      T::Scope(tl::Core::Vector, [&] {
        auto s = T::alloc_ub("s_ub", {rM, E}, f32);               // scores
        Buffer zb = wide ? T::alloc_ub("z_ub", {rM, E}, dt) : s;  // logits as loaded
        auto ds = T::alloc_ub("ds_ub", {rM, E}, f32);             // d loss / d s, then d z
        auto tmp = T::alloc_ub("tmp_ub", {rM, E}, f32);
        Buffer ob = wide ? T::alloc_ub("o_ub", {rM, E}, dt) : ds;  // d z as stored
        auto g = T::alloc_ub("g_ub", {rM, K}, f32);                // dW, then d loss / d w
        auto gw = T::alloc_ub("gw_ub", {rM, K}, f32);
        auto idx = T::alloc_ub("idx_ub", {rM, K}, i32);
        auto off = T::alloc_ub("off_ub", {rM, K}, i32);  // byte offsets into s
        auto w = T::alloc_ub("w_ub", {rM, K}, f32);
        auto den = T::alloc_ub("den_ub", {rM}, f32);
        auto dot = T::alloc_ub("dot_ub", {rM}, f32);
        auto offu = T::view("offu_ub", off, DType::UInt32);
        auto ev = T::alloc_var("expert", i32);

        auto tile_rows = [&](Expr row0, std::optional<Expr> nrows) {
          set_then_wait(Pipe::V, Pipe::MTE2, kEvIn);  // the last V op has read zb, g and idx
          if (nrows) {
            // Rows past T: zeros, not stale data (expert 0 with a zero gradient).
            T::tile::fill(zb, 0.0);
            T::tile::fill(g, 0.0);
            T::tile::fill(idx, 0);
            set_then_wait(Pipe::V, Pipe::MTE2, kEvIn);
            T::serial("j", *nrows, [&](Expr j) {
              T::copy(Z.at({row0 + j, 0}), zb.region({j, 0}, {1, E}));
              T::copy(DW.at({row0 + j, 0}), g.region({j, 0}, {1, K}));
              T::copy(Idx.at({row0 + j, 0}), idx.region({j, 0}, {1, K}));
            });
          } else {
            // A full tile is never clipped; the pad value says what a clipped row would hold.
            T::copy(Z.at({row0, 0}), zb, {.pad_value = 0.0});
            T::copy(DW.at({row0, 0}), g, {.pad_value = 0.0});
            T::copy(Idx.at({row0, 0}), idx, {.pad_value = 0.0});
          }
          set_then_wait(Pipe::MTE2, Pipe::V, kEvIn);
          if (wide) {
            T::tile::cast(s, zb);
            T::pipe_barrier(Pipe::V);
          }
          if (key.scoring == GateScoring::Sigmoid) {
            T::tile::sigmoid(s, s);
            T::pipe_barrier(Pipe::V);
          } else if (key.scoring == GateScoring::Softmax) {
            T::reduce_max(s, den, -1);
            T::pipe_barrier(Pipe::V);
            T::tile::row_expand_sub(s, s, den);
            T::pipe_barrier(Pipe::V);
            T::tile::exp(s, s);
            T::pipe_barrier(Pipe::V);
            T::reduce_sum(s, den, -1);
            T::pipe_barrier(Pipe::V);
            T::tile::row_expand_div(s, s, den);
            T::pipe_barrier(Pipe::V);
          }
          T::tile::mul(off, idx, 4);
          T::tile::mul(g, g, scale);  // d loss / d (w / D) = scale dW
          T::pipe_barrier(Pipe::V);
          if (key.normalize) {
            // W_j = w_j / D, D = 1e-20 + sum w: d w_i = (g_i - sum_j g_j w_j / D) / D.
            T::serial("r", rM, [&](Expr r) {
              T::tile::gather(w.region({r, 0}, {1, K}), s.region({r, 0}, {1, E}),
                              offu.region({r, 0}, {1, K}));
            });
            T::pipe_barrier(Pipe::V);
            T::reduce_sum(w, den, -1);
            T::tile::mul(gw, g, w);
            T::pipe_barrier(Pipe::V);
            T::tile::add(den, den, 1e-20);
            T::reduce_sum(gw, dot, -1);
            T::pipe_barrier(Pipe::V);
            T::tile::div(dot, dot, den);
            T::pipe_barrier(Pipe::V);
            T::tile::row_expand_sub(g, g, dot);
            T::pipe_barrier(Pipe::V);
            T::tile::row_expand_div(g, g, den);
            T::pipe_barrier(Pipe::V);
          }
          set_then_wait(Pipe::MTE3, Pipe::V, kEvOut);  // the previous store has read ob (ds)
          T::tile::fill(ds, 0.0);
          // The scatter: ds[r, idx[r, j]] += g[r, j] on the scalar unit, after the V pipe has
          // written ds, g and off (idx is read as the V pipe left it).
          set_then_wait(Pipe::V, Pipe::S, kEvScalar);
          T::serial("r", rM, [&](Expr r) {
            T::serial("j", K, [&](Expr j) {
              // A scalar load of its own, then the indexed add. The clamp never changes a
              // valid index (topk_gate_backward refuses any outside [0, E) on the host); it
              // keeps a timing-only launch, which skips the copies' data (docs/virtual_npu.md)
              // and so reads an unwritten idx, inside the row.
              T::assign(ev, max(min(idx(r, j), E - 1), 0));
              T::store(ds, {r, ev()}, ds(r, ev()) + g(r, j));
            });
          });
          set_then_wait(Pipe::S, Pipe::V, kEvScalar);
          if (key.scoring == GateScoring::Sigmoid) {
            // s' = s (1 - s)
            T::tile::mul(tmp, s, s);
            T::pipe_barrier(Pipe::V);
            T::tile::sub(tmp, s, tmp);
            T::pipe_barrier(Pipe::V);
            T::tile::mul(ds, ds, tmp);
            T::pipe_barrier(Pipe::V);
          } else if (key.scoring == GateScoring::Softmax) {
            // dz = s (ds - sum_e ds_e s_e)
            T::tile::mul(tmp, ds, s);
            T::pipe_barrier(Pipe::V);
            T::reduce_sum(tmp, dot, -1);
            T::pipe_barrier(Pipe::V);
            T::tile::row_expand_sub(ds, ds, dot);
            T::pipe_barrier(Pipe::V);
            T::tile::mul(ds, ds, s);
            T::pipe_barrier(Pipe::V);
          }
          if (wide) {
            T::tile::cast(ob, ds, "CAST_RINT");
            T::pipe_barrier(Pipe::V);
          }
          set_then_wait(Pipe::V, Pipe::MTE3, kEvOut);
          if (!nrows) {
            T::copy(ob, DZ.at({row0, 0}));
          } else {
            T::serial("j", *nrows, [&](Expr j) {
              T::copy(ob.region({j, 0}, {1, E}), DZ.at({row0 + j, 0}));
            });
          }
        };

        for_each_row_tile(M, rM, num_blocks, cid, vid, tile_rows);
      });
    });
  });
}

}  // namespace cann_ops_tilelang
