// Softmax's public functions (include/cann_ops_tilelang/softmax.h): validation, the empty-tensor
// rule, launch parameters from the Target (softmax_key: one pass or column chunks, from the
// UB size), output allocation, and the launch of softmax_kernel.cpp's kernels through the
// compiled-kernel cache.
#include <fmt/format.h>

#include <functional>

#include "cann_ops_tilelang/softmax.h"
#include "softmax_tree.h"
#include "tl/gm_fill.h"

namespace cann_ops_tilelang {

tl::GmFill output_fill();  // core.cpp: Unwritten unless the launches are timing-only
namespace {

const std::vector<tl::DType> kDtypes{tl::DType::BFloat16, tl::DType::Float16, tl::DType::Float32};

int64_t round_up(int64_t v, int64_t q) {
  return (v + q - 1) / q * q;
}

/// Flattens [..., N] to [rows, N].
tl::Tensor rows_view(const tl::Tensor& t) {
  const int64_t n = t.shape().back();
  return t.reshape({n == 0 ? 0 : t.numel() / n, n});
}

void check_x(const Checker& c, std::string_view arg, const tl::Tensor& x) {
  c.tensor(arg, x);
  c.dtype(arg, x, kDtypes);
  c.min_rank(arg, x, 1);
  if (x.shape().back() == 0)
    c.fail(arg, "has an empty last dimension: expected at least 1 column, got 0");
}

/// UB bytes one AIV uses for a row tile of bM rows and w columns: per element the loaded tiles,
/// their fp32 widenings, the fp32 temporaries (the compiler's included) and the narrowed output, on
/// 32-byte padded rows; plus the row statistics and a margin. split_aiv gives each AIV half the
/// rows of a tile of 8 or more (its row statistics are then whole 32-byte blocks); a smaller tile's
/// rows cannot be split and the AIVs take alternate tiles, each a whole tile.
int64_t ub_use(tl::DType dt, bool log, bool backward, bool one_pass, int64_t bM, int64_t w) {
  const int64_t es = tl::dtype_bytes(dt), wide = dt != tl::DType::Float32;
  const int64_t rows = bM >= 8 ? bM / 2 : bM;
  const int64_t inputs = backward ? 2 : 1;
  // The kernel's fp32 temporaries, plus one the compiler makes for a compound element loop
  // (y * (dy - s) in the backward: without it, 7 x 100003 fp32 asked 247 KB of UB).
  const int64_t temps = 1 + (backward ? (log ? 0 : 1) : (log && one_pass ? 1 : 0));
  const int64_t in_row = round_up(w * es, 32), f_row = round_up(w * 4, 32);
  const int64_t per_row = inputs * (in_row + wide * f_row) + temps * f_row + wide * in_row;
  return rows * per_row + 8 * 1024;  // statistics, alignment
}

constexpr int64_t kRowsPerTile[] = {8, 4, 2, 1};  // one-pass candidates, widest first
constexpr int64_t kChunkRows = 16;                // the chunked schedule: 8 fp32 statistics per AIV

// The chunk width of a streamed or split schedule: the divisor of n, a multiple of 32 and at least
// 1024 columns, that fits and costs the least per column in what a chunk adds to its columns' own
// work (the statistics' barriers, about 1500 cycles, and the trees' final reductions); 0 if none.
int64_t cheapest_chunk(int64_t n, int64_t ub_bytes, const std::function<bool(int64_t)>& fits) {
  int64_t best = 0;
  double best_cost = 0;
  for (int64_t w = 1024; w <= n && w <= ub_bytes; w += 32) {
    if (n % w != 0 || !fits(w)) continue;
    const double cost =
        (1500.0 +
         2.0 * static_cast<double>(softmax_tree::tree_reduce_cycles(static_cast<int>(w / 4)))) /
        static_cast<double>(w);
    if (best == 0 || cost < best_cost) best = w, best_cost = cost;
  }
  return best;
}

}  // namespace

std::string SoftmaxKey::str() const {
  return fmt::format(
      "dtype={},N={},bM={},bN={},blocks={},log={},backward={},resident={},streamed={},split={}",
      tl::dtype_name(dtype), cols, rows_per_tile, chunk, blocks, log, backward, resident, streamed,
      split);
}

SoftmaxKey softmax_key(tl::DType dtype, int64_t cols, bool log, bool backward,
                       const tl::Target& target) {
  const auto budget = vector_budget(target);
  SoftmaxKey k{
      .dtype = dtype, .cols = cols, .blocks = budget.blocks, .log = log, .backward = backward};
  // The resident schedule (softmax_resident.cpp): two slots of bM rows of each input in the I/O
  // dtype, each input's tile in fp32, the max / sum tree, the row statistics.
  if (cols % 32 == 0) {
    const int64_t es = tl::dtype_bytes(dtype), inputs = backward ? 2 : 1;
    const int64_t stats = 16 * 512;  // statistics and the residues' padding
    for (int64_t bM : kRowsPerTile) {
      const int64_t tile = bM * cols;
      const int64_t tree =
          softmax_tree::tree_bytes(static_cast<int>(bM), static_cast<int>(cols / 4));
      // A 16-bit log-softmax forward keeps x's fp32 halves and writes the exp of its quarters
      // into the tree's t0, t1 and two more [bM, N / 4] fp32 buffers.
      const int64_t quarters = log && !backward && dtype != tl::DType::Float32 ? 2 * tile : 0;
      if (2 * inputs * tile * es + inputs * tile * 4 + tree + quarters + stats <= budget.ub_bytes) {
        k.rows_per_tile = bM;
        k.chunk = cols;
        k.resident = true;
        return k;
      }
    }
  }
  for (int64_t bM : kRowsPerTile) {
    if (ub_use(dtype, log, backward, true, bM, cols) <= budget.ub_bytes) {
      k.rows_per_tile = bM;
      k.chunk = cols;
      return k;
    }
  }
  // The split schedule (softmax_split.cpp) for a 16-bit backward whose half row of one input fits:
  // that input is read once (docs/ops.md, "The split backward").
  if (backward) {
    if (auto s = softmax_split_key(dtype, cols, log, target); s.split) return s;
  }
  // The streamed schedule (softmax_streamed.cpp): one row per tile, three slots of a bN-column
  // chunk of each input, its fp32 widening and the tree. bN: the divisor of N, a multiple of 32,
  // that fits and costs the least per column in what a chunk adds to its columns' own work (the
  // statistics' barriers, about 1500 cycles, and the trees' final reductions); none, or one
  // narrower than 1024 columns, keeps the developer-mode chunks.
  if (cols % 32 == 0) {
    const int64_t es = tl::dtype_bytes(dtype), inputs = backward ? 2 : 1, stats = 24 * 512;
    auto fits = [&](int64_t w) {
      const int64_t tree = softmax_tree::tree_bytes(1, static_cast<int>(w / 4));
      // The forward's two running sums at the tree's last width (row_tree_acc).
      const int64_t acc =
          backward ? 0 : 2 * int64_t{softmax_tree::tree_last_width(static_cast<int>(w / 4))} * 4;
      return 3 * inputs * w * es + inputs * w * 4 + tree + acc + stats <= budget.ub_bytes;
    };
    if (const int64_t best = cheapest_chunk(cols, budget.ub_bytes, fits); best > 0) {
      k.rows_per_tile = 1;
      k.chunk = best;
      k.streamed = true;
      return k;
    }
  }
  // Chunks: the widest multiple of 32 bytes that fits, then the chunk count's balanced width
  // (the last chunk is clipped by the compiler, its padding kept out of the sums).
  const int64_t quantum = 32 / tl::dtype_bytes(dtype);
  int64_t w = std::min(round_up(cols, quantum), budget.ub_bytes / quantum * quantum);
  while (w > quantum && ub_use(dtype, log, backward, false, kChunkRows, w) > budget.ub_bytes)
    w -= quantum;
  const int64_t chunks = (cols + w - 1) / w;
  k.rows_per_tile = kChunkRows;
  k.chunk = round_up((cols + chunks - 1) / chunks, quantum);
  return k;
}

SoftmaxKey softmax_split_key(tl::DType dtype, int64_t cols, bool log, const tl::Target& target) {
  const auto budget = vector_budget(target);
  SoftmaxKey k{.dtype = dtype,
               .cols = cols,
               .rows_per_tile = 1,
               .blocks = budget.blocks,
               .log = log,
               .backward = true};
  // A block's two AIVs share each row, each holding its half of one input resident beside five
  // slots (softmax_split.cpp's kSlots) of a bN-column chunk of the other, both chunks' fp32 halves
  // and the exchanged sums (no tree: the halves are reduced directly).
  if (dtype == tl::DType::Float32 || cols % 64 != 0) return k;
  const int64_t es = tl::dtype_bytes(dtype), half = cols / 2, stats = 16 * 512;
  auto fits = [&](int64_t w) {
    return half * es + 5 * w * es + 2 * w * 4 + stats <= budget.ub_bytes;
  };
  if (const int64_t w = cheapest_chunk(half, budget.ub_bytes, fits); w > 0) {
    k.chunk = w;
    k.split = true;
  }
  return k;
}

namespace {

tl::Tensor forward(const char* op, bool log, const tl::Tensor& x, const tl::Loc& loc) {
  Checker c(op, loc);
  check_x(c, "x", x);
  tl::Device& dev = *x.device();
  // Every kernel of softmax_kernel() stores each element of Y (DX) once and never reads it, so
  // the output needs no zero fill (tl/gm_fill.h; TL_GM_POISON checks it in the tests).
  tl::Tensor y = [&] {
    tl::ScopedGmFill unwritten(output_fill());
    return tl::Tensor::empty(dev, x.shape(), x.dtype());
  }();
  const tl::Tensor x2 = rows_view(x);
  if (x2.dim(0) == 0) return y;  // no rows: an empty output, no launch
  auto key = softmax_key(x.dtype(), x.shape().back(), log, false, dev.target());
  auto kernel =
      cached_kernel("softmax/" + key.str(), dev.target(), [&] { return softmax_kernel(key); });
  launch(kernel, dev, {x2, rows_view(y)});
  return y;
}

tl::Tensor backward(const char* op, bool log, const tl::Tensor& dy, const tl::Tensor& y,
                    const tl::Loc& loc) {
  Checker c(op, loc);
  check_x(c, "y", y);
  c.tensor("dy", dy);
  c.same_device("dy", dy, "y", y);
  c.same_dtype("dy", dy, "y", y);
  c.shape("dy", dy, y.shape());
  tl::Device& dev = *y.device();
  tl::Tensor dx = [&] {
    tl::ScopedGmFill unwritten(output_fill());
    return tl::Tensor::empty(dev, y.shape(), y.dtype());
  }();
  const tl::Tensor y2 = rows_view(y);
  if (y2.dim(0) == 0) return dx;
  auto key = softmax_key(y.dtype(), y.shape().back(), log, true, dev.target());
  auto kernel =
      cached_kernel("softmax/" + key.str(), dev.target(), [&] { return softmax_kernel(key); });
  launch(kernel, dev, {y2, rows_view(dy), rows_view(dx)});
  return dx;
}

}  // namespace

tl::Tensor softmax(const tl::Tensor& x, const tl::Loc& loc) {
  return forward("softmax", false, x, loc);
}
tl::Tensor log_softmax(const tl::Tensor& x, const tl::Loc& loc) {
  return forward("log_softmax", true, x, loc);
}
tl::Tensor softmax_backward(const tl::Tensor& dy, const tl::Tensor& y, const tl::Loc& loc) {
  return backward("softmax_backward", false, dy, y, loc);
}
tl::Tensor log_softmax_backward(const tl::Tensor& dy, const tl::Tensor& y, const tl::Loc& loc) {
  return backward("log_softmax_backward", true, dy, y, loc);
}

OpCost softmax_cost(int64_t rows, int64_t cols, tl::DType dtype, bool backward) {
  const double es = tl::dtype_bytes(dtype), mn = static_cast<double>(rows) * cols;
  // Forward: x read, y written; max, subtract, exp, sum, scale: 5 ops per element. Backward: y
  // and dy read, dx written; product, sum, subtract, scale: 4.
  return {.bytes = (backward ? 3 : 2) * mn * es, .vector_ops = (backward ? 4 : 5) * mn};
}

}  // namespace cann_ops_tilelang
