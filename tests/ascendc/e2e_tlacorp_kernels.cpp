// Test kernels of the AscendC end-to-end driver (ascendc_e2e) for two vector constructs no example
// kernel uses (issue 29, TileLang-Ascend's surface): T.tile.mul_add_dst (AscendC MulAddDst) and
// T.tile.bitwise_and / bitwise_or of uint8 masks (And / Or on the bytes as int16 lanes). The
// driver runs each on the virtual NPU and, emitted, on the CPU model, and compares every GM byte;
// the VM's values are checked against references in tests/prims/mul_add_dst_test.cpp and
// python/tests/test_tla_corp.py. Expert mode, vector cores, explicit flags.
#include "tl/kernel_registry.h"
#include "tl/lang.h"

namespace tl::e2e_tests {
namespace {

void sync(Pipe src, Pipe dst, int ev) {
  T::set_flag(src, dst, ev);
  T::wait_flag(src, dst, ev);
}

/// Row (2 cid + vid) of each: Y = X * W + Y, the row N elements (N not a multiple of the 32-byte
/// block: the UB rows are padded, the copies DataCopyPad).
PrimFunc mul_add_dst_rows(int blocks, int N, DType dt) {
  const int R = 2 * blocks;
  auto X = T::Tensor("X", {R, N}, dt);
  auto W = T::Tensor("W", {R, N}, dt);
  auto Y = T::Tensor("Y", {R, N}, dt);
  return T::prim_func("mul_add_dst_rows", {X, W, Y}, [&] {
    T::Kernel(blocks, [&](Expr cid, Expr vid) {
      T::Scope(Core::Vector, [&] {
        Expr row = cid * 2 + vid;
        auto x = T::alloc_ub("x_ub", {1, N}, dt), w = T::alloc_ub("w_ub", {1, N}, dt),
             y = T::alloc_ub("y_ub", {1, N}, dt);
        T::copy(X.at({row, 0}), x);
        T::copy(W.at({row, 0}), w);
        T::copy(Y.at({row, 0}), y);
        sync(Pipe::MTE2, Pipe::V, 0);
        T::tile::mul_add_dst(y, x, w);
        sync(Pipe::V, Pipe::MTE3, 0);
        T::copy(y, Y.at({row, 0}));
      });
    });
  });
}

TL_REGISTER_KERNEL({
    .name = "mul_add_dst_rows",
    .summary = "test kernel: Y = X * W + Y per row (T.tile.mul_add_dst, AscendC MulAddDst)",
    .params = {{"blocks", "2", "blocks (two rows each)", ParamRule::blocks()},
               {"N", "64", "row length", {.min = 1, .max = 4097}},
               {"dtype", "float32", "dtype", {.one_of = {"float32", "float16"}}}},
    .build =
        [](const KernelArgs& a) {
          return mul_add_dst_rows(a.get("blocks"), a.get("N"), a.get_dtype("dtype"));
        },
});

/// Row (2 cid + vid) of A and B (uint8, L bytes): C = A, then bytes [at, at + n) of C = A & B
/// (or A | B), the masks ANDed in place in UB.
PrimFunc byte_masks(int blocks, int L, int n, int at, bool do_or) {
  const int R = 2 * blocks;
  const DType u8 = DType::UInt8;
  auto A = T::Tensor("A", {R, L}, u8);
  auto B = T::Tensor("B", {R, L}, u8);
  auto C = T::Tensor("C", {R, L}, u8);
  return T::prim_func("byte_masks", {A, B, C}, [&] {
    T::Kernel(blocks, [&](Expr cid, Expr vid) {
      T::Scope(Core::Vector, [&] {
        Expr row = cid * 2 + vid;
        auto a = T::alloc_ub("a_ub", {L}, u8), b = T::alloc_ub("b_ub", {L}, u8);
        T::copy(A.at({row, 0}), a);
        T::copy(B.at({row, 0}), b);
        sync(Pipe::MTE2, Pipe::V, 0);
        auto ra = a.region({at}, {n}), rb = b.region({at}, {n});
        if (do_or)
          T::tile::bitwise_or(ra, ra, rb);
        else
          T::tile::bitwise_and(ra, ra, rb);
        sync(Pipe::V, Pipe::MTE3, 0);
        T::copy(a, C.at({row, 0}));
      });
    });
  });
}

TL_REGISTER_KERNEL({
    .name = "byte_masks",
    .summary = "test kernel: uint8 masks ANDed / ORed in UB (And / Or on int16 lanes)",
    .params =
        {{"blocks", "2", "blocks (two rows each)", ParamRule::blocks()},
         {"L", "96", "bytes per row", {.min = 1, .max = 4096}},
         {"n", "32", "mask bytes (even, or ending at byte L)", {.min = 1, .max = 4096}},
         {"at", "32", "first byte (a multiple of 32)", {.min = 0, .max = 4064, .multiple_of = 32}},
         {"or", "0", "Or instead of And", {.min = 0, .max = 1}}},
    .build =
        [](const KernelArgs& a) {
          return byte_masks(a.get("blocks"), a.get("L"), a.get("n"), a.get("at"), a.get("or") != 0);
        },
});

}  // namespace
}  // namespace tl::e2e_tests
