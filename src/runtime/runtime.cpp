// Device (GM allocator with current/peak accounting) and Tensor (strided views over shared
// storage), plus deterministic creation helpers.
#include <cmath>
#include <numeric>

#include "tl/npu/numerics.h"
#include "tl/runtime.h"

#include <fmt/ranges.h>

namespace tl {

Storage::~Storage() {
  if (device) device->release(static_cast<int64_t>(bytes.size()));
}

Device::Device(const Target& target) : target_(&target) {}

std::shared_ptr<Storage> Device::allocate(int64_t bytes) {
  if (bytes < 0) throw Error(fmt::format("Device::allocate: negative size {}", bytes));
  if (in_use_.load() + bytes > target_->gm_bytes)
    throw Error(fmt::format("GM exhausted on the virtual {}: {} bytes requested, {} in use, capacity {}",
                            target_->name, bytes, in_use_.load(), target_->gm_bytes));
  auto s = std::make_shared<Storage>();
  s->bytes.assign(static_cast<size_t>(bytes), 0);
  s->device = this;
  int64_t now = in_use_ += bytes;
  int64_t peak = peak_.load();
  while (now > peak && !peak_.compare_exchange_weak(peak, now)) {}
  return s;
}

Tensor Tensor::empty(Device& dev, std::vector<int64_t> shape, DType dtype) {
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] < 0) throw Error(fmt::format("Tensor::empty: dimension {} is {}, must be >= 0", i, shape[i]));
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.strides_.assign(t.shape_.size(), 1);
  for (size_t d = t.shape_.size(); d-- > 1;) t.strides_[d - 1] = t.strides_[d] * t.shape_[d];
  t.storage_ = dev.allocate(t.numel() * dtype_bytes(dtype));
  return t;
}

int64_t Tensor::numel() const {
  return std::accumulate(shape_.begin(), shape_.end(), int64_t{1}, std::multiplies<>());
}

bool Tensor::is_contiguous() const {
  int64_t s = 1;
  for (size_t d = shape_.size(); d-- > 0;) {
    if (shape_[d] != 1 && strides_[d] != s) return false;
    s *= shape_[d];
  }
  return true;
}

Tensor Tensor::slice(int dim, int64_t start, int64_t length) const {
  if (dim < 0 || dim >= ndim())
    throw Error(fmt::format("Tensor::slice: dim {} is outside [0, {}) of {}", dim, ndim(), describe()));
  if (start < 0 || length < 0 || start + length > shape_[dim])
    throw Error(fmt::format("Tensor::slice: [{}, {}) is outside dimension {} of {} (size {})", start, start + length,
                            dim, describe(), shape_[dim]));
  Tensor t = *this;
  t.shape_[dim] = length;
  t.byte_offset_ += start * strides_[dim] * dtype_bytes(dtype_);
  return t;
}

Tensor Tensor::reshape(std::vector<int64_t> shape) const {
  int64_t n = std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
  if (n != numel())
    throw Error(fmt::format("Tensor::reshape: {} has {} elements, shape [{}] has {}", describe(), numel(),
                            fmt::join(shape, ", "), n));
  if (!is_contiguous()) throw Error(fmt::format("Tensor::reshape: {} is not contiguous", describe()));
  Tensor t = *this;
  t.shape_ = std::move(shape);
  t.strides_.assign(t.shape_.size(), 1);
  for (size_t d = t.shape_.size(); d-- > 1;) t.strides_[d - 1] = t.strides_[d] * t.shape_[d];
  return t;
}

DLView Tensor::dlpack() const {
  uint8_t code = is_float(dtype_) ? (dtype_ == DType::BFloat16 ? 4 : 2)
                                  : is_bool(dtype_) ? 6 : is_unsigned_int(dtype_) ? 1 : 0;
  return DLView{storage_->bytes.data(), 1, 0, ndim(), code, static_cast<uint8_t>(dtype_bits(dtype_)), 1,
                shape_.data(), strides_.data(), static_cast<uint64_t>(byte_offset_)};
}

int64_t Tensor::element_offset(int64_t flat) const {
  if (flat < 0 || flat >= numel())
    throw Error(fmt::format("element {} is outside the {} elements of {}", flat, numel(), describe()));
  int64_t off = 0;
  for (size_t d = shape_.size(); d-- > 0;) {
    off += (flat % shape_[d]) * strides_[d];
    flat /= shape_[d];
  }
  return off;
}

double Tensor::get(int64_t flat) const { return npu::to_double(dtype_, data() + element_offset(flat) * dtype_bytes(dtype_)); }
void Tensor::set(int64_t flat, double v) const {
  npu::from_double(dtype_, v, data() + element_offset(flat) * dtype_bytes(dtype_));
}
std::vector<double> Tensor::to_vector() const {
  std::vector<double> v(numel());
  for (int64_t i = 0; i < numel(); ++i) v[i] = get(i);
  return v;
}
std::string Tensor::describe() const { return fmt::format("{}[{}]", dtype_name(dtype_), fmt::join(shape_, ", ")); }

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
  return (mix(seed * 0x100000001b3ull + static_cast<uint64_t>(i) * 4 + k) >> 11) * (1.0 / 9007199254740992.0);
}
template <typename F>
Tensor generate(Device& dev, std::vector<int64_t> shape, DType dtype, F f) {
  Tensor t = Tensor::empty(dev, std::move(shape), dtype);
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, f(i));
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
Tensor uniform(Device& dev, std::vector<int64_t> shape, DType dtype, uint64_t seed, double lo, double hi) {
  return generate(dev, std::move(shape), dtype, [&](int64_t i) {
    double v = lo + (hi - lo) * unit(seed, i, 0);
    return is_float(dtype) ? v : std::floor(v);
  });
}
Tensor arange(Device& dev, std::vector<int64_t> shape, DType dtype, double start, double step) {
  return generate(dev, std::move(shape), dtype, [&](int64_t i) { return start + step * static_cast<double>(i); });
}
Tensor full(Device& dev, std::vector<int64_t> shape, DType dtype, double value) {
  return generate(dev, std::move(shape), dtype, [&](int64_t) { return value; });
}
Tensor from_vector(Device& dev, std::vector<int64_t> shape, DType dtype, const std::vector<double>& v) {
  Tensor t = Tensor::empty(dev, std::move(shape), dtype);
  if (static_cast<int64_t>(v.size()) != t.numel())
    throw Error(fmt::format("from_vector: {} values for {} ({} elements)", v.size(), t.describe(), t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, v[i]);
  return t;
}

}  // namespace tl
