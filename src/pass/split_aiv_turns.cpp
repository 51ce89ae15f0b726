// split_aiv's turns (docs/developer_mode.md, "Two AIVs"): TileLang-Ascend's vid reduction
// (docs/tutorials/vid_reduction_and_auto_cv_ratio.md of tilelang-ascend) halves the rows of the
// score tiles and leaves whole a UB tile whose GM copy is addressed by a value read from UB (the
// gathered KV row of sparse_flash_attn_developer_vid_reduce.py, `KV[b, indices_ub_[bi_i], ...]`),
// whose gather loop each AIV then runs over its own rows of the L1 tile it fills. split_aiv does
// the row split; here the loop around such a whole tile's push to the cube is taken in turns:
// AIV v runs the iterations t with (t - min) % 2 == v, so an odd trip count gives AIV 0 the extra
// one and no iteration is dropped or run twice. Each statement of the loop's body is guarded on
// its own (a let or a declaration is not), so insert_channel_syncs finds every channel copy as
// `if turn: copy` and puts its flags outside the guard: both AIVs run the whole protocol, and
// the cube's mode-2 wait, which needs both AIVs' flags, matches whichever AIV made the copy.
//
// A loop is taken in turns only when its iterations are independent of the AIV that runs them:
// it touches no tile split by rows, every UB tile it writes is written before it is read in each
// iteration and is not used outside it (but in other loops that also write it first in each
// iteration), and it writes GM only through channel workspaces (whose
// slot the channel's credits order between the two AIVs). Otherwise `why` says which.
#include "split_aiv_turns.h"

#include <functional>

#include "developer.h"
#include "tl/ir_functor.h"
#include "tl/op.h"
#include "tl/ops.h"

namespace tl::dev {
namespace {

bool is_workspace(const BufferNode* b) {
  return b->scope == MemScope::GM && b->channel_slots > 0;
}

/// The copy of `tile` into a channel workspace that `s` is, if it is one.
bool is_push(const Stmt& s, const BufferNode* tile) {
  auto* op = s.as<TileOpNode>();
  return op && op->op == &ops::copy() && op->args.size() == 2 && op->args[0].is_region() &&
         op->args[1].is_region() && op->args[0].region.buffer.get() == tile &&
         is_workspace(op->args[1].region.buffer.get());
}

/// Why loop `L` of `work` cannot be taken in turns ("" if it can).
std::string independent(const ForNode& L, const Stmt& work,
                        const std::set<const BufferNode*>& split, const Target& t) {
  if (L.for_kind == ForKind::Parallel) return "it is an element loop";
  const std::vector<Stmt> body = stmts_of(L.body);
  std::set<const BufferNode*> written;
  for (const Touch& x : touches_of(L.body, t)) {
    if (split.count(x.buffer))
      return fmt::format("it touches '{}', whose rows are split", x.buffer->name);
    if (!x.write) continue;
    if (x.buffer->scope == MemScope::GM && !is_workspace(x.buffer))
      return fmt::format("it writes '{}' (only channel workspaces may be written in turns)",
                         x.buffer->name);
    if (x.buffer->scope == MemScope::UB) written.insert(x.buffer);
  }
  for (const BufferNode* b : written)
    if (!privatisable(b, body, t))
      return fmt::format("'{}' carries a value from one of its iterations to the next", b->name);
  // Not used outside the loop: each AIV's copy holds only its own iterations' values.
  std::function<std::string(const Stmt&)> outside = [&](const Stmt& s) -> std::string {
    if (!s.defined() || s.get() == static_cast<const StmtNode*>(&L)) return "";
    if (auto* q = s.as<SeqNode>()) {
      for (const Stmt& x : q->stmts)
        if (std::string r = outside(x); !r.empty()) return r;
      return "";
    }
    if (auto* f = s.as<ForNode>()) {
      bool holds_L = false;
      pre_order_visit(s, [&](const Stmt& x) {
        holds_L = holds_L || x.get() == static_cast<const StmtNode*>(&L);
      });
      if (holds_L) return outside(f->body);
      // Another loop that writes the tile before reading it in each iteration (a second gather
      // loop) never reads what L left in it.
      for (const Touch& x : touches_of(s, t))
        if (written.count(x.buffer) && !privatisable(x.buffer, stmts_of(f->body), t))
          return fmt::format("'{}' is used outside it", x.buffer->name);
      return "";
    }
    if (auto* n = s.as<IfNode>()) {
      std::string r = outside(n->then_case);
      return r.empty() ? outside(n->else_case) : r;
    }
    for (const Touch& x : touches_of(s, t))
      if (written.count(x.buffer)) return fmt::format("'{}' is used outside it", x.buffer->name);
    return "";
  };
  if (std::string r = outside(work); !r.empty()) return r;
  return "";
}

}  // namespace

std::optional<std::set<const ForNode*>> turn_loops(const Stmt& work,
                                                   const std::set<const BufferNode*>& pushed,
                                                   const std::set<const BufferNode*>& split,
                                                   const Target& t, std::string& why) {
  std::set<const ForNode*> out;
  for (const BufferNode* tile : pushed) {
    // The innermost loop around each push of the tile.
    std::vector<const ForNode*> loops;
    std::optional<std::string> err;
    std::function<void(const Stmt&)> walk = [&](const Stmt& s) {
      if (!s.defined() || err) return;
      if (auto* q = s.as<SeqNode>()) {
        for (const Stmt& x : q->stmts) walk(x);
      } else if (auto* f = s.as<ForNode>()) {
        loops.push_back(f);
        walk(f->body);
        loops.pop_back();
      } else if (auto* n = s.as<IfNode>()) {
        walk(n->then_case);
        walk(n->else_case);
      } else if (is_push(s, tile)) {
        if (loops.empty()) {
          err = fmt::format(
              "'{}' is pushed to the cube whole outside a loop: both AIVs would "
              "write it",
              tile->name);
          return;
        }
        const ForNode* L = loops.back();
        if (std::string r = independent(*L, work, split, t); !r.empty()) {
          err = fmt::format(
              "'{}' is pushed to the cube whole in `for {}`, whose iterations the "
              "AIVs cannot take in turns: {}",
              tile->name, L->var.name(), r);
          return;
        }
        out.insert(L);
      }
    };
    walk(work);
    if (err) {
      why = *err;
      return std::nullopt;
    }
  }
  return out;
}

Stmt take_in_turns(const ForNode& L, const Var& vid) {
  const Expr two = arith::make_int(L.var.dtype(), 2);
  const Expr v = L.var.dtype() == vid.dtype() ? Expr(vid) : cast(L.var.dtype(), Expr(vid));
  const Expr turn = floormod(Expr(L.var) - L.min, two) == v;
  std::vector<Stmt> body;
  for (const Stmt& s : stmts_of(L.body)) {
    if (s.as<LetNode>() || s.as<AllocateNode>())
      body.push_back(s);
    else
      body.push_back(IfNode::make(turn, s, Stmt(), s->loc));
  }
  return ForNode::make(L.var, L.min, L.extent, L.for_kind, L.num_stages, L.skew,
                       SeqNode::make(std::move(body), L.body->loc), L.loc);
}

}  // namespace tl::dev
