// The Prover (tl/replay.h): proves rewrites of a lowered developer kernel's scope bodies
// (merge_flags, guard_loop_credits) on the block replay. It records each op execution's events
// on the bodies as they are (block_replay.cpp unrolls them) and builds each rewrite's streams
// from them, skipping the blocks that walk as an earlier block does (docs/compiler.md,
// "Compile latency").
#include <algorithm>
#include <map>
#include <memory>
#include <tuple>

#include "block_replay_internal.h"
#include "tl/ir_ops.h"
#include "tl/replay.h"

namespace tl::replay {

Prover::Prover(const KernelNode& k, const Stmt bodies[2], const Target& t, int64_t max_blocks,
               size_t budget)
    : k_(k), t_(t), max_blocks_(max_blocks), budget_(budget) {
  std::vector<Streams> streams = record(bodies);
  // What each set's replay learns before it runs (the memories its ops write): the same for
  // every rewrite whose streams are built from this recording by the same walk, which has every
  // op execution the recording has, and no other (Prover::streams).
  if (path_ != Path::Blocks)
    for (const Streams& b : streams) prepared_.push_back(prepare(b));
  std::tie(clean_, per_replay_) = check(streams, path_);
  adopt(streams);
  // With cid unknown, a tail's clipped regions are whole buffers, which the ranges may not tell
  // apart: then block by block, where every address is a constant.
  if (!clean_) {
    each_block_ = true;
    prepared_.clear();
    streams = record(bodies);
    std::tie(clean_, per_replay_) = check(streams, Path::Blocks);
    adopt(streams);
  }
}

/// The streams record() returned, replayed, become their recordings' (a copy of each would
/// cost as much as the replay). record() names a recording for each set it returns, and none
/// when it returns none: a set without its recording would leave the recording's ranges
/// pointing into an empty stream.
void Prover::adopt(std::vector<Streams>& streams) {
  TL_ASSERT(adopting_.size() == streams.size(), "{} recordings for {} sets of streams",
            adopting_.size(), streams.size());
  for (size_t i = 0; i < streams.size(); ++i)
    for (int c = 0; c < 3; ++c) adopting_[i]->cores[c].stream = std::move(streams[i][c]);
  adopting_.clear();
}

bool Prover::holds(const Stmt bodies[2]) {
  if (!clean_ || (spent_ += per_replay_) > budget_) return false;
  const std::vector<Streams> s = streams(bodies);
  return check(s, walked_).first;
}

bool Prover::holds_all(const Stmt bodies[2], size_t questions) {
  if (!clean_ || !shortcuts() || questions == 0 || spent_ + questions * per_replay_ > budget_)
    return false;
  // Every question's walk takes a subset of the decisions of this walk and of the recording's
  // (each guard is asked here as there, the other syncs run as recorded), over the same sets of
  // streams; a walk that had to unroll anew (a split or an op the recording does not have) is
  // not that argument's, so it refuses.
  anew_ = false;
  const std::vector<Streams> s = streams(bodies);
  if (anew_ || s.empty() || !check(s, walked_).first) return false;
  spent_ += questions * per_replay_;
  return true;
}

/// unroll_blocks on the bodies as they are, recording each op execution's events: of the
/// attempt at one set of streams for every block (also when it fails: a rewrite's attempt then
/// fails the same way, or at a recorded op), and of each block's streams.
std::vector<Streams> Prover::record(const Stmt bodies[2]) {
  auto all = std::make_shared<Recorded>();
  auto ranged = std::make_shared<std::vector<Recorded>>();
  auto blocks = std::make_shared<std::vector<Recorded>>();
  base_all_ = all;
  base_ranged_ = ranged;
  base_ = blocks;
  weights_.clear();
  ranges_.clear();
  adopting_.clear();
  path_ = Path::Blocks;
  if (!each_block_) {
    bool undecided = false;
    if (auto s = unroll_one(k_, bodies[0], bodies[1], t_, {}, true, std::nullopt, all.get(),
                            nullptr, nullptr, nullptr, false, nullptr, {0, -1}, &undecided)) {
      adopting_ = {all.get()};
      path_ = Path::All;
      return only(std::move(*s));
    }
    if (undecided && shortcuts()) {
      if (auto sets = ranged_sets(k_, bodies[0], bodies[1], t_, {}, true, max_blocks_, ranged.get(),
                                  nullptr, &ranges_, nullptr, &weights_)) {
        for (Recorded& r : *ranged) adopting_.push_back(&r);
        path_ = Path::Ranged;
        return std::move(*sets);
      }
      ranged->clear();
      ranges_.clear();
      weights_.clear();
    }
  }
  auto n = as_const_int(k_.num_blocks);
  if (!n || *n > max_blocks_) return {};
  std::vector<Streams> out;
  size_t events = 0;
  for (int64_t b = 0; b < *n; ++b) {
    Recorded& r = blocks->emplace_back();
    auto s = unroll_one(k_, bodies[0], bodies[1], t_, {}, true, b, &r, nullptr, nullptr);
    if (!s) return blocks->clear(), std::vector<Streams>{};
    for (const auto& stream : *s) events += stream.size();
    if (events > kMaxBlockEvents) return {};
    out.push_back(std::move(*s));
  }
  // Blocks whose recordings replay alike, op execution by op execution (the same events in the
  // same ranges: a rewrite's stream takes each execution's events from its block's recording).
  for (Recorded& r : *blocks) adopting_.push_back(&r);
  base_rep_ = replay_classes(out);
  for (size_t b = 0; b < out.size(); ++b) {
    const size_t r = base_rep_[b];
    for (int c = 0; c < 3 && r != b; ++c)
      if ((*blocks)[b].cores[c].ranges != (*blocks)[r].cores[c].ranges ||
          (*blocks)[b].cores[c].folds != (*blocks)[r].cores[c].folds)
        base_rep_[b] = b;
  }
  return out;
}

/// The streams of rewritten bodies, exactly as unroll_blocks builds them, with the ops' events
/// taken from the recording (the rewrites only move, guard or drop syncs, so each op runs in the
/// same executions with the same variables; an op that does not, a miss, unrolls anew).
std::vector<Streams> Prover::streams(const Stmt bodies[2]) {
  walked_ = Path::Blocks;
  auto anew = [&] {
    anew_ = true;
    return unroll_blocks(k_, bodies[0], bodies[1], t_, {}, true, max_blocks_, each_block_);
  };
  bool missed = false;
  if (!each_block_) {
    bool undecided = false;
    auto s = unroll_one(k_, bodies[0], bodies[1], t_, {}, true, std::nullopt, nullptr,
                        base_all_.get(), &missed, nullptr, false, nullptr, {0, -1}, &undecided);
    if (s) {
      walked_ = Path::All;
      return only(std::move(*s));
    }
    if (missed) return anew();
    if (undecided && shortcuts() && !ranges_.empty()) {
      // The ranges of the bodies as they are; a rewrite whose decisions split them otherwise
      // (or an op that runs otherwise) unrolls anew.
      Ranges ranges = ranges_;
      auto sets = ranged_sets(k_, bodies[0], bodies[1], t_, {}, true, max_blocks_, nullptr,
                              base_ranged_.get(), &ranges, &missed, nullptr);
      if (sets) {
        walked_ = Path::Ranged;
        return std::move(*sets);
      }
      return anew();
    }
  }
  auto n = as_const_int(k_.num_blocks);
  if (!n || *n > max_blocks_ || base_->size() != static_cast<size_t>(*n) ||
      base_rep_.size() != base_->size())
    return anew();
  // A block whose recording replays as an earlier one's (base_rep_) and whose walk of the
  // rewritten bodies runs the same op executions and syncs (its trace) has a stream that
  // replays as that block's: the same syncs, and each op execution's events those of the
  // recordings, which replay alike (the same events but for one translation of each tensor's
  // addresses per base, the translation fixed by the first span of each, which the syncs
  // between do not move). Its stream is neither built nor replayed; only its size is counted.
  std::vector<Streams> out;
  std::map<size_t, std::array<Trace, 3>> traces;  // of the blocks other blocks replay as
  size_t events = 0;
  for (int64_t b = 0; b < *n; ++b) {
    const size_t i = static_cast<size_t>(b), r = base_rep_[i];
    size_t size = 0;
    std::array<Trace, 3> trace;
    const bool alias = r != i && traces.count(r) && shortcuts();
    const bool keep =
        !alias && shortcuts() && std::count(base_rep_.begin(), base_rep_.end(), i) > 1;
    auto s = unroll_one(k_, bodies[0], bodies[1], t_, {}, true, b, nullptr, &(*base_)[i], &missed,
                        alias || keep ? &trace : nullptr, alias, &size);
    if (!s) return missed ? anew() : std::vector<Streams>{};
    if (alias && trace != traces[r]) {  // other syncs run: built and replayed on its own
      size = 0;
      s = unroll_one(k_, bodies[0], bodies[1], t_, {}, true, b, nullptr, &(*base_)[i], &missed,
                     nullptr, false, &size);
      if (!s) return missed ? anew() : std::vector<Streams>{};
    } else if (alias) {
      if ((events += size) > kMaxBlockEvents) return {};
      continue;
    }
    if (keep) traces[i] = std::move(trace);
    if ((events += size) > kMaxBlockEvents) return {};
    out.push_back(std::move(*s));
  }
  return out;
}

std::pair<bool, size_t> Prover::check(const std::vector<Streams>& blocks, Path path) const {
  Query q;
  q.accesses = q.balanced = true;
  size_t events = 0;
  for (const Streams& b : blocks)
    for (const auto& stream : b) events += stream.size();
  if (weights_.size() == blocks.size()) {  // sets of cid ranges: each counts its blocks
    events = 0;
    for (size_t b = 0; b < blocks.size(); ++b)
      for (const auto& stream : blocks[b])
        events += stream.size() * static_cast<size_t>(weights_[b]);
  }
  // Blocks that replay alike (replay_classes) are replayed once.
  const std::vector<size_t> rep = replay_classes(blocks);
  bool ok = !blocks.empty();
  // The recording's prepare() where these streams were walked as it was (the same path, not
  // anew: the same op executions in each set).
  const bool same = path != Path::Blocks && path == path_ && prepared_.size() == blocks.size();
  for (size_t b = 0; ok && b < blocks.size(); ++b)
    if (rep[b] == b) ok = replay(blocks[b], {}, q, same ? &prepared_[b] : nullptr);
  return {ok, events};
}

}  // namespace tl::replay
