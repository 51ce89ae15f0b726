// The shared layer of the cann_ops_tilelang operator library (docs/ops.md): what every op's
// public function uses between "tensors in" and "kernel launched". Argument validation with
// messages that name the op, the argument, what was expected and what came, at the caller's
// file:line; launch parameters read from the Target (core counts, UB size), never hard-coded;
// the compiled-kernel cache keyed by a generator's compile-time parameters, so a second call
// with the same parameters neither rebuilds the IR nor recompiles; and the op list that
// `tlc ops` prints. Ops of every domain (norm/, activation/, ...) are written against it.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tl/error.h"
#include "tl/ir.h"
#include "tl/loc.h"
#include "tl/npu/npu.h"
#include "tl/npu/timing.h"
#include "tl/runtime.h"
#include "tl/target.h"

namespace cann_ops_tilelang {

/// Where a call came from: errors name the caller's file:line (the public functions take a
/// TL_LOC default argument and hand it down), or the location of the innermost ScopedCaller
/// alive on this thread.
tl::SourceLoc caller(const tl::Loc& loc);

/// A host that calls the public functions through a binding (the Python package, python/src/
/// bind_ops.cpp) sets where its own user called from: TL_LOC would name the binding's line,
/// which tells the user nothing. Nests; restores the previous location when it ends.
class ScopedCaller {
 public:
  explicit ScopedCaller(tl::SourceLoc loc);
  ~ScopedCaller();
  ScopedCaller(const ScopedCaller&) = delete;
  ScopedCaller& operator=(const ScopedCaller&) = delete;

 private:
  const tl::SourceLoc* prev_;
  tl::SourceLoc loc_;
};

/// Argument checks of one op call. Each throws tl::Error "<op>: argument '<arg>' ...: expected
/// ..., got ..." located at the caller.
class Checker {
 public:
  Checker(std::string op, const tl::Loc& loc) : op_(std::move(op)), loc_(caller(loc)) {}
  [[noreturn]] void fail(std::string_view arg, std::string_view what) const;
  /// Defined, on a live Device, dense row-major (a view with other strides is refused: the
  /// kernels address GM by row-major offsets).
  void tensor(std::string_view arg, const tl::Tensor& t) const;
  void dtype(std::string_view arg, const tl::Tensor& t,
             const std::vector<tl::DType>& allowed) const;
  void same_dtype(std::string_view arg, const tl::Tensor& t, std::string_view ref_arg,
                  const tl::Tensor& ref) const;
  void min_rank(std::string_view arg, const tl::Tensor& t, int rank) const;
  void shape(std::string_view arg, const tl::Tensor& t, const std::vector<int64_t>& want) const;
  void same_device(std::string_view arg, const tl::Tensor& t, std::string_view ref_arg,
                   const tl::Tensor& ref) const;
  /// The last dimension's rows are whole 32-byte blocks (GM <-> UB copies move 32-byte blocks).
  void row_alignment(std::string_view arg, const tl::Tensor& t) const;
  const std::string& op() const { return op_; }
  const tl::SourceLoc& loc() const { return loc_; }

 private:
  std::string op_;
  tl::SourceLoc loc_;
};

/// What a vector-only kernel may use on `target`: logical blocks (one AIC + two AIVs each) and
/// the bytes of one AIV's UB.
struct VectorBudget {
  int blocks = 0;        // target.num_aiv / 2
  int64_t ub_bytes = 0;  // target.cap(UB)
};
VectorBudget vector_budget(const tl::Target& target);

/// The widest chunk of a row of `n` elements that divides n, is a multiple of `quantum`, is at
/// most `cap`, and for which `fits(chunk)` holds; 0 if none.
int64_t widest_chunk(int64_t n, int64_t quantum, int64_t cap,
                     const std::function<bool(int64_t)>& fits);

/// A kernel generator's compile-time size as an `int`: the generators write sizes as int32
/// immediates, as the repository's kernels and their Python twins do (a Python int that fits
/// is an int32 immediate), so a twin prints the same IR; an int64_t key field would print
/// T.int64(...) everywhere. A size beyond int32 is a tl::Error naming `what`.
int ir_size(int64_t v, std::string_view what);

/// The compiled-kernel cache: `key` is the generator's name and compile-time parameters (the
/// op's KernelKey printed); `build` runs only on a miss. Thread-safe.
tl::CompiledKernel cached_kernel(const std::string& key, const tl::Target& target,
                                 const std::function<tl::PrimFunc()>& build);
struct KernelCacheStats {
  int64_t hits = 0, misses = 0;
};
KernelCacheStats kernel_cache_stats();
void clear_kernel_cache();

/// The row-tile schedule the vector kernels share (inside a T::Kernel over `num_blocks` blocks,
/// two AIVs each): the M / rM whole tiles are dealt round robin to the 2 * num_blocks workers
/// (worker = cid * 2 + vid, T::Persistent), and the tail tile of M % rM rows continues the round
/// robin (worker full_tiles % workers takes it). `tile_rows(row0, rows)` emits one tile's code:
/// rows is empty for a whole tile of rM rows, the tail's row count otherwise. Returns the worker
/// index (a kernel writing one partial row per worker stores it there). rM is an int, as ir_size
/// gives it, so the IR's constants stay int32, as the Python twins build them.
tl::Expr for_each_row_tile(tl::Expr M, int rM, tl::Expr num_blocks, tl::Expr cid, tl::Expr vid,
                           const std::function<void(tl::Expr, std::optional<tl::Expr>)>& tile_rows);

/// set_flag then wait_flag at once (src -> dst, event id `ev`), recorded at the caller's line:
/// the kernels' "the data `dst` reads is ready now" where no work is left to overlap.
void set_then_wait(tl::Pipe src, tl::Pipe dst, int ev, TL_LOC);

/// The UB of one AIV given out in order, for the kernels that place their buffers by hand (the
/// resident RMSNorm kernels, softmax's resident and streamed schedules): each buffer starts at
/// the residue modulo 512 asked, so the two sources of a vector instruction can start 256 bytes
/// apart (no bank-group conflict, docs/calibration.md); sizes are rounded up to 32 bytes. `at`
/// is the next free byte. One definition, twinned by python/cann_ops_tilelang/kernels/_ub.py.
struct UbPlacer {
  int64_t at = 0;
  int64_t operator()(int64_t bytes, int64_t residue);
};

/// The same deal of whole tiles and the tail tile, double-buffered in two UB slots (the
/// resident RMSNorm kernels): each worker's whole tiles go in pairs, so each slot's code and
/// event ids are constants; the next tile's `load(slot, row0)` is issued before this tile's
/// `work(slot, row0)` (compute and store). The schedule owns the slot flags (MTE3 -> MTE2 and
/// MTE2 -> V, ids 0 and 1); `work` orders its own store after its compute and `tail_tile(row0,
/// rows)` its whole tail tile (slot 0, after both slots' stores are done). Returns the worker.
tl::Expr for_each_row_tile_2slots(tl::Expr M, int rM, tl::Expr num_blocks, tl::Expr cid,
                                  tl::Expr vid, const std::function<void(int, tl::Expr)>& load,
                                  const std::function<void(int, tl::Expr)>& work,
                                  const std::function<void(tl::Expr, tl::Expr)>& tail_tile);

/// One op of the library, for `tlc ops` and the Python package's op list.
struct OpInfo {
  std::string name, summary, domain;
};
const std::vector<OpInfo>& all_ops();

// ---- run options, profiles and rooflines (benchmarks, `tlc op --profile`) ---------------------

/// Per-call run options: the public functions take tensors only, so a caller that wants a
/// timed run (the benchmarks, `tlc op --profile`) opens a ScopedRun on its thread; every kernel
/// an op launches through launch() below while it lives uses `launch` as its LaunchOptions and,
/// with `profile` set, runs in timed mode and appends its profile to `profiles` (an op may
/// launch several kernels: rms_norm_backward launches two).
struct RunOptions {
  tl::LaunchOptions launch;
  bool profile = false;
  std::vector<tl::npu::Profile> profiles;
};
class ScopedRun {
 public:
  explicit ScopedRun(RunOptions& opts);
  ~ScopedRun();
  ScopedRun(const ScopedRun&) = delete;
  ScopedRun& operator=(const ScopedRun&) = delete;

 private:
  RunOptions* prev_;
};

/// How every op launches its kernels: `kernel.launch(dev, args)` with the innermost
/// ScopedRun's options, if any.
void launch(const tl::CompiledKernel& kernel, tl::Device& dev, const std::vector<tl::Arg>& args);
/// A process-wide hook around every kernel launch of the library: when set, launch() calls it
/// (with the options it would launch with) instead of kernel.launch. The AscendC end-to-end
/// check (tests/ascendc/e2e_main.cpp) runs each kernel an op launches on the CPU model too.
/// Set it before any op runs; null restores plain launches.
using LaunchHook = std::function<void(const tl::CompiledKernel&, tl::Device&,
                                      const std::vector<tl::Arg>&, const tl::LaunchOptions&)>;
void set_launch_hook(LaunchHook hook);

/// What an op must do at least, whatever the kernel: the bytes it must move to or from GM
/// (each input read once, each output written once), cube flops and vector element operations.
struct OpCost {
  double bytes = 0, cube_flops = 0, vector_ops = 0;
};

/// The simulated profile of one op call: the sum of its launches.
struct OpProfile {
  int launches = 0;
  double us = 0;           // kernel time, the launches one after the other
  double task_us = 0;      // with each launch's overhead (a profiler's Task Duration)
  double gm_bytes = 0;     // bytes the kernels moved to or from GM (the profile's count)
  double roofline_us = 0;  // max(cost.bytes / HBM bandwidth, flops / cube peak, ops / vector peak)
  std::string bound;       // which of "hbm", "cube", "vector" gives roofline_us
  double roofline_fraction() const { return us > 0 ? roofline_us / us : 0; }
  /// Busy fraction of each pipe over the op's time, per core kind ("aiv.V", "aic.M", ...):
  /// each launch's busy_ratio weighted by its time. Pipes never busy are left out.
  std::vector<std::pair<std::string, double>> busy;
};
OpProfile summarize(const std::vector<tl::npu::Profile>& launches, const OpCost& cost,
                    const tl::Target& target);
/// The target's peaks the roofline uses: HBM bytes/s, cube flops/s (fp16 fractals of
/// 16x16x16 multiply-adds on every AIC), vector fp32 element operations/s (a simple vector
/// instruction's repeat on every AIV).
struct Peaks {
  double hbm_bytes_per_s = 0, cube_flops_per_s = 0, vector_ops_per_s = 0;
};
Peaks target_peaks(const tl::Target& target);
/// One line of text: "123.4 us (task 125.0 us), 71% of the hbm roofline (88.1 us), GM moved ...".
std::string format_profile(const OpProfile& p);

}  // namespace cann_ops_tilelang
