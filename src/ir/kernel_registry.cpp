// The kernel registry behind `tlc list/print/verify/run`.
#include "tl/kernel_registry.h"

#include <algorithm>
#include <charconv>

namespace tl {

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

bool KernelRegistry::add(KernelEntry entry, SourceLoc site) {
  std::lock_guard lk(mu_);
  entry.site = std::move(site);
  entries_.push_back(std::move(entry));
  return true;
}

void KernelRegistry::check_unique() const {
  std::map<std::string_view, const KernelEntry*> seen;
  std::string dups;
  for (const auto& e : entries_) {
    auto [it, fresh] = seen.emplace(e.name, &e);
    if (!fresh)
      dups += fmt::format("\n  kernel '{}' at {} and at {}", e.name, it->second->site.str(), e.site.str());
  }
  if (!dups.empty())
    throw Error(fmt::format("kernel names must be unique, but some are registered twice (TL_REGISTER_KERNEL):{}",
                            dups));
}

std::vector<const KernelEntry*> KernelRegistry::entries() const {
  std::lock_guard lk(mu_);
  check_unique();
  std::vector<const KernelEntry*> r;
  for (const auto& e : entries_) r.push_back(&e);
  std::sort(r.begin(), r.end(), [](auto* a, auto* b) { return a->name < b->name; });
  return r;
}

const KernelEntry& KernelRegistry::find(const std::string& name) const {
  {
    std::lock_guard lk(mu_);
    check_unique();
    for (const auto& e : entries_)
      if (e.name == name) return e;
  }
  std::string known;
  for (auto* e : entries()) known += (known.empty() ? "" : ", ") + e->name;
  throw Error(fmt::format("unknown kernel '{}'; registered kernels: {}", name, known));
}

KernelRegistry& KernelRegistry::global() {
  static KernelRegistry* r = new KernelRegistry;  // never destroyed: lookups may run at exit
  return *r;
}

bool register_kernel(KernelEntry entry, SourceLoc site) {
  return KernelRegistry::global().add(std::move(entry), std::move(site));
}

std::vector<const KernelEntry*> registered_kernels() { return KernelRegistry::global().entries(); }

const KernelEntry& find_kernel(const std::string& name) { return KernelRegistry::global().find(name); }

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
