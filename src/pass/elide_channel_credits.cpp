// elide_channel_credits (lowered developer kernels, after insert_channel_syncs, with
// minimise_syncs): drops the credits of a channel whose slot reuse the other flags already
// order. insert_channel_syncs gives every channel inside a loop a credit: the consumer raises it
// after each copy out of a slot, the producer waits for it before overwriting the slot. In a
// round trip the credit is often implied. FlashAttention's cube pops P of tile t before it
// pushes S and PV of tile t + 2, and its vector unit pops S and PV of tile t before it pushes P
// of tile t + 2, so each data flag of one direction carries the other direction's reads.
//
// The pass proves it per channel, on the kernel as it will run, rather than by a pattern: it
// unrolls one block's three cores (the AIC, AIV 0, AIV 1) into their instruction streams and
// replays them (tl/replay.h) with the hazard checker's rules (tl/sync_rules.h;
// src/npu/hazard.cpp): a vector clock per pipe of what that pipe knows is complete, set_flag
// carrying what its pipe knew once its earlier instructions are done, wait_flag and wait_cross_flag
// joining it in, mode-2 cross flags pairing the AIC's k-th set with each AIV's k-th wait and both
// AIVs' k-th sets with the AIC's k-th wait. With one channel's credit left out, every overwrite of
// a slot (the n-th push) must still start knowing that every consumer finished the read of the n -
// slots-th tile, and the replay must not deadlock; then its credit syncs go, pre-sets and drains
// included.
//
// Only where that replay is the whole truth: every loop trip count and every condition around a
// sync or a channel copy must be a constant once vid is fixed (no cid, no dynamic size), and the
// streams must stay small. Otherwise every credit stays. Scalar instructions are left out of the
// streams: they only add order, so the proof is conservative. The hazard-checked tests
// (HazardMutation.DeveloperKernelsHaveNoRedundantSync) delete every remaining sync one by one.
#include <algorithm>
#include <functional>
#include <optional>
#include <set>

#include "developer.h"
#include "tl/arith.h"
#include "tl/ir_functor.h"
#include "tl/op.h"
#include "tl/ops.h"
#include "tl/pass.h"
#include "tl/replay.h"

namespace tl {
namespace {

using replay::Channel;

/// The channels and their credits: a credit is the cross flag raised right after a copy out of
/// the channel's workspace (the one after a copy into it is its data flag; an id seen in both
/// places is not taken for a credit).
std::vector<Channel> channels_of(const KernelNode& k) {
  std::vector<Channel> out;
  for (const Stmt& s : dev::stmts_of(k.body))
    if (auto* a = s.as<AllocateNode>(); a && !a->is_view() && a->buffer->channel_slots > 0)
      out.push_back({a->buffer.get(), a->buffer->channel_slots});
  std::set<int64_t> data_ids;
  std::function<void(const Stmt&)> walk = [&](const Stmt& s) {
    if (!s.defined()) return;
    if (auto* q = s.as<SeqNode>()) {
      for (size_t i = 0; i + 1 < q->stmts.size(); ++i) {
        auto* op = q->stmts[i].as<TileOpNode>();
        auto* y = q->stmts[i + 1].as<SyncNode>();
        if (!op || !y || y->sync_kind != SyncKind::SetCrossFlag || op->op != &ops::copy() ||
            op->args.size() != 2 || !op->args[0].is_region() || !op->args[1].is_region())
          continue;
        auto id = as_const_int(y->event_id);
        if (!id) continue;
        for (Channel& c : out) {
          if (op->args[0].region.buffer.get() == c.ws) c.credit = static_cast<int>(*id);
          if (op->args[1].region.buffer.get() == c.ws) data_ids.insert(*id);
        }
      }
      for (const Stmt& x : q->stmts) walk(x);
    } else if (auto* f = s.as<ForNode>()) {
      walk(f->body);
    } else if (auto* n = s.as<IfNode>()) {
      walk(n->then_case);
      walk(n->else_case);
    } else if (auto* sc = s.as<ScopeNode>()) {
      walk(sc->body);
    }
  };
  walk(k.body);
  for (Channel& c : out)
    if (data_ids.count(c.credit)) c.credit = -1;
  return out;
}

/// Whether a copy into `ws` in `s` sits under an `if` that reads vid (split_aiv's turns: the AIVs
/// push the slot in turns). The replay's slot rule counts each AIV's pushes as every tile's, so
/// there it would miss that AIV 1's first push overwrites what AIV 0 pushed: such a channel keeps
/// its credit.
bool pushed_in_turns(const Stmt& s, const BufferNode* ws, const Var& vid) {
  bool found = false;
  pre_order_visit(s, [&](const Stmt& x) {
    auto* n = x.as<IfNode>();
    if (found || !n) return;
    bool reads_vid = false;
    pre_order_visit(
        LetNode::make(Var("cond", n->cond.dtype()), n->cond, n->loc), [](const Stmt&) {},
        [&](const Expr& e) { reads_vid = reads_vid || e.get() == vid.node(); });
    if (!reads_vid) return;
    pre_order_visit(n->then_case, [&](const Stmt& y) {
      auto* op = y.as<TileOpNode>();
      if (op && op->op == &ops::copy() && op->args.size() == 2 && op->args[1].is_region() &&
          op->args[1].region.buffer.get() == ws)
        found = true;
    });
  });
  return found;
}

/// `s` without the cross-core sets and waits of flag `id`.
Stmt without_cross_flag(const Stmt& s, int id) {
  return dev::without(s, [id](const Stmt& x) {
    auto* y = x.as<SyncNode>();
    return y &&
           (y->sync_kind == SyncKind::SetCrossFlag || y->sync_kind == SyncKind::WaitCrossFlag) &&
           as_const_int(y->event_id) == id;
  });
}

/// Whether the streams of `s` without the cross-core sets and waits of flag `id` are the streams
/// of `s` with those events taken out, so that they need not be unrolled again: block_replay
/// walks a loop or branch that holds a sync or a channel copy (matters()), and without accesses
/// skips one that holds neither or takes both branches' ops, so every loop and branch around one
/// of the flag's statements must still hold another sync or a channel copy, or hold no op (then
/// how it is walked adds no event). Its other statements are the same nodes, and its decisions
/// read no sync.
bool filterable(const Stmt& s, int id, const std::vector<Channel>& channels) {
  auto is_flag = [id](const Stmt& x) {
    auto* y = x.as<SyncNode>();
    return y &&
           (y->sync_kind == SyncKind::SetCrossFlag || y->sync_kind == SyncKind::WaitCrossFlag) &&
           as_const_int(y->event_id) == id;
  };
  auto still_walked = [&](const Stmt& a) {
    bool order = false, ops = false;
    pre_order_visit(a, [&](const Stmt& x) {
      if (x.as<SyncNode>() && !is_flag(x)) order = true;
      if (auto* op = x.as<TileOpNode>()) {
        ops = true;
        for (const Channel& c : channels)
          for (const auto& arg : op->args)
            if (op->op == &ops::copy() && arg.is_region() && arg.region.buffer.get() == c.ws)
              order = true;
      }
    });
    return order || !ops;
  };
  bool ok = true;
  std::vector<Stmt> around;  // the loops and branches around the statement walked
  std::function<void(const Stmt&)> walk = [&](const Stmt& x) {
    if (!ok || !x.defined()) return;
    if (is_flag(x)) {
      for (const Stmt& a : around) ok = ok && still_walked(a);
      return;
    }
    if (auto* q = x.as<SeqNode>()) {
      for (const Stmt& y : q->stmts) walk(y);
    } else if (auto* f = x.as<ForNode>()) {
      around.push_back(x);
      walk(f->body);
      around.pop_back();
    } else if (auto* n = x.as<IfNode>()) {
      around.push_back(x);
      walk(n->then_case);
      walk(n->else_case);
      around.pop_back();
    } else if (auto* sc = x.as<ScopeNode>()) {
      walk(sc->body);
    }
  };
  walk(s);
  return ok;
}

}  // namespace

PrimFunc elide_channel_credits(const PrimFunc& f, const Target& target) {
  const KernelNode* k = dev::find_kernel(f);
  if (!k || !k->vid.defined()) return f;
  std::vector<Channel> channels = channels_of(*k);
  bool any = false;
  for (const Channel& c : channels) any = any || (c.credit >= 0 && c.slots >= 1);
  if (!any) return f;
  Stmt cube, vector;
  for (const Stmt& s : dev::stmts_of(k->body))
    if (auto* sc = s.as<ScopeNode>()) (sc->core == CoreKind::Cube ? cube : vector) = sc->body;
  if (!cube.defined() || !vector.defined()) return f;
  Stmt body = k->body;
  // The streams of the bodies and channels as they are: built again only after a credit goes
  // (a refused credit changes neither).
  std::optional<replay::Streams> streams;
  for (size_t c = 0; c < channels.size(); ++c) {
    if (channels[c].credit < 0 || channels[c].slots < 1) continue;
    if (pushed_in_turns(vector, channels[c].ws, k->vid)) continue;
    if (!streams) streams = replay::unroll_block(*k, cube, vector, target, channels, false);
    if (!streams) break;
    replay::Query q;
    q.dropped_cross = channels[c].credit;
    q.slot_channel = static_cast<int>(c);
    if (!replay::replay(*streams, channels, q)) continue;
    const int id = channels[c].credit;
    // The next credit's streams: these without the flag's events where that is what unrolling
    // the bodies without it gives (a channel's credit is raised next to its copies), else anew.
    if (replay::shortcuts() && filterable(cube, id, channels) && filterable(vector, id, channels))
      for (auto& stream : *streams)
        stream.remove_if([id](const replay::Event& e) {
          return (e.kind == replay::Event::SetCross || e.kind == replay::Event::WaitCross) &&
                 e.id == id;
        });
    else
      streams.reset();
    body = without_cross_flag(body, id);
    cube = without_cross_flag(cube, id);
    vector = without_cross_flag(vector, id);
    channels[c].credit = -1;
  }
  return body.same_as(k->body) ? f : dev::with_kernel_body(f, dev::stmts_of(body));
}

}  // namespace tl
