// Queries shared by the developer-mode passes (src/pass/developer.h).
#include "developer.h"

#include <optional>
#include <unordered_set>

#include "tl/ir_equal.h"
#include "tl/ir_functor.h"
#include "tl/ir_ops.h"
#include "tl/op.h"
#include "tl/ops.h"
#include "tl/printer.h"

namespace tl::dev {

const KernelNode* find_kernel(const PrimFunc& f) {
  return kernel_of(f);
}

bool is_developer(const PrimFunc& f) {
  const KernelNode* k = find_kernel(f);
  return k && k->developer();
}

int developer_threads(const PrimFunc& f) {
  const KernelNode* k = find_kernel(f);
  if (k && k->developer()) return k->threads;
  return f->lowered_from_developer;
}

std::string describe(const Buffer& b) {
  return b->loc.known() ? fmt::format("'{}' ({})", b->name, b->loc.str())
                        : fmt::format("'{}'", b->name);
}

std::string describe(const Stmt& s) {
  std::string head = print(s, {.locations = false});
  head = head.substr(0, head.find('\n'));
  while (!head.empty() && head.back() == ':') head.pop_back();
  size_t start = head.find_first_not_of(' ');
  head = start == std::string::npos ? head : head.substr(start);
  if (head.size() > 80) head = head.substr(0, 77) + "...";
  return s->loc.known() ? fmt::format("`{}` at {}", head, s->loc.str()) : fmt::format("`{}`", head);
}

namespace {
void flatten(const Stmt& s, std::vector<Stmt>& out) {
  if (auto* q = s.as<SeqNode>()) {
    for (const Stmt& x : q->stmts) flatten(x, out);
  } else if (s.defined()) {
    out.push_back(s);
  }
}
}  // namespace

namespace {
/// Rebuilds the blocks of a body: `fn` says what becomes of each statement of a block (nullopt:
/// it stays, its own blocks rebuilt too; an undefined statement: it goes; else its replacement).
Stmt rebuild_blocks(const Stmt& body, const std::function<std::optional<Stmt>(const Stmt&)>& fn) {
  struct Rebuild : IRMutator {
    const std::function<std::optional<Stmt>(const Stmt&)>& fn;
    explicit Rebuild(const std::function<std::optional<Stmt>(const Stmt&)>& f) : fn(f) {}
    Stmt mutate_(const SeqNode* n, const Stmt& self) override {
      std::vector<Stmt> out;
      bool changed = false;
      for (const Stmt& x : n->stmts) {
        std::optional<Stmt> r = fn(x);
        Stmt m = r ? *r : mutate(x);
        changed = changed || !m.same_as(x);
        if (m.defined()) out.push_back(m);
      }
      return changed ? SeqNode::make(std::move(out), n->loc) : self;
    }
  } rebuild(fn);
  return rebuild.mutate(body);
}
}  // namespace

Stmt without(const Stmt& body, const std::function<bool(const Stmt&)>& drop) {
  return rebuild_blocks(
      body, [&](const Stmt& s) { return drop(s) ? std::optional<Stmt>(Stmt()) : std::nullopt; });
}

Stmt replaced(const Stmt& body, const std::map<const StmtNode*, Stmt>& to) {
  return rebuild_blocks(body, [&](const Stmt& s) -> std::optional<Stmt> {
    auto it = to.find(s.get());
    return it == to.end() ? std::nullopt : std::optional<Stmt>(it->second);
  });
}

Stmt with_distinct_syncs(const Stmt& body) {
  struct Copy : IRMutator {
    Stmt mutate_(const SyncNode* n, const Stmt&) override {
      return SyncNode::make(n->sync_kind, n->src, n->dst, n->event_id, n->mode, n->loc, n->origin);
    }
  } copy;
  return copy.mutate(body);
}

std::map<FlagKey, std::vector<FlagSite>> flag_sites(const Stmt bodies[2]) {
  std::map<FlagKey, std::vector<FlagSite>> out;
  std::vector<FlagKey> authors;
  std::vector<FlagSite::Step> path;
  for (int scope = 0; scope < 2; ++scope) {
    std::function<void(const Stmt&, const SeqNode*, size_t)> walk =
        [&](const Stmt& s, const SeqNode* block, size_t at) {
          if (!s.defined()) return;
          if (auto* q = s.as<SeqNode>()) {
            for (size_t i = 0; i < q->stmts.size(); ++i) walk(q->stmts[i], q, i);
          } else if (auto* f = s.as<ForNode>()) {
            path.push_back({block, at, f});
            walk(f->body, nullptr, 0);
            path.pop_back();
          } else if (auto* b = s.as<IfNode>()) {
            path.push_back({block, at, b});
            walk(b->then_case, nullptr, 0);
            walk(b->else_case, nullptr, 0);
            path.pop_back();
          } else if (auto* y = s.as<SyncNode>()) {
            if (y->sync_kind != SyncKind::SetFlag && y->sync_kind != SyncKind::WaitFlag) return;
            auto* id = y->event_id.as<IntImmNode>();
            if (!id) return;
            FlagKey key{scope, y->src, y->dst, id->value};
            out[key].push_back(FlagSite{block, at, s, path});
            if (y->origin != SyncOrigin::Auto) authors.push_back(key);
          }
        };
    walk(bodies[scope], nullptr, 0);
  }
  for (const FlagKey& k : authors) out.erase(k);
  return out;
}

std::array<Stmt, 2> scope_bodies(const KernelNode& k) {
  std::array<Stmt, 2> out;
  for (const Stmt& s : stmts_of(k.body))
    if (auto* sc = s.as<ScopeNode>())
      out[sc->core == CoreKind::Cube ? 0 : 1] = with_distinct_syncs(sc->body);
  return out;
}

PrimFunc with_scope_bodies(const PrimFunc& f, const std::array<Stmt, 2>& bodies) {
  return map_scopes(f, [&](const ScopeNode& sc, const Stmt&) {
    return ScopeNode::make(sc.core, bodies[sc.core == CoreKind::Cube ? 0 : 1], sc.loc);
  });
}

PrimFunc map_scopes(const PrimFunc& f,
                    const std::function<Stmt(const ScopeNode&, const Stmt&)>& fn) {
  const KernelNode* k = find_kernel(f);
  if (!k) return f;
  std::vector<Stmt> body;
  bool changed = false;
  for (const Stmt& s : stmts_of(k->body)) {
    auto* sc = s.as<ScopeNode>();
    Stmt m = sc ? fn(*sc, s) : s;
    changed = changed || !m.same_as(s);
    body.push_back(m);
  }
  return changed ? with_kernel_body(f, std::move(body)) : f;
}

ViewBases::ViewBases(const Stmt& body) {
  pre_order_visit(body, [&](const Stmt& s) {
    if (auto* a = s.as<AllocateNode>(); a && a->is_view())
      base_[a->buffer.get()] = base(a->view_of.get());
  });
}

const BufferNode* ViewBases::base(const BufferNode* b) const {
  auto it = base_.find(b);
  return it == base_.end() ? b : it->second;
}

std::vector<Stmt> stmts_of(const Stmt& s) {
  std::vector<Stmt> out;
  flatten(s, out);
  return out;
}

const IfNode* aiv0_branch(const ScopeNode& scope, const KernelNode& kernel) {
  if (scope.core != CoreKind::Vector || !kernel.vid.defined()) return nullptr;
  const Stmt* only = &scope.body;
  if (auto* q = scope.body.as<SeqNode>()) {
    if (q->stmts.size() != 1) return nullptr;
    only = &q->stmts[0];
  }
  auto* n = only->as<IfNode>();
  return n && structural_equal(n->cond, Expr(kernel.vid) == Expr(0)) ? n : nullptr;
}

bool once_per_block(const Stmt& s) {
  bool once = false, other = false;
  pre_order_visit(s, [&](const Stmt& x) {
    if (auto* st = x.as<StoreNode>())
      (st->buffer->scope == MemScope::GM ? once : other) = true;
    else if (auto* op = x.as<TileOpNode>())
      (op->op->unit == OpUnit::Debug ? once : other) = true;
    else if (x.kind() == StmtKind::Sync || x.kind() == StmtKind::Allocate)
      other = true;
  });
  return once && !other;
}

void remark(const RemarkSink& sink, std::string_view pass, const SourceLoc& loc,
            const std::string& msg) {
  if (sink) return sink(loc, msg);
  fmt::print(stderr, "{}: remark: {}: {}\n", loc.str(), pass, msg);
}

PrimFunc with_kernel_body(const PrimFunc& f, std::vector<Stmt> body) {
  const KernelNode* k = find_kernel(f);
  TL_ASSERT(k, "with_kernel_body: {} has no T::Kernel", f->name);
  Stmt kernel = KernelNode::make(k->num_blocks, k->cid, k->vid,
                                 SeqNode::make(std::move(body), k->loc), k->loc, k->threads);
  std::vector<Stmt> out;
  if (auto* q = f->body.as<SeqNode>()) {
    for (const Stmt& s : q->stmts) out.push_back(s.as<KernelNode>() ? kernel : s);
  } else {
    out.push_back(kernel);
  }
  return with_body(f, SeqNode::make(std::move(out), f->body->loc));
}

namespace {
/// `if e > 0: T.copy(...)` where e is an extent of the copy's regions.
bool skips_only_empty_copy(const Stmt& s) {
  auto* n = s.as<IfNode>();
  if (!n || n->else_case.defined()) return false;
  std::vector<Stmt> then = stmts_of(n->then_case);
  auto* c = then.size() == 1 ? then[0].as<TileOpNode>() : nullptr;
  auto* gt = n->cond.as<BinaryNode>();
  if (!c || c->op != &ops::copy() || !gt || gt->op != BinOp::GT || as_const_int(gt->b) != 0)
    return false;
  for (const TileArg& a : c->args)
    if (a.is_region())
      for (const Range& r : a.region.ranges)
        if (structural_equal(r.extent, gt->a)) return true;
  return false;
}
}  // namespace

bool privatisable(const BufferNode* b, const std::vector<Stmt>& body, const Target& t) {
  for (const Stmt& s : body) {
    bool reads = false, writes = false;
    for (const Touch& x : touches_of(s, t))
      if (x.buffer == b) {
        reads = reads || x.read;
        writes = writes || x.write;
      }
    if (reads) return false;
    if (writes && (s.as<TileOpNode>() || skips_only_empty_copy(s))) return true;
  }
  return false;
}

Buffer Placer::mutate_buffer(const Buffer& b) {
  if (!b.defined() || (b->scope != MemScope::Shared && b->scope != MemScope::Fragment)) return b;
  auto done = placed_.find(b.get());
  if (done != placed_.end()) return done->second;
  auto it = scopes_.find(b.get());
  MemScope s = it == scopes_.end() ? MemScope::UB : it->second;
  Buffer p =
      BufferNode::make(b->name, b->dtype, b->shape, s, b->strides, b->address, b->loc, b->origin);
  placed_.emplace(b.get(), p);
  return p;
}

Stmt Placer::mutate_(const AllocateNode* n, const Stmt& self) {
  if (n->is_view()) {
    // A view lives where its base does.
    Buffer base = mutate_buffer(n->view_of);
    auto it = scopes_.find(n->view_of.get());
    if (it != scopes_.end()) scopes_[n->buffer.get()] = it->second;
    Buffer v = mutate_buffer(n->buffer);
    return v.same_as(n->buffer) && base.same_as(n->view_of)
               ? self
               : AllocateNode::make_view(v, base, n->loc);
  }
  return IRMutator::mutate_(n, self);
}

}  // namespace tl::dev
