// Queries shared by the developer-mode passes (src/pass/developer.h).
#include "developer.h"

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

}  // namespace tl::dev
