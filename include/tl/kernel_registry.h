// The kernel registry: named kernel generators (examples now, operators later) that tlc can
// list, print, verify and run. A generator takes compile-time parameters by name
// (`--set M=1024`), each with a default, a one-line help and the values it accepts (a
// ParamRule), which build_kernel checks before the generator runs: a generator never sees a
// tile size of 0, a negative count or a value that does not fit its int, so it can divide by
// its parameters and multiply them without checks of its own.
//
// Kernels register during static initialisation (TL_REGISTER_KERNEL), where an exception
// would end the process. So a name registered twice is accepted at registration and
// reported by every later use of the registry: find_kernel and registered_kernels throw a
// tl::Error naming both registration sites.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <initializer_list>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "tl/ir.h"

namespace tl {

/// The values a kernel parameter accepts. An integer parameter (empty `one_of`) takes a
/// decimal integer in [min, max] that is a multiple of `multiple_of`; the defaults admit any
/// positive int32, because a size or tile of 0 or less is never meaningful. Any other
/// parameter (a dtype name, ...) takes exactly one of `one_of`.
struct ParamRule {
  int64_t min = 1;
  int64_t max = kMaxInt;
  int64_t multiple_of = 1;
  std::vector<std::string> one_of{};

  static constexpr int64_t kMaxInt = 2147483647;
  /// Tile extents (rows, columns, chunk widths): a tile of 2^16 elements per dimension is far
  /// beyond every on-chip buffer, and the bound keeps a generator's capacity arithmetic on
  /// three tile extents well inside int64.
  static constexpr int64_t kMaxTile = 65536;
  /// Logical blocks of one launch: the hardware's limit (AscendC blockDim <= 65535).
  static constexpr int64_t kMaxBlocks = 65535;

  /// A tile extent that is a positive multiple of `multiple_of` (a fractal, a 32-byte row).
  static ParamRule tile(int64_t multiple_of = 1) {
    return {.min = multiple_of, .max = kMaxTile, .multiple_of = multiple_of};
  }
  /// A count of logical blocks.
  static ParamRule blocks() { return {.max = kMaxBlocks}; }

  bool is_integer() const { return one_of.empty(); }
  /// "a multiple of 16 in [16, 65536]", "one of float16, bfloat16", ...: what a value must be.
  std::string describe() const;
};

struct KernelParam {
  std::string name;
  std::string default_value;  // must satisfy `rule` (checked by every build)
  std::string help;
  ParamRule rule{};
};

/// Parameter values for one build of a kernel (defaults overridden by --set).
class KernelArgs {
 public:
  KernelArgs() = default;
  explicit KernelArgs(std::map<std::string, std::string> v) : values_(std::move(v)) {}
  int64_t get_int(const std::string& name) const;
  /// get_int as an int; a user error (not a silent truncation) when the value does not fit.
  int get(const std::string& name) const;
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
/// `entry`'s defaults overridden by `overrides`, every value checked against its parameter's
/// rule: a user error naming the parameter, what it must be and what came, or naming an
/// unknown parameter.
KernelArgs resolve_kernel_args(const KernelEntry& entry,
                               const std::map<std::string, std::string>& overrides = {});
/// Builds `entry` with resolve_kernel_args(entry, overrides).
PrimFunc build_kernel(const KernelEntry& entry,
                      const std::map<std::string, std::string>& overrides = {});
/// For generators: the product of `factors` (derived counts such as tiles or blocks) as an
/// int; a user error naming `what` when it does not fit.
int checked_product(std::string_view what, std::initializer_list<int64_t> factors);

}  // namespace tl

#define TL_CONCAT_(a, b) a##b
#define TL_CONCAT(a, b) TL_CONCAT_(a, b)
/// TL_REGISTER_KERNEL({"gemm", "summary", {{"M", "1024", "rows"}}, build_fn});
#define TL_REGISTER_KERNEL(...)                                  \
  static const bool TL_CONCAT(tl_kernel_registered_, __LINE__) = \
      ::tl::register_kernel(__VA_ARGS__, ::tl::SourceLoc{__FILE__, __LINE__})
