// The runtime: a virtual NPU device with a GM allocator, and tensors that live in its GM.
// Tensors are shape + strides (in elements) + dtype + a byte offset into shared storage, so
// views are zero-copy; the fields map one-to-one onto DLPack's DLTensor. Every Tensor keeps
// one invariant that the virtual NPU's address arithmetic relies on: each element of the view
// lies inside its storage, so no size, stride or offset computed from it overflows int64.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tl/dtype.h"
#include "tl/target.h"

namespace tl {

class Device;

/// The GM accounting of one Device, shared with every storage it allocated, so that a Tensor
/// may outlive its Device (Python hosts destroy objects in any order): the storage returns
/// its bytes here, and `device` becomes null when the Device goes away.
struct GmAccount {
  std::atomic<int64_t> in_use{0}, peak{0};
  std::atomic<Device*> device{nullptr};
};

/// Bytes of device GM backing one or more tensors, at `external`: the device's own (calloc'd by
/// Device::allocate, counted in its GmAccount, freed by the shared_ptr's deleter), or memory the
/// caller owns (Tensor::wrap: a torch tensor or numpy array the Python front end hands over
/// without copying; not counted, the caller keeps it alive while tensors view it).
struct Storage {
  std::shared_ptr<GmAccount> account;
  std::vector<uint8_t> bytes;
  uint8_t* external = nullptr;
  int64_t external_bytes = 0;
  uint8_t* base() { return external ? external : bytes.data(); }
  int64_t size() const { return external ? external_bytes : static_cast<int64_t>(bytes.size()); }
  ~Storage();
};

/// The host memory GM may use, in bytes: the environment variable TL_HOST_MEMORY (a byte
/// count, optionally suffixed K, M, G or T for powers of 1024) or else the machine's physical
/// memory. A malformed TL_HOST_MEMORY is a tl::Error naming it.
int64_t host_memory_bytes();
/// Throws a tl::Error naming `what`, the sizes and the limit unless `bytes` more host memory fit
/// next to the GM every Device of this process holds (checked before allocating, so a request
/// beyond the machine is an error rather than std::bad_alloc or the OOM killer).
void check_host_memory(int64_t bytes, std::string_view what);

/// A virtual Ascend NPU of a given target. GM is host memory; the allocator records current
/// and peak bytes.
class Device {
 public:
  explicit Device(const Target& target = default_target());
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  const Target& target() const { return *target_; }
  int64_t gm_bytes_in_use() const { return account_->in_use.load(); }
  int64_t gm_peak_bytes() const { return account_->peak.load(); }
  void reset_peak() { account_->peak.store(account_->in_use.load()); }
  /// Allocates `bytes` of GM (zero-filled); a user error naming the sizes if GM is exhausted
  /// or the host has not that much memory (host_memory_bytes()).
  std::shared_ptr<Storage> allocate(int64_t bytes);
  /// State the virtual NPU keeps per device: its cores' on-chip memories, which persist from
  /// one launch to the next as on hardware. Opaque here (src/npu owns it).
  std::shared_ptr<void>& npu_state() { return npu_state_; }
  /// The GM accounting its storages share (Tensor::wrap's storage names its device here).
  const std::shared_ptr<GmAccount>& account() const { return account_; }

 private:
  const Target* target_;
  std::shared_ptr<void> npu_state_;
  std::shared_ptr<GmAccount> account_;
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

/// A view of device GM. A default-constructed Tensor is undefined: it has no elements, no
/// device, and every operation that would touch its data is a tl::Error. Sizes are checked:
/// negative dimensions, and shapes whose element count, byte count or strides overflow int64,
/// are errors.
class Tensor {
 public:
  Tensor() = default;
  /// A new dense row-major tensor on `dev`, zero-filled.
  static Tensor empty(Device& dev, std::vector<int64_t> shape, DType dtype);
  /// A view of memory the caller owns, placed in `dev`'s GM without a copy (DLPack import):
  /// element i of dimension d is `strides[d]` elements from its neighbour. Strides must be
  /// non-negative (a tl::Error naming `what` otherwise, and for a null pointer with elements).
  /// The caller keeps `data` alive and unmoved as long as any tensor views it.
  static Tensor wrap(Device& dev, void* data, std::vector<int64_t> shape,
                     std::vector<int64_t> strides, DType dtype,
                     std::string_view what = "Tensor::wrap");

  bool defined() const { return storage_ != nullptr; }
  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  const std::vector<int64_t>& strides() const { return strides_; }
  /// Size of dimension `i` (a tl::Error outside [0, ndim())).
  int64_t dim(int i) const;
  int ndim() const { return static_cast<int>(shape_.size()); }
  int64_t numel() const;  // 0 when undefined
  int64_t nbytes() const { return numel() * dtype_bytes(dtype_); }
  bool is_contiguous() const;
  /// The device whose GM holds the tensor; null when undefined or when that Device has been
  /// destroyed (the storage itself stays valid as long as a Tensor uses it).
  Device* device() const { return storage_ ? storage_->account->device.load() : nullptr; }

  /// Address of element 0 of this view.
  uint8_t* data() const;
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
  std::string describe() const;  // "bfloat16[4096, 7168]"; "undefined tensor"

 private:
  std::shared_ptr<Storage> storage_;
  DType dtype_ = DType::Float32;
  std::vector<int64_t> shape_, strides_;
  int64_t byte_offset_ = 0;
  int64_t element_offset(int64_t flat) const;
  void require_defined(const char* what) const;
};

// Creation helpers. Random fills are deterministic functions of the seed and the element index.
Tensor randn(Device& dev, std::vector<int64_t> shape, DType dtype, uint64_t seed,
             double stddev = 1.0);
Tensor uniform(Device& dev, std::vector<int64_t> shape, DType dtype, uint64_t seed,
               double lo = -1.0, double hi = 1.0);
Tensor arange(Device& dev, std::vector<int64_t> shape, DType dtype, double start = 0,
              double step = 1);
Tensor full(Device& dev, std::vector<int64_t> shape, DType dtype, double value);
Tensor from_vector(Device& dev, std::vector<int64_t> shape, DType dtype,
                   const std::vector<double>& v);

}  // namespace tl
