// The AscendC CPU model's engine calls for the gather, sort and index-generation APIs and the
// GM atomic add (src/ascendc_cpu/sort.cpp), beside model.h's: each becomes the virtual NPU's
// tile op of the same meaning (docs/ascendc.md, "CPU model"), so the emitted sorts and gathers
// give the VM's bytes.
#pragma once

#include <cstdint>

#include "ascendc_cpu/model.h"

namespace ascendc_cpu {

/// Gather: dst[i] = the element at byte base + offsets[i] of src, i < count (uint32 offsets).
void gather(const Where& w, const LocalRef& dst, const LocalRef& src, const LocalRef& offsets,
            uint32_t base, int64_t count);
/// GatherMask with a built-in pattern (1-7), normal mode: `repeat` repeats of 256 bytes of src.
void gather_mask(const Where& w, const LocalRef& dst, const LocalRef& src, int pattern,
                 int64_t repeat, int64_t src_blk_stride, int64_t src_rep_stride);
/// Sort32: `repeat` repeats of 32 scores and uint32 indices into 8-byte entries of dst.
void sort32(const Where& w, const LocalRef& dst, const LocalRef& src, const LocalRef& index,
            int64_t repeat);
/// MrgSort: the first `queues` of q (lengths in 8-byte entries) merged into dst.
void mrg_sort(const Where& w, const LocalRef& dst, const LocalRef q[4], const uint16_t lens[4],
              int valid_bit, int64_t repeat, bool exhausted_suspension);
/// Copy (VECIN/VECCALC/VECOUT, mask continuous mode): the first `mask` elements of each of
/// `repeat` repeats, repeats `dst_rep` / `src_rep` 32-byte blocks apart (block strides 1).
void copy_masked(const Where& w, const LocalRef& dst, const LocalRef& src, uint64_t mask,
                 int64_t repeat, int64_t dst_blk, int64_t src_blk, int64_t dst_rep,
                 int64_t src_rep);
/// SetAtomicAdd<T> (on, dtype T) / SetAtomicNone (off): whether the transfers to GM that follow
/// add to GM (copy_out then runs the VM's atomic_add).
void set_atomic(const Where& w, bool on, tl::DType dtype);

}  // namespace ascendc_cpu
