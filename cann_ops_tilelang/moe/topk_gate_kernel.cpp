// The top-k gate kernel generator of cann_ops_tilelang (the tile-kernel layer, docs/ops.md).
// Expert mode, vector cores only: the tile primitives do the selection -- T::topk leaves
// (score, position) pairs in descending score with ties to the smaller position (the order the
// routing gate needs, tests/npu/sort_ops_test.cpp), gather_mask extracts the position lanes,
// and T::tile::gather fetches each chosen expert's UNBIASED score by byte offset (the bias
// steers only the choice). Its Python twin, python/cann_ops_tilelang/kernels/topk_gate.py,
// builds the identical IR (python/tests/test_opslib_twin.py).
//
// Work split as rms_norm_fwd_kernel.cpp: T, the token count, is the dynamic symbol bound from Z;
// tokens come in rM-row tiles dealt round-robin to the AIVs; the tail tile (T % rM rows) is
// zero-filled in UB before its rows are loaded one by one, and only its valid rows are stored.
// Every set_flag is followed at once by its wait_flag (event 0 loads, 1 stores).
#include "cann_ops_tilelang/moe.h"
#include "tl/lang.h"

namespace cann_ops_tilelang {
namespace {

using tl::Buffer;
using tl::Expr;
using tl::Pipe;
namespace T = tl::T;
constexpr int kEvIn = 0, kEvOut = 1;

}  // namespace

tl::PrimFunc topk_gate_kernel(const TopkGateKey& key) {
  using tl::DType;
  const DType dt = key.dtype, f32 = DType::Float32, i32 = DType::Int32;
  const bool wide = dt != f32;
  const int E = ir_size(key.experts, "experts"), K = ir_size(key.k, "k"),
            rM = ir_size(key.rows_per_tile, "rows_per_tile"),
            blocks = ir_size(key.blocks, "blocks");

  auto M = T::dynamic("M");
  auto Z = T::Tensor("Z", {M, E}, dt);
  std::optional<Buffer> Bias;
  if (key.bias) Bias = T::Tensor("Bias", {E}, f32);
  auto Wt = T::Tensor("Wt", {M, K}, f32);
  auto Idx = T::Tensor("Idx", {M, K}, i32);
  auto scale = T::Scalar("scale", f32);
  std::vector<tl::ParamRef> params{Z};
  if (Bias) params.push_back(*Bias);
  params.push_back(Wt);
  params.push_back(Idx);
  params.push_back(scale);

  return T::prim_func("topk_gate", params, [&] {
    Expr num_blocks = min(Expr(blocks), ceildiv(M, rM));
    T::Kernel(num_blocks, [&](Expr cid, Expr vid) {
      T::Scope(tl::Core::Vector, [&] {
        auto s = T::alloc_ub("s_ub", {rM, E}, f32);               // scores (unbiased)
        Buffer zb = wide ? T::alloc_ub("z_ub", {rM, E}, dt) : s;  // logits as loaded
        auto pairs = T::alloc_ub("pairs_ub", {rM, 2 * K}, f32);   // topk's (score, position)
        auto idxf = T::alloc_ub("idxf_ub", {rM, K}, f32);         // positions as floats
        auto idx = T::alloc_ub("idx_ub", {rM, K}, i32);
        auto off = T::alloc_ub("off_ub", {rM, K}, i32);  // byte offsets into s
        auto w = T::alloc_ub("w_ub", {rM, K}, f32);
        auto den = T::alloc_ub("den_ub", {rM}, f32);
        Buffer sel = s;  // what topk ranks: s, or s + bias
        std::optional<Buffer> biasb;
        if (Bias) {
          auto bias1 = T::alloc_ub("bias_ub", {E}, f32);
          biasb = T::alloc_ub("biasb_ub", {rM, E}, f32);  // the bias on every row, made once
          sel = T::alloc_ub("sel_ub", {rM, E}, f32);
          T::copy(*Bias, bias1);
          set_then_wait(Pipe::MTE2, Pipe::V, kEvIn);
          T::tile::broadcast(*biasb, bias1);
        }
        auto offu = T::view("offu_ub", off, DType::UInt32);

        auto tile_rows = [&](Expr row0, std::optional<Expr> nrows) {
          if (nrows) T::tile::fill(zb, 0.0);          // rows past T: zeros, not stale data
          set_then_wait(Pipe::V, Pipe::MTE2, kEvIn);  // the last V op has read zb
          if (!nrows) {
            // A full tile is never clipped (row0 + rM <= T), which the compiler cannot prove
            // for the dynamic T; the pad value says what a clipped row would hold (as the tail).
            T::copy(Z.at({row0, 0}), zb, {.pad_value = 0.0});
          } else {
            T::serial("j", *nrows, [&](Expr j) {
              T::copy(Z.at({row0 + j, 0}), zb.region({j, 0}, {1, E}));
            });
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
          if (biasb) {
            T::tile::add(sel, s, *biasb);
            T::pipe_barrier(Pipe::V);
          }
          T::serial("r", rM, [&](Expr r) {
            T::topk(pairs.region({r, 0}, {1, 2 * K}), sel.region({r, 0}, {1, E}), K, E);
          });
          T::pipe_barrier(Pipe::V);
          T::tile::gather_mask(idxf, pairs, "P1010");  // [score, position] -> [position]
          set_then_wait(Pipe::MTE3, Pipe::V, kEvOut);  // the previous stores have read idx, w
          T::pipe_barrier(Pipe::V);
          T::tile::cast(idx, idxf, "CAST_ROUND");
          T::pipe_barrier(Pipe::V);
          T::tile::mul(off, idx, 4);
          T::pipe_barrier(Pipe::V);
          // The unbiased scores of the chosen experts, row by row: a row's offsets address its
          // own row of s, so the pad rows of a tail tile (clip_pad_values) feed only pad rows.
          T::serial("r", rM, [&](Expr r) {
            T::tile::gather(w.region({r, 0}, {1, K}), s.region({r, 0}, {1, E}),
                            offu.region({r, 0}, {1, K}));
          });
          T::pipe_barrier(Pipe::V);
          if (key.normalize) {
            T::reduce_sum(w, den, -1);
            T::pipe_barrier(Pipe::V);
            T::tile::add(den, den, 1e-20);
            T::pipe_barrier(Pipe::V);
            T::tile::row_expand_div(w, w, den);
            T::pipe_barrier(Pipe::V);
          }
          T::tile::mul(w, w, scale);
          set_then_wait(Pipe::V, Pipe::MTE3, kEvOut);
          if (!nrows) {
            T::copy(w, Wt.at({row0, 0}));
            T::copy(idx, Idx.at({row0, 0}));
          } else {
            T::serial("j", *nrows, [&](Expr j) {
              T::copy(w.region({j, 0}, {1, K}), Wt.at({row0 + j, 0}));
              T::copy(idx.region({j, 0}, {1, K}), Idx.at({row0 + j, 0}));
            });
          }
        };

        for_each_row_tile(M, rM, num_blocks, cid, vid, tile_rows);
      });
    });
  });
}

}  // namespace cann_ops_tilelang
