// merge_flags (lowered developer kernels, after elide_implied_syncs, with minimise_syncs and the
// option of its own, DeveloperOptions::merge_flags): makes one flag of two
// neighbouring flags of a pipe pair, as an expert writes one set_flag after loading both GEMM
// panels where insert_syncs, which sets each flag right after its source and waits right before
// its destination, gives A's panel and B's panel a flag each. The merged flag is set where the
// later of the two sets was and waited where the earlier of the two waits was, so it orders
// everything both did (a set_flag fires once every earlier instruction of its pipe is done) at
// the price of the earlier destination waiting for the later source.
//
// Two flags X and Y of one pipe pair merge when their statements correspond one to one in
// program order, each pair a set and a set or a wait and a wait in the same block (so both run
// the same number of times, in the same iterations), and no other set or wait of the pipe pair
// lies between the two statements of a pair (neighbours only: the L1 credits of a panel's slot 0
// and slot 1 are not merged, which would let one panel's loads wait for the next panel's reads).
// Each merge is proven on the kernel as it will run, as elide_implied_syncs proves a drop
// (block_replay): the replay of every block with the merged flag must order every conflicting
// pair and finish on every core; the order of the merged flag's statements must be that of X's.
// Where the streams cannot be built (a dynamic protocol, scalar memory accesses) nothing merges.
#include <algorithm>
#include <array>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <vector>

#include "developer.h"
#include "tl/ir_functor.h"
#include "tl/pass.h"
#include "tl/replay.h"

namespace tl {
namespace {

constexpr int64_t kMaxBlocks = 64;                // as elide_implied_syncs
constexpr size_t kMaxReplayedEvents = 5'000'000;  // all candidate replays together
using dev::FlagSite;

/// Whether another set or wait of the pipe pair src -> dst lies strictly between positions a and
/// b of `block`.
bool flag_between(const SeqNode& block, size_t a, size_t b, Pipe src, Pipe dst) {
  for (size_t i = std::min(a, b) + 1; i < std::max(a, b); ++i)
    if (auto* y = block.stmts[i].as<SyncNode>();
        y && (y->sync_kind == SyncKind::SetFlag || y->sync_kind == SyncKind::WaitFlag) &&
        y->src == src && y->dst == dst)
      return true;
  return false;
}

/// The body with Y merged into X: each pair's statement of X at the later set or the earlier
/// wait, Y's gone; nullopt when the flags do not correspond one to one in neighbouring places.
std::optional<Stmt> merged(const Stmt& body, const std::vector<FlagSite>& xs,
                           const std::vector<FlagSite>& ys) {
  if (xs.size() != ys.size()) return std::nullopt;
  std::map<const StmtNode*, Stmt> moves;  // a statement of Y -> X's, moved there; X's -> gone
  for (size_t i = 0; i < xs.size(); ++i) {
    const FlagSite &x = xs[i], &y = ys[i];
    if (!x.block || x.block != y.block || x.sync()->sync_kind != y.sync()->sync_kind ||
        flag_between(*x.block, x.index, y.index, x.sync()->src, x.sync()->dst))
      return std::nullopt;
    const bool set = x.sync()->sync_kind == SyncKind::SetFlag;
    if ((y.index > x.index) == set) {
      moves[y.stmt.get()] = x.stmt;
      moves[x.stmt.get()] = Stmt();
    } else {
      moves[y.stmt.get()] = Stmt();
    }
  }
  Stmt out = dev::replaced(body, moves);
  // X's statements must run in the order they did: then the k-th set still precedes (and is
  // consumed by) the k-th wait, and the merged flag stays balanced.
  std::vector<const StmtNode*> order;
  pre_order_visit(out, [&](const Stmt& s) {
    for (const FlagSite& x : xs)
      if (s.same_as(x.stmt)) order.push_back(s.get());
  });
  for (size_t i = 0; i < xs.size(); ++i)
    if (i >= order.size() || order[i] != xs[i].stmt.get()) return std::nullopt;
  return out;
}

}  // namespace

PrimFunc merge_flags(const PrimFunc& f, const Target& target) {
  const KernelNode* k = dev::find_kernel(f);
  if (!k || !k->vid.defined()) return f;
  std::array<Stmt, 2> bodies = dev::scope_bodies(*k);
  replay::Prover prover(*k, bodies.data(), target, kMaxBlocks, kMaxReplayedEvents);
  if (!prover.clean()) return f;
  bool changed = false;
  // A pair the replay refused is not asked again after a later merge (each question is a replay
  // of every block; the flags' keys outlive merges, Y's key is gone with Y).
  std::set<std::pair<dev::FlagKey, dev::FlagKey>> refused;
  for (bool progress = true; progress;) {
    progress = false;
    auto sites = dev::flag_sites(bodies.data());
    for (auto x = sites.begin(); x != sites.end() && !progress; ++x)
      for (auto y = std::next(x); y != sites.end() && !progress; ++y) {
        const auto& [scope, src, dst, id] = x->first;
        if (std::get<0>(y->first) != scope || std::get<1>(y->first) != src ||
            std::get<2>(y->first) != dst || refused.count({x->first, y->first}))
          continue;
        auto body = merged(bodies[scope], x->second, y->second);
        if (!body) continue;
        std::array<Stmt, 2> trial = bodies;
        trial[scope] = *body;
        if (!prover.holds(trial.data())) {
          refused.insert({x->first, y->first});
          continue;
        }
        bodies[scope] = *body;
        progress = changed = true;
      }
  }
  if (!changed) return f;
  return dev::with_scope_bodies(f, bodies);
}

}  // namespace tl
