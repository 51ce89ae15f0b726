// The kernel registry behind `tlc list/print/verify/run`.
#include "tl/kernel_registry.h"

#include <algorithm>
#include <charconv>

namespace tl {
namespace {
std::vector<KernelEntry>& entries() {
  static std::vector<KernelEntry> e;
  return e;
}
}  // namespace

int64_t KernelArgs::get_int(const std::string& name) const {
  const std::string& s = get_str(name);
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size())
    throw Error(fmt::format("kernel parameter {}: expected an integer, got '{}'", name, s));
  return v;
}
DType KernelArgs::get_dtype(const std::string& name) const {
  const std::string& s = get_str(name);
  auto t = parse_dtype(s);
  if (!t) throw Error(fmt::format("kernel parameter {}: expected a dtype name, got '{}'", name, s));
  return *t;
}
const std::string& KernelArgs::get_str(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) throw Error(fmt::format("kernel parameter {} is not defined", name));
  return it->second;
}

bool register_kernel(KernelEntry entry) {
  entries().push_back(std::move(entry));
  return true;
}

std::vector<const KernelEntry*> registered_kernels() {
  std::vector<const KernelEntry*> r;
  for (const auto& e : entries()) r.push_back(&e);
  std::sort(r.begin(), r.end(), [](auto* a, auto* b) { return a->name < b->name; });
  return r;
}

const KernelEntry& find_kernel(const std::string& name) {
  for (const auto& e : entries())
    if (e.name == name) return e;
  std::string known;
  for (auto* e : registered_kernels()) known += (known.empty() ? "" : ", ") + e->name;
  throw Error(fmt::format("unknown kernel '{}'; registered kernels: {}", name, known));
}

PrimFunc build_kernel(const KernelEntry& entry, const std::map<std::string, std::string>& overrides) {
  std::map<std::string, std::string> values;
  for (const auto& p : entry.params) values[p.name] = p.default_value;
  for (const auto& [k, v] : overrides) {
    if (!values.count(k)) {
      std::string known;
      for (const auto& p : entry.params) known += (known.empty() ? "" : ", ") + p.name;
      throw Error(fmt::format("kernel {} has no parameter '{}'; its parameters: {}", entry.name, k,
                              known.empty() ? "(none)" : known));
    }
    values[k] = v;
  }
  return entry.build(KernelArgs(std::move(values)));
}

}  // namespace tl
