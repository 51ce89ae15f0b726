// Batched byte movers of the copies between fractal layouts (exec_move.cpp): typed element
// gathers and scatters over offset tables, runs of contiguous elements, and whole 16 x 16
// fractals (copied, or transposed in registers). Every fractal layout is separable (the offset
// of element (r, c) is a row part plus a column part, exec.h offset_parts), so a copy is
// described by four tables; these functions move what the tables say, faster when the tables
// show runs or whole fractals.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tl::npu {

/// d[dof ? dof[c] : c] = s[sof ? sof[c] : c] for c < n, elements of es bytes (1, 2 or 4).
void move_elements(int64_t es, const uint8_t* src, uint8_t* dst, const int64_t* sof,
                   const int64_t* dof, int64_t n);

/// The length of the runs of a column-offset table (relative to column 0) that are contiguous in
/// storage: the largest of 64, 32, 16, 8, 4, 2 with t[c] = t[c - c % L] + c % L for every c, or 1.
int64_t run_length(const int64_t* t, int64_t n);

/// move_elements in runs of L contiguous elements (L from run_length of the offset table).
void move_runs(int64_t es, const uint8_t* src, uint8_t* dst, const int64_t* sof, const int64_t* dof,
               int64_t n, int64_t L);

/// How the whole 16 x 16 blocks of a separable 16-bit copy move, from its offset tables (dst
/// element (r, c) = src element at sr[r] + sc[c], written at dr[r] + dc[c], all relative to the
/// block's first element): Copy when both sides order a block alike (rows 16 apart and columns
/// contiguous, or the reverse: one 512-byte fractal, as L1 NZ -> L0A ZZ, or L1 NZ of K -> L0B
/// as K^T), Transpose when they order it oppositely (L1 NZ of B -> L0B ZN), else None. Blocks
/// start at multiples of 16 of the region's rows and columns; the tables decide, so a region
/// off the fractal grid finds None.
enum class Blocks { None, Copy, Transpose };
Blocks block_kind(const int64_t* sr, const int64_t* sc, const int64_t* dr, const int64_t* dc,
                  int64_t R, int64_t C);

/// Moves the whole 16 x 16 blocks (rows and columns below R / 16 * 16, C / 16 * 16) of a 16-bit
/// copy whose block_kind is not None: block (r, c) of the destination at d + dr[r] + dc[c] from
/// s + sr[r] + sc[c]. The rest of the region is the caller's.
void move_blocks(Blocks kind, const uint16_t* s, uint16_t* d, const int64_t* sr, const int64_t* sc,
                 const int64_t* dr, const int64_t* dc, int64_t R, int64_t C);

/// The fixpipe's element-wise steps on an fp32 row before its conversion, in place: with `relu`
/// x = x > 0 ? x : (x NaN ? x : +0); then with `saturate` x = x NaN ? 0 : clamp(x, -mx, mx) (the
/// F322F16 / F322BF16 saturation, exec_move.cpp). AVX-512 on hosts that have it (the same values:
/// max / min of a non-NaN value and a finite bound are exact, NaN lanes are masked), where the
/// scalar loop's compare-and-select was 3 % of a 2048^3 GEMM's CPU time.
void fixpipe_activate(float* x, int64_t n, bool relu, bool saturate, float mx);

/// memmove(dst, src, n) for a UB -> GM store into a large output that nothing reads back soon,
/// with non-temporal stores (x86-64; memmove elsewhere): the destination's lines are not read
/// for ownership first, so the store costs half the memory traffic (a 64 MiB output in 32 KiB
/// tiles into mapped pages: 7.2 -> 3.3 ms of CPU on this host, branch hostsm,
/// docs/virtual_npu.md). The regions must not overlap; the stores are fenced before it returns,
/// so another host thread that synchronises with this one afterwards sees them.
void store_streaming(uint8_t* dst, const uint8_t* src, size_t n);

/// Whether a UB -> GM row move of `bytes` in all into a GM destination of `dst_bytes` (its whole
/// tensor) is large enough for store_streaming: at least 4 KiB moved into at least 32 MiB, far
/// beyond the host's per-core caches, so its lines would leave them before anyone read them. The
/// caller also requires a kernel parameter: a workspace is read back by the kernel.
inline bool wants_streaming(int64_t bytes, int64_t dst_bytes) {
  return bytes >= 4096 && dst_bytes >= (int64_t{32} << 20);
}

}  // namespace tl::npu
