// The kernel registry: named kernel generators (examples now, operators later) that tlc can
// list, print, verify and run. A generator takes compile-time parameters by name
// (`--set M=1024`), each with a default and a one-line help.
//
// Kernels register during static initialisation (TL_REGISTER_KERNEL), where an exception
// would end the process. So a name registered twice is accepted at registration and
// reported by every later use of the registry: find_kernel and registered_kernels throw a
// tl::Error naming both registration sites.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "tl/ir.h"

namespace tl {

struct KernelParam {
  std::string name;
  std::string default_value;  // integers, or dtype names for dtype parameters
  std::string help;
};

/// Parameter values for one build of a kernel (defaults overridden by --set).
class KernelArgs {
 public:
  KernelArgs() = default;
  explicit KernelArgs(std::map<std::string, std::string> v) : values_(std::move(v)) {}
  int64_t get_int(const std::string& name) const;
  int get(const std::string& name) const { return static_cast<int>(get_int(name)); }
  DType get_dtype(const std::string& name) const;
  const std::string& get_str(const std::string& name) const;
  void set(const std::string& name, std::string value) { values_[name] = std::move(value); }
  const std::map<std::string, std::string>& values() const { return values_; }

 private:
  std::map<std::string, std::string> values_;
};

struct KernelEntry {
  std::string name;
  std::string summary;
  std::vector<KernelParam> params;
  std::function<PrimFunc(const KernelArgs&)> build;
  SourceLoc site{};  // where it was registered (set by register_kernel)
};

/// A set of named kernels. Adding never throws; every lookup first checks that the names are
/// unique (a tl::Error naming the duplicate's registration sites otherwise). Thread-safe;
/// entries are never removed, so the pointers it returns stay valid.
class KernelRegistry {
 public:
  /// Adds `entry`, registered at `site`. Always returns true (a duplicate is reported later).
  bool add(KernelEntry entry, SourceLoc site);
  /// Every kernel, sorted by name.
  std::vector<const KernelEntry*> entries() const;
  /// The kernel called `name`; a user error listing the known ones otherwise.
  const KernelEntry& find(const std::string& name) const;
  /// The registry TL_REGISTER_KERNEL fills.
  static KernelRegistry& global();

 private:
  void check_unique() const;  // caller holds mu_
  mutable std::mutex mu_;
  std::deque<KernelEntry> entries_;
};

/// Registers a kernel in the global registry (normally through TL_REGISTER_KERNEL at
/// static-initialisation time, which passes its own file and line as `site`).
bool register_kernel(KernelEntry entry, SourceLoc site = {});
/// Every registered kernel, sorted by name (a user error if a name is registered twice).
std::vector<const KernelEntry*> registered_kernels();
/// The kernel called `name`; a user error listing the known ones otherwise, or if a name is
/// registered twice.
const KernelEntry& find_kernel(const std::string& name);
/// Builds `entry` with its defaults overridden by `overrides` (unknown names are user errors).
PrimFunc build_kernel(const KernelEntry& entry, const std::map<std::string, std::string>& overrides = {});

}  // namespace tl

#define TL_CONCAT_(a, b) a##b
#define TL_CONCAT(a, b) TL_CONCAT_(a, b)
/// TL_REGISTER_KERNEL({"gemm", "summary", {{"M", "1024", "rows"}}, build_fn});
#define TL_REGISTER_KERNEL(...)                                    \
  static const bool TL_CONCAT(tl_kernel_registered_, __LINE__) = \
      ::tl::register_kernel(__VA_ARGS__, ::tl::SourceLoc{__FILE__, __LINE__})
