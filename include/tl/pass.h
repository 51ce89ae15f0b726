// The compiler's pass pipeline. `lower` takes a kernel as written and returns the form the
// backends execute: verified, simplified, with every on-chip buffer at a planned address.
// The pipeline itself is one short function (src/pass/lower.cpp) that reads as a table of
// contents; each pass lives in its own file and is tested on IR text in, IR text out
// (tests/pass/). Each pass states its output invariant as a verifier spec (tl/verifier.h);
// PassOptions::verify_each checks every pass against it. Debug knobs (print the IR after
// passes, time them, verify after each) come from PassOptions or from the environment
// variables listed in env_registry() and docs/compiler.md.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tl/arith.h"
#include "tl/env.h"
#include "tl/ir.h"
#include "tl/pass_registry.h"
#include "tl/target.h"
#include "tl/verifier.h"

namespace tl {

/// Where a pass's remarks go (a fallback the user asked to know about); unset: stderr, one
/// `file:line: remark: PASS: ...` line each.
using RemarkSink = std::function<void(const SourceLoc&, const std::string&)>;

/// Options of vectorize_parallel (developer mode).
struct VectorizeOptions {
  /// A loop that cannot be vectorised becomes serial scalar code (S pipe) with a remark,
  /// instead of a tl::Error. Off by default: a silent 100x slowdown is worse than an error.
  bool scalar_fallback = false;
  /// Accept T.exp / log / sigmoid (any float dtype) and T.rsqrt (float32), whose vector ops
  /// compute in float32 and may differ from the scalar loop's correctly rounded result in the
  /// last bit, and, on a target whose vector unit flushes subnormals (950), float division and
  /// T.sqrt, which then differ for subnormal operands and results (a remark each). Off by
  /// default here, for the pass alone: the vectorised loop is bit-identical. The pipeline passes
  /// DeveloperOptions::allow_inexact_math, which is on by default (as on the chip).
  bool allow_inexact_math = false;
  /// Where remarks go (default: stderr, one `file:line: remark: ...` line each).
  RemarkSink remark;
};

struct PassOptions {
  /// Print the IR after every pass that changed it (also: env TL_PRINT_AFTER_ALL=1).
  bool print_after_all = false;
  /// Print the IR after these passes only, when they changed it (also: env
  /// TL_PRINT_AFTER=name1,name2).
  std::vector<std::string> print_after;
  /// Report the time each pass took, in microseconds (also: env TL_TIME_PASSES=1).
  bool time_passes = false;
  /// Check the output of every pass that states an invariant (Pass::ensures) against it; a
  /// violation is a tl::InternalError naming the pass and listing the violations (also: env
  /// TL_VERIFY_EACH=1). A pass is only held to its invariant when its input met the expert
  /// spec: with the verify pass in the pipeline an input that does not is a user error anyway;
  /// without it (CompileOptions::verify = false) passes are checked from the first valid IR on.
  bool verify_each = false;
  /// Passes to leave out, by name (an unknown name is a user error listing the passes).
  /// CompileOptions::verify = false disables "verify".
  std::vector<std::string> disabled_passes;
  /// The developer-mode switches (tl/pass_registry.h): a pass whose switch is off is left out
  /// (and so is a pass that lowers its output, as tl::compile does); the others change what
  /// their passes do (pipeline_loops, minimise_syncs, scalar_fallback, allow_inexact_math).
  DeveloperOptions dev;
  /// Where split_aiv's and vectorize_parallel's fallback remarks go (default: stderr).
  RemarkSink remark;
  /// Where dumps and timings go (default: stderr).
  std::function<void(const std::string&)> sink;
};

/// A named pass: a function from a kernel to a kernel. Passes return their input unchanged
/// (the same PrimFunc) when they have nothing to do.
struct Pass {
  std::string name;
  std::function<PrimFunc(const PrimFunc&, const Target&)> run;
  /// The output invariant: given an input that meets the expert spec, the output meets this
  /// spec (nullopt: the pass states none). Breaking it is a compiler bug, which
  /// PassOptions::verify_each reports.
  std::optional<Spec> ensures{};
  /// The phase invariant of a lowering pass whose output is no expert kernel yet (no shared
  /// buffer left after infer_scopes, ...): "" when `out` meets it, else what breaks it.
  /// verify_each checks it on every output, valid input or not (tl/pass_registry.h).
  std::function<std::string(const PrimFunc&)> phase{};
};

/// Runs the pipeline. User errors (tl::Error) carry the kernel's source location.
PrimFunc lower(const PrimFunc& f, const Target& target, const PassOptions& opt = {});

/// Runs `passes` in order, except those in `opt.disabled_passes`, with the debug knobs of
/// `opt` merged with the environment: after a pass that changed the IR and is selected for
/// printing, writes `// IR after <name>` and the IR to the sink; with timing on, one
/// `// pass <name>: <N> us` line per pass; with verify_each on, checks each pass's output
/// against its invariant.
PrimFunc run_passes(const PrimFunc& f, const Target& target, const std::vector<Pass>& passes,
                    const PassOptions& opt = {});

/// `opt` with the environment variables TL_PRINT_AFTER_ALL, TL_PRINT_AFTER, TL_TIME_PASSES
/// and TL_VERIFY_EACH folded in (an option set in code stays set).
PassOptions with_env(PassOptions opt);

// ---- Passes (one file each under src/pass/) ---------------------------------------------------

/// combine_cv (DeveloperOptions::auto_cv_combine, TileLang-Ascend's tl.ascend_auto_cv_combine):
/// an expert kernel whose work is written outside any T.Scope. A vector-only body becomes the
/// Vector scope (each AIV runs it with its vid) and its shared / fragment tiles UB tiles; a body
/// with cube work is split into a Cube and a Vector scope (src/pass/split_hybrid.cpp), and with
/// `auto_cv_sync` (tl.ascend_auto_cross_core_sync) its GM tensors that cross cores become
/// channels insert_channel_syncs orders. Unscoped work beside scoped work is a tl::Error naming
/// the statement. Other kernels are returned unchanged. Runs before verify.
PrimFunc combine_cv(const PrimFunc& f, const Target& target, bool auto_cv_sync = false);

/// verify: the expert-mode spec (tl/verifier.h). Throws tl::Error listing every violation;
/// returns `f` itself otherwise. Runs first: every later pass may assume a valid kernel.
/// Output invariant: the expert spec.
PrimFunc verify_pass(const PrimFunc& f, const Target& target);

// simplify (a pass of this pipeline) is declared in tl/arith.h: the verifier uses it too.

// ---- Developer mode (docs/developer_mode.md): each returns an expert kernel unchanged ----------

/// infer_scopes: places every T::alloc_shared / T::alloc_fragment buffer by its uses: gemm A/B
/// -> L1 (a fragment: L0A/L0B), gemm C -> L0C, vector use or copies only -> UB. A buffer both
/// cores use gets a twin on the consumer's core (an accumulator the vector unit reads: UB twin;
/// a shared tile the vector unit produces for a gemm: L1 twin), filled by a crossing copy after
/// each producer write; other shared uses, two gemm operand positions or a shared accumulator
/// are a tl::Error naming the uses. Output invariant: no shared or fragment buffer left.
PrimFunc infer_scopes(const PrimFunc& f, const Target& target);

/// lower_cube_ops: T::gemm -> L1 -> L0A/L0B copies (MTE1) into two slots per K chunk (the
/// largest multiple of the fractal K that double-buffers in L0A and L0B) and one T::mma each;
/// a T::clear of an accumulator is folded into the init of the first gemm into it (in a loop:
/// init = (k == min)). Never gemm_v0. Output invariant: no gemm, no fill of L0C.
PrimFunc lower_cube_ops(const PrimFunc& f, const Target& target);

/// mask_tails (after lower_cube_ops, before legalize_copies): the stale part of a UB tile
/// filled by a copy that legalize_copies will clip at its tensor's end never reaches a result:
/// reductions over a stale dimension read the valid part, element loops that accumulate a stale
/// tile update the valid part only (a narrowed loop or a select, on the clipped iterations),
/// and ops that combine what they read (an accumulating elementwise op, a reduction it cannot
/// narrow, a sort, a top-k, a crossing into the cube) read a tile whose stale part holds their
/// identity, filled on the clipped iterations. Where the stale part is not known at compile
/// time and reaches one of these or a copy to GM, a tl::Error names the tile, the clipped copy
/// and the statement (docs/developer_mode.md, "Tails"). Expert kernels are returned unchanged.
PrimFunc mask_tails(const PrimFunc& f, const Target& target);

/// place_expert_tiles (after combine_cv, before verify): an expert kernel with T.Scope whose
/// T.alloc_shared / T.alloc_fragment tiles TileLang-Ascend would place by use: in a Cube scope a
/// gemm_v0 operand or a copied shared tile -> L1, an accumulator or a copied fragment -> L0C; in
/// a Vector scope -> UB; unused -> UB. A tile both scopes use (or a fragment as a gemm_v0 operand,
/// a shared accumulator) is a tl::Error naming it and its uses. Other kernels are returned
/// unchanged.
PrimFunc place_expert_tiles(const PrimFunc& f, const Target& target);

/// legalize_copies (after lower_cube_ops): every copy between GM and a tile is clipped to the
/// tensor along the dimensions whose end is not provably inside it (row and column tails: the
/// extent becomes min(tile extent, tensor extent - start) on both sides); UB tiles whose rows
/// are not whole 32-byte blocks get padded rows (one padded width per logical width) and padded
/// GM copies (DataCopyPad); element loops and elementwise tile ops over the logical width run
/// over the padded width (pad lanes are never stored; reductions keep the logical width); a GM
/// -> L1 copy that may be partial zero-fills the tile first (T.init_const) when it is. Output
/// invariant: no copy reaches past its tensor for any block.
PrimFunc legalize_copies(const PrimFunc& f, const Target& target);

/// clip_expert_copies (after legalize_copies): an expert kernel's copies between GM and an
/// on-chip tile are clipped to the tensor as TileLang-Ascend's DataCopyPad lowering clips them
/// (the rule of legalize_copies: the extent max(min(extent, size - start), 0) on both sides
/// along each dimension not provably inside; UB rows moved padded; a read fills the valid part,
/// the rest holds the author's pad_value or is undefined and marked `clipped=True`; a write
/// stores the valid part). A reduction, sort or top-k that would combine an undefined part is a
/// tl::Error naming the op and the copy. Developer kernels are returned unchanged.
PrimFunc clip_expert_copies(const PrimFunc& f, const Target& target);

/// split_cube_vector: the developer kernel becomes an expert one (cid, vid) with a Cube scope and
/// a Vector scope, each the body projected on its core (its statements plus the scalar skeleton
/// both run); vector work runs on AIV 0 until split_aiv exists; Pipelined loops stay Pipelined
/// (pipeline_loops lowers them). A loop bound or condition that reads the other core's memory is
/// a tl::Error. Output invariant: the expert spec except T.Parallel loops (vectorize_parallel,
/// which runs next, needs them inside the Vector scope).
PrimFunc split_cube_vector(const PrimFunc& f, const Target& target);

/// insert_channel_syncs (lowered developer kernels, after insert_syncs): every GM workspace one
/// core writes and the other reads (legalize_copies' channels) gets a mode-2 cross-core flag
/// set after the producing copy and a wait before the consuming copy; a channel inside a loop
/// also gets credits (the consumer sets one after its copy and pre-sets one at its scope's
/// start, the producer waits for one before its copy and drains the last at its scope's end).
/// AIV 1, which runs no vector work until split_aiv exists, runs the vector side's flags alone
/// (the `else` of `if vid == 0`). Output invariant: the planned spec; cross-core flags
/// balanced on every core for any trip count.
PrimFunc insert_channel_syncs(const PrimFunc& f, const Target& target);

/// vectorize_parallel (developer mode; after infer_scopes): replaces every nest of 1 to 3
/// T.Parallel loops inside T.Scope("Vector") whose body is element stores (and lets) on UB
/// buffers by vector tile ops (T.tile.* and UB->UB copies) over the regions the loops walk,
/// with UB temporaries (float32 for bfloat16 arithmetic, uint8 bitmasks for comparisons)
/// declared just before the ops and reused once dead. The result is bit-identical to running
/// the loop as serial scalar code; what cannot be vectorised exactly is a tl::Error at the loop
/// naming the reason (GM operand, non-unit stride, cross-iteration read, reduction, unaligned
/// run, unsupported op or dtype), or, with scalar_fallback, a serial loop and a remark. The
/// mapping and every numeric decision: docs/compiler.md, "vectorize_parallel". Returns `f`
/// itself when it has no Parallel loop. Output invariant: no Parallel loop left; every
/// temporary a UB Allocate (the expert spec, once the kernel's syncs are inserted).
PrimFunc vectorize_parallel(const PrimFunc& f, const Target& target, const VectorizeOptions& opt);
PrimFunc vectorize_parallel(const PrimFunc& f, const Target& target, bool scalar_fallback = false);

/// split_aiv (lowered developer kernels written with threads = 2; `lower` runs it only for
/// those; after vectorize_parallel): the Vector
/// scope's `if vid == 0: work` becomes work both AIVs run, each on half the rows of every tile
/// whose leading dimension is labelled "rows" (labels unified across ops from the tiles copied
/// to or from GM and channel workspaces): its GM and workspace copies move its rows (a tail's
/// clipped, a copy of none skipped) and every op on such a tile runs over rows [0, R/2). Tiles
/// without rows stay whole on both (a whole tile's copy to GM is AIV 0's). Buffers keep their
/// size. An odd row count, a reduction over the rows, rows meeting a position-dependent op or a
/// scalar access, a sub-range of rows, a whole tile pushed to the cube or a split kernel the
/// verifier rejects leave the work on AIV 0, with a remark naming the reason. Output invariant:
/// the expert spec but Pipelined loops.
PrimFunc split_aiv(const PrimFunc& f, const Target& target, const RemarkSink& remark = {});

/// pipeline_loops (lowered developer kernels, after vectorize_parallel): every T.Pipelined(n,
/// num_stages = S) loop becomes a serial schedule unrolled S times in which neighbouring
/// iterations overlap. A buffer each iteration writes before reading it and that two pipes
/// touch gets S slots (buffers of their own, declared before the loop; iteration t uses slot
/// (t - min) mod S), as far as the scope's memories hold them (largest dropped first); a
/// channel workspace inside such loops on both cores gets S slots (insert_channel_syncs: S
/// credits); a core that pushes into a channel before its first pop runs that first part one
/// iteration ahead when the two parts share nothing either writes. A guarded remainder, a
/// prologue and an epilogue keep it correct for any trip count >= 0, symbolic included.
/// num_stages = 1, `overlap` false, or a loop where nothing gets slots and nothing is skewed: a
/// serial loop. A Pipelined loop inside another on one core is a tl::Error.
/// Output invariant: no Pipelined loop left (the expert spec, before syncs).
PrimFunc pipeline_loops(const PrimFunc& f, const Target& target, bool overlap = true);

/// plan_memory: assigns BufferNode::address to every on-chip buffer (L1, L0A, L0B, L0C, UB)
/// that has none, per scope, aligned to max(target alignment, 32) (tl/storage.h). Buffers
/// share bytes only when their live ranges are disjoint AND the program orders the old
/// owner's last accesses before the new owner's first ones (same in-order pipe, or a flag or
/// barrier already on every path; around the back edge too when both live in one loop
/// iteration), so the plan never adds a race the kernel as written does not have. A live
/// range runs from the first to the last access in program order, widened to a whole loop
/// when the buffer is declared outside a loop that accesses it (its value lives across
/// iterations); a view's accesses are its base's. Explicit addresses
/// are kept and reserved while their buffer is live. A scope that does not fit its capacity
/// is a tl::Error at the kernel's location with a per-buffer table (name, shape, dtype,
/// bytes, live range, source line, offset) and the total against the capacity. Must run
/// after every pass that creates, resizes or moves uses of on-chip buffers. Output invariant:
/// the planned spec (every on-chip buffer has an address, aligned and within capacity).
///
/// With `syncs_follow` (developer kernels, when insert_syncs runs next) the ordering
/// condition is dropped: disjoint live ranges share bytes, and insert_syncs, which works on
/// the planned addresses, orders the old owner's last accesses before the new owner's first.
///
/// With `bank_groups` (DeveloperOptions::bank_groups, on by default) a UB layout whose vector
/// instructions read two sources from conflicting bank groups (docs/hardware.md section 4) is
/// placed again with those buffers at residues modulo 512 that put the weighted repeats' sources
/// in opposite groups; the new layout is kept only if it has fewer conflicting repeats and fits.
PrimFunc plan_memory(const PrimFunc& f, const Target& target, bool syncs_follow = false,
                     bool bank_groups = true);

/// insert_syncs: writes the intra-core synchronisation of every T::Scope that has none of its
/// own (no sync of SyncOrigin::User, no set/wait_flag, pipe_barrier or barrier_all); a scope
/// that has any is returned as written, so expert kernels pass through untouched. Cross-core
/// syncs the compiler wrote (origin Auto) are kept: a set_cross_flag(P) is ordered after every
/// earlier GM access of the core. Runs after plan_memory: accesses are byte ranges of the
/// planned addresses (GM: by tensor), so bytes plan_memory gave two buffers count too.
/// Output invariant: under the hazard checker's rules (tl/sync_rules.h) every pair of
/// conflicting accesses of a processed scope is ordered, on every path and around every loop
/// back edge; each inserted sync has origin Auto and prints `auto=True`; set_flag/wait_flag
/// are balanced on every path (correct for any trip count, zero included) and no flag is set
/// twice; event ids are constants within [0, num_event_ids) minus the reserved ones; no
/// barrier_all and no pipe_barrier(ALL). The expert spec holds. Not in the pipeline yet:
/// developer kernels only (docs/compiler.md).
/// With `minimise` false the pruning step is skipped (every sync the walk planned stays), to
/// measure what it saves (DeveloperOptions::minimise_syncs).
PrimFunc insert_syncs(const PrimFunc& f, const Target& target, bool minimise = true);

/// hoist_above_channel_waits (lowered developer kernels, before plan_memory, with
/// minimise_syncs): a tile op after a channel's receiving copy moves above it when it commutes
/// with everything it passes (no buffer one writes that the other touches) and is neither a
/// channel copy nor a sync, so it runs while its core waits for the other core's flag
/// (FlashAttention's cube loads V into L0B while it waits for P). Output invariant: the expert
/// spec.
PrimFunc hoist_above_channel_waits(const PrimFunc& f, const Target& target);

/// group_vector_ops (lowered developer kernels, before plan_memory, with minimise_syncs): each
/// run of consecutive vector-pipe tile ops goes in dependence-level order (program order within
/// a level), so insert_syncs needs one pipe_barrier(V) per level, the fewest any order has.
/// Output invariant: the expert spec.
PrimFunc group_vector_ops(const PrimFunc& f, const Target& target);

/// hoist_slot_credits (lowered developer kernels, after insert_syncs, with minimise_syncs): the
/// slot credits insert_syncs pre-sets before a loop and drains after it (and after a pipelined
/// loop's remainder) move out of an enclosing serial loop whose body has nothing else on the
/// credits' pipes (a persistent GEMM's K loop inside its tile loop), so the pipeline continues
/// across the outer iterations instead of draining at each. Output invariant: the planned spec;
/// flags stay balanced.
PrimFunc hoist_slot_credits(const PrimFunc& f, const Target& target);

/// elide_channel_credits (lowered developer kernels, after insert_channel_syncs, with
/// minimise_syncs): drops a channel's credit flags where the other flags already order every
/// reuse of its slots, proven by replaying one block's three cores with the hazard checker's
/// rules (FlashAttention's round trip: each direction's data flags carry the other direction's
/// reads). Keeps every credit where a trip count or a condition around a sync is not a
/// constant. Output invariant: the planned spec; cross-core flags balanced.
PrimFunc elide_channel_credits(const PrimFunc& f, const Target& target);

/// elide_implied_syncs (lowered developer kernels, last, with minimise_syncs): drops each
/// intra-core flag of the compiler's whose order the other flags already carry, cross-core
/// round trips included (which insert_syncs, one core at a time, cannot see), proven by
/// replaying one block's three cores with the bytes every op touches and the hazard checker's
/// rules; and the compiler's syncs no block runs. Keeps every flag where a trip count or a
/// condition around a sync is not a constant, or the scalar unit accesses memory. Output
/// invariant: the planned spec; flags balanced.
PrimFunc elide_implied_syncs(const PrimFunc& f, const Target& target);

/// merge_flags (lowered developer kernels, after elide_implied_syncs, with minimise_syncs):
/// makes one flag of two neighbouring flags of a pipe pair whose statements correspond one to
/// one in the same blocks (A's and B's panel loads of a GEMM: set after the later source, wait
/// before the earlier destination), each merge proven by replaying every block with the hazard
/// checker's rules. Output invariant: the planned spec; flags balanced.
PrimFunc merge_flags(const PrimFunc& f, const Target& target);

/// guard_loop_credits (lowered developer kernels, last, with minimise_syncs): a loop credit's
/// pre-set and drain become guards on the loop's wait (skipped at the first iteration) and set
/// (skipped where no later iteration waits), as gemm_pipelined guards its slot credits; each
/// unit proven by replaying every block (ordered, finishing, every set consumed). Output
/// invariant: the planned spec; flags balanced.
PrimFunc guard_loop_credits(const PrimFunc& f, const Target& target);

/// keep_far_flag_ids (not in the pipeline: tl_ascend.compile runs it on kernels built for
/// TileLang-Ascend's targets, before verification): the flags of a pipe pair whose event ids lie
/// past the target's range move onto valid ids, with a remark each pair
/// (src/pass/far_flag_ids.cpp). This form words the remark for the pto code generator; the
/// one taking the code generator ("pto" or "ascendc"), and the rules, are in
/// tl/far_flag_ids.h.
PrimFunc keep_far_flag_ids(const PrimFunc& f, const Target& target, const RemarkSink& remark = {});

}  // namespace tl
