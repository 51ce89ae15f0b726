// The sets of streams of cid ranges, and unroll_block / unroll_blocks on top of them
// (tl/replay.h): a walk with cid unknown but in a range of blocks stands for every block of the
// range where each decision it takes is one value over the range, and splits the range into the
// runs of blocks that decide alike where one is not (docs/compiler.md, "Compile latency").
// block_replay.cpp holds the walk itself (unroll_one).
#include <deque>
#include <optional>
#include <utility>
#include <vector>

#include "block_replay_internal.h"
#include "tl/arith.h"
#include "tl/ir_ops.h"
#include "tl/replay.h"

namespace tl::replay {

/// unroll_one with cid ranges (Unroller::cid_range): sets of streams, each every block's of its
/// range of cid (each block's own walk takes the same decisions: each is one value over the
/// range), but for cid's part of the addresses. From [0, blocks), a range whose walk meets a
/// decision that differs between its blocks (Unroller::split) splits into the runs of blocks
/// that take the same value, and each run is walked anew (at most kMaxRangeWalks walks). With
/// `reuse`, the ranges (`*ranges`) and op events of an earlier call; any failure a nullopt. The
/// blocks' own streams would count each block's events in the budgets and be built only for at
/// most `max_blocks` blocks with kMaxBlockEvents in all: so do these (`*weights`: the blocks each
/// set stands for). nullopt where the sets cannot be built.
constexpr int kMaxRangeWalks = 16;
std::optional<std::vector<Streams>> ranged_sets(const KernelNode& k, const Stmt& cube,
                                                const Stmt& vector, const Target& t,
                                                const std::vector<Channel>& channels, bool accesses,
                                                int64_t max_blocks, std::vector<Recorded>* recs,
                                                const std::vector<Recorded>* reuse, Ranges* ranges,
                                                bool* missed, std::vector<int64_t>* weights) {
  auto n = as_const_int(k.num_blocks);
  if (!n || *n < 1 || *n > max_blocks || !k.cid.defined()) return std::nullopt;
  std::deque<std::pair<int64_t, int64_t>> todo;
  if (reuse) {
    if (!ranges || ranges->size() != reuse->size()) return std::nullopt;
    todo.assign(ranges->begin(), ranges->end());
  } else {
    todo.push_back({0, *n - 1});
  }
  std::vector<Streams> out;
  Ranges done;
  size_t events = 0;
  // The first range is walked without accesses first. The walk takes the same decisions either
  // way: only a walk with accesses enters the branches and loops without syncs or channel
  // copies, and their lets bind variables no decision outside them reads; the decisions that
  // matter read the same variables, bound alike. So it meets the same decision that differs
  // between blocks (the same split), for a fraction of the cost (no byte ranges); where it
  // splits, the walk with accesses would have stopped there. Where it does not, the walk with
  // accesses follows, counted as the one walk it is (kMaxRangeWalks); a failure of that walk
  // before a split (an op on S, too many events, memory on S) fails each run's walk the same
  // way, as their decisions up to the split are the range's. gemm_dev at 4096^3 splits on its
  // last tile (blocks 0-7 run 22, blocks 8-23 21), after the whole walk.
  bool probe = accesses && !reuse && shortcuts();
  for (int walks = 0; !todo.empty(); ++walks) {
    if (walks >= kMaxRangeWalks) return std::nullopt;
    const auto [lo, hi] = todo.front();
    todo.pop_front();
    size_t size = 0;
    bool undecided = false;
    Expr split;
    Recorded rec;
    std::optional<Streams> s;
    if (probe) {
      probe = false;
      unroll_one(k, cube, vector, t, channels, false, std::nullopt, nullptr, nullptr, nullptr,
                 nullptr, false, nullptr, {lo, hi}, &undecided, &split);
      if (!undecided || !split.defined()) undecided = false, split = Expr();
    }
    if (!undecided)
      s = unroll_one(k, cube, vector, t, channels, accesses, std::nullopt, recs ? &rec : nullptr,
                     reuse ? &(*reuse)[done.size()] : nullptr, missed, nullptr, false, &size,
                     {lo, hi}, &undecided, &split);
    if (!s) {
      if (reuse || !undecided || !split.defined()) return std::nullopt;
      // The runs of blocks that take one value, each walked anew, in order of cid.
      Ranges runs;
      std::optional<int64_t> last;
      for (int64_t c = lo; c <= hi; ++c) {
        arith::Interval v = arith::bound(split, {{k.cid.node(), arith::Interval::point(c)}});
        if (!v.is_point()) return std::nullopt;
        if (!last || *last != v.lo) runs.push_back({c, c});
        runs.back().second = c;
        last = v.lo;
      }
      if (runs.size() < 2) return std::nullopt;
      todo.insert(todo.begin(), runs.begin(), runs.end());
      continue;
    }
    events += size * static_cast<size_t>(hi - lo + 1);
    if (events > kMaxBlockEvents) return std::nullopt;
    if (recs) recs->push_back(std::move(rec));
    if (weights) weights->push_back(hi - lo + 1);
    done.push_back({lo, hi});
    out.push_back(std::move(*s));
  }
  if (ranges && !reuse) *ranges = done;
  return out;
}

std::optional<Streams> unroll_block(const KernelNode& k, const Stmt& cube, const Stmt& vector,
                                    const Target& t, const std::vector<Channel>& channels,
                                    bool accesses, std::optional<int64_t> cid) {
  return unroll_one(k, cube, vector, t, channels, accesses, cid, nullptr, nullptr, nullptr);
}

std::vector<Streams> unroll_blocks(const KernelNode& k, const Stmt& cube, const Stmt& vector,
                                   const Target& t, const std::vector<Channel>& channels,
                                   bool accesses, int64_t max_blocks, bool each_block,
                                   std::vector<int64_t>* weights, bool* shared) {
  if (weights) weights->clear();
  if (shared) *shared = !each_block;
  auto ones = [&](std::vector<Streams> v) {  // one block per set
    if (weights) weights->assign(v.size(), 1);
    return v;
  };
  if (!each_block) {
    bool undecided = false;
    if (auto all = unroll_one(k, cube, vector, t, channels, accesses, std::nullopt, nullptr,
                              nullptr, nullptr, nullptr, false, nullptr, {0, -1}, &undecided))
      return ones(only(std::move(*all)));
    if (undecided && shortcuts()) {
      std::vector<int64_t> w;
      if (auto sets = ranged_sets(k, cube, vector, t, channels, accesses, max_blocks, nullptr,
                                  nullptr, nullptr, nullptr, &w)) {
        if (weights) *weights = w;
        return std::move(*sets);
      }
    }
  }
  if (shared) *shared = false;
  auto n = as_const_int(k.num_blocks);
  if (!n || *n > max_blocks) return {};
  std::vector<Streams> out;
  size_t events = 0;
  for (int64_t b = 0; b < *n; ++b) {
    auto one = unroll_block(k, cube, vector, t, channels, accesses, b);
    if (!one) return {};
    for (const auto& stream : *one) events += stream.size();
    if (events > kMaxBlockEvents) return {};
    out.push_back(std::move(*one));
  }
  return ones(std::move(out));
}

}  // namespace tl::replay
