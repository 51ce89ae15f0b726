// A small vector kernel shared by the hazard checker's tests and timed mode's data-order
// tests: X -> UB (MTE2), exp (V), UB -> Y (MTE3) on each AIV of one block, with the MTE2 -> V
// flag optional so that its absence can be shown.
#pragma once

#include "tl/lang.h"

namespace tl {

/// X, Y: [2 * rows, cols] fp32; AIV `vid` handles rows [vid * rows, (vid + 1) * rows).
/// `copy_line` / `exp_line`, if given, receive the DSL lines of the load and of the exp.
inline PrimFunc load_exp_store(int rows, int cols, bool flag_in, int* copy_line = nullptr,
                               int* exp_line = nullptr) {
  auto X = T::Tensor("X", {2 * rows, cols}, f32);
  auto Y = T::Tensor("Y", {2 * rows, cols}, f32);
  return T::prim_func("load_exp_store", {X, Y}, [&] {
    T::Kernel(1, [&](Expr, Expr vid) {
      T::Scope(Core::Vector, [&] {
        auto x = T::alloc_ub("x_ub", {rows, cols}, f32);
        auto y = T::alloc_ub("y_ub", {rows, cols}, f32);
        if (copy_line) *copy_line = __LINE__ + 1;
        T::copy(X.at({vid * rows, 0}), x);
        if (flag_in) {
          T::set_flag(Pipe::MTE2, Pipe::V, 0);
          T::wait_flag(Pipe::MTE2, Pipe::V, 0);
        }
        if (exp_line) *exp_line = __LINE__ + 1;
        T::tile::exp(y, x);
        T::set_flag(Pipe::V, Pipe::MTE3, 0);
        T::wait_flag(Pipe::V, Pipe::MTE3, 0);
        T::copy(y, Y.at({vid * rows, 0}));
      });
    });
  });
}

}  // namespace tl
