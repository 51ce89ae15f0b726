// The developer rule `developer-read-before-write` (docs/developer_mode.md section 1): in a
// developer kernel, a cube op (T.gemm, T.gemm_v0: OpUnit::Cube) must not read an operand tile
// that no statement has written yet in program order. Such a read takes uninitialised memory on
// its first run; a write that comes later in the same loop reaches only the next iteration. A
// TileLang-Ascend script whose loop starts with its gemms and fills their L1 tiles further down
// (sparse_flash_attn_developer_vid_reduce.py) computes its first iteration from garbage and
// fails its own check with no hint why; this rule names the tile and both lines instead.
//
// Program order, conservatively: a loop body is walked once (its first iteration), a write in
// either branch of an `if` counts (it may run), a read inside an `if` does not (its condition may
// exclude the first iteration, as `if k > 0` does), element reads (`x[i, j]` in an element loop)
// are not checked. So the rule never rejects a kernel whose first read may see a write.
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
      walk(f->body, conditional);
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
  void report() {
    for (const Pending& p : pending_) {
      auto w = first_write_.find(p.tile);
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
  };

  const BufferNode* base(const BufferNode* b) const {
    auto it = base_.find(b);
    return it == base_.end() ? nullptr : it->second;
  }
  void wrote(const BufferNode* b, const SourceLoc& loc) {
    const BufferNode* t = base(b);
    if (!t) return;
    written_.insert(t);
    first_write_.try_emplace(t, loc);
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
      pending_.push_back({&op, def.operands[i].name, t});
    }
    for (size_t i = 0; i < op.args.size() && i < def.operands.size(); ++i)
      if (op.args[i].is_region() && def.operands[i].access != Access::Read)
        wrote(op.args[i].region.buffer.get(), op.loc);
  }

  VerifyContext& ctx_;
  std::map<const BufferNode*, const BufferNode*> base_;  // tile (or view) -> the tile it is
  std::set<const BufferNode*> written_, reported_;
  std::map<const BufferNode*, SourceLoc> first_write_;
  std::vector<Pending> pending_;
};

}  // namespace

void check_first_reads(const Stmt& kernel_body, VerifyContext& ctx) {
  FirstReads r(ctx);
  r.walk(kernel_body, false);
  r.report();
}

}  // namespace tl::rules
