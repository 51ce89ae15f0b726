// Queries shared by the developer-mode passes (src/pass/developer.h).
#include "developer.h"

#include "tl/ir_equal.h"
#include "tl/ir_functor.h"
#include "tl/ir_ops.h"
#include "tl/op.h"
#include "tl/printer.h"

namespace tl::dev {

const KernelNode* find_kernel(const PrimFunc& f) {
  if (!f || !f->body.defined()) return nullptr;
  if (auto* k = f->body.as<KernelNode>()) return k;
  if (auto* seq = f->body.as<SeqNode>())
    for (const auto& s : seq->stmts)
      if (auto* k = s.as<KernelNode>()) return k;
  return nullptr;
}

bool is_developer(const PrimFunc& f) {
  const KernelNode* k = find_kernel(f);
  return k && k->developer();
}

std::string describe(const Buffer& b) {
  return b->loc.known() ? fmt::format("'{}' ({})", b->name, b->loc.str()) : fmt::format("'{}'", b->name);
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

void remark(const RemarkSink& sink, std::string_view pass, const SourceLoc& loc, const std::string& msg) {
  if (sink) return sink(loc, msg);
  fmt::print(stderr, "{}: remark: {}: {}\n", loc.str(), pass, msg);
}

PrimFunc with_kernel_body(const PrimFunc& f, std::vector<Stmt> body) {
  const KernelNode* k = find_kernel(f);
  TL_ASSERT(k, "with_kernel_body: {} has no T::Kernel", f->name);
  Stmt kernel = KernelNode::make(k->num_blocks, k->cid, k->vid, SeqNode::make(std::move(body), k->loc), k->loc,
                                 k->threads);
  std::vector<Stmt> out;
  if (auto* q = f->body.as<SeqNode>()) {
    for (const Stmt& s : q->stmts) out.push_back(s.as<KernelNode>() ? kernel : s);
  } else {
    out.push_back(kernel);
  }
  return with_body(f, SeqNode::make(std::move(out), f->body->loc));
}

}  // namespace tl::dev
