// Single-synchronisation deletions of a kernel, shared by the mutation tests of the hazard
// checker (hazard_mutation_test.cpp) and of timed mode's simulated-time data order
// (timed_data_test.cpp): every set_flag/wait_flag pair, pipe_barrier, barrier_all, sync_all and
// cross-core flag (set and waits, the set alone, the waits alone) removed in turn.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "tl/ir_functor.h"
#include "tl/printer.h"

namespace tl {

struct Mutation {
  std::string label;
  std::set<const StmtNode*> drop;
};

inline std::string pipe_s(Pipe p) {
  return std::string(pipe_name(p));
}
/// The event id as written ("0", "kv % 2 + 3"): pairs and cross-flag groups match on it.
inline std::string id_of(const SyncNode* s) {
  return s->event_id.defined() ? print(s->event_id) : "";
}

/// Every single-sync deletion of `f`, labelled "flag SRC->DST id N #k", "pipe_barrier(P) #k",
/// "barrier_all #k", "cross N: set+waits", "cross N: set only", "cross N: waits only".
inline std::vector<Mutation> mutations(const PrimFunc& f) {
  std::vector<const SyncNode*> syncs;
  pre_order_visit(f->body, [&](const Stmt& s) {
    if (auto* n = dynamic_cast<const SyncNode*>(s.get())) syncs.push_back(n);
  });
  std::vector<Mutation> out;
  std::map<std::string, int> ordinal;
  auto label = [&](const std::string& base) {
    return fmt::format("{} #{}", base, ordinal[base]++);
  };
  std::set<const SyncNode*> paired;
  std::map<std::string, std::vector<const SyncNode*>> cross_sets, cross_waits;
  for (size_t i = 0; i < syncs.size(); ++i) {
    const SyncNode* s = syncs[i];
    switch (s->sync_kind) {
      case SyncKind::SetFlag: {
        const SyncNode* w = nullptr;
        for (size_t j = i + 1; j < syncs.size() && !w; ++j)
          if (syncs[j]->sync_kind == SyncKind::WaitFlag && syncs[j]->src == s->src &&
              syncs[j]->dst == s->dst && id_of(syncs[j]) == id_of(s) && !paired.count(syncs[j]))
            w = syncs[j];
        Mutation m{
            label(fmt::format("flag {}->{} id {}", pipe_s(s->src), pipe_s(s->dst), id_of(s))), {s}};
        if (w) {
          paired.insert(w);
          m.drop.insert(w);
        }
        out.push_back(m);
        break;
      }
      case SyncKind::WaitFlag:
        if (!paired.count(s))
          out.push_back({label(fmt::format("lone wait {}->{} id {}", pipe_s(s->src), pipe_s(s->dst),
                                           id_of(s))),
                         {s}});
        break;
      case SyncKind::PipeBarrier:
        out.push_back({label(fmt::format("pipe_barrier({})", pipe_s(s->src))), {s}});
        break;
      case SyncKind::BarrierAll:
        out.push_back({label("barrier_all"), {s}});
        break;
      case SyncKind::SetCrossFlag:
        cross_sets[id_of(s)].push_back(s);
        break;
      case SyncKind::WaitCrossFlag:
        cross_waits[id_of(s)].push_back(s);
        break;
      case SyncKind::SyncAll:
        out.push_back({label("sync_all"), {s}});
        break;
    }
  }
  for (const auto& [id, sets] : cross_sets) {
    Mutation both{fmt::format("cross {}: set+waits", id), {}},
        set{fmt::format("cross {}: set only", id), {}},
        waits{fmt::format("cross {}: waits only", id), {}};
    for (auto* s : sets) both.drop.insert(s), set.drop.insert(s);
    for (auto* w : cross_waits[id]) both.drop.insert(w), waits.drop.insert(w);
    out.push_back(both);
    out.push_back(set);
    if (!waits.drop.empty()) out.push_back(waits);
  }
  return out;
}

struct Dropper : IRMutator {
  const std::set<const StmtNode*>& drop;
  explicit Dropper(const std::set<const StmtNode*>& d) : drop(d) {}
  Stmt mutate_(const SyncNode* n, const Stmt& self) override {
    return drop.count(n) ? Stmt() : IRMutator::mutate_(n, self);
  }
};

/// `f` with the mutation's syncs deleted.
inline PrimFunc without(const PrimFunc& f, const Mutation& m) {
  return with_body(f, Dropper(m.drop).mutate(f->body));
}

inline std::map<std::string, std::string> sizes(
    std::initializer_list<std::pair<const char*, int>> kv) {
  std::map<std::string, std::string> m;
  for (auto& [k, v] : kv) m[k] = std::to_string(v);
  return m;
}

}  // namespace tl
