// Test kernels of the AscendC end-to-end driver (ascendc_e2e) for the constructs no example
// kernel uses: the sort family, the index generators and the GM atomic add
// (src/ascendc/emit_sort.cpp, docs/ascendc.md). Registered in the driver only (they are not
// examples); the driver runs each on the virtual NPU and, emitted, on the CPU model, and compares
// every GM byte. Expert mode, vector cores, explicit flags (each set followed by its wait).
#include <algorithm>

#include "tl/kernel_registry.h"
#include "tl/lang.h"

namespace tl::e2e_tests {
namespace {

void sync(Pipe src, Pipe dst, int ev) {
  T::set_flag(src, dst, ev);
  T::wait_flag(src, dst, ev);
}

int64_t pad32(int64_t n) {
  return (n + 31) / 32 * 32;
}

/// One row of X per AIV (rows = 2 * blocks): S = its first A scores sorted to (value, position)
/// entries (T::sort), K = its top k (T::topk), M = the merge of its two halves sorted apart
/// (T::merge_sort of two T::sort queues), C = createvecindex from `first`, A =
/// arith_progression(first, 3) (the API takes diffValue >= 0). `ties`: the scores are floored first
/// (randn -> a handful of integers), so most are tied and the order of equal scores decides the
/// output. `dt` float16: X, S and Kt in half (the VM sorts in float and casts the entries back); M
/// stays untouched (merge_sort takes float32 queues only).
PrimFunc sort_ops(int blocks, int N, int K, int first, bool ties, DType dt, int n_rank) {
  const DType f32 = DType::Float32, i32 = DType::Int32;
  const bool half = dt == DType::Float16;
  const int R = 2 * blocks, H = N / 2;
  const int64_t per_block = half ? 16 : 8;
  const int64_t ln = 2 * pad32(N), lh = 2 * pad32(H),
                lk = (2 * K + per_block - 1) / per_block * per_block;
  auto X = T::Tensor("X", {R, N}, dt);
  auto S = T::Tensor("S", {R, ln}, dt);
  auto Kt = T::Tensor("Kt", {R, lk}, dt);
  auto M = T::Tensor("M", {R, 2 * lh}, f32);
  auto C = T::Tensor("C", {R, N}, i32);
  auto A = T::Tensor("A", {R, N}, f32);
  return T::prim_func("sort_ops", {X, S, Kt, M, C, A}, [&] {
    T::Kernel(blocks, [&](Expr cid, Expr vid) {
      T::Scope(Core::Vector, [&] {
        Expr row = cid * 2 + vid;
        auto x = T::alloc_ub("x_ub", {N}, dt);
        auto xi = T::alloc_ub("xi_ub", {N}, half ? DType::Int16 : i32);  // A2: half <-> int16
        auto s = T::alloc_ub("s_ub", {ln}, dt);
        auto k = T::alloc_ub("k_ub", {lk}, dt);
        auto h = T::alloc_ub("h_ub", {2, lh}, f32);
        auto m = T::alloc_ub("m_ub", {2 * lh}, f32);
        auto c = T::alloc_ub("c_ub", {N}, i32);
        auto a = T::alloc_ub("a_ub", {N}, f32);
        T::copy(X.at({row, 0}), x);
        sync(Pipe::MTE2, Pipe::V, 0);
        if (ties) {
          T::tile::cast(xi, x, "CAST_FLOOR");
          T::pipe_barrier(Pipe::V);
          T::tile::cast(x, xi, "CAST_NONE");
          T::pipe_barrier(Pipe::V);
        }
        // Entries past the ranked ones are not written by the sorts: zeros, not stale data.
        T::tile::fill(s, 0.0);
        T::tile::fill(k, 0.0);
        T::pipe_barrier(Pipe::V);
        T::sort(s, x, n_rank);
        T::topk(k, x, std::min(K, n_rank), n_rank);
        if (!half) {
          T::sort(h.region({0, 0}, {1, lh}), x.region({0}, {H}), H);
          T::sort(h.region({1, 0}, {1, lh}), x.region({H}, {H}), H);
        }
        T::tile::createvecindex(c, first);
        T::tile::arith_progression(a, first, 3);
        T::pipe_barrier(Pipe::V);
        if (!half) T::merge_sort(m, {h.region({0, 0}, {1, lh}), h.region({1, 0}, {1, lh})});
        sync(Pipe::V, Pipe::MTE3, 0);
        T::copy(s, S.at({row, 0}));
        T::copy(k, Kt.at({row, 0}));
        if (!half) T::copy(m, M.at({row, 0}));
        T::copy(c, C.at({row, 0}));
        T::copy(a, A.at({row, 0}));
      });
    });
  });
}

TL_REGISTER_KERNEL({
    .name = "sort_ops",
    .summary = "test kernel: T.sort, T.topk, T.merge_sort, createvecindex, arith_progression "
               "per row (AscendC Sort32 + MrgSort)",
    .params =
        {{"blocks", "2", "blocks (two rows each)", ParamRule::blocks()},
         {"N",
          "64",
          "scores per row (halves a multiple of 8)",
          {.min = 16, .max = 4080, .multiple_of = 16}},
         {"K", "8", "top k", {.min = 1, .max = 64}},
         {"first", "5", "first index", {.min = -1000, .max = 1000}},
         {"ties", "0", "floor the scores first (forced ties)", {.min = 0, .max = 1}},
         {"dtype", "float32", "X, S, Kt dtype", {.one_of = {"float32", "float16"}}},
         {"A", "0", "scores T.sort / T.topk rank (actual_num; 0: N)", {.min = 0, .max = 4080}}},
    .build =
        [](const KernelArgs& a) {
          return sort_ops(a.get("blocks"), a.get("N"), a.get("K"), a.get("first"),
                          a.get("ties") != 0, a.get_dtype("dtype"),
                          a.get("A") ? std::min(a.get("A"), a.get("N")) : a.get("N"));
        },
});

/// Every AIV of every block adds row (2 cid + vid) of X into Y: Y += sum of the rows, by
/// T::atomic_add (SetAtomicAdd + DataCopy). The float sum depends on the order of the adds,
/// which the VM and the CPU model both fix (blocks in order).
PrimFunc atomic_rows(int blocks, int N, DType dt) {
  const int R = 2 * blocks;
  auto X = T::Tensor("X", {R, N}, dt);
  auto Y = T::Tensor("Y", {N}, dt);
  return T::prim_func("atomic_rows", {X, Y}, [&] {
    T::Kernel(blocks, [&](Expr cid, Expr vid) {
      T::Scope(Core::Vector, [&] {
        auto x = T::alloc_ub("x_ub", {1, N}, dt);
        T::copy(X.at({cid * 2 + vid, 0}), x);
        sync(Pipe::MTE2, Pipe::MTE3, 0);
        T::atomic_add(Y.region({0}, {N}), x);
      });
    });
  });
}

TL_REGISTER_KERNEL({
    .name = "atomic_rows",
    .summary = "test kernel: every AIV atomically adds its row of X into Y (SetAtomicAdd)",
    .params = {{"blocks", "4", "blocks (two rows each)", ParamRule::blocks()},
               {"N", "64", "row length", {.max = 4096}},
               {"dtype", "float32", "X, Y dtype", {.one_of = {"float32", "float16", "int32"}}}},
    .build =
        [](const KernelArgs& a) {
          return atomic_rows(a.get("blocks"), a.get("N"), a.get_dtype("dtype"));
        },
});

/// Split K on the cube: block b multiplies A[:, b bK : (b + 1) bK] by B[b bK : (b + 1) bK, :]
/// into L0C and adds the product into C (float32) with T::atomic_add (SetAtomicAdd + Fixpipe).
PrimFunc atomic_splitk(int M, int N, int K, int bK) {
  const DType f16 = DType::Float16, f32 = DType::Float32;
  auto A = T::Tensor("A", {M, K}, f16);
  auto B = T::Tensor("B", {K, N}, f16);
  auto C = T::Tensor("C", {M, N}, f32);
  return T::prim_func("atomic_splitk", {A, B, C}, [&] {
    T::Kernel(K / bK, [&](Expr cid, Expr) {
      T::Scope(Core::Cube, [&] {
        auto a_l1 = T::alloc_L1("A_L1", {M, bK}, f16);
        auto b_l1 = T::alloc_L1("B_L1", {bK, N}, f16);
        auto c_l0c = T::alloc_L0C("C_L0C", {M, N}, f32);
        T::copy(A.at({0, cid * bK}), a_l1);
        T::copy(B.at({cid * bK, 0}), b_l1);
        sync(Pipe::MTE2, Pipe::MTE1, 0);
        T::gemm_v0(a_l1, b_l1, c_l0c, {.init = true});
        sync(Pipe::M, Pipe::FIX, 0);
        T::atomic_add(C.region({0, 0}, {M, N}), c_l0c);
      });
    });
  });
}

TL_REGISTER_KERNEL({
    .name = "atomic_splitk",
    .summary = "test kernel: split-K matmul, each block atomically adds its L0C product into C",
    .params = {{"M", "32", "rows of A and C", ParamRule::tile(16)},
               {"N", "32", "columns of B and C", ParamRule::tile(16)},
               {"K", "256", "columns of A (blocks = K / bK)", ParamRule::tile(16)},
               {"bK", "32", "K slice of a block", ParamRule::tile(16)}},
    .build =
        [](const KernelArgs& a) {
          return atomic_splitk(a.get("M"), a.get("N"), a.get("K"), a.get("bK"));
        },
});

}  // namespace
}  // namespace tl::e2e_tests
