// The developer rule `developer-read-before-write` (docs/developer_mode.md section 1): in a
// developer kernel, a cube op (T.gemm, T.gemm_v0: OpUnit::Cube) must not read an operand tile
// that no statement has written yet in program order. Such a read takes uninitialised memory on
// its first run; a write that comes later in the same loop reaches only the next iteration. A
// TileLang-Ascend script whose loop starts with its gemms and fills their L1 tiles further down
// (sparse_flash_attn_developer_vid_reduce.py) computes its first iteration from garbage and
// fails its own check with no hint why; this rule names the tile and both lines instead.
//
// Except where TileLang-Ascend pairs the write with the read per iteration: the first write is a
// crossing copy from a tile of the other core (a T.copy from a developer tile no cube op uses, the
// vector unit's, into the cube's operand) in the same loop as the read, or anywhere after a read
// at the top level.
// TileLang-Ascend makes that copy a workspace its auto cross-core sync pairs per iteration, so the
// read waits for the write of its own iteration (src/pass/order_crossings.cpp orders the block
// so; docs/developer_mode.md, "Reads that come before the write of the other core").
//
// Program order, conservatively: a loop body is walked once (its first iteration), a write in
// either branch of an `if` counts (it may run), a read inside an `if` does not (its condition may
// exclude the first iteration, as `if k > 0` does), element reads (`x[i, j]` in an element loop)
// are not checked. So the rule never rejects a kernel whose first read may see a write.
#include <algorithm>
#include <map>
#include <set>

#include "first_reads.h"
#include "tl/ir_functor.h"
#include "verify_util.h"

namespace tl::rules {
namespace {

class FirstReads {
 public:
  explicit FirstReads(VerifyContext& ctx) : ctx_(ctx) {}

  void walk(const Stmt& s, bool conditional) {
    if (!s.defined()) return;
    if (auto* q = s.as<SeqNode>()) {
      for (const Stmt& x : q->stmts) walk(x, conditional);
    } else if (auto* a = s.as<AllocateNode>()) {
      const MemScope sc = a->buffer->scope;
      if (sc != MemScope::GM && sc != MemScope::Var)
        base_[a->buffer.get()] = a->is_view() ? base(a->view_of.get()) : a->buffer.get();
    } else if (auto* f = s.as<ForNode>()) {
      loops_.push_back(f);
      walk(f->body, conditional);
      loops_.pop_back();
    } else if (auto* n = s.as<IfNode>()) {
      walk(n->then_case, true);
      walk(n->else_case, true);
    } else if (auto* op = s.as<TileOpNode>()) {
      tile_op(*op, conditional);
    } else if (auto* st = s.as<StoreNode>()) {
      wrote(st->buffer.get(), st->loc);
    } else {
      // Any other statement with a body: its writes count, its reads are not judged.
      pre_order_visit(s, [&](const Stmt& x) {
        if (x.same_as(s)) return;
        if (auto* op = x.as<TileOpNode>()) tile_op(*op, true);
        if (auto* st = x.as<StoreNode>()) wrote(st->buffer.get(), st->loc);
      });
    }
  }

  /// The reads found, each with the first write of its tile that came later (if any).
  /// The tiles cube ops use as operands (the cube's; a copy from any other developer tile into
  /// a cube operand crosses from the vector unit).
  void collect_cube_tiles(const Stmt& body) {
    pre_order_visit(body, [&](const Stmt& x) {
      if (auto* a = x.as<AllocateNode>(); a && a->is_view())
        base_[a->buffer.get()] = base(a->view_of.get());
      else if (a && a->buffer->scope != MemScope::GM && a->buffer->scope != MemScope::Var)
        base_[a->buffer.get()] = a->buffer.get();
      auto* op = x.as<TileOpNode>();
      if (!op || op->op->unit != OpUnit::Cube) return;
      for (const TileArg& arg : op->args)
        if (arg.is_region())
          if (const BufferNode* t = base(arg.region.buffer.get())) cube_tiles_.insert(t);
    });
    base_.clear();
  }

  void report() {
    for (const Pending& p : pending_) {
      auto w = first_write_.find(p.tile);
      if (w != first_write_.end() && paired(p, first_crossing_.count(p.tile) > 0)) continue;
      const std::string later =
          w == first_write_.end()
              ? std::string("nothing writes it")
              : fmt::format(
                    "its first write, at {}, comes later and reaches only the next "
                    "iteration of the loop",
                    w->second.str());
      ctx_.error(*p.op, p.operand, "developer-read-before-write",
                 fmt::format("reads tile '{}' before any statement writes it: its first run "
                             "computes with uninitialised memory ({}); write the tile before "
                             "this op",
                             p.tile->name, later));
    }
  }

 private:
  struct Pending {
    const TileOpNode* op;
    std::string operand;
    const BufferNode* tile;
    const ForNode* loop;  // the innermost loop around the read (nullptr: none)
  };

  /// Whether TileLang-Ascend pairs the read with its tile's first write (a crossing copy in the
  /// read's loop; for a read at the top level, anywhere after it).
  bool paired(const Pending& p, bool crossing) const {
    if (!crossing) return false;
    const std::vector<const ForNode*>& wl = first_write_loops_.at(p.tile);
    if (!p.loop) return true;  // a top-level read pairs with the first write wherever it is
    return std::find(wl.begin(), wl.end(), p.loop) != wl.end();
  }

  const BufferNode* base(const BufferNode* b) const {
    auto it = base_.find(b);
    return it == base_.end() ? nullptr : it->second;
  }
  void wrote(const BufferNode* b, const SourceLoc& loc, const TileOpNode* by = nullptr) {
    const BufferNode* t = base(b);
    if (!t) return;
    written_.insert(t);
    if (!first_write_.try_emplace(t, loc).second) return;
    first_write_loops_[t] = loops_;
    // A copy from a developer tile no cube op uses (the vector unit's) into this tile.
    if (by && by->op->unit == OpUnit::Move && by->args.size() >= 2 && by->args[0].is_region()) {
      const BufferNode* src = base(by->args[0].region.buffer.get());
      const MemScope sc = by->args[0].region.buffer->scope;
      if (src && (sc == MemScope::Shared || sc == MemScope::Fragment) && !cube_tiles_.count(src))
        first_crossing_.insert(t);
    }
  }
  void tile_op(const TileOpNode& op, bool conditional) {
    const OpDef& def = *op.op;
    // Reads first: an op that reads and writes one tile reads its old value.
    for (size_t i = 0; i < op.args.size() && i < def.operands.size(); ++i) {
      if (!op.args[i].is_region() || def.operands[i].access != Access::Read) continue;
      const BufferNode* t = base(op.args[i].region.buffer.get());
      if (!t || conditional || def.unit != OpUnit::Cube || written_.count(t) ||
          !reported_.insert(t).second)
        continue;
      pending_.push_back({&op, def.operands[i].name, t, loops_.empty() ? nullptr : loops_.back()});
    }
    for (size_t i = 0; i < op.args.size() && i < def.operands.size(); ++i)
      if (op.args[i].is_region() && def.operands[i].access != Access::Read)
        wrote(op.args[i].region.buffer.get(), op.loc, &op);
  }

  VerifyContext& ctx_;
  std::map<const BufferNode*, const BufferNode*> base_;  // tile (or view) -> the tile it is
  std::set<const BufferNode*> written_, reported_;
  std::map<const BufferNode*, SourceLoc> first_write_;
  std::vector<Pending> pending_;
  std::set<const BufferNode*> cube_tiles_, first_crossing_;
  std::map<const BufferNode*, std::vector<const ForNode*>> first_write_loops_;
  std::vector<const ForNode*> loops_;
};

}  // namespace

void check_first_reads(const Stmt& kernel_body, VerifyContext& ctx) {
  FirstReads r(ctx);
  r.collect_cube_tiles(kernel_body);
  r.walk(kernel_body, false);
  r.report();
}

}  // namespace tl::rules
