// order_crossings (run by infer_scopes once the tiles are placed; docs/developer_mode.md,
// "Reads that come before the write of the other core"): TileLang-Ascend's meaning of a
// developer kernel whose cube reads a tile that the vector unit writes further down the same
// block (sparse_flash_attn_developer_vid_reduce.py: the gemms at the top of the kv loop read
// `kv_l1`, which the gather at the bottom fills from UB).
//
// TileLang-Ascend splits such a kernel into one program per core and makes each crossing copy
// (UB -> L1, L0C -> UB) a GM workspace: the producer writes it where the copy stands, the
// consumer reads it back right before its first read of the tile, and its auto cross-core sync
// pairs the k-th write with the k-th read, per iteration of the loops around both. So the
// cube's gemm waits for the gather of the same iteration: the text's order between statements of
// different cores does not matter, the data flow does. tl-ascend's developer passes read a block
// in program order, so this pass rewrites such a block into the order TileLang-Ascend's pairing
// gives: a stable topological order of its statements where
//   - statements on a common core keep their order (a crossing copy is on its producer's core);
//   - statements of different cores that touch a common buffer (one of them writing) keep their
//     order, except that a read of a tile whose first write in the kernel comes later in the
//     block goes after every crossing copy into the tile later in the block (the same-iteration
//     pairing; two gather loops filling the rows of one L1 tile both come first);
//   - a statement on no core (a let, a declaration, scalar work) keeps its place against all.
// A block without such a read is left as it is (its textual order is then the only topological
// order this finds). Where the constraints form a cycle (the gather itself would need the
// gemm's result) it is an error naming both statements: TileLang-Ascend's two programs would
// wait for each other there.
#include <algorithm>
#include <map>
#include <set>

#include "developer.h"
#include "tl/ir_functor.h"
#include "tl/op.h"
#include "tl/ops.h"

namespace tl::dev {
namespace {

constexpr unsigned kCube = 1, kVector = 2;

bool on_cube(MemScope s) {
  return s == MemScope::L1 || s == MemScope::L0A || s == MemScope::L0B || s == MemScope::L0C;
}

/// A copy from one core's memory to the other's: UB -> L1 (the vector unit produces) or
/// L0C -> UB (the cube produces); its destination buffer, or nullptr.
const BufferNode* crossing_dst(const TileOpNode& op, unsigned* producer = nullptr) {
  if (op.op != &ops::copy() || op.args.size() < 2 || !op.args[0].is_region() ||
      !op.args[1].is_region())
    return nullptr;
  const MemScope s = op.args[0].region.buffer->scope, d = op.args[1].region.buffer->scope;
  if (s == MemScope::UB && d == MemScope::L1) {
    if (producer) *producer = kVector;
    return op.args[1].region.buffer.get();
  }
  if (s == MemScope::L0C && d == MemScope::UB) {
    if (producer) *producer = kCube;
    return op.args[1].region.buffer.get();
  }
  return nullptr;
}

/// What one statement of a block does: its cores and the buffers it reads and writes.
struct Effects {
  unsigned cores = 0;
  std::set<const BufferNode*> reads, writes;
  std::set<const BufferNode*> crossed;  // destinations of its crossing copies
};

Effects effects_of(const Stmt& s) {
  Effects e;
  bool other = false;  // scalar work, declarations, syncs: on no single core
  pre_order_visit(
      s,
      [&](const Stmt& x) {
        if (auto* op = x.as<TileOpNode>()) {
          unsigned producer = 0;
          if (const BufferNode* dst = crossing_dst(*op, &producer)) {
            e.cores |= producer;
            e.crossed.insert(dst);
          } else if (op->op->unit == OpUnit::Cube) {
            e.cores |= kCube;
          }
          for (size_t i = 0; i < op->args.size(); ++i) {
            if (!op->args[i].is_region()) continue;
            const BufferNode* b = op->args[i].region.buffer.get();
            const Access acc =
                i < op->op->operands.size() ? op->op->operands[i].access : Access::Read;
            if (acc != Access::Write) e.reads.insert(b);
            if (acc != Access::Read) e.writes.insert(b);
            if (!crossing_dst(*op)) {
              if (on_cube(b->scope)) e.cores |= kCube;
              if (b->scope == MemScope::UB) e.cores |= kVector;
            }
          }
        } else if (auto* st = x.as<StoreNode>()) {
          e.writes.insert(st->buffer.get());
          if (st->buffer->scope == MemScope::UB)
            e.cores |= kVector;
          else
            other = true;  // a variable or a GM element: scalar work, which both cores may run
        } else if (x.as<LetNode>() || x.as<AllocateNode>() || x.as<SyncNode>()) {
          other = true;
        }
      },
      [&](const Expr& x) {
        if (auto* ld = x.as<LoadNode>()) {
          e.reads.insert(ld->buffer.get());
          if (ld->buffer->scope == MemScope::UB) e.cores |= kVector;
        }
      });
  if (other || e.cores == 0) e.cores = kCube | kVector;
  return e;
}

bool conflict(const Effects& a, const Effects& b) {
  for (const BufferNode* x : a.writes)
    if (b.reads.count(x) || b.writes.count(x)) return true;
  for (const BufferNode* x : a.reads)
    if (b.writes.count(x)) return true;
  return false;
}

class Orderer : public IRMutator {
 public:
  explicit Orderer(const Stmt& kernel_body) {
    // The first statement (in program order) that writes each buffer.
    pre_order_visit(kernel_body, [&](const Stmt& x) {
      auto* op = x.as<TileOpNode>();
      if (!op) return;
      for (size_t i = 0; i < op->args.size() && i < op->op->operands.size(); ++i)
        if (op->args[i].is_region() && op->op->operands[i].access != Access::Read)
          first_write_.try_emplace(op->args[i].region.buffer.get(), x.get());
    });
  }

 protected:
  Stmt mutate_(const SeqNode* n, const Stmt& self) override {
    Stmt inner = IRMutator::mutate_(n, self);
    auto* q = inner.as<SeqNode>();
    if (!q) return inner;
    return order(*q, inner);
  }

 private:
  /// Whether `b`'s first write in the kernel is inside a statement of block `s` after the i-th.
  bool first_after(const BufferNode* b, const std::vector<Stmt>& s, size_t i) const {
    auto it = first_write_.find(b);
    if (it == first_write_.end()) return false;
    bool found = false;
    for (size_t k = i + 1; k < s.size() && !found; ++k)
      pre_order_visit(s[k], [&](const Stmt& x) { found = found || x.get() == it->second; });
    return found;
  }

  Stmt order(const SeqNode& q, const Stmt& self) {
    const std::vector<Stmt>& s = q.stmts;
    const size_t n = s.size();
    std::vector<Effects> fx;
    for (const Stmt& x : s) fx.push_back(effects_of(x));
    // before[j]: the statements that must come before statement j.
    std::vector<std::set<size_t>> before(n);
    bool reversed = false;
    for (size_t i = 0; i < n; ++i)
      for (size_t j = i + 1; j < n; ++j) {
        // A read in i of a tile no statement before it writes, and that crossing copies later
        // in the block write (its first write among them): those writes, then i.
        bool pair = false;
        for (const BufferNode* x : fx[j].crossed)
          if (fx[i].reads.count(x) && !(fx[i].cores & fx[j].cores) && first_after(x, s, i))
            pair = true;
        if (pair) {
          before[i].insert(j);
          reversed = true;
        } else if ((fx[i].cores & fx[j].cores) || conflict(fx[i], fx[j])) {
          before[j].insert(i);
        }
      }
    if (!reversed) return self;
    // Kahn's algorithm, the earliest ready statement first (stable).
    std::vector<Stmt> out;
    std::vector<bool> placed(n, false);
    for (size_t k = 0; k < n; ++k) {
      size_t pick = n;
      for (size_t j = 0; j < n && pick == n; ++j) {
        if (placed[j]) continue;
        bool ready = true;
        for (size_t p : before[j]) ready = ready && placed[p];
        if (ready) pick = j;
      }
      if (pick == n) {
        // A cycle: name a reversed pair on it.
        for (size_t i = 0; i < n; ++i)
          for (size_t j : before[i])
            if (!placed[i] && !placed[j] && j > i)
              user_error(s[i]->loc,
                         "{} reads what {} writes later in the same block; TileLang-Ascend pairs "
                         "the two per iteration (the read waits for the write), but here the "
                         "write also needs work that comes after the read on its core, so the "
                         "two cores would wait for each other: move the write before the read",
                         describe(s[i]), describe(s[j]));
        user_error(q.loc, "the statements of this block cannot be ordered");
      }
      placed[pick] = true;
      out.push_back(s[pick]);
    }
    return SeqNode::make(std::move(out), q.loc);
  }

  std::map<const BufferNode*, const StmtNode*> first_write_;
};

}  // namespace

Stmt order_crossings(const Stmt& kernel_body) {
  return Orderer(kernel_body).mutate(kernel_body);
}

}  // namespace tl::dev
