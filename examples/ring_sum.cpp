// Expert-mode two-phase kernel with a barrier over every block (T::sync_all): Y[r] = X[r] / 2 +
// X[(r + 1) % M] / 2, each row plus its successor, halved. Row r is worker r % (2 * blocks)'s
// (the AIVs of all blocks), so a row's successor belongs to another core, usually of another
// block: no flag reaches it, only a barrier over the launch does.
//   phase 1  each worker halves its rows, X[r] * 0.5, into the GM workspace W (T.alloc_workspace);
//   sync_all every AIV of every block has stored its rows of W (SyncAll<true> in AscendC:
//            the barrier is in vector code only);
//   phase 2  each worker reads W[r] and W[(r + 1) % M] back and stores their sum as Y[r].
// Every block must be resident at once (blocks <= the target's AICs; the virtual NPU checks).
// Within a worker, each row's copy -> op -> copy chain is ordered by flags set and waited at
// once (MTE2 -> V, V -> MTE3), and the next row's load waits for this row's store (MTE3 ->
// MTE2), as the tiles are reused. A row that is not whole 32-byte blocks (N = 33 fp16) moves
// with the padded copy (DataCopyPad) both ways; its pad lanes are computed and never stored.
#include "tl/kernel_registry.h"
#include "tl/lang.h"

namespace tl::examples {

PrimFunc ring_sum(int M, int N, int blocks, DType dtype) {
  auto X = T::Tensor("X", {M, N}, dtype);
  auto Y = T::Tensor("Y", {M, N}, dtype);
  const int workers = 2 * blocks, rounds = ceildiv(M, workers);
  const int per_block = 32 / static_cast<int>(dtype_bytes(dtype));
  const int ub_cols = ceildiv(N, per_block) * per_block;
  const T::CopyOptions tail = ub_cols == N ? T::CopyOptions{} : T::CopyOptions{.pad_value = 0.0};
  return T::prim_func("ring_sum", {X, Y}, [&] {
    T::Kernel(blocks, [&](Expr cid, Expr vid) {
      auto W = T::alloc_workspace("W", {M, N}, dtype);
      T::Scope(Core::Vector, [&] {
        auto ub_row = [&](const char* name) {
          return T::alloc_ub(name, {1, ub_cols}, dtype).region({0, 0}, {1, N});
        };
        BufferRegion x = ub_row("x"), y = ub_row("y"), z = ub_row("z");
        Var w = T::let("w", cid * 2 + vid);
        // One row's chain: loads, set/wait MTE2 -> V, op, set/wait V -> MTE3, store, and the
        // store waited for before the next row's loads overwrite the tiles (MTE3 -> MTE2).
        auto each_row = [&](const std::function<void(Expr)>& body) {
          T::serial("i", rounds, [&](Expr i) {
            Expr r = i * workers + w;
            T::If(r < M, [&] { body(r); });
          });
        };
        each_row([&](Expr r) {
          T::copy(X.at({r, 0}), x, tail);
          T::set_flag(Pipe::MTE2, Pipe::V, 0);
          T::wait_flag(Pipe::MTE2, Pipe::V, 0);
          T::tile::mul(z, x, 0.5);  // exact in every float dtype
          T::set_flag(Pipe::V, Pipe::MTE3, 0);
          T::wait_flag(Pipe::V, Pipe::MTE3, 0);
          T::copy(z, W.at({r, 0}), tail);
          T::set_flag(Pipe::MTE3, Pipe::MTE2, 0);
          T::wait_flag(Pipe::MTE3, Pipe::MTE2, 0);
        });
        T::sync_all();
        each_row([&](Expr r) {
          T::copy(W.at({r, 0}), x, tail);
          T::copy(W.at({(r + 1) % M, 0}), y, tail);
          T::set_flag(Pipe::MTE2, Pipe::V, 0);
          T::wait_flag(Pipe::MTE2, Pipe::V, 0);
          T::tile::add(z, x, y);
          T::set_flag(Pipe::V, Pipe::MTE3, 0);
          T::wait_flag(Pipe::V, Pipe::MTE3, 0);
          T::copy(z, Y.at({r, 0}), tail);
          T::set_flag(Pipe::MTE3, Pipe::MTE2, 0);
          T::wait_flag(Pipe::MTE3, Pipe::MTE2, 0);
        });
      });
    });
  });
}

TL_REGISTER_KERNEL({
    .name = "ring_sum",
    .summary = "expert two-phase kernel: X / 2 into a GM workspace, T.sync_all, each row plus its "
               "successor",
    .params = {{"M", "96", "rows of X and Y"},
               {"N", "256", "columns of X and Y"},
               // sync_all needs every block resident: at most the target's AICs.
               {"blocks", "8", "blocks (2 AIVs each take the rows in turn)", {.min = 1, .max = 24}},
               {"dtype", "float16", "X and Y dtype", {.one_of = {"float16", "float32"}}}},
    .build =
        [](const KernelArgs& a) {
          return ring_sum(a.get("M"), a.get("N"), a.get("blocks"), a.get_dtype("dtype"));
        },
});

}  // namespace tl::examples
