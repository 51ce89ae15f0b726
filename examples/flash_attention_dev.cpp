// Developer-mode FlashAttention forward, O = softmax(scale * Q K^T) V for Q, K, V, O of shape
// [B, H, S, D] (BHSD): the online-softmax dataflow of examples/flash_attention.cpp with none of
// its hardware work. Per kv-tile the cube computes S = Q K^T, the vector unit turns S into P and
// updates the running max, denominator and output, and the cube computes P V. The compiler
// places q, k, v in L1 and s, o in L0C; s and o cross to the vector unit (UB twins) and p to the
// cube (an L1 twin) through GM workspaces it allocates, once per iteration, with cross-core
// flags and credits (infer_scopes, legalize_copies, insert_channel_syncs); every intra-core flag
// is insert_syncs'. docs/developer_mode.md, "Data that crosses cores". The kv loop is
// T::Pipelined: with 2 stages every tile that two pipes touch and every channel gets two slots,
// and the cube computes the next tile's scores while the vector unit works on this one's
// softmax (pipeline_loops).
//
// The exps are T::tile::exp on developer tiles (the chip's approximation, chosen explicitly), and
// the running max T::tile::max (the chip's, where a NaN wins, as in the expert kernel).
// Any S: the compiler clips the copies of the last q- and kv-tiles and zero-fills their L1
// padding (legalize_copies); the kernel masks the keys past S, as TileLang kernels do.
#include <cmath>

#include "tl/arith.h"
#include "tl/kernel_registry.h"
#include "tl/lang.h"

namespace tl::examples {

PrimFunc flash_attention_dev(int Bt, int H, int S, int D, int bM, int bN, DType dtype, int num_stages) {
  const int q_tiles = ceildiv(S, bM);
  const int blocks = checked_product("flash_attention_dev: the block count B * H * ceildiv(S, bM)", {Bt, H, q_tiles});
  const Expr scale = imm(f32, arith::round_float(f32, 1.0 / std::sqrt(static_cast<double>(D))));
  auto Q = T::Tensor("Q", {Bt, H, S, D}, dtype);
  auto K = T::Tensor("K", {Bt, H, S, D}, dtype);
  auto V = T::Tensor("V", {Bt, H, S, D}, dtype);
  auto O = T::Tensor("O", {Bt, H, S, D}, dtype);
  return T::prim_func("flash_attention_dev", {Q, K, V, O}, [&] {
    T::Kernel(blocks, [&](Expr cid) {
      Var bx = T::let("bx", cid % q_tiles), by = T::let("by", cid / q_tiles % H), bz = T::let("bz", cid / (q_tiles * H));
      auto q = T::alloc_shared("q", {bM, D}, dtype);
      auto k = T::alloc_shared("k", {bN, D}, dtype);
      auto v = T::alloc_shared("v", {bN, D}, dtype);
      auto s = T::alloc_fragment("s", {bM, bN}, f32);  // scores, then P in fp32
      auto p = T::alloc_shared("p", {bM, bN}, dtype);  // P for the cube
      auto o = T::alloc_fragment("o", {bM, D}, f32);   // this tile's P V
      auto acc = T::alloc_fragment("acc", {bM, D}, f32);
      auto m = T::alloc_fragment("m", {bM}, f32), mj = T::alloc_fragment("mj", {bM}, f32);
      auto alpha = T::alloc_fragment("alpha", {bM}, f32), rs = T::alloc_fragment("rs", {bM}, f32);
      auto l = T::alloc_fragment("l", {bM}, f32), key_mask = T::alloc_fragment("key_mask", {bN}, f32);
      auto out = T::alloc_shared("out", {bM, D}, dtype);
      T::copy(Q.at({bz, by, bx * bM, 0}), q);
      T::clear(acc);
      T::fill(m, neg_inf(f32));
      T::clear(l);
      T::Pipelined("j", ceildiv(S, bN), num_stages, [&](Expr j) {
        T::copy(K.at({bz, by, j * bN, 0}), k);
        T::copy(V.at({bz, by, j * bN, 0}), v);
        T::gemm(q, k, s, {.transpose_B = true, .init = true});
        T::Parallel({bM, bN}, [&](Expr i, Expr c) { s(i, c) = s(i, c) * scale; });
        if (S % bN != 0) {  // keys past S (the last tile's padding) get no weight
          T::Parallel(bN, [&](Expr c) { key_mask(c) = select(c < S - j * bN, imm(f32, 0.0), neg_inf(f32)); });
          T::Parallel({bM, bN}, [&](Expr i, Expr c) { s(i, c) = s(i, c) + key_mask(c); });
        }
        T::reduce_max(s, mj, -1);
        T::tile::max(mj, mj, m);
        T::Parallel({bM, bN}, [&](Expr i, Expr c) { s(i, c) = s(i, c) - mj(i); });
        T::Parallel(bM, [&](Expr i) { alpha(i) = m(i) - mj(i); });
        T::tile::exp(s, s);
        T::tile::exp(alpha, alpha);
        T::Parallel(bM, [&](Expr i) { m(i) = mj(i); });
        T::reduce_sum(s, rs, -1);
        T::Parallel({bM, bN}, [&](Expr i, Expr c) { p(i, c) = cast(dtype, s(i, c)); });
        T::gemm(p, v, o, {.init = true});
        T::Parallel(bM, [&](Expr i) { l(i) = l(i) * alpha(i) + rs(i); });
        T::Parallel({bM, D}, [&](Expr i, Expr c) { acc(i, c) = acc(i, c) * alpha(i) + o(i, c); });
      });
      T::Parallel({bM, D}, [&](Expr i, Expr c) { out(i, c) = cast(dtype, acc(i, c) / l(i)); });
      T::copy(out, O.at({bz, by, bx * bM, 0}));
    }, {.threads = 2});
  });
}

TL_REGISTER_KERNEL({
    .name = "flash_attention_dev",
    .summary = "developer FlashAttention forward (BHSD): S, P and PV cross cores through compiler-made workspace "
               "channels",
    .params = {{"B", "1", "batch"},
               {"H", "1", "heads"},
               {"S", "256", "sequence length (queries and keys)"},
               {"D", "128", "head dimension; scale = 1/sqrt(D)"},
               {"bM", "64", "q-tile rows per block", ParamRule::tile(16)},
               {"bN", "64", "kv-tile rows per iteration", ParamRule::tile(16)},
               {"dtype", "float16", "Q, K, V, O dtype", {.one_of = {"float16", "bfloat16"}}},
               {"num_stages", "2", "T.Pipelined stages of the kv loop (1: serial)", {.min = 1, .max = 4}}},
    .build = [](const KernelArgs& a) {
      return flash_attention_dev(a.get("B"), a.get("H"), a.get("S"), a.get("D"), a.get("bM"), a.get("bN"),
                                 a.get_dtype("dtype"), a.get("num_stages"));
    },
});

}  // namespace tl::examples
