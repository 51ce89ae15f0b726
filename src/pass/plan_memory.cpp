// The plan_memory pass: liveness-based placement of on-chip buffers. Linearises the kernel
// (one index per statement, in program order), computes each buffer's live range, places
// every scope's buffers with assign_offsets (tl/storage.h) and checks the capacity.
//
// The AIC and each AIV have their own memories (L1/L0A/L0B/L0C on the AIC, UB on an AIV),
// and a scope's memory is per core, so only buffers of the same scope compete. Cube and
// Vector code interleave in the linear order, which is harmless: a scope's buffers are only
// touched by the one kind of core, which runs its code in that same order.
//
// Disjoint live ranges are not enough on the chip, whose pipes run concurrently: a buffer
// takes over another's bytes only when the program already orders the old owner's last
// accesses before the new owner's first ones (reuse_order.h). Otherwise the two get separate
// bytes, and an overflow error says which reuses were refused and why. (tilelang-ascend issue
// 1156: a planner that reuses live bytes across pipes turns a correctly synchronised kernel
// into a racy one.) A developer kernel has no syncs yet when it is planned; insert_syncs runs
// next on the planned addresses, so there every disjoint pair may share (`syncs_follow`).
//
// UB bank groups (bank_groups.h): a vector instruction whose two UB sources start in
// conflicting bank groups pays its repeats twice on A2/A3. Where the default layout has such
// instructions, the UB is placed again with the buffers involved at residues modulo 512 chosen
// to put the heaviest (repeats x trip counts) in opposite groups, and the result is kept only
// when it conflicts less and fits. Explicit addresses are never moved.
#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "bank_groups.h"
#include "liveness.h"
#include "reuse_order.h"

#include "tl/ir_functor.h"
#include "tl/pass.h"
#include "tl/storage.h"

namespace tl {
namespace {

class UseAddresses : public IRMutator {
 public:
  std::unordered_map<const BufferNode*, Buffer> planned;
  Buffer mutate_buffer(const Buffer& b) override {
    auto it = planned.find(b.get());
    return it == planned.end() ? b : it->second;
  }
};

/// Why a kernel at most 256 B over the L1 capacity is still over it (issue 29): the capacity is
/// the L1 TBuf TileLang-Ascend's AscendC code generator allocates, 256 B short of the physical
/// 512 KB (codegen_ascend.cc: 524032 on A2/A3; AscendC itself keeps the top 128 B of L1 for its
/// matmul messages, KFC_L1_RESERVER_SIZE), so those bytes lie past every buffer it allocates
/// (docs/hardware.md section 1). UB has no such note: its capacity is the physical 192 KB.
std::string top_256_note(MemScope s, int64_t over) {
  if (s != MemScope::L1 || over <= 0 || over > 256) return "";
  return fmt::format(
      "the capacity is the {} TileLang-Ascend's code generator allocates (its one AscendC TBuf, "
      "256 B short of the physical memory); these {} bytes would lie past every buffer it "
      "allocates\n",
      scope_name(s), over);
}

std::string grouped(int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

/// Reuse refused for a pair of buffers (earlier, later) and why, for the overflow error.
using Refusals = std::map<std::pair<size_t, size_t>, std::string>;

/// Where a buffer comes from: the author's line, or what the compiler made it for and the line
/// it was made for ("UB twin of 'c', k.py:26").
std::string declared(const BufferNode& b) {
  return b.origin.empty() ? b.loc.str() : fmt::format("{}, {}", b.origin, b.loc.str());
}

[[noreturn]] void report_overflow(const PrimFunc& f, const Target& target, MemScope scope,
                                  int64_t total, const std::vector<const BufferLife*>& lives,
                                  const std::vector<int64_t>& offsets, const Liveness& lv,
                                  const Refusals& refused, int64_t if_shared) {
  auto line_of = [&](int64_t pos) {
    const SourceLoc& l = lv.stmt_loc[static_cast<size_t>(pos)];
    return l.known() ? std::to_string(l.line) : std::string("?");
  };
  std::string table = fmt::format("  {:<16} {:<16} {:<9} {:>10} {:>12} {:>12}  {:<48} {:>10}\n",
                                  "name", "shape", "dtype", "bytes", "live stmts", "live lines",
                                  "declared at (compiler-made: what for)", "offset");
  for (size_t i = 0; i < lives.size(); ++i) {
    const BufferLife& b = *lives[i];
    std::string offset = grouped(offsets[i]) + (b.buffer->address >= 0 ? " (explicit)" : "");
    table += fmt::format("  {:<16} {:<16} {:<9} {:>10} {:>12} {:>12}  {:<48} {:>10}\n",
                         b.buffer->name, shape_str(b.shape), dtype_name(b.buffer->dtype),
                         grouped(b.bytes), fmt::format("{}-{}", b.first, b.last),
                         fmt::format("{}-{}", line_of(b.first), line_of(b.last)),
                         declared(*b.buffer), offset);
  }
  std::string reuse;
  if (!refused.empty()) {
    reuse = fmt::format(
        "reuse refused for {} pair(s) of buffers whose live ranges are disjoint (they could "
        "share bytes: with every such pair sharing, {} would need {} bytes): sharing bytes "
        "needs the old owner's last access ordered before the new owner's first on the chip (a "
        "flag, a barrier, the same in-order pipe, or a cross-core round trip; TileLang-Ascend's "
        "planner shares them without asking, docs/compiler.md \"plan_memory\"):\n",
        refused.size(), scope_name(scope), grouped(if_shared));
    int shown = 0;
    for (const auto& [pair, why] : refused) {
      if (++shown > 8) {
        reuse += fmt::format("  ... and {} more\n", refused.size() - 8);
        break;
      }
      reuse += fmt::format("  '{}' after '{}': {}\n", lives[pair.second]->buffer->name,
                           lives[pair.first]->buffer->name, why);
    }
  }
  throw Error(
      f->loc,
      fmt::format(
          "kernel {}: {} needs {} bytes, capacity {} on {} (buffers live at the same time cannot "
          "share bytes):\n{}{}",
          f->name, scope_name(scope), grouped(total), grouped(target.cap(scope)), target.name,
          table, reuse) +
          top_256_note(scope, total - target.cap(scope)));
}

/// Whether insert_syncs will order every reuse of memory `m`'s bytes. A scope with a sync of its
/// author's (or intra-core syncs already) may be left as written by insert_syncs (insert_syncs.cpp,
/// opaque_pairs: flags with ids it cannot follow), so in an expert kernel under auto_sync a
/// memory of such a scope's core (L1 / L0A / L0B / L0C: the cube's, UB: the vector's) is planned
/// as without insert_syncs: a reuse only where the author's syncs already order it (safe in
/// either case; the scopes insert_syncs runs over get their other syncs on top).
bool syncs_follow_for(const Stmt& body, MemScope m) {
  const CoreKind core = m == MemScope::UB ? CoreKind::Vector : CoreKind::Cube;
  bool own = false;
  pre_order_visit(body, [&](const Stmt& s) {
    auto* sc = s.as<ScopeNode>();
    if (!sc || sc->core != core || own) return;
    pre_order_visit(sc->body, [&](const Stmt& x) {
      auto* y = x.as<SyncNode>();
      if (!y) return;
      own |= y->origin == SyncOrigin::User || y->sync_kind == SyncKind::SetFlag ||
             y->sync_kind == SyncKind::WaitFlag || y->sync_kind == SyncKind::PipeBarrier ||
             y->sync_kind == SyncKind::BarrierAll;
    });
  });
  return !own;
}

/// Two buffers the author pinned (`address=`, T.annotate_address) at overlapping bytes: an error
/// when they are live at the same time (one would overwrite the other's data), or when their live
/// ranges are disjoint but nothing in the program orders the first one's last access before the
/// second one's first (a race between pipes on the chip). The planner never moves a pinned
/// buffer, so it cannot repair either; it says which two and why. Per-iteration live ranges
/// (liveness.h): a loop's scratch buffer written whole before it is read holds no value across
/// iterations, and AccessOrder checks the reuse around the loop's back edge too.
void check_pinned_overlaps(const PrimFunc& f, MemScope scope, const Liveness& lv,
                           const AccessOrder& order, bool syncs_follow) {
  std::vector<const BufferLife*> pinned;
  for (const auto& b : lv.buffers)
    if (b.buffer->scope == scope && b.buffer->address >= 0 && b.bytes > 0) pinned.push_back(&b);
  auto line_of = [&](int64_t pos) {
    const SourceLoc& l = lv.stmt_loc[static_cast<size_t>(pos)];
    return l.known() ? std::to_string(l.line) : std::string("?");
  };
  for (size_t i = 0; i < pinned.size(); ++i) {
    for (size_t j = i + 1; j < pinned.size(); ++j) {
      const BufferLife& a = *pinned[i];
      const BufferLife& b = *pinned[j];
      int64_t a0 = a.buffer->address, b0 = b.buffer->address;
      if (a0 >= b0 + b.bytes || b0 >= a0 + a.bytes) continue;  // disjoint bytes
      auto what = [&](const BufferLife& x) {
        return fmt::format("'{}' (declared at {}) at bytes [{}, {}), live at lines {}-{}",
                           x.buffer->name, declared(*x.buffer), x.buffer->address,
                           x.buffer->address + x.bytes, line_of(x.first), line_of(x.last));
      };
      std::string why;
      if (a.first <= b.last && b.first <= a.last) {
        why = "both are live at the same time, so one overwrites the other's data";
      } else if (!syncs_follow) {
        const BufferLife& early = a.last < b.first ? a : b;
        const BufferLife& late = &early == &a ? b : a;
        if (auto hazard = order.reuse_hazard(early.buffer.get(), late.buffer.get()))
          why = fmt::format(
              "their live ranges are disjoint, but nothing orders '{}' after '{}' (a race "
              "between pipes on the chip): {}",
              late.buffer->name, early.buffer->name, *hazard);
      }
      if (why.empty()) continue;
      throw Error(b.buffer->loc,
                  fmt::format("kernel {}: the explicit addresses (address= or T.annotate_address) "
                              "of two {} buffers overlap: {} and {}; {}. Give them disjoint "
                              "addresses, or leave one unpinned for the planner to place",
                              f->name, scope_name(scope), what(a), what(b), why));
    }
  }
}

int64_t footprint(const std::vector<LiveBlock>& blocks, const std::vector<int64_t>& offsets) {
  int64_t total = 0;
  for (size_t i = 0; i < blocks.size(); ++i) {
    // Saturating: a pinned address near INT64_MAX must fail the capacity check, not wrap.
    int64_t end = 0;
    if (__builtin_add_overflow(offsets[i], blocks[i].bytes, &end))
      end = std::numeric_limits<int64_t>::max();
    total = std::max(total, end);
  }
  return total;
}

/// UB bank groups (bank_groups.h, docs/compiler.md "plan_memory"): when the default layout
/// `offsets` puts the two sources of some vector instructions in conflicting bank groups, the
/// same blocks are placed again with each such buffer at the residue modulo 512 bank_residues
/// proposes, and that layout replaces the default only when its weighted conflicting repeats
/// are fewer and it fits the capacity. A kernel without conflicts keeps its layout byte for byte.
void place_bank_groups(const Stmt& body, const Target& target, const Liveness& lv,
                       const std::vector<const BufferLife*>& lives,
                       const std::vector<LiveBlock>& blocks, const MayShare& may_share, int64_t cap,
                       std::vector<int64_t>& offsets, int64_t& total) {
  if (cap > 0 && total > cap) return;
  const auto pairs = bank_pairs(body, target, lv, lives);
  if (pairs.empty()) return;
  const double before = bank_conflicts(pairs, offsets, target);
  if (before == 0) return;
  std::vector<int64_t> fixed(blocks.size());
  for (size_t i = 0; i < blocks.size(); ++i) fixed[i] = blocks[i].fixed;
  const auto residues = bank_residues(pairs, blocks.size(), offsets, fixed, target);
  std::vector<LiveBlock> phased = blocks;
  const int64_t period = target.costs.ub_bank_bytes * target.costs.ub_bank_groups;
  for (size_t i = 0; i < phased.size(); ++i) {
    if (residues[i] < 0 || phased[i].fixed >= 0 || period % phased[i].align != 0 ||
        residues[i] % phased[i].align != 0)
      continue;
    phased[i].align = period;
    phased[i].phase = residues[i];
  }
  // No reuse the default layout does not have: two buffers share bytes in the new layout only if
  // they did in the default one. In a developer kernel insert_syncs orders every shared pair, so
  // a new sharing would add a dependence (a pipelined loop's buffers sharing bytes with others
  // lose their overlap: FlashAttention's step was 1.5 % slower with fewer conflicts).
  auto shared_before = [&](size_t i, size_t j) {
    return offsets[i] < offsets[j] + blocks[j].bytes && offsets[j] < offsets[i] + blocks[i].bytes;
  };
  auto candidate = assign_offsets(
      phased, [&](size_t i, size_t j) { return shared_before(i, j) && may_share(i, j); });
  const int64_t end = footprint(phased, candidate);
  if ((cap > 0 && end > cap) || bank_conflicts(pairs, candidate, target) >= before) return;
  offsets = std::move(candidate);
  total = end;
}

/// The on-chip buffers `body` declares (views included).
std::set<const BufferNode*> declared_buffers(const Stmt& body) {
  std::set<const BufferNode*> out;
  pre_order_visit(body, [&](const Stmt& s) {
    if (auto* a = s.as<AllocateNode>(); a && is_planned_scope(a->buffer->scope))
      out.insert(a->buffer.get());
  });
  return out;
}

/// `f`'s body with the cross-core flags insert_channel_syncs will give its channels (issue 29:
/// a hybrid kernel's workspaces get them only after plan_memory, and bench_sfa's L0B reuse is
/// ordered by nothing else). The pass inserts syncs and keeps every buffer as it is, which
/// AccessOrder needs (it knows buffers by their nodes); should either fail, the body as it is.
Stmt with_channel_syncs(const PrimFunc& f, const Target& target) {
  PrimFunc g;
  try {
    g = insert_channel_syncs(f, target);
  } catch (const Error&) {
    return f->body;  // the pass itself reports it when it runs
  }
  if (g == f || declared_buffers(g->body) != declared_buffers(f->body)) return f->body;
  return g->body;
}

}  // namespace

void check_shared_bytes(const PrimFunc& f, const Target& target) {
  Liveness lv;
  lv.per_iteration = lv.slots = true;  // the narrowest ranges plan_memory may have placed by
  lv.visit(f->body);
  lv.finish();
  const AccessOrder order(f->body, target);
  for (size_t i = 0; i < lv.buffers.size(); ++i) {
    for (size_t j = i + 1; j < lv.buffers.size(); ++j) {
      const BufferLife& a = lv.buffers[i];
      const BufferLife& b = lv.buffers[j];
      if (a.buffer->scope != b.buffer->scope || a.bytes <= 0 || b.bytes <= 0) continue;
      const int64_t a0 = a.buffer->address, b0 = b.buffer->address;
      if (a0 < 0 || b0 < 0 || a0 >= b0 + b.bytes || b0 >= a0 + a.bytes) continue;
      if (a.first <= b.last && b.first <= a.last) continue;  // live together: not a reuse
      const BufferLife& early = a.last < b.first ? a : b;
      const BufferLife& late = &early == &a ? b : a;
      if (auto why = order.reuse_hazard(early.buffer.get(), late.buffer.get()))
        throw Error(
            f->loc,
            fmt::format("internal error: kernel {}: plan_memory gave '{}' the {} bytes of '{}' "
                        "on the strength of the cross-core flags insert_channel_syncs adds, but "
                        "the kernel with those flags does not order the reuse: {}",
                        f->name, late.buffer->name, scope_name(late.buffer->scope),
                        early.buffer->name, *why));
    }
  }
}

PrimFunc plan_memory(const PrimFunc& f, const Target& target, bool syncs_follow, bool bank_groups) {
  return plan_memory(f, target, syncs_follow, bank_groups, /*channel_syncs_follow=*/false);
}

PrimFunc plan_memory(const PrimFunc& f, const Target& target, bool syncs_follow_all,
                     bool bank_groups, bool channel_syncs_follow) {
  Liveness lv;
  lv.visit(f->body);
  lv.finish();
  // The tighter ranges of a loop's scratch buffers (written whole before they are read in each
  // iteration; liveness.h), used only where a memory would overflow without them: sharing
  // bytes orders the sharers, which costs a pipelined loop its overlap, so a kernel that fits
  // keeps its plan (issue 29). A reuse across a back edge is ordered by insert_syncs when it
  // follows; otherwise (an expert kernel with its author's syncs) only a pair AccessOrder finds
  // ordered both ways around the loop shares bytes, as for the wide ranges. TileLang-Ascend's
  // planner (TL_ASCEND_MEMORY_PLANNING) gives every buffer first and last touched in one loop
  // body such a per-iteration range, without asking whether the syncs order the reuse;
  // opt_gdn_chunk_h.py fits UB only so (docs/tla_corpus.md).
  std::optional<Liveness> tight, slotted;
  auto lives_of = [&](std::optional<Liveness>& l, bool slots) -> const Liveness& {
    if (!l) {
      l.emplace();
      l->per_iteration = true;
      l->slots = slots;
      l->visit(f->body);
      l->finish();
    }
    return *l;
  };
  auto tight_lives = [&]() -> const Liveness& { return lives_of(tight, false); };

  UseAddresses placer;
  const AccessOrder order(f->body, target, /*loop_trips=*/false);
  // The last resort, where a memory overflows with both: double-buffer slots as whole writes
  // (liveness.h), and the reuse order with round trips inside loops, on the kernel with the
  // cross-core flags insert_channel_syncs will add when no insert_syncs follows (issue 29,
  // bench_sfa's L0B; docs/compiler.md "Round trips in loops"). Asked only there, so a kernel
  // that fit before keeps its plan byte for byte. AccessOrder keeps pointers into the body it
  // indexes: the body outlives it.
  Stmt last_body;
  std::optional<AccessOrder> last_order;
  auto last_resort_order = [&]() -> const AccessOrder& {
    if (!last_order) {
      last_body =
          channel_syncs_follow && !syncs_follow_all ? with_channel_syncs(f, target) : f->body;
      last_order.emplace(last_body, target, /*loop_trips=*/true);
    }
    return *last_order;
  };
  for (MemScope scope : {MemScope::L1, MemScope::L0A, MemScope::L0B, MemScope::L0C, MemScope::UB}) {
    const int64_t cap = target.cap(scope);
    const bool syncs_follow = syncs_follow_all && syncs_follow_for(f->body, scope);
    const Liveness* use = &lv;
    const AccessOrder* ask = &order;
    std::vector<const BufferLife*> lives;
    std::vector<int64_t> offsets;
    Refusals refused;
    int64_t total = 0;
    std::vector<LiveBlock> blocks;
    for (int attempt = 0; attempt < 3; ++attempt) {
      if (attempt >= 1) {
        if (cap <= 0 || total <= cap) break;
        use = &tight_lives();
      }
      if (attempt == 2) {
        use = &lives_of(slotted, true);
        ask = &last_resort_order();
      }
      lives.clear();
      refused.clear();
      blocks.clear();
      int64_t align = planning_alignment(target, scope);
      for (const auto& b : use->buffers) {
        if (b.buffer->scope != scope) continue;
        lives.push_back(&b);
        blocks.push_back({.bytes = b.bytes,
                          .align = align,
                          .first = b.first,
                          .last = b.last,
                          .fixed = b.buffer->address});
      }
      if (blocks.empty()) break;
      // Disjoint live ranges may share bytes only when the program orders them (memoised: the
      // placement asks about a pair more than once).
      std::map<std::pair<size_t, size_t>, bool> memo;
      auto may_share = [&](size_t i, size_t j) {
        size_t early = lives[i]->last < lives[j]->first ? i : j, late = early == i ? j : i;
        auto [it, fresh] = memo.try_emplace({early, late}, true);
        // Slots of two iterations of one T.Pipelined loop (BufferNode::slot), while the memory
        // may fit without sharing them (attempt 0): a loop's slots are live across it and never
        // disjoint, but pipeline_loops unrolls a loop of num_stages iterations into straight
        // code, where sharing would order iteration 1's loads after iteration 0's last reader
        // of the bytes and undo the overlap the slots are for (docs/compiler.md, plan_memory).
        if (fresh && attempt == 0) {
          const PipelineSlot &se = lives[early]->buffer->slot, &sl = lives[late]->buffer->slot;
          if (se.defined() && se.loop == sl.loop && se.index != sl.index) it->second = false;
        }
        if (fresh && it->second && !syncs_follow) {
          if (auto why = ask->reuse_hazard(lives[early]->buffer.get(), lives[late]->buffer.get())) {
            it->second = false;
            refused.emplace(std::pair{early, late}, *why);
          }
        }
        return it->second;
      };
      offsets = assign_offsets(blocks, may_share);
      total = footprint(blocks, offsets);
      if (scope == MemScope::UB && bank_groups)
        place_bank_groups(f->body, target, *use, lives, blocks, may_share, cap, offsets, total);
    }
    if (lives.empty()) continue;
    if (std::any_of(lives.begin(), lives.end(), [](auto* b) { return b->buffer->address >= 0; }))
      check_pinned_overlaps(f, scope, ask == &order ? tight_lives() : lives_of(slotted, true), *ask,
                            syncs_follow);
    if (cap > 0 && total > cap)
      report_overflow(
          f, target, scope, total, lives, offsets, *use, refused,
          footprint(blocks, assign_offsets(blocks, [](size_t, size_t) { return true; })));
    for (size_t i = 0; i < lives.size(); ++i) {
      const BufferNode& b = *lives[i]->buffer;
      if (b.address >= 0) continue;
      placer.planned.emplace(
          &b, BufferNode::make(b.name, b.dtype, b.shape, b.scope, b.strides, offsets[i], b.loc,
                               b.origin, b.channel_slots, b.l2_cache, b.slot));
    }
  }
  for (const auto& v : lv.views) {
    const BufferNode& base = *lv.buffers[v.base].buffer;
    if (base.address >= 0) continue;
    const BufferNode& b = *v.buffer;
    int64_t at = placer.planned.at(&base)->address;
    placer.planned.emplace(&b, BufferNode::make(b.name, b.dtype, b.shape, b.scope, b.strides, at,
                                                b.loc, b.origin, b.channel_slots));
  }
  if (placer.planned.empty()) return f;
  return with_body(f, placer.mutate(f->body));
}

}  // namespace tl
