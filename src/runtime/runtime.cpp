// Device (GM allocator with current/peak accounting, checked against the target's GM and the
// host's memory) and Tensor (strided views over shared storage, every size checked so a view
// never reaches outside its storage), plus deterministic creation helpers.
#include <sys/mman.h>
#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <numeric>

#include "tl/env.h"
#include "tl/gm_fill.h"
#include "tl/npu/numerics.h"
#include "tl/runtime.h"

#include <fmt/ranges.h>

namespace tl {

namespace {

/// GM bytes held by every Device of this process: they all share the host's memory.
std::atomic<int64_t> g_host_gm_in_use{0};

/// Adds `bytes` to `counter` if the sum stays within `limit` (atomically, so two threads cannot
/// both pass the check and together overshoot); returns false, leaving it unchanged, otherwise.
bool reserve(std::atomic<int64_t>& counter, int64_t bytes, int64_t limit) {
  int64_t cur = counter.load();
  do {
    if (bytes > limit - cur) return false;  // both >= 0: no overflow
  } while (!counter.compare_exchange_weak(cur, cur + bytes));
  return true;
}

/// GM blocks of at least this size come straight from mmap, 2 MiB aligned, with transparent huge
/// pages asked for (MADV_HUGEPAGE; the hosts' usual THP setting is "madvise"). A fresh 64 MiB
/// output from calloc is also mmap-ed by glibc, but in 4 KiB pages: the kernel's page-fault path
/// (16,384 faults, each taking the page-table and memcg locks) was 28 % of a softmax 8192x4096
/// bf16 launch's host CPU time (issue 31, branch softhost; docs/virtual_npu.md). With 2 MiB pages
/// the kernel still zeroes every byte (the zero pages calloc promised), in 32 faults.
constexpr size_t kHugeBlock = size_t{2} << 20;
constexpr size_t kHugeMin = size_t{4} << 20;

size_t huge_len(size_t bytes) {
  return (bytes + kHugeBlock - 1) / kHugeBlock * kHugeBlock;
}

/// Huge blocks whose tensors are gone, kept mapped (their pages faulted in) for the next
/// Unwritten allocation of the same length: a library op's output, which its kernel writes whole,
/// then needs neither the kernel's page faults nor its zeroing of every page. Fresh huge pages
/// were zeroed by the kernel's fault path (`clear_page_erms`), 21 % of a softmax 8192x4096 bf16
/// call's host CPU time (branch hostsm, docs/virtual_npu.md). Only blocks allocated Unwritten
/// come back here (a user's zero-filled tensor returns its memory to the system when freed), at
/// most kPoolBlocks of them and kPoolBytes in all (the oldest unmapped first); a failed mmap
/// empties the pool and tries again.
constexpr size_t kPoolBlocks = 4;
constexpr size_t kPoolBytes = size_t{512} << 20;
struct GmPool {
  std::mutex m;
  std::vector<std::pair<void*, size_t>> blocks;  // (address, mapped length)
  size_t bytes = 0;
};
GmPool& gm_pool() {
  static GmPool* pool = new GmPool;  // never destroyed: storages may be freed at exit
  return *pool;
}

/// A pooled block of mapped length `len`, or null.
void* pool_take(size_t len) {
  GmPool& p = gm_pool();
  std::lock_guard<std::mutex> lock(p.m);
  for (size_t i = 0; i < p.blocks.size(); ++i)
    if (p.blocks[i].second == len) {
      void* b = p.blocks[i].first;
      p.blocks.erase(p.blocks.begin() + static_cast<std::ptrdiff_t>(i));
      p.bytes -= len;
      return b;
    }
  return nullptr;
}

/// Keeps a block in the pool, unmapping the oldest ones as needed to stay within the limits;
/// false when the block alone exceeds them (the caller unmaps it).
bool pool_put(void* b, size_t len) {
  if (len > kPoolBytes) return false;
  GmPool& p = gm_pool();
  std::lock_guard<std::mutex> lock(p.m);
  while (!p.blocks.empty() && (p.blocks.size() >= kPoolBlocks || p.bytes + len > kPoolBytes)) {
    munmap(p.blocks.front().first, p.blocks.front().second);
    p.bytes -= p.blocks.front().second;
    p.blocks.erase(p.blocks.begin());
  }
  p.blocks.emplace_back(b, len);
  p.bytes += len;
  return true;
}

void pool_release_all() {
  GmPool& p = gm_pool();
  std::lock_guard<std::mutex> lock(p.m);
  for (auto& [b, len] : p.blocks) munmap(b, len);
  p.blocks.clear();
  p.bytes = 0;
}

void* map_huge(size_t len) {
  // Over-map by one huge page and unmap the slack, so the block starts on a 2 MiB boundary.
  void* raw =
      mmap(nullptr, len + kHugeBlock, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  auto* base = static_cast<uint8_t*>(raw);
  const size_t head = (kHugeBlock - reinterpret_cast<uintptr_t>(base) % kHugeBlock) % kHugeBlock;
  if (head > 0) munmap(base, head);
  munmap(base + head + len, kHugeBlock - head);    // head < kHugeBlock: never empty
  (void)madvise(base + head, len, MADV_HUGEPAGE);  // advice only: 4 KiB pages if refused
  return base + head;
}

/// Whether Unwritten GM starts as 0xFF bytes (tl/gm_fill.h): TL_GM_POISON 1 / 0, or
/// unset, TL_CHECK_STALE=1. Read per allocation, so a test may set it.
bool poison_unwritten() {
  const std::string v = env_value("TL_GM_POISON");
  if (v == "1") return true;
  if (v == "0") return false;
  if (!v.empty()) throw Error(fmt::format("TL_GM_POISON must be 1 or 0 (or unset), got '{}'", v));
  return env_value("TL_CHECK_STALE") == "1";
}

/// Bytes for GM, zero or unspecified as `fill` says (0xFF when `poison`); `gm_free` with the same
/// size and fill releases them.
void* gm_alloc(size_t bytes, GmFill fill, bool poison) {
  void* p = nullptr;
  if (bytes < kHugeMin) {
    p = std::calloc(bytes, 1);
  } else {
    const size_t len = huge_len(bytes);
    if (fill == GmFill::Unwritten) p = pool_take(len);
    if (!p) p = map_huge(len);
    if (!p) {
      pool_release_all();
      p = map_huge(len);
    }
  }
  if (p && poison) std::memset(p, 0xFF, bytes);
  return p;
}

void gm_free(void* p, size_t bytes, GmFill fill) {
  if (!p) return;
  if (bytes < kHugeMin) return std::free(p);
  const size_t len = huge_len(bytes);
  if (fill == GmFill::Unwritten && pool_put(p, len)) return;
  munmap(p, len);
}

int64_t physical_memory_bytes() {
  static const int64_t phys = [] {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    int64_t b = 0;
    if (pages <= 0 || page <= 0 || __builtin_mul_overflow(int64_t{pages}, int64_t{page}, &b))
      return std::numeric_limits<int64_t>::max();  // unknown: let the allocator decide
    return b;
  }();
  return phys;
}

/// Where the host-memory limit comes from, for error messages.
std::string host_limit_source() {
  return env_value("TL_HOST_MEMORY").empty()
             ? "the machine's physical memory; TL_HOST_MEMORY overrides it"
             : "set by TL_HOST_MEMORY";
}

/// Row-major strides of `shape`, after checking what every Tensor relies on: no negative
/// dimension, and the element count, the byte count and every stride within int64 (a shape
/// with a zero dimension has no elements but may still have overflowing strides). `who` names
/// the operation in errors; the element count goes to `numel`.
std::vector<int64_t> dense_strides(const std::vector<int64_t>& shape, DType dtype, const char* who,
                                   int64_t* numel) {
  auto fail = [&](const std::string& why) {
    throw Error(fmt::format("{}: shape [{}] of {}: {}", who, fmt::join(shape, ", "),
                            dtype_name(dtype), why));
  };
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] < 0) fail(fmt::format("dimension {} is {}, must be >= 0", d, shape[d]));
  std::vector<int64_t> strides(shape.size(), 1);
  int64_t n = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = n;
    if (__builtin_mul_overflow(n, shape[d], &n))
      fail(fmt::format("the element count (or a stride) overflows int64 from dimension {} on", d));
  }
  int64_t bytes;
  if (__builtin_mul_overflow(n, int64_t{dtype_bytes(dtype)}, &bytes))
    fail(fmt::format("{} elements of {} bytes overflow int64 bytes", n, dtype_bytes(dtype)));
  *numel = n;
  return strides;
}

thread_local GmFill t_gm_fill = GmFill::Zero;  // ScopedGmFill's

}  // namespace

ScopedGmFill::ScopedGmFill(GmFill fill) : prev_(t_gm_fill) {
  t_gm_fill = fill;
}
ScopedGmFill::~ScopedGmFill() {
  t_gm_fill = prev_;
}
GmFill current_gm_fill() {
  return t_gm_fill;
}

int64_t host_memory_bytes() {
  const std::string env = env_value("TL_HOST_MEMORY");
  if (env.empty()) return physical_memory_bytes();
  std::string_view v(env);
  auto bad = [&] {
    return Error(fmt::format(
        "TL_HOST_MEMORY is '{}'; expected a byte count such as 8589934592 or 8G (suffixes K, "
        "M, G, T: powers of 1024)",
        v));
  };
  int64_t n = 0;
  size_t i = 0;
  for (; i < v.size() && v[i] >= '0' && v[i] <= '9'; ++i)
    if (__builtin_mul_overflow(n, int64_t{10}, &n) ||
        __builtin_add_overflow(n, int64_t{v[i] - '0'}, &n))
      throw bad();
  if (i == 0) throw bad();
  if (i < v.size()) {
    static constexpr std::string_view kSuffixes = "KMGT";
    size_t k = kSuffixes.find(static_cast<char>(std::toupper(static_cast<unsigned char>(v[i]))));
    if (k == std::string_view::npos || i + 1 != v.size()) throw bad();
    if (__builtin_mul_overflow(n, int64_t{1} << (10 * (k + 1)), &n)) throw bad();
  }
  return n;
}

void check_host_memory(int64_t bytes, std::string_view what) {
  int64_t limit = host_memory_bytes(), used = g_host_gm_in_use.load();
  if (bytes < 0 || bytes > limit - used)
    throw Error(fmt::format(
        "{} needs {} bytes of host memory, but device GM holds {} of the {} bytes available ({})",
        what, bytes, used, limit, host_limit_source()));
}

Storage::~Storage() {
  if (!account || external) return;
  auto n = static_cast<int64_t>(bytes.size());
  account->in_use -= n;
  g_host_gm_in_use -= n;
}

Device::Device(const Target& target) : target_(&target), account_(std::make_shared<GmAccount>()) {
  account_->device = this;
}

Device::~Device() {
  account_->device = nullptr;
}

std::shared_ptr<Storage> Device::allocate(int64_t bytes) {
  if (bytes < 0) throw Error(fmt::format("Device::allocate: negative size {}", bytes));
  GmAccount& a = *account_;
  const int64_t limit = host_memory_bytes();  // may throw: before anything is reserved
  const GmFill fill = current_gm_fill();
  const bool poison = fill == GmFill::Unwritten && poison_unwritten();  // may throw, likewise
  if (!reserve(a.in_use, bytes, target_->gm_bytes))
    throw Error(
        fmt::format("GM exhausted on the virtual {}: {} bytes requested, {} in use, capacity {}",
                    target_->name, bytes, a.in_use.load(), target_->gm_bytes));
  if (!reserve(g_host_gm_in_use, bytes, limit)) {
    a.in_use -= bytes;
    throw Error(fmt::format(
        "Device::allocate: {} bytes of GM do not fit in host memory: device GM of this process "
        "holds {} of the {} bytes available ({})",
        bytes, g_host_gm_in_use.load(), limit, host_limit_source()));
  }
  // The bytes come from calloc or fresh zero pages from the kernel (a std::vector's zero fill
  // wrote every byte once more before the kernel's first write: issue 31, 4 % of a softmax
  // launch), or for an Unwritten block possibly from the pool above. The Storage holds them as
  // `external` (no accounting in ~Storage) and its deleter frees them and returns the bytes to
  // the accounts.
  void* mem = bytes > 0 ? gm_alloc(static_cast<size_t>(bytes), fill, poison) : nullptr;
  if (bytes > 0 && !mem) {
    a.in_use -= bytes;
    g_host_gm_in_use -= bytes;
    throw Error(fmt::format(
        "Device::allocate: the host could not allocate {} bytes of GM ({} held by device GM of "
        "this process)",
        bytes, g_host_gm_in_use.load()));
  }
  std::shared_ptr<Storage> s(new Storage, [account = account_, bytes, fill](Storage* st) {
    gm_free(st->external, static_cast<size_t>(bytes), fill);
    delete st;
    account->in_use -= bytes;
    g_host_gm_in_use -= bytes;
  });
  s->external = static_cast<uint8_t*>(mem);
  s->external_bytes = bytes;
  s->account = account_;
  int64_t now = a.in_use.load();
  int64_t peak = a.peak.load();
  while (now > peak && !a.peak.compare_exchange_weak(peak, now)) {
  }
  return s;
}

Tensor Tensor::empty(Device& dev, std::vector<int64_t> shape, DType dtype) {
  int64_t n;
  auto strides = dense_strides(shape, dtype, "Tensor::empty", &n);
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.strides_ = std::move(strides);
  t.storage_ = dev.allocate(n * dtype_bytes(dtype));
  return t;
}

Tensor Tensor::wrap(Device& dev, void* data, std::vector<int64_t> shape,
                    std::vector<int64_t> strides, DType dtype, std::string_view what) {
  auto fail = [&](const std::string& why) {
    throw Error(fmt::format("{}: {}[{}] with strides [{}]: {}", what, dtype_name(dtype),
                            fmt::join(shape, ", "), fmt::join(strides, ", "), why));
  };
  if (strides.size() != shape.size())
    fail(fmt::format("{} strides for {} dimensions", strides.size(), shape.size()));
  int64_t n;
  dense_strides(shape, dtype, "Tensor::wrap", &n);  // checks the shape and its element count
  // The storage spans element 0 to the last element; with non-negative strides that is the
  // largest offset, sum (shape[d] - 1) * strides[d], which must not overflow either.
  int64_t last = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (strides[d] < 0)
      fail(fmt::format("stride {} of dimension {} is negative (reversed views are not supported)",
                       strides[d], d));
    int64_t step;
    if (n > 0 && (__builtin_mul_overflow(shape[d] - 1, strides[d], &step) ||
                  __builtin_add_overflow(last, step, &last)))
      fail(fmt::format("the offset of the last element overflows int64 at dimension {}", d));
  }
  int64_t bytes = 0;
  if (n > 0 && (__builtin_add_overflow(last, 1, &bytes) ||
                __builtin_mul_overflow(bytes, int64_t{dtype_bytes(dtype)}, &bytes)))
    fail("the byte span overflows int64");
  if (n > 0 && !data) fail("the data pointer is null");
  auto s = std::make_shared<Storage>();
  s->account = dev.account();
  s->external = n > 0 ? static_cast<uint8_t*>(data) : nullptr;
  s->external_bytes = n > 0 ? bytes : 0;
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.strides_ = std::move(strides);
  t.storage_ = std::move(s);
  return t;
}

void Tensor::require_defined(const char* what) const {
  if (!storage_)
    throw Error(fmt::format("Tensor::{}: the tensor is undefined (default-constructed)", what));
}

int64_t Tensor::dim(int i) const {
  if (i < 0 || i >= ndim())
    throw Error(fmt::format("Tensor::dim: dim {} is outside [0, {}) of {}", i, ndim(), describe()));
  return shape_[i];
}

int64_t Tensor::numel() const {
  if (!storage_) return 0;
  // A zero dimension empties the view wherever it stands ((2^63 - 1, 2^62, 0) is valid);
  // otherwise no overflow: the view lies inside its storage (every constructor checks it).
  for (int64_t d : shape_)
    if (d == 0) return 0;
  return std::accumulate(shape_.begin(), shape_.end(), int64_t{1}, std::multiplies<>());
}

bool Tensor::is_contiguous() const {
  if (numel() == 0) return true;  // nothing to lay out (and the products below could overflow)
  int64_t s = 1;
  for (size_t d = shape_.size(); d-- > 0;) {
    if (shape_[d] != 1 && strides_[d] != s) return false;
    s *= shape_[d];
  }
  return true;
}

uint8_t* Tensor::data() const {
  require_defined("data");
  // A view of a storage with no bytes has no elements to address; its offset (from slicing
  // a zero-sized dimension) must not be added to a null pointer (UB, found by the fuzzer).
  if (storage_->size() == 0) return storage_->base();
  return storage_->base() + byte_offset_;
}

Tensor Tensor::slice(int dim, int64_t start, int64_t length) const {
  require_defined("slice");
  if (dim < 0 || dim >= ndim())
    throw Error(
        fmt::format("Tensor::slice: dim {} is outside [0, {}) of {}", dim, ndim(), describe()));
  // `length > size - start` rather than `start + length > size`, which overflows.
  if (start < 0 || length < 0 || start > shape_[dim] || length > shape_[dim] - start) {
    int64_t end;
    std::string e = __builtin_add_overflow(start, length, &end)
                        ? fmt::format("{} + {}", start, length)
                        : std::to_string(end);
    throw Error(fmt::format("Tensor::slice: [{}, {}) is outside dimension {} of {} (size {})",
                            start, e, dim, describe(), shape_[dim]));
  }
  Tensor t = *this;
  t.shape_[dim] = length;
  // start <= size, so this is at most one past the view's last element: inside the storage.
  t.byte_offset_ += start * strides_[dim] * dtype_bytes(dtype_);
  return t;
}

Tensor Tensor::reshape(std::vector<int64_t> shape) const {
  require_defined("reshape");
  int64_t n;
  auto strides = dense_strides(shape, dtype_, "Tensor::reshape", &n);
  if (n != numel())
    throw Error(fmt::format("Tensor::reshape: {} has {} elements, shape [{}] has {}", describe(),
                            numel(), fmt::join(shape, ", "), n));
  if (!is_contiguous())
    throw Error(fmt::format("Tensor::reshape: {} is not contiguous", describe()));
  Tensor t = *this;
  t.shape_ = std::move(shape);
  t.strides_ = std::move(strides);
  return t;
}

DLView Tensor::dlpack() const {
  require_defined("dlpack");
  uint8_t code = is_float(dtype_)          ? (dtype_ == DType::BFloat16 ? 4 : 2)
                 : is_bool(dtype_)         ? 6
                 : is_unsigned_int(dtype_) ? 1
                                           : 0;
  return DLView{storage_->base(), 1, 0, ndim(), code, static_cast<uint8_t>(dtype_bits(dtype_)), 1,
                shape_.data(), strides_.data(),
                // data + byte_offset is data(): no offset on an empty storage's null pointer.
                static_cast<uint64_t>(storage_->size() == 0 ? 0 : byte_offset_)};
}

int64_t Tensor::element_offset(int64_t flat) const {
  if (flat < 0 || flat >= numel())
    throw Error(
        fmt::format("element {} is outside the {} elements of {}", flat, numel(), describe()));
  int64_t off = 0;
  for (size_t d = shape_.size(); d-- > 0;) {
    off += (flat % shape_[d]) * strides_[d];
    flat /= shape_[d];
  }
  return off;
}

double Tensor::get(int64_t flat) const {
  require_defined("get");
  return npu::to_double(dtype_, data() + element_offset(flat) * dtype_bytes(dtype_));
}
void Tensor::set(int64_t flat, double v) const {
  require_defined("set");
  npu::from_double(dtype_, v, data() + element_offset(flat) * dtype_bytes(dtype_));
}
std::vector<double> Tensor::to_vector() const {
  require_defined("to_vector");
  // Eight bytes per element, up to eight times the tensor: checked like any host allocation.
  check_host_memory(numel() * static_cast<int64_t>(sizeof(double)),
                    fmt::format("Tensor::to_vector of {}", describe()));
  std::vector<double> v(numel());
  if (is_contiguous() && !v.empty()) {
    // Element i at byte i * size: the same decode as get(i) without its per-element index
    // arithmetic and checks, which were a third of `tlc run rms_norm`'s host CPU (issue 31).
    const uint8_t* p = data();
    const size_t bytes = dtype_bytes(dtype_);
    for (size_t i = 0; i < v.size(); ++i) v[i] = npu::to_double(dtype_, p + i * bytes);
    return v;
  }
  for (int64_t i = 0; i < numel(); ++i) v[i] = get(i);
  return v;
}
std::string Tensor::describe() const {
  if (!storage_) return "undefined tensor";
  return fmt::format("{}[{}]", dtype_name(dtype_), fmt::join(shape_, ", "));
}

namespace {
/// SplitMix64: a deterministic hash of (seed, index) so every element is independent of
/// fill order and thread count.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
double unit(uint64_t seed, int64_t i, int k) {
  return (mix(seed * 0x100000001b3ull + static_cast<uint64_t>(i) * 4 + k) >> 11) *
         (1.0 / 9007199254740992.0);
}
template <typename F>
Tensor generate(Device& dev, std::vector<int64_t> shape, DType dtype, F f) {
  Tensor t = Tensor::empty(dev, std::move(shape), dtype);
  const int64_t n = t.numel();
  if (n == 0) return t;
  // A new tensor is dense: element i at byte i * size, the same encode as set(i) without its
  // per-element index arithmetic (a tenth of `tlc run rms_norm`'s host CPU; issue 31).
  uint8_t* p = t.data();
  const size_t bytes = dtype_bytes(dtype);
  for (int64_t i = 0; i < n; ++i) npu::from_double(dtype, f(i), p + i * bytes);
  return t;
}
}  // namespace

Tensor randn(Device& dev, std::vector<int64_t> shape, DType dtype, uint64_t seed, double stddev) {
  return generate(dev, std::move(shape), dtype, [&](int64_t i) {
    double u1 = std::max(unit(seed, i, 0), 1e-300), u2 = unit(seed, i, 1);
    double v = stddev * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    return is_float(dtype) ? v : std::round(v);
  });
}
Tensor uniform(Device& dev, std::vector<int64_t> shape, DType dtype, uint64_t seed, double lo,
               double hi) {
  return generate(dev, std::move(shape), dtype, [&](int64_t i) {
    double v = lo + (hi - lo) * unit(seed, i, 0);
    return is_float(dtype) ? v : std::floor(v);
  });
}
Tensor arange(Device& dev, std::vector<int64_t> shape, DType dtype, double start, double step) {
  return generate(dev, std::move(shape), dtype,
                  [&](int64_t i) { return start + step * static_cast<double>(i); });
}
Tensor full(Device& dev, std::vector<int64_t> shape, DType dtype, double value) {
  return generate(dev, std::move(shape), dtype, [&](int64_t) { return value; });
}
Tensor from_vector(Device& dev, std::vector<int64_t> shape, DType dtype,
                   const std::vector<double>& v) {
  int64_t n;
  dense_strides(shape, dtype, "from_vector", &n);  // the count is checked before allocating
  if (static_cast<int64_t>(v.size()) != n)
    throw Error(fmt::format("from_vector: {} values for {}[{}] ({} elements)", v.size(),
                            dtype_name(dtype), fmt::join(shape, ", "), n));
  Tensor t = Tensor::empty(dev, std::move(shape), dtype);
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, v[i]);
  return t;
}

}  // namespace tl
