// hybrid::mark_channels (split_hybrid.h): with tl.ascend_auto_cross_core_sync, the GM tensors a
// split hybrid kernel passes between its cores become channels (BufferNode::channel_slots = 1),
// so that insert_channel_syncs, the cross-core protocol of developer kernels, orders them too
// rather than a second cross-core sync engine.
//
// That protocol counts: the producer raises one flag per write, the consumer waits for one per
// read and, in a loop, hands one credit back. It is right when each iteration of the loops
// around them has exactly one write and one read of the tensor, under the same loops and ifs
// (TileLang-Ascend pairs a workspace's producer and consumer the same way). A cube loop and a
// separate vector loop of the same trip count count as one loop (paired_loops: iteration k of
// one with iteration k of the other); separate loops of different counts on both sides cannot
// be paired and are an error naming both. A workspace written at 2-8 constant slots per
// iteration (`ws[cid, 0, ...]`, `ws[cid, 1, ...]`) and read at the same slots in the same order
// pairs slot by slot: the counting flags match the k-th read with the k-th write, and the
// channel gets a credit per slot. Anything else (two writes to one slot, a read in an inner loop, a
// copy under an `if vid == 0` the cube does not share, a read-modify-write) would hang or race, so
// it is an error naming the tensor and the two statements, with what to write instead.
#include <algorithm>
#include <map>
#include <set>

#include "developer.h"
#include "split_hybrid.h"
#include "tl/access.h"
#include "tl/ir_equal.h"
#include "tl/ir_functor.h"
#include "tl/pass.h"
#include "tl/printer.h"

namespace tl::hybrid {
namespace {

/// The loops and ifs around a statement, outermost first (an if with the branch taken).
using Chain = std::vector<std::pair<const StmtNode*, int>>;

struct Access {
  Stmt stmt;
  CoreKind core;
  bool read, write;
  Chain chain;
};

class Collector {
 public:
  Collector(const Target& t, const std::function<std::optional<CoreKind>(const Stmt&)>& core_of)
      : t_(t), core_of_(core_of) {}

  void walk(const Stmt& s) {
    if (!s.defined()) return;
    if (auto* q = s.as<SeqNode>()) {
      for (const Stmt& x : q->stmts) walk(x);
    } else if (auto* f = s.as<ForNode>()) {
      chain_.push_back({s.get(), 0});
      walk(f->body);
      chain_.pop_back();
    } else if (auto* n = s.as<IfNode>()) {
      chain_.push_back({s.get(), 0});
      walk(n->then_case);
      chain_.back().second = 1;
      walk(n->else_case);
      chain_.pop_back();
    } else if (s.as<TileOpNode>() || s.as<StoreNode>()) {
      auto core = core_of_(s);
      if (!core) return;
      std::map<const BufferNode*, Access> mine;
      for (const auto& touch : analysis::touches_of(s, t_)) {
        if (touch.buffer->scope != MemScope::GM) continue;
        auto [it, fresh] = mine.try_emplace(touch.buffer, Access{s, *core, false, false, chain_});
        it->second.read = it->second.read || touch.read;
        it->second.write = it->second.write || touch.write;
      }
      for (auto& [b, a] : mine) {
        if (!by_buffer_.count(b)) order_.push_back(b);
        by_buffer_[b].push_back(a);
      }
    }
  }

  std::vector<const BufferNode*> order_;
  std::map<const BufferNode*, std::vector<Access>> by_buffer_;

 private:
  const Target& t_;
  const std::function<std::optional<CoreKind>(const Stmt&)>& core_of_;
  Chain chain_;
};

std::string_view side(CoreKind c) {
  return c == CoreKind::Cube ? "cube" : "vector";
}

/// Whether `accesses` of one tensor cross cores: written on one, read on the other.
bool crosses(const std::vector<Access>& accesses) {
  for (const Access& w : accesses)
    for (const Access& r : accesses)
      if (w.write && r.read && w.core != r.core) return true;
  return false;
}

class Rebuffer : public IRMutator {
 public:
  std::map<const BufferNode*, Buffer> to;
  Buffer mutate_buffer(const Buffer& b) override {
    auto it = to.find(b.get());
    return it == to.end() ? b : it->second;
  }
};

/// The constant index the copy `s` gives dimension `d` of `b` (with extent 1), if it does.
std::optional<int64_t> const_index(const Stmt& s, const BufferNode* b, size_t d) {
  auto* op = s.as<TileOpNode>();
  if (!op) return std::nullopt;
  for (const TileArg& a : op->args) {
    if (!a.is_region() || a.region.buffer.get() != b || d >= a.region.ranges.size()) continue;
    const Range& r = a.region.ranges[d];
    auto mn = as_const_int(r.min);
    if (!mn) return std::nullopt;
    // A start-point-only region has no extents of its own: its leading dimensions are 1.
    if (r.extent.defined() && as_const_int(r.extent) != 1) return std::nullopt;
    return mn;
  }
  return std::nullopt;
}

/// Per access of `b` (in program order), its slot: the constant every access gives one
/// dimension of `b`, where the writes (two to eight of them) give distinct constants, like
/// `ws[cid, 0, ...]` and `ws[cid, 1, ...]` each iteration, and read as often. Empty: `b` is not
/// written and read at slots.
std::vector<int64_t> slots_of(const BufferNode* b, const std::vector<Access>& accesses) {
  const size_t writes =
      std::count_if(accesses.begin(), accesses.end(), [](const Access& a) { return a.write; });
  // As many reads as writes (else it is no slot pattern: two writes per read is the error below).
  if (writes < 2 || writes > 8 || 2 * writes != accesses.size()) return {};
  for (size_t d = 0; d < b->ndim(); ++d) {
    std::vector<int64_t> out;
    for (const Access& a : accesses) {
      auto v = const_index(a.stmt, b, d);
      if (!v) break;
      out.push_back(*v);
    }
    if (out.size() != accesses.size()) continue;
    std::set<int64_t> written;
    for (size_t i = 0; i < accesses.size(); ++i)
      if (accesses[i].write) written.insert(out[i]);
    if (written.size() == writes) return out;
  }
  return {};
}

std::string list(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) s += (s.empty() ? "" : ", ") + std::to_string(x);
  return "[" + s + "]";
}

}  // namespace

bool moves_with(const ForNode* loop, const BufferNode* ws) {
  std::set<const VarNode*> tainted = {loop->var.node()};
  auto uses = [&](const Stmt& s) {
    bool found = false;
    pre_order_visit(
        s, [](const Stmt&) {},
        [&](const Expr& e) {
          if (auto* v = e.as<VarNode>(); v && tainted.count(v)) found = true;
        });
    return found;
  };
  bool moves = false;
  // Program order: a let inside the loop is seen before the statements that read it.
  pre_order_visit(loop->body, [&](const Stmt& s) {
    if (auto* l = s.as<LetNode>()) {
      if (uses(s)) tainted.insert(l->var.node());
      return;
    }
    bool touches = false;
    if (auto* op = s.as<TileOpNode>())
      for (const TileArg& a : op->args) touches |= a.is_region() && a.region.buffer.get() == ws;
    if (auto* st = s.as<StoreNode>()) touches = st->buffer.get() == ws;
    if (touches && uses(s)) moves = true;
  });
  return moves;
}

size_t paired_loops(const std::vector<const ForNode*>& a, const std::vector<const ForNode*>& b,
                    const BufferNode* ws) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] != b[n] &&
         structural_equal(a[n]->extent, b[n]->extent) && !moves_with(a[n], ws) &&
         !moves_with(b[n], ws))
    ++n;
  return n;
}

PrimFunc mark_channels(const PrimFunc& f, const Stmt& work, const Target& t,
                       const std::function<std::optional<CoreKind>(const Stmt&)>& core_of) {
  Collector c(t, core_of);
  c.walk(work);
  Rebuffer rebuffer;
  for (const BufferNode* b : c.order_) {
    const auto& accesses = c.by_buffer_.at(b);
    if (!crosses(accesses)) continue;
    const std::string rule = fmt::format(
        "tl.ascend_auto_cross_core_sync orders a GM tensor that crosses cores by pairing its "
        "write on one core with its read on the other, once per iteration of the loops around "
        "both; '{}' ",
        b->name);
    const std::string fix =
        ": use one workspace per producer and consumer (workspace_idx), or write the cross-core "
        "flags yourself without tl.ascend_auto_cross_core_sync";
    // The write and the read: one side each, not both on a statement (an atomic update).
    const Access* w = nullptr;
    const Access* r = nullptr;
    for (const Access& a : accesses) {
      if (a.write && a.read)
        user_error(a.stmt->loc, "{}is read and written by {} ({}){}", rule, dev::describe(a.stmt),
                   side(a.core), fix);
      const Access*& first = a.write ? w : r;
      if (!first) first = &a;
      if (first->core != a.core)
        user_error(a.stmt->loc, "{}is {} by {} ({}) and by {} ({}){}", rule,
                   a.write ? "written" : "read", dev::describe(first->stmt), side(first->core),
                   dev::describe(a.stmt), side(a.core), fix);
    }
    // A workspace written at several constant slots per iteration and read at the same slots
    // in the same order on the other side pairs slot by slot, as TileLang-Ascend pairs them:
    // the flags count, so the k-th read waits for the k-th write, which is its slot's; the
    // channel gets one credit per slot, so a slot is rewritten only after its read.
    const std::vector<int64_t> slot = slots_of(b, accesses);
    std::vector<int64_t> written, read;
    for (size_t i = 0; i < slot.size(); ++i)
      (accesses[i].write ? written : read).push_back(slot[i]);
    if (!slot.empty() && written != read)
      user_error(r->stmt->loc,
                 "{}is written at slots {} by the {} and read at slots {} by the {} each "
                 "iteration: a workspace written at several slots pairs slot by slot only when "
                 "each slot is read once, in the order it was written{}",
                 rule, list(written), side(w->core), list(read), side(r->core), fix);
    // The loops and ifs around all of them, and each access's group: the outermost statement
    // past them (a loop only one side runs, or the copy itself). One group per side, and no
    // `if` only one side takes: the other side would wait for a flag never raised.
    size_t common = accesses.front().chain.size();
    for (const Access& a : accesses) {
      size_t n = 0;
      while (n < common && n < a.chain.size() && a.chain[n] == accesses.front().chain[n]) ++n;
      common = n;
    }
    // Past the shared loops, a cube loop and a vector loop of equal trip count pair per
    // iteration (paired_loops), level by level, where every access of a side is in them.
    std::vector<const ForNode*> nest[2];
    const Access* first_on[2] = {nullptr, nullptr};
    for (const Access& a : accesses)
      if (const int c = a.core == CoreKind::Cube; !first_on[c]) {
        first_on[c] = &a;
        for (size_t i = common; i < a.chain.size(); ++i) {
          if (a.chain[i].first->kind != StmtKind::For) break;
          nest[c].push_back(static_cast<const ForNode*>(a.chain[i].first));
        }
      }
    size_t paired = paired_loops(nest[0], nest[1], b);
    for (const Access& a : accesses) {
      const std::vector<const ForNode*>& mine = nest[a.core == CoreKind::Cube];
      size_t n = 0;
      while (n < paired && common + n < a.chain.size() && a.chain[common + n].first == mine[n]) ++n;
      paired = n;
    }
    const StmtNode* group[2] = {nullptr, nullptr};
    const Access* first_in[2] = {nullptr, nullptr};
    for (const Access& a : accesses) {
      const size_t depth = common + paired;
      const StmtNode* g = a.chain.size() > depth ? a.chain[depth].first : a.stmt.get();
      if (g->kind == StmtKind::If)
        user_error(a.stmt->loc, "{}is {} by {} ({}) under an `if` the other side does not share{}",
                   rule, a.write ? "written" : "read", dev::describe(a.stmt), side(a.core), fix);
      const int i = a.write ? 1 : 0;
      if (!slot.empty() && g != a.stmt.get())
        user_error(a.stmt->loc,
                   "{}is {} at several slots, here by {} ({}) in a loop the other side does not "
                   "share: each slot's copy must pair with one copy on the other side{}",
                   rule, a.write ? "written" : "read", dev::describe(a.stmt), side(a.core), fix);
      if (slot.empty() && group[i] && group[i] != g)
        user_error(a.stmt->loc,
                   "{}is {} by {} ({}) and again by {}: two {}s per iteration, where the other "
                   "side has one{}",
                   rule, a.write ? "written" : "read", dev::describe(first_in[i]->stmt),
                   side(a.core), dev::describe(a.stmt), a.write ? "write" : "read", fix);
      group[i] = g;
      if (!first_in[i]) first_in[i] = &a;
    }
    // Both sides in loops that do not pair (trip counts that differ or cannot be shown equal):
    // flagged around each whole loop, the consumer would wait for the producer's last iteration
    // and read only its data (or, with the other direction crossing too, wait forever).
    // (Loops that move the copies, a slot per iteration, are right flagged whole: all writes,
    // then all reads.)
    if (group[0] && group[1] && group[0]->kind == StmtKind::For &&
        group[1]->kind == StmtKind::For && !moves_with(static_cast<const ForNode*>(group[0]), b) &&
        !moves_with(static_cast<const ForNode*>(group[1]), b))
      user_error(first_in[1]->stmt->loc,
                 "{}is written by {} ({}) in the loop at line {} ({} iterations) and read by {} "
                 "({}) in the loop at line {} ({} iterations): separate cube and vector loops pair "
                 "per iteration only with the same trip count{}",
                 rule, dev::describe(first_in[1]->stmt), side(first_in[1]->core),
                 group[1]->loc.line, print(static_cast<const ForNode*>(group[1])->extent),
                 dev::describe(first_in[0]->stmt), side(first_in[0]->core), group[0]->loc.line,
                 print(static_cast<const ForNode*>(group[0])->extent), fix);
    bool param = false;
    for (const Param& p : f->params) param = param || (p.is_tensor() && p.tensor.get() == b);
    if (!param)
      user_error(w->stmt->loc,
                 "{}is not a kernel parameter: pass it as a workspace (workspace_idx) so each "
                 "block's cores share it",
                 rule);
    rebuffer.to[b] = BufferNode::make(
        b->name, b->dtype, b->shape, b->scope, b->strides, b->address, b->loc, b->origin,
        /*channel_slots=*/slot.empty() ? 1 : static_cast<int>(written.size()), b->l2_cache);
  }
  if (rebuffer.to.empty()) return f;
  std::vector<Param> params = f->params;
  for (Param& p : params)
    if (p.is_tensor()) p.tensor = rebuffer.mutate_buffer(p.tensor);
  return make_prim_func(f->name, f->dynamics, std::move(params), rebuffer.mutate(f->body), f->loc);
}

}  // namespace tl::hybrid
