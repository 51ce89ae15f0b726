// The GEMM kernel generator of cann_ops_tilelang (the tile-kernel layer, docs/ops.md).
// Developer mode: the author names the tiles and the dataflow, the compiler places them (A_s,
// B_s -> L1, C_f -> L0C), lowers T::gemm to L1 -> L0A/L0B loads and Mmads, double-buffers the
// K loop (T::Pipelined), clips the edge tiles' copies and zero-fills a partial K panel
// (docs/developer_mode.md). It is examples/gemm_dev.cpp, the repository's fastest GEMM that
// takes any M, N, K, with transposed operands, an output dtype and a dynamic M. Its Python
// twin, python/cann_ops_tilelang/kernels/gemm.py, builds the identical IR
// (python/tests/test_opslib_twin.py).
//
// Work split: `blocks` persistent workers (the target's AICs) take the ceil(M / bM) x
// ceil(N / bN) output tiles in turn (T::Persistent), so a worker's next tile starts loading
// while its last one drains.
#include "cann_ops_tilelang/gemm.h"
#include "tl/lang.h"

namespace cann_ops_tilelang {

tl::PrimFunc gemm_kernel(const GemmKey& key) {
  using tl::Expr;
  namespace T = tl::T;
  const tl::DType dt = key.dtype;
  const int N = ir_size(key.n, "n"), K = ir_size(key.k, "k"), bM = ir_size(key.block_m, "block_m"),
            bN = ir_size(key.block_n, "block_n"), bK = ir_size(key.block_k, "block_k"),
            stages = ir_size(key.stages, "stages"), blocks = ir_size(key.blocks, "blocks");
  auto M = T::dynamic("M");
  auto A = key.trans_a ? T::Tensor("A", {K, M}, dt) : T::Tensor("A", {M, K}, dt);
  auto B = key.trans_b ? T::Tensor("B", {N, K}, dt) : T::Tensor("B", {K, N}, dt);
  auto C = T::Tensor("C", {M, N}, key.out_dtype);
  const int n_tiles = (N + bN - 1) / bN, k_tiles = (K + bK - 1) / bK;
  return T::prim_func("gemm", {A, B, C}, [&] {
    T::Kernel(blocks, [&](Expr cid) {
      auto a =
          key.trans_a ? T::alloc_shared("A_s", {bK, bM}, dt) : T::alloc_shared("A_s", {bM, bK}, dt);
      auto b =
          key.trans_b ? T::alloc_shared("B_s", {bN, bK}, dt) : T::alloc_shared("B_s", {bK, bN}, dt);
      auto c = T::alloc_fragment("C_f", {bM, bN}, tl::DType::Float32);
      T::Persistent({ceildiv(M, bM), n_tiles}, blocks, cid, [&](std::vector<Expr> t) {
        Expr bx = t[0], by = t[1];
        T::clear(c);
        T::Pipelined("k", k_tiles, stages, [&](Expr k) {
          T::copy(key.trans_a ? A.at({k * bK, bx * bM}) : A.at({bx * bM, k * bK}), a);
          T::copy(key.trans_b ? B.at({by * bN, k * bK}) : B.at({k * bK, by * bN}), b);
          T::gemm(a, b, c, {.transpose_A = key.trans_a, .transpose_B = key.trans_b});
        });
        T::copy(c, C.at({bx * bM, by * bN}));
      });
    });
  });
}

}  // namespace cann_ops_tilelang
