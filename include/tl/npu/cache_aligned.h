// Storage aligned to a 64-byte cache line for the virtual NPU's host buffers that SIMD code reads
// and writes in 64-byte vectors: the cube kernel's packed operands (cube_math.h) and the cores'
// on-chip memories (L1, L0A/L0B/L0C, UB; src/npu/program.h). With malloc's 16-byte alignment
// every 64-byte vector at a multiple of 64 bytes from the buffer's start straddled two cache lines:
// the cube's 128 x 256 x 64 Mmad with its packing ran at 122-123 GFLOP/s from a B buffer 16
// bytes off a line and 131-133 from an aligned one (docs/virtual_npu.md, branch hostgemm).
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

namespace tl::npu {

template <typename T>
struct CacheAligned {
  using value_type = T;
  static constexpr std::align_val_t kAlign{64};
  CacheAligned() = default;
  template <typename U>
  CacheAligned(const CacheAligned<U>&) {}  // NOLINT: allocator rebinding
  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), kAlign)); }
  void deallocate(T* p, size_t) { ::operator delete(p, kAlign); }
  template <typename U>
  bool operator==(const CacheAligned<U>&) const {
    return true;
  }
};

/// One core memory's bytes (program.h DeviceMemories).
using CoreMemory = std::vector<uint8_t, CacheAligned<uint8_t>>;

}  // namespace tl::npu
