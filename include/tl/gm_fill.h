// What a new block of device GM holds, for the allocations an operator-library op makes for its
// outputs. By default Device::allocate hands out zero bytes. An op whose kernel writes every
// element of an output before anything reads it may ask for Unwritten GM instead: possibly a
// recycled block with an old tensor's bytes, whose pages are already mapped, so the host neither
// faults them in nor zeroes them (the kernel's zeroing of fresh pages was a fifth of a softmax
// call's host time: docs/virtual_npu.md, "Host speed", branch hostsm). With TL_GM_POISON=1 (or,
// when it is unset, TL_CHECK_STALE=1, as the test suite runs) Unwritten GM is 0xFF bytes instead,
// a NaN in every float dtype, so an element a kernel leaves unwritten fails the op's tests.
#pragma once

namespace tl {

enum class GmFill { Zero, Unwritten };

/// While alive, Device::allocate calls on this thread hand out `fill` GM (scopes nest).
class ScopedGmFill {
 public:
  explicit ScopedGmFill(GmFill fill);
  ~ScopedGmFill();
  ScopedGmFill(const ScopedGmFill&) = delete;
  ScopedGmFill& operator=(const ScopedGmFill&) = delete;

 private:
  GmFill prev_;
};

/// The fill of this thread's innermost ScopedGmFill, else Zero.
GmFill current_gm_fill();

}  // namespace tl
