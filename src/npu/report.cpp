// Kernel reports (tl/npu/report.h): counts synchronisations in the lowered IR and in a launch's
// trace, event ids per pipe pair, and the buffers and planned memory of the lowered kernel.
#include "tl/npu/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "tl/ir_functor.h"
#include "tl/ir_ops.h"
#include "tl/printer.h"

namespace tl::npu {
namespace {

std::string pair_name(Pipe src, Pipe dst) {
  return fmt::format("{}->{}", pipe_name(src), pipe_name(dst));
}

// The report's name of a trace event's synchronisation kind (sync_name's), or "" for an op.
std::string event_kind_name(const TraceEvent& e) {
  switch (e.kind) {
    case EventKind::SetFlag:
      return std::string(sync_name(SyncKind::SetFlag));
    case EventKind::WaitFlag:
      return std::string(sync_name(SyncKind::WaitFlag));
    case EventKind::Barrier:
      return std::string(
          sync_name(e.pipe == Pipe::ALL ? SyncKind::BarrierAll : SyncKind::PipeBarrier));
    case EventKind::SetCross:
      return std::string(sync_name(SyncKind::SetCrossFlag));
    case EventKind::WaitCross:
      return std::string(sync_name(SyncKind::WaitCrossFlag));
    case EventKind::SyncAll:
      return std::string(sync_name(SyncKind::SyncAll));
    case EventKind::Op:
      return "";
  }
  return "";
}

void count(SyncTally& t, SyncOrigin origin, bool expanded) {
  if (expanded)
    ++t.expanded;
  else if (origin == SyncOrigin::Auto)
    ++t.automatic;
  else
    ++t.user;
}

KernelReport::Buffer buffer_of(const BufferNode& b) {
  Expr n = Expr(int64_t{dtype_bytes(b.dtype)});
  for (const auto& s : b.shape) n = n * s;
  auto c = as_const_int(n);
  return {b.name, b.scope, c ? std::to_string(*c) : print(n), c ? *c : -1, b.address, b.origin};
}

void add_static(KernelReport& r, const PrimFunc& lowered) {
  std::map<std::string, std::set<int64_t>> ids;
  std::set<int64_t> cross;
  pre_order_visit(lowered->body, [&](const Stmt& s) {
    if (s->kind == StmtKind::Sync) {
      auto* n = static_cast<const SyncNode*>(s.get());
      count(r.static_syncs[std::string(sync_name(n->sync_kind))], n->origin, false);
      auto id = n->event_id.defined() ? as_const_int(n->event_id) : std::nullopt;
      if (id && (n->sync_kind == SyncKind::SetFlag || n->sync_kind == SyncKind::WaitFlag))
        ids[pair_name(n->src, n->dst)].insert(*id);
      if (id && (n->sync_kind == SyncKind::SetCrossFlag || n->sync_kind == SyncKind::WaitCrossFlag))
        cross.insert(*id);
    }
    if (s->kind == StmtKind::Allocate) {
      auto* a = static_cast<const AllocateNode*>(s.get());
      if (a->is_view() || a->buffer->scope == MemScope::Var) return;
      r.buffers.push_back(buffer_of(*a->buffer));
    }
  });
  for (const auto& [pair, set] : ids) r.event_ids[pair] = static_cast<int>(set.size());
  r.cross_flag_ids = static_cast<int>(cross.size());
}

void add_dynamic(KernelReport& r, const Trace& trace) {
  r.blocks = trace.num_blocks;
  r.event_ids.clear();
  std::map<std::string, std::set<int>> ids;
  std::set<int> cross;
  for (int64_t b = 0; b < trace.num_blocks; ++b) {
    std::map<std::string, SyncTally> block;
    for (int slot = 0; slot < 3; ++slot) {
      const size_t c = static_cast<size_t>(b * 3 + slot);
      if (c >= trace.cores.size()) continue;
      for (const auto& e : trace.cores[c].events) {
        std::string kind = event_kind_name(e);
        if (kind.empty()) continue;
        count(block[kind], e.origin, e.expanded);
        if (e.kind == EventKind::SetFlag || e.kind == EventKind::WaitFlag)
          ids[pair_name(e.pipe, e.dst)].insert(e.id);
        if (e.kind == EventKind::SetCross || e.kind == EventKind::WaitCross) cross.insert(e.id);
      }
    }
    for (const auto& [kind, t] : block) {
      SyncTally& m = r.dynamic_syncs[kind];
      if (t.total() > m.total()) m = t;
    }
    r.max_block_syncs = std::max(r.max_block_syncs, sum(block).total());
  }
  for (const auto& [pair, set] : ids) r.event_ids[pair] = static_cast<int>(set.size());
  r.cross_flag_ids = static_cast<int>(cross.size());
}

}  // namespace

SyncTally sum(const std::map<std::string, SyncTally>& by_kind) {
  SyncTally all;
  for (const auto& [kind, t] : by_kind) {
    all.user += t.user;
    all.automatic += t.automatic;
    all.expanded += t.expanded;
  }
  return all;
}

/// Whether some loop of `s` has an extent that depends on `v` (split_aiv's iteration split gives
/// AIV vid the iterations 2 k + vid: `for k in range((n - vid + 1) // 2)`; the row split never
/// bounds a loop by vid).
static bool loop_bound_by(const Stmt& s, const Var& v) {
  bool found = false;
  pre_order_visit(s, [&](const Stmt& x) {
    auto* f = x.as<ForNode>();
    if (!f || found) return;
    pre_order_visit(
        ForNode::make(f->var, f->min, f->extent, f->for_kind, f->num_stages, f->skew,
                      SeqNode::make({})),
        [](const Stmt&) {}, [&](const Expr& e) { found = found || e.same_as(v); });
  });
  return found;
}

/// The AIV split decision, read off the lowered Vector scope: `if vid == 0: work` is AIV 0 alone.
static std::string vector_work(const PrimFunc& source, const PrimFunc& lowered) {
  int threads = 0;
  const KernelNode* kernel = nullptr;
  pre_order_visit(source->body, [&](const Stmt& s) {
    if (auto* k = s.as<KernelNode>()) threads = k->threads;
  });
  pre_order_visit(lowered->body, [&](const Stmt& s) {
    if (auto* k = s.as<KernelNode>()) kernel = k;
  });
  if (!kernel) return "";
  std::string out;
  pre_order_visit(kernel->body, [&](const Stmt& s) {
    auto* scope = s.as<ScopeNode>();
    if (!scope || scope->core != CoreKind::Vector || !out.empty()) return;
    if (threads == 0) {
      out = "as the author wrote it (expert kernel)";
      return;
    }
    const Stmt* only = &scope->body;
    if (auto* q = scope->body.as<SeqNode>(); q && q->stmts.size() == 1) only = &q->stmts[0];
    auto* n = only->as<IfNode>();
    if (n && print(n->cond) == kernel->vid.name() + " == 0")
      out = threads == 2 ? "on AIV 0 alone, AIV 1 runs the flag protocol (threads = 2, but "
                           "split_aiv fell back: "
                           "see its remark)"
                         : "on AIV 0 alone, AIV 1 runs the flag protocol (threads = 1)";
    else if (loop_bound_by(scope->body, kernel->vid))
      out =
          "split over both AIVs, alternate iterations of its tile loop each (threads = 2, "
          "split_aiv: the rows "
          "could not be split, see its remark)";
    else
      out = "split over both AIVs, half the rows of each tile each (threads = 2, split_aiv)";
  });
  return out;
}

KernelReport make_report(const PrimFunc& source, const PrimFunc& lowered, const Target& target,
                         const Trace* trace) {
  KernelReport r;
  r.kernel = source->name;
  r.target = target.name;
  r.vector_work = vector_work(source, lowered);
  add_static(r, lowered);
  if (trace) add_dynamic(r, *trace);
  for (const auto& b : r.buffers) {
    if (b.scope == MemScope::GM || b.address < 0 || b.size < 0) continue;
    auto& [used, cap] = r.memory[b.scope];
    used = std::max(used, b.address + b.size);
    cap = target.cap(b.scope);
  }
  return r;
}

void print_report(const KernelReport& r, std::ostream& os) {
  os << fmt::format("{} on {}\n", r.kernel, r.target);
  auto row = [&](const std::string& kind, const SyncTally& t) {
    os << fmt::format("  {:<16} {:>8} {:>10} {:>9} {:>8}\n", kind, t.user, t.automatic, t.expanded,
                      t.total());
  };
  auto table = [&](const std::string& title, const std::map<std::string, SyncTally>& m) {
    os << fmt::format("{}\n  {:<16} {:>8} {:>10} {:>9} {:>8}\n", title, "kind", "author",
                      "compiler", "expanded", "total");
    for (const auto& [kind, t] : m) row(kind, t);
    row("all", sum(m));
  };
  table("synchronisations in the lowered IR:", r.static_syncs);
  if (r.blocks > 0) {
    table(fmt::format(
              "synchronisations executed per block (per kind, the most of {} blocks; expanded: "
              "gemm_v0's barriers):",
              r.blocks),
          r.dynamic_syncs);
    os << fmt::format("  the most one block executed: {}\n", r.max_block_syncs);
  }
  os << "event ids per pipe pair:";
  if (r.event_ids.empty()) os << " none";
  for (const auto& [pair, n] : r.event_ids) os << fmt::format(" {} {}", pair, n);
  os << fmt::format("; cross-core flag ids: {}\n", r.cross_flag_ids);
  os << "buffers (compiler-made ones say what made them):\n";
  for (const auto& b : r.buffers)
    os << fmt::format("  {:<8} {:<20} {:>10} B{}{}\n", scope_name(b.scope), b.name, b.bytes,
                      b.address >= 0 ? fmt::format(" at {}", b.address) : "",
                      b.origin.empty() ? "" : "  (" + b.origin + ")");
  int64_t workspace = 0;
  bool symbolic = false;
  for (const auto& b : r.buffers)
    if (b.scope == MemScope::GM) {
      if (b.size < 0)
        symbolic = true;
      else
        workspace += b.size;
    }
  os << fmt::format("GM workspace (cross-core channels): {} B{}\n", workspace,
                    symbolic ? " + dynamic sizes" : "");
  if (!r.vector_work.empty()) os << "vector work: " << r.vector_work << "\n";
  os << "on-chip memory per core (planned bytes / capacity):";
  if (r.memory.empty()) os << " none";
  for (const auto& [scope, m] : r.memory)
    os << fmt::format(" {} {}/{}", scope_name(scope), m.first, m.second);
  os << "\n";
}

}  // namespace tl::npu
