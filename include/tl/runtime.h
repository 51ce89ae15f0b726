// The runtime: a virtual NPU device with a GM allocator, and tensors that live in its GM.
// Tensors are shape + strides (in elements) + dtype + a byte offset into shared storage, so
// views are zero-copy; the fields map one-to-one onto DLPack's DLTensor.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tl/dtype.h"
#include "tl/target.h"

namespace tl {

class Device;

/// Bytes of device GM backing one or more tensors.
struct Storage {
  Device* device = nullptr;
  std::vector<uint8_t> bytes;
  ~Storage();
};

/// A virtual Ascend NPU of a given target. GM is host memory; the allocator records current
/// and peak bytes.
class Device {
 public:
  explicit Device(const Target& target = default_target());
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  const Target& target() const { return *target_; }
  int64_t gm_bytes_in_use() const { return in_use_.load(); }
  int64_t gm_peak_bytes() const { return peak_.load(); }
  void reset_peak() { peak_.store(in_use_.load()); }
  /// Allocates `bytes` of GM (zero-filled); a user error naming the sizes if GM is exhausted.
  std::shared_ptr<Storage> allocate(int64_t bytes);
  void release(int64_t bytes) { in_use_ -= bytes; }
  /// State the virtual NPU keeps per device: its cores' on-chip memories, which persist from
  /// one launch to the next as on hardware. Opaque here (src/npu owns it).
  std::shared_ptr<void>& npu_state() { return npu_state_; }

 private:
  const Target* target_;
  std::shared_ptr<void> npu_state_;
  std::atomic<int64_t> in_use_{0}, peak_{0};
};

/// DLPack-compatible description of a tensor (same fields as DLTensor; device type 1 = CPU
/// memory, which is what the virtual NPU's GM is).
struct DLView {
  void* data;
  int32_t device_type, device_id;
  int32_t ndim;
  uint8_t dtype_code, dtype_bits;  // DLDataTypeCode: 0 int, 1 uint, 2 float, 4 bfloat, 6 bool
  uint16_t dtype_lanes;
  const int64_t* shape;
  const int64_t* strides;  // in elements
  uint64_t byte_offset;
};

class Tensor {
 public:
  Tensor() = default;
  /// A new dense row-major tensor on `dev`, zero-filled.
  static Tensor empty(Device& dev, std::vector<int64_t> shape, DType dtype);

  bool defined() const { return storage_ != nullptr; }
  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  const std::vector<int64_t>& strides() const { return strides_; }
  int64_t dim(int i) const { return shape_.at(i); }
  int ndim() const { return static_cast<int>(shape_.size()); }
  int64_t numel() const;
  int64_t nbytes() const { return numel() * dtype_bytes(dtype_); }
  bool is_contiguous() const;
  Device* device() const { return storage_ ? storage_->device : nullptr; }

  /// Address of element 0 of this view.
  uint8_t* data() const { return storage_->bytes.data() + byte_offset_; }
  /// Zero-copy view of [start, start + length) along `dim`.
  Tensor slice(int dim, int64_t start, int64_t length) const;
  /// Zero-copy reinterpretation of a contiguous tensor with a new shape of the same numel.
  Tensor reshape(std::vector<int64_t> shape) const;
  DLView dlpack() const;

  /// Element `flat` (row-major over this view's shape) as a double / set from a double
  /// (rounded to nearest-even into the dtype).
  double get(int64_t flat) const;
  void set(int64_t flat, double v) const;
  /// All elements in row-major order as doubles (for tests and printing).
  std::vector<double> to_vector() const;
  std::string describe() const;  // "bfloat16[4096, 7168]"

 private:
  std::shared_ptr<Storage> storage_;
  DType dtype_ = DType::Float32;
  std::vector<int64_t> shape_, strides_;
  int64_t byte_offset_ = 0;
  int64_t element_offset(int64_t flat) const;
};

// Creation helpers. Random fills are deterministic functions of the seed and the element index.
Tensor randn(Device& dev, std::vector<int64_t> shape, DType dtype, uint64_t seed, double stddev = 1.0);
Tensor uniform(Device& dev, std::vector<int64_t> shape, DType dtype, uint64_t seed, double lo = -1.0,
               double hi = 1.0);
Tensor arange(Device& dev, std::vector<int64_t> shape, DType dtype, double start = 0, double step = 1);
Tensor full(Device& dev, std::vector<int64_t> shape, DType dtype, double value);
Tensor from_vector(Device& dev, std::vector<int64_t> shape, DType dtype, const std::vector<double>& v);

}  // namespace tl
