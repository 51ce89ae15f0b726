// The kernel registry behind `tlc list/print/verify/run`.
#include "tl/kernel_registry.h"

#include <algorithm>
#include <charconv>
#include <climits>
#include <optional>

namespace tl {

namespace {

/// `s` as a decimal integer; nullopt for anything else (junk, empty, beyond int64).
std::optional<int64_t> parse_int(const std::string& s) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::string join(const std::vector<std::string>& v) {
  std::string r;
  for (const auto& s : v)
    r += (r.empty() ? "" : ", ") + (s.empty() ? std::string("'' (empty)") : s);
  return r;
}

/// The user error for `value` of parameter `p` of kernel `kernel`, or "" when it is accepted.
std::string rule_violation(const std::string& kernel, const KernelParam& p,
                           const std::string& value) {
  const ParamRule& r = p.rule;
  if (r.is_integer() && (r.multiple_of < 1 || r.min > r.max))  // a registration mistake
    return fmt::format(
        "kernel {}: parameter {} has an empty rule (min {}, max {}, multiple_of {}); fix its "
        "TL_REGISTER_KERNEL",
        kernel, p.name, r.min, r.max, r.multiple_of);
  bool ok = false;
  if (r.is_integer()) {
    auto v = parse_int(value);
    ok = v && *v >= r.min && *v <= r.max && *v % r.multiple_of == 0;
  } else {
    ok = std::find(r.one_of.begin(), r.one_of.end(), value) != r.one_of.end();
  }
  if (ok) return "";
  return fmt::format("kernel {}: parameter {} must be {}, got '{}'", kernel, p.name, r.describe(),
                     value);
}

}  // namespace

std::string ParamRule::describe() const {
  if (!is_integer()) return "one of " + join(one_of);
  std::string what = multiple_of > 1 ? fmt::format("a multiple of {}", multiple_of) : "an integer";
  return fmt::format("{} in [{}, {}]", what, min, max);
}

int64_t KernelArgs::get_int(const std::string& name) const {
  const std::string& s = get_str(name);
  auto v = parse_int(s);
  if (!v) throw Error(fmt::format("kernel parameter {}: expected an integer, got '{}'", name, s));
  return *v;
}
int KernelArgs::get(const std::string& name) const {
  int64_t v = get_int(name);
  if (v < INT32_MIN || v > INT32_MAX)
    throw Error(
        fmt::format("kernel parameter {}: expected an integer that fits int32, got {}", name, v));
  return static_cast<int>(v);
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
      dups += fmt::format("\n  kernel '{}' at {} and at {}", e.name, it->second->site.str(),
                          e.site.str());
  }
  if (!dups.empty())
    throw Error(fmt::format(
        "kernel names must be unique, but some are registered twice (TL_REGISTER_KERNEL):{}",
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

std::vector<const KernelEntry*> registered_kernels() {
  return KernelRegistry::global().entries();
}

const KernelEntry& find_kernel(const std::string& name) {
  return KernelRegistry::global().find(name);
}

KernelArgs resolve_kernel_args(const KernelEntry& entry,
                               const std::map<std::string, std::string>& overrides) {
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
  // Defaults are checked too: a registration whose default breaks its own rule is reported
  // by the first build, like a duplicate name (registration itself must not throw).
  for (const auto& p : entry.params)
    if (auto msg = rule_violation(entry.name, p, values[p.name]); !msg.empty()) throw Error(msg);
  return KernelArgs(std::move(values));
}

PrimFunc build_kernel(const KernelEntry& entry,
                      const std::map<std::string, std::string>& overrides) {
  return entry.build(resolve_kernel_args(entry, overrides));
}

int checked_product(std::string_view what, std::initializer_list<int64_t> factors) {
  int64_t r = 1;
  bool overflow = false;
  for (int64_t f : factors) overflow |= __builtin_mul_overflow(r, f, &r);
  if (overflow || r < INT32_MIN || r > INT32_MAX)
    throw Error(fmt::format(
        "{} does not fit int32 (the product of {} factors overflows); use smaller sizes or "
        "larger tiles",
        what, factors.size()));
  return static_cast<int>(r);
}

}  // namespace tl
