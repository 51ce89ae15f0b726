// The tl::T twins of the AscendC test kernels (twins.h): instruction for instruction what
// kernels/add.cpp and kernels/softmax.cpp issue, as tile ops with explicit syncs.
#include "twins.h"

#include "tl/ir_ops.h"
#include "tl/lang.h"

namespace tl::ascendc_tests {

namespace {
int ceildiv_int(int a, int b) {
  return (a + b - 1) / b;
}
}  // namespace

PrimFunc add_twin(int M, int N, int R, DType dtype) {
  auto X = T::Tensor("X", {M, N}, dtype);
  auto Y = T::Tensor("Y", {M, N}, dtype);
  auto Z = T::Tensor("Z", {M, N}, dtype);
  const int per_block = 32 / static_cast<int>(dtype_bytes(dtype));
  const int P = ceildiv_int(N, per_block) * per_block;
  return T::prim_func("add_twin", {X, Y, Z}, [&] {
    T::Kernel(ceildiv_int(M, 2 * R), [&](Expr cid, Expr vid) {
      T::Scope(Core::Vector, [&] {
        auto x = T::alloc_ub("x", {R, P}, dtype);
        auto y = T::alloc_ub("y", {R, P}, dtype);
        auto z = T::alloc_ub("z", {R, P}, dtype);
        Var r0 = T::let("r0", (cid * 2 + vid) * R);
        Var n = T::let("n", max(min(Expr(M) - r0, Expr(R)), Expr(0)));
        const T::CopyOptions pad{.pad_value = 0.0};
        T::If(n > 0, [&] {
          T::copy(X.region({r0, 0}, {n, N}), x.region({0, 0}, {n, N}), pad);
          T::copy(Y.region({r0, 0}, {n, N}), y.region({0, 0}, {n, N}), pad);
        });
        T::set_flag(Pipe::MTE2, Pipe::V, 0);
        T::wait_flag(Pipe::MTE2, Pipe::V, 0);
        T::tile::add(z, x, y);
        T::set_flag(Pipe::V, Pipe::MTE3, 0);
        T::wait_flag(Pipe::V, Pipe::MTE3, 0);
        T::If(n > 0, [&] { T::copy(z.region({0, 0}, {n, N}), Z.region({r0, 0}, {n, N}), pad); });
      });
    });
  });
}

PrimFunc softmax_twin(int M, int N) {
  const DType f32 = DType::Float32;
  auto X = T::Tensor("X", {M, N}, f32);
  auto Y = T::Tensor("Y", {M, N}, f32);
  const int P = ceildiv_int(N, 8) * 8;
  return T::prim_func("softmax_twin", {X, Y}, [&] {
    T::Kernel(ceildiv_int(M, 16), [&](Expr cid, Expr vid) {
      T::Scope(Core::Vector, [&] {
        auto x = T::alloc_ub("x", {8, P}, f32);
        auto m = T::alloc_ub("m", {8}, f32);
        auto s = T::alloc_ub("s", {8}, f32);
        auto ones = T::alloc_ub("ones", {8}, f32);
        Var r0 = T::let("r0", (cid * 2 + vid) * 8);
        Var n = T::let("n", max(min(Expr(M) - r0, Expr(8)), Expr(0)));
        const T::CopyOptions pad{.pad_value = 0.0};
        T::If(n > 0, [&] { T::copy(X.region({r0, 0}, {n, N}), x.region({0, 0}, {n, N}), pad); });
        T::set_flag(Pipe::MTE2, Pipe::V, 0);
        T::wait_flag(Pipe::MTE2, Pipe::V, 0);
        T::reduce_max(x.region({0, 0}, {8, N}), m);
        T::fill(ones, 1.0);
        T::pipe_barrier(Pipe::V);
        T::tile::row_expand_sub(x, x, m);
        T::pipe_barrier(Pipe::V);
        T::tile::exp(x, x);
        T::pipe_barrier(Pipe::V);
        T::reduce_sum(x.region({0, 0}, {8, N}), s);
        T::pipe_barrier(Pipe::V);
        T::tile::div(s, ones, s);
        T::pipe_barrier(Pipe::V);
        T::tile::row_expand_mul(x, x, s);
        T::set_flag(Pipe::V, Pipe::MTE3, 0);
        T::wait_flag(Pipe::V, Pipe::MTE3, 0);
        T::If(n > 0, [&] { T::copy(x.region({0, 0}, {n, N}), Y.region({r0, 0}, {n, N}), pad); });
      });
    });
  });
}

}  // namespace tl::ascendc_tests
