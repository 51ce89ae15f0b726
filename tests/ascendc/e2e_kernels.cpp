// Test kernels for the AscendC end-to-end driver (e2e_main.cpp), registered in its executable
// only: one small developer-mode kernel per family of ops that no example kernel uses but the
// emitter writes (src/ascendc/emit_activation.cpp): the activations (sigmoid, silu, round,
// clamp, leaky_relu, also in place), the bitwise ops and shifts, the 16 x 16 transpose, a
// scalar operand read from UB and fp16 scalar arithmetic. `ascendc_e2e NAME op=... M=... N=...`
// runs each on the virtual NPU and, emitted, on the CPU model and compares the bytes (ctest
// AscendcE2E.act.*), tails included (rows not a multiple of the tile, rows not whole 32-byte
// blocks).
#include "tl/arith.h"
#include "tl/kernel_registry.h"
#include "tl/lang.h"

namespace tl::e2e_test {
namespace {

const std::vector<std::string> kUnaryOps = {"sigmoid", "silu",  "sigmoid_inplace", "silu_inplace",
                                            "round",   "clamp", "leaky_relu",      "div_scalar"};
const std::vector<std::string> kBitOps = {"xor", "not", "shl", "shr"};

/// y = op(x) on [bM, N] row tiles.
PrimFunc act_unary(const std::string& op, int M, int N, int bM, DType dt) {
  auto X = T::Tensor("X", {M, N}, dt);
  auto Y = T::Tensor("Y", {M, N}, dt);
  return T::prim_func("act_unary", {X, Y}, [&] {
    T::Kernel(ceildiv(M, bM),
              [&](Expr cid) {
                auto x = T::alloc_shared("x", {bM, N}, dt), y = T::alloc_shared("y", {bM, N}, dt);
                T::copy(X.at({cid * bM, 0}), x);
                if (op == "sigmoid") {
                  T::tile::sigmoid(y, x);
                } else if (op == "silu") {
                  T::tile::silu(y, x);
                } else if (op == "sigmoid_inplace") {
                  T::tile::mul(y, x, 6.0);  // a wider range than the random inputs' [-1, 1]
                  T::tile::sigmoid(y, y);
                } else if (op == "silu_inplace") {
                  T::tile::mul(y, x, 6.0);
                  T::tile::silu(y, y);
                } else if (op == "round") {
                  T::tile::mul(y, x, 4.5);  // integers and ties (x.5) among the values
                  T::tile::round(y, y);
                } else if (op == "div_scalar") {
                  T::tile::div(y, x, 3.0);
                } else if (op == "clamp") {
                  T::tile::clamp(y, x, -0.5, 0.25);
                } else {
                  T::tile::leaky_relu(y, x, 0.125);
                }
                T::copy(y, Y.at({cid * bM, 0}));
              },
              {.threads = 2});
  });
}

/// y = x ^ z, ~x, x << 3, x >> 3 on [bM, N] row tiles of an integer dtype.
PrimFunc act_bits(const std::string& op, int M, int N, int bM, DType dt) {
  auto X = T::Tensor("X", {M, N}, dt);
  auto Z = T::Tensor("Z", {M, N}, dt);
  auto Y = T::Tensor("Y", {M, N}, dt);
  return T::prim_func("act_bits", {X, Z, Y}, [&] {
    T::Kernel(ceildiv(M, bM),
              [&](Expr cid) {
                auto x = T::alloc_shared("x", {bM, N}, dt), y = T::alloc_shared("y", {bM, N}, dt);
                T::copy(X.at({cid * bM, 0}), x);
                if (op == "xor") {
                  auto z = T::alloc_shared("z", {bM, N}, dt);
                  T::copy(Z.at({cid * bM, 0}), z);
                  T::tile::bitwise_xor(y, x, z);
                } else if (op == "not") {
                  T::tile::bitwise_not(y, x);
                } else if (op == "shl") {
                  T::tile::shift_left(y, x, 3);
                } else {
                  T::tile::shift_right(y, x, 3);
                }
                T::copy(y, Y.at({cid * bM, 0}));
              },
              {.threads = 2});
  });
}

/// Each 16 x 16 block of X [16 B, 16] transposed into Y.
PrimFunc act_transpose(int B, DType dt) {
  auto X = T::Tensor("X", {16 * B, 16}, dt);
  auto Y = T::Tensor("Y", {16 * B, 16}, dt);
  return T::prim_func("act_transpose", {X, Y}, [&] {
    T::Kernel(B, [&](Expr cid) {
      auto x = T::alloc_shared("x", {16, 16}, dt), y = T::alloc_shared("y", {16, 16}, dt);
      T::copy(X.at({cid * 16, 0}), x);
      T::tile::transpose(y, x);
      T::copy(y, Y.at({cid * 16, 0}));
    });
  });
}

/// y[r, :] = x[r, :] - s[r] and w[r, :] = s[r], s[r] read from UB as the scalar operand
/// (tile.sub's src1, tile.fill's value).
PrimFunc act_ub_scalar(int M, int N, int bM) {
  constexpr DType f32 = DType::Float32;
  auto X = T::Tensor("X", {M, N}, f32);
  auto S = T::Tensor("S", {M}, f32);
  auto Y = T::Tensor("Y", {M, N}, f32);
  auto W = T::Tensor("W", {M, N}, f32);
  return T::prim_func("act_ub_scalar", {X, S, Y, W}, [&] {
    T::Kernel(ceildiv(M, bM), [&](Expr cid) {
      auto x = T::alloc_shared("x", {bM, N}, f32), y = T::alloc_shared("y", {bM, N}, f32);
      auto w = T::alloc_shared("w", {bM, N}, f32);
      auto s = T::alloc_shared("s", {bM}, f32);
      // Padded: rows past M are then known (zeros), and the stores clip them.
      T::copy(X.at({cid * bM, 0}), x, {.pad_value = 0.0});
      T::copy(S.at({cid * bM}), s, {.pad_value = 0.0});
      T::serial("r", bM, [&](Expr r) {
        T::tile::sub(y.region({r, 0}, {1, N}), x.region({r, 0}, {1, N}), s(r));
        T::tile::fill(w.region({r, 0}, {1, N}), s(r));
      });
      T::copy(y, Y.at({cid * bM, 0}));
      T::copy(w, W.at({cid * bM, 0}));
    });
  });
}

/// Scalar fp16 arithmetic: y = x * (a * a - a) + half(b), w[r, :] = s[r] * a + s[r] with
/// s[r] read from UB (a, s fp16; b fp32, rounded once to fp16).
PrimFunc act_half_scalar(int M, int N, int bM) {
  constexpr DType f16 = DType::Float16;
  auto X = T::Tensor("X", {M, N}, f16);
  auto S = T::Tensor("S", {M}, f16);
  auto Y = T::Tensor("Y", {M, N}, f16);
  auto W = T::Tensor("W", {M, N}, f16);
  auto A = T::Scalar("a", f16);
  auto B = T::Scalar("b", DType::Float32);
  return T::prim_func("act_half_scalar", {X, S, Y, W, A, B}, [&] {
    T::Kernel(ceildiv(M, bM), [&](Expr cid) {
      auto x = T::alloc_shared("x", {bM, N}, f16), y = T::alloc_shared("y", {bM, N}, f16);
      auto w = T::alloc_shared("w", {bM, N}, f16);
      auto s = T::alloc_shared("s", {bM}, f16);
      T::copy(X.at({cid * bM, 0}), x, {.pad_value = 0.0});
      T::copy(S.at({cid * bM}), s, {.pad_value = 0.0});
      T::tile::mul(y, x, Expr(A) * A - A);
      T::tile::add(y, y, cast(f16, B));
      T::serial("r", bM, [&](Expr r) {
        Expr v = s(r);
        T::tile::fill(w.region({r, 0}, {1, N}), v * A + v);
      });
      T::copy(y, Y.at({cid * bM, 0}));
      T::copy(w, W.at({cid * bM, 0}));
    });
  });
}

ParamRule one_of(std::vector<std::string> v) {
  return {.one_of = std::move(v)};
}

TL_REGISTER_KERNEL({
    .name = "act_unary",
    .summary =
        "AscendC e2e test: an activation (sigmoid, silu, round, clamp, leaky_relu) on row tiles",
    .params = {{"op", "sigmoid", "the op", one_of(kUnaryOps)},
               {"M", "64", "rows"},
               {"N", "256", "columns"},
               {"bM", "8", "rows per tile", ParamRule::tile()},
               {"dtype", "float32", "X, Y dtype", one_of({"float32", "float16"})}},
    .build =
        [](const KernelArgs& a) {
          return act_unary(a.get_str("op"), a.get("M"), a.get("N"), a.get("bM"),
                           a.get_dtype("dtype"));
        },
});

TL_REGISTER_KERNEL({
    .name = "act_bits",
    .summary = "AscendC e2e test: xor, not, shifts on integer row tiles",
    .params = {{"op", "xor", "the op", one_of(kBitOps)},
               {"M", "64", "rows"},
               {"N", "256", "columns"},
               {"bM", "8", "rows per tile", ParamRule::tile()},
               {"dtype", "int16", "X, Z, Y dtype", one_of({"int16", "uint16", "int32", "uint32"})}},
    .build =
        [](const KernelArgs& a) {
          return act_bits(a.get_str("op"), a.get("M"), a.get("N"), a.get("bM"),
                          a.get_dtype("dtype"));
        },
});

TL_REGISTER_KERNEL({
    .name = "act_transpose",
    .summary = "AscendC e2e test: 16 x 16 block transposes",
    .params = {{"B", "4", "blocks"}, {"dtype", "float16", "dtype", one_of({"float16", "int16"})}},
    .build = [](const KernelArgs& a) { return act_transpose(a.get("B"), a.get_dtype("dtype")); },
});

TL_REGISTER_KERNEL({
    .name = "act_ub_scalar",
    .summary = "AscendC e2e test: a scalar operand read from UB (tile.sub, tile.fill)",
    .params = {{"M", "64", "rows"},
               {"N", "256", "columns"},
               {"bM", "8", "rows per tile", ParamRule::tile()}},
    .build = [](const KernelArgs& a) { return act_ub_scalar(a.get("M"), a.get("N"), a.get("bM")); },
});

TL_REGISTER_KERNEL({
    .name = "act_half_scalar",
    .summary = "AscendC e2e test: fp16 scalar arithmetic (parameters, casts, UB reads)",
    .params = {{"M", "64", "rows"},
               {"N", "256", "columns"},
               {"bM", "8", "rows per tile", ParamRule::tile()}},
    .build =
        [](const KernelArgs& a) { return act_half_scalar(a.get("M"), a.get("N"), a.get("bM")); },
});

}  // namespace
}  // namespace tl::e2e_test
