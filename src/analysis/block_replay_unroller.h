// The unroller of block_replay (tl/replay.h): walks one core's scope body into its instruction
// stream, with conservative byte ranges per op (replay_run.cpp replays them with the hazard
// checker's rules). Shared by block_replay.cpp (unroll_one: the three cores of a block) and
// block_replay_fold.cpp (a loop's alike middle iterations stored once: Stream's runs); the
// Prover that asks the replay about rewrites of the same bodies is in replay_prover.cpp, the
// sets of cid ranges and unroll_blocks in replay_ranges.cpp.
//
// Address arithmetic is kept as linear forms over the values a block cannot know at compile
// time (cid, dynamic sizes, lets of them): two GM regions whose first elements differ only in
// their constants compare exactly, as the same block evaluates both; anything else (a bound of
// a loop the streams do not unroll, a product of two unknowns) makes the region the whole
// buffer. On-chip regions narrow to the bytes between their first and last element, as
// insert_syncs narrows them (every layout is non-decreasing in each index, tl/storage.h).
#pragma once

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "tl/access.h"
#include "tl/arith.h"
#include "tl/ir_functor.h"
#include "tl/ir_ops.h"
#include "tl/linear.h"
#include "tl/op.h"
#include "tl/ops.h"
#include "tl/printer.h"
#include "tl/storage.h"
#include "tl/sync_rules.h"

#include "block_replay_eval.h"
#include "block_replay_internal.h"
#include "tl/replay.h"

namespace tl::replay::walk {

/// A GM tensor's memory key in the streams (by name: a pass may rebuild a tensor's node).
inline uint64_t gm_key(const BufferNode* b) {
  return std::hash<std::string>()(b->name) | (uint64_t{1} << 63);
}

/// The GM tensors (memory keys) some op of the kernel's scope bodies writes, found on the first
/// question (fold() asks only where a span that moves with its loop reads a GM tensor).
struct WrittenGm {
  std::array<const Stmt*, 2> bodies;
  const Target* target;
  std::optional<std::unordered_set<uint64_t>> keys;
  bool has(uint64_t mem) {
    if (!keys) {
      keys.emplace();
      for (const Stmt* body : bodies)
        if (body->defined())
          pre_order_visit(*body, [&](const Stmt& x) {
            auto* op = x.as<TileOpNode>();
            if (!op) return;
            for (const analysis::Instr& in : analysis::instructions(*op, *target))
              for (const analysis::Use& u : in.uses) {
                if (!u.write || u.kind == analysis::Use::Scratch || u.kind == analysis::Use::Scalar)
                  continue;
                const Buffer& b = op->args[static_cast<size_t>(u.arg)].region.buffer;
                if (b->scope == MemScope::GM) keys->insert(gm_key(b.get()));
              }
          });
    }
    return keys->count(mem) > 0;
  }
};

constexpr size_t kMaxEvents = 400000;  // per core: beyond it, no streams
constexpr int64_t kFoldTrips = 8;      // a loop of fewer trips is walked, never folded

inline int pipe_index(Pipe p) {
  return static_cast<int>(p);
}

inline Event event(Event::Kind kind, int pipe, int dst = 0, int id = 0) {
  Event e;
  e.kind = kind;
  e.pipe = pipe;
  e.dst = dst;
  e.id = id;
  return e;
}

/// c + sum(coef * atom): an address the block computes from values unknown at compile time
/// (tl/linear.h). A few terms inline (no allocation: the unroller builds one per bound of every
/// region of every unrolled op); more make it overflow, which callers take as unknown.
using Linear = arith::LinearForm<4>;

/// What the three cores' unrollers share, so that their atoms and bases mean the same.
struct Interner {
  std::map<std::string, int64_t>
      keyed_atoms;    // a let value of kernel-invariant values, by its text
  int64_t fresh = 0;  // atoms of other lets: one per binding
  std::map<std::vector<Linear::Term>, int> bases;
  int base_of(const Linear& l) {
    return bases.try_emplace(l.terms(), static_cast<int>(bases.size())).first->second;
  }
};

/// Unrolls a scope body for one core into its stream; nullopt when a trip count or a condition
/// that matters is not a constant, or the stream grows too long.
class Unroller {
 public:
  Unroller(const Target& t, const std::vector<Channel>& channels, const KernelNode& k, int core,
           bool accesses, Interner& in, std::optional<int64_t> cid)
      : target_(t), channels_(channels), core_(core), accesses_(accesses), in_(in) {
    if (k.vid.defined()) bind(k.vid, core == 2 ? 1 : 0);
    if (cid && k.cid.defined()) bind(k.cid, *cid);
  }
  /// cid unknown but in [0, blocks): a value that is the same for every cid of the range
  /// (arith::bound gives one point) is taken as a constant, lets inlined (as one block's walk
  /// would take it: the streams are then every block's, but for cid's part of the addresses).
  void cid_range(const KernelNode& k, int64_t lo, int64_t hi) {
    if (!k.cid.defined() || lo > hi) return;
    range_[k.cid.node()] = arith::Interval{lo, hi};
  }
  /// After an unknown() failure with cid_range(): the decision that differs between blocks
  /// (every other variable bound), undefined when the walk failed before asking the range.
  const Expr& split() const { return split_; }
  /// Whether the walk failed on a trip count, condition or event id it could not evaluate.
  bool unknown() const { return unknown_decision_; }
  /// Records each op execution's ranges into `rec`; the stream they index goes there when the
  /// walk fails, else run() returns it and its recorder moves it there (unroll_one, Prover::adopt).
  void record_into(OpEvents* rec) { record_ = rec; }
  /// Takes each op execution's events from `rec` instead of computing them; run() fails, with
  /// missed() set, unless every op runs exactly as many times as recorded.
  void reuse(const OpEvents* rec) { reuse_ = rec; }
  /// Appends what runs to `trace`; with `only`, builds no stream (run() then gives an empty one):
  /// a block whose stream is known to equal another's but for what the trace tells apart.
  void trace_into(Trace* trace, bool only) {
    trace_ = trace;
    trace_only_ = only;
  }
  bool missed() const { return missed_; }
  /// The GM tensors some op of the kernel writes: fold() stores the spans of the others that
  /// move with the loop as the whole tensor (no replay reads them). Null: none moves.
  void written_gm(WrittenGm* w) { written_gm_ = w; }
  size_t emitted() const { return emitted_; }

  std::optional<Stream> run(const Stmt& body) {
    // A rewrite runs the recording's ops: its stream is about the recording's length. Else a
    // bound of its length where the trip counts are constants: a stream of 10^5 events grown by
    // doubling moved each event twice (a tenth of flash_attention_dev's unrolls at S=32768).
    if (reuse_ && !trace_only_) out_.reserve(reuse_->stream.stored().size());
    if (!reuse_ && !trace_only_)
      if (auto n = at_most(body); n && *n <= kMaxEvents) out_.reserve(*n);
    walk(body);
    if (reuse_ && !failed_) {
      for (const auto& [op, ranges] : reuse_->ranges) {
        auto it = taken_.find(op);
        if ((it == taken_.end() ? 0 : it->second) != ranges.size()) missed_ = true;
      }
      if (reuse_->folds.size() != folds_at_) missed_ = true;  // fewer loops folded
      if (missed_) fail();
    }
    // A failed attempt's stream is kept with its recording (its ranges point into it); a
    // stream that is returned is moved there by its recorder: by unroll_one where another core
    // fails, else by the Prover once replayed (Prover::adopt).
    if (record_ && failed_) record_->stream = std::move(out_);
    if (failed_) return std::nullopt;
    return std::move(out_);
  }

 private:
  /// At most how many events `s` emits, where every loop's extent is an immediate (nullopt
  /// otherwise, or past kMaxEvents): both branches of a branch, every iteration of a loop the
  /// walk unrolls (loop()).
  std::optional<size_t> at_most(const Stmt& s) {
    if (!s.defined()) return size_t{0};
    switch (s.kind()) {
      case StmtKind::Seq: {
        size_t n = 0;
        for (const Stmt& x : static_cast<const SeqNode*>(s.get())->stmts) {
          auto m = at_most(x);
          if (!m || (n += *m) > kMaxEvents) return std::nullopt;
        }
        return n;
      }
      case StmtKind::For: {
        auto* f = static_cast<const ForNode*>(s.get());
        auto* ext = f->extent.as<IntImmNode>();
        auto m = at_most(f->body);
        if (!ext || !m || ext->value < 0) return std::nullopt;
        int64_t trips = ext->value;
        if (!matters(f->body)) trips = !accesses_ ? 0 : trips <= 64 ? trips : 1;  // as loop()
        if (*m && static_cast<uint64_t>(trips) > kMaxEvents / *m) return std::nullopt;
        return static_cast<size_t>(trips) * *m;
      }
      case StmtKind::If: {
        auto* n = static_cast<const IfNode*>(s.get());
        auto a = at_most(n->then_case), b = at_most(n->else_case);
        if (!a || !b) return std::nullopt;
        return *a + *b;
      }
      case StmtKind::Sync:
        return size_t{1};
      case StmtKind::TileOp:
        return instrs_of(*static_cast<const TileOpNode*>(s.get())).size();
      case StmtKind::Scope:
        return at_most(static_cast<const ScopeNode*>(s.get())->body);
      default:
        return size_t{0};
    }
  }

  // By kind, not by dynamic_cast: the walk visits every statement of every unrolled iteration.
  void walk(const Stmt& s) {
    if (failed_ || probe_failed_ || !s.defined()) return;
    if (emitted_ > kMaxEvents) return fail();
    switch (s.kind()) {
      case StmtKind::Seq:
        for (const Stmt& x : static_cast<const SeqNode*>(s.get())->stmts) walk(x);
        return;
      case StmtKind::Let:
        return let(*static_cast<const LetNode*>(s.get()));
      case StmtKind::For:
        return loop(*static_cast<const ForNode*>(s.get()));
      case StmtKind::If:
        return branch(s, *static_cast<const IfNode*>(s.get()));
      case StmtKind::Sync:
        return sync(*static_cast<const SyncNode*>(s.get()));
      case StmtKind::TileOp:
        return tile_op(*static_cast<const TileOpNode*>(s.get()));
      case StmtKind::Scope:
        return walk(static_cast<const ScopeNode*>(s.get())->body);
      default:
        return;
    }
  }

  void branch(const Stmt& s, const IfNode& n) {
    if (!matters(n.then_case) && !matters(n.else_case) && !accesses_) return ops_of(s);
    auto c = value(n.cond);
    if (!c && (matters(n.then_case) || matters(n.else_case))) c = ranged(n.cond);
    if (!c && probing_ && !probe_decides(n.cond, c)) return;
    if (!c) {
      if (matters(n.then_case) || matters(n.else_case)) return undecided();
      if (!accesses_) return ops_of(s);
      walk(n.then_case);  // both branches' ops: more accesses, never more order
      walk(n.else_case);
      return;
    }
    walk(*c ? n.then_case : n.else_case);
  }

  void let(const LetNode& l) {
    if (!range_.empty()) sym_.erase(l.var.node());
    if (probing_) tainted_.erase(l.var.node());
    if (auto v = folded(l.value, false)) return bind(l.var, *v);
    // While fold() walks: a let of the loop variable is an address or decision of it.
    if (probing_ && reads_probe(l.value)) tainted_.insert(l.var.node());
    if (!range_.empty())
      sym_[l.var.node()] = arith::substitute(arith::substitute(l.value, sym_), env_);
    if (auto x = linear(l.value)) {
      lin_[l.var.node()] = *x;
      if (x->is_constant())
        env_[l.var.node()] = arith::make_int(l.var.dtype(), x->constant());
      else
        env_.erase(l.var.node());
      return;
    }
    Expr v = simplify(arith::substitute(l.value, env_));
    if (auto c = as_const_int(v)) return bind(l.var, *c);
    env_.erase(l.var.node());
    // An atom of its own: keyed by its text when it only reads values fixed for the whole
    // kernel (the same in every core: `bx = cid % 8`), else fresh for this binding.
    bool invariant = true;
    pre_order_visit(
        LetNode::make(Var("_"), v), [](const Stmt&) {},
        [&](const Expr& e) {
          if (auto* var = e.as<VarNode>(); var && (lin_.count(var) || unknown_.count(var)))
            invariant = false;
          if (auto* var = e.as<VarNode>(); var && probing_ && var == probe_var_) invariant = false;
          if (e.as<LoadNode>()) invariant = false;
        });
    int64_t atom =
        invariant ? in_.keyed_atoms
                        .try_emplace(print(v), -2 - static_cast<int64_t>(in_.keyed_atoms.size()))
                        .first->second
                  : (int64_t{1} << 62) + in_.fresh++;
    if (probing_ && tainted_.count(l.var.node())) tainted_atoms_.insert(atom);
    lin_[l.var.node()] = Linear::atom(atom);
  }

  void loop(const ForNode& f) {
    auto mn = value(f.min), ext = value(f.extent);
    if (!matters(f.body)) {
      if (!accesses_) return;
      if (probing_ &&
          ((!mn && !probe_decides(f.min, mn)) || (!ext && !probe_decides(f.extent, ext))))
        return;
      // No sync inside: its ops once, its variable unknown (their regions the whole buffer).
      // Taking them when the loop runs no trip only adds accesses.
      if (mn && ext && *ext >= 1 && *ext <= 64) return unroll(f, *mn, *ext);
      unknown_.insert(f.var.node());
      walk(f.body);
      unknown_.erase(f.var.node());
      return;
    }
    if (!mn) mn = ranged(f.min);
    if (!ext) ext = ranged(f.extent);
    if (!mn || !ext) return undecided();
    unroll(f, *mn, *ext);
  }

  void bind(const Var& v, int64_t value) {
    env_[v.node()] = arith::make_int(v.dtype(), value);
    lin_[v.node()] = Linear::constant_of(value);
  }

  void unroll(const ForNode& f, int64_t mn, int64_t ext) {
    // The middle iterations [1, ext - 1) stored once where they are proven alike (fold()); the
    // first and the last, which often decide otherwise (`if j > 0`, `if j + 1 < n`), walked.
    const bool fold_middle =
        !probing_ && ext >= kFoldTrips && fold_loops() && matters(f.body) && !writes_moving(f);
    for (int64_t i = 0; i < ext && !failed_; ++i) {
      if (fold_middle && i == 1 && fold(f, mn + 1, mn + ext - 2)) i = ext - 1;
      if (failed_) break;
      bind(f.var, mn + i);
      walk(f.body);
    }
    env_.erase(f.var.node());
    lin_.erase(f.var.node());
  }

  /// Walks `f`'s body once with its variable unknown in [lo, hi] and keeps it as one iteration
  /// of hi - lo + 1 alike ones where they are (block_replay_fold.cpp); false: undone.
  bool fold(const ForNode& f, int64_t lo, int64_t hi);
  /// Whether an op of `f`'s body writes a region whose bounds read `f`'s variable (or a let of
  /// it): fold() would walk the body and fail (every written span must stay put), so it is not
  /// tried (a persistent tile loop's output tile, a row tile). Once per loop.
  bool writes_moving(const ForNode& f);
  /// While fold() walks: whether `e`, which value() could not decide, is decided alike in every
  /// iteration of the range (`*v`: its value where it reads the loop variable).
  bool probe_decides(const Expr& e, std::optional<int64_t>& v);
  void probe_fail() const { probe_failed_ = true; }
  /// While fold() walks: whether `e` (a region's bounds) reads the loop variable or a let of it.
  bool reads_probe(const Expr& e) const;
  bool reads_probe(const BufferRegion& r) const;
  static int64_t atom_of(const VarNode* v) {
    return static_cast<int64_t>(reinterpret_cast<uintptr_t>(v) >> 1);
  }
  /// While fold() walks: whether linear form `l` reads the loop variable (or a let of it).
  bool tainted(const Linear& l) const;
  /// Whether `s` holds a sync or a channel copy: its control flow then shapes the protocol.
  bool matters(const Stmt& s) {
    if (!s.defined()) return false;
    if (auto it = matters_.find(s.get()); it != matters_.end()) return it->second;
    bool hit = false;
    pre_order_visit(s, [&](const Stmt& x) {
      if (x.as<SyncNode>()) hit = true;
      if (auto* op = x.as<TileOpNode>(); op && channel_of(*op).first >= 0) hit = true;
    });
    return matters_[s.get()] = hit;
  }

  /// The ops of a statement that holds no sync and no channel copy, taken as executed: an op
  /// only adds what its pipe knows to its own timeline, never order between other
  /// instructions (ops on S, which would, fail the streams when accesses are recorded).
  void ops_of(const Stmt& s) {
    pre_order_visit(s, [&](const Stmt& x) {
      if (auto* op = x.as<TileOpNode>()) tile_op(*op);
    });
  }

  std::optional<int64_t> value(const Expr& e) const {
    if (auto v = shortcuts() ? decided(e) : folded(e, false)) return v;
    if (auto x = linear(e); x && x->is_constant()) return x->constant();
    return as_const_int(simplify(arith::substitute(e, env_)));
  }
  std::optional<int64_t> folded(const Expr& e, bool strict) const {
    return eval::folded(e, env_, strict);
  }
  std::optional<int64_t> decided(const Expr& e) const {
    return eval::decided(e, env_, [&](const Expr& x) { return can_fail(x); });
  }
  bool can_fail(const Expr& e) const {
    auto [it, fresh] = can_fail_.try_emplace(e.get());
    if (fresh) it->second = arith::can_fail(e);
    return it->second;
  }
  void fail() {
    if (probing_) return probe_fail();  // the walk of each iteration finds it, if it is real
    failed_ = true;
  }
  void undecided() {
    if (probing_) return probe_fail();
    unknown_decision_ = true;
    fail();
  }

  /// With cid_range(): the value of `e` when it is one for every cid of the range, lets
  /// inlined (sym_), every other variable bound (env_); else nullopt.
  std::optional<int64_t> ranged(const Expr& e) const {
    if (range_.empty() || (!is_int(e.dtype()) && !is_bool(e.dtype()))) return std::nullopt;
    Expr x = arith::substitute(arith::substitute(e, sym_), env_);
    arith::Interval iv = arith::bound(x, range_);
    if (!iv.is_point()) return split_ = x, std::nullopt;
    return iv.lo;
  }

  /// linear(e), computed without decomposing when every variable of `e` is bound to a constant.
  std::optional<Linear> address(const Expr& e) const {
    if (auto v = folded(e, true)) return Linear::constant_of(*v);
    return linear(e);
  }

  std::optional<Linear> linear(const Expr& e) const {
    return arith::decompose<4>(e, [&](const Expr& x) -> std::optional<Linear> {
      auto* v = x.as<VarNode>();
      if (!v) return ranged_leaf(x);
      if (auto it = lin_.find(v); it != lin_.end()) return it->second;
      if (unknown_.count(v) || !is_int(v->dtype)) return std::nullopt;
      return Linear::atom(
          static_cast<int64_t>(reinterpret_cast<uintptr_t>(v) >> 1));  // cid, a size
    });
  }

  /// With cid_range(): a leaf of a linear form that is one value for every cid of the range, or
  /// x % c (c > 0) where x // c is one value q: x - q * c, linear when x is.
  std::optional<Linear> ranged_leaf(const Expr& x) const {
    if (range_.empty()) return std::nullopt;
    if (auto v = ranged(x)) return Linear::constant_of(*v);
    auto* b = x.as<BinaryNode>();
    if (!b || b->op != BinOp::FloorMod) return std::nullopt;
    auto c = as_const_int(b->b);
    if (!c || *c <= 0) return std::nullopt;
    auto q = ranged(BinaryNode::make(BinOp::FloorDiv, b->a, b->b));
    auto a = linear(b->a);
    if (!q || !a) return std::nullopt;
    Linear r(*a);
    r.add(Linear::constant_of(*q), -*c);
    if (r.overflow()) return std::nullopt;
    return r;
  }

  std::pair<int, bool> channel_of(const TileOpNode& op) const {
    if (channels_.empty() || op.op != &ops::copy() || op.args.size() != 2) return {-1, false};
    for (size_t c = 0; c < channels_.size(); ++c)
      for (int which : {0, 1})
        if (op.args[which].is_region() && op.args[which].region.buffer.get() == channels_[c].ws)
          return {static_cast<int>(c), which == 1};
    return {-1, false};
  }

  uint64_t memory_key(MemScope s) const {
    return static_cast<uint64_t>(s) * 4 + static_cast<uint64_t>(core_);
  }

  /// The bytes `r` may touch.
  /// What span_of needs of a buffer, computed once per buffer (span_of runs for every region of
  /// every unrolled op).
  struct BufferInfo {
    uint64_t mem = 0;
    bool shaped = false;  // every dimension a positive constant
    std::vector<int64_t> shape, strides;
    int64_t es = 0, bytes = 0;  // element and (on-chip) storage bytes
    bool strided = true;        // GM: constant non-negative strides (row-major by default)
  };
  const BufferInfo& info(const BufferNode* b) const {
    auto [it, fresh] = buffers_.try_emplace(b);
    BufferInfo& x = it->second;
    if (!fresh) return x;
    // GM by tensor name (a pass may rebuild a tensor's node; a clash of hashes only adds
    // conflicts), on-chip by memory: every buffer of it shares the planned addresses.
    x.mem = b->scope == MemScope::GM ? gm_key(b) : memory_key(b->scope);
    for (const Expr& e : b->shape) {
      auto v = as_const_int(e);
      if (!v || *v <= 0) return x;
      x.shape.push_back(*v);
    }
    x.shaped = true;
    x.es = dtype_bytes(b->dtype);
    if (b->scope != MemScope::GM) {
      if (b->address >= 0) x.bytes = storage_bytes(b->scope, b->dtype, x.shape);
      return x;
    }
    x.strides.assign(x.shape.size(), 1);
    for (size_t d = x.shape.size(); d-- > 1;) x.strides[d - 1] = x.strides[d] * x.shape[d];
    if (!b->strides.empty())
      for (size_t d = 0; d < x.shape.size(); ++d) {
        auto st = as_const_int(b->strides[d]);
        if (!st || *st < 0) {
          x.strided = false;
          break;
        }
        x.strides[d] = *st;
      }
    return x;
  }

  /// The bytes `r` may touch. A region whose bounds are all immediates touches the same bytes
  /// in every execution (the buffer's shape and address are fixed): computed once.
  Span span_of(const BufferRegion& r, bool write) const {
    auto [it, fresh] = constant_regions_.try_emplace(&r);
    if (fresh) {
      bool constant = true;
      for (const Range& x : r.ranges)
        constant = constant && x.min.as<IntImmNode>() &&
                   (!x.extent.defined() || x.extent.as<IntImmNode>());
      if (constant) it->second = bytes_of(r, false);
    }
    if (!it->second) return bytes_of(r, write);
    Span sp = *it->second;
    sp.write = write;
    return sp;
  }
  Span bytes_of(const BufferRegion& r, bool write) const {
    precise_ = false;
    const Buffer& b = r.buffer;
    const BufferInfo& bi = info(b.get());
    Span sp;
    sp.write = write;
    sp.mem = bi.mem;
    sp.base = -1;
    if (!bi.shaped) return sp;
    const std::vector<int64_t>& shape = bi.shape;
    std::vector<Linear>&first = first_, &last = last_;
    first.clear();
    last.clear();
    bool known = r.ranges.size() == shape.size();
    for (size_t d = 0; known && d < r.ranges.size(); ++d) {
      auto mn = address(r.ranges[d].min);
      auto ext = r.ranges[d].extent.defined() ? address(r.ranges[d].extent)
                                              : std::optional<Linear>(Linear::constant_of(1));
      known = mn && ext && ext->is_constant() && ext->constant() >= 1;
      if (!known) break;
      first.push_back(*mn);
      last.push_back(Linear(*mn).add(Linear::constant_of(ext->constant() - 1), 1));
    }
    if (b->scope != MemScope::GM) {
      if (b->address < 0) return sp;  // unplanned: the whole memory
      sp.base = 0;
      sp.lo = b->address;
      sp.hi = b->address + bi.bytes;
      if (!known || !b->strides.empty()) return sp;
      std::vector<int64_t>&f = f_, &l = l_;
      f.clear();
      l.clear();
      for (size_t d = 0; d < shape.size(); ++d) {
        if (!first[d].is_constant() || first[d].constant() < 0 || last[d].constant() >= shape[d])
          return sp;
        f.push_back(first[d].constant());
        l.push_back(last[d].constant());
      }
      auto [lo, hi] = analysis::bytes_between(b->scope, b->dtype, shape, f, l);
      sp.lo = b->address + lo;
      sp.hi = b->address + hi;
      precise_ = true;
      return sp;
    }
    // GM: row-major (or the buffer's constant strides), first to last element.
    if (!bi.strided || !known) return sp;
    Linear lo, hi;
    for (size_t d = 0; d < shape.size(); ++d) {
      lo.add(first[d], bi.strides[d]);
      hi.add(last[d], bi.strides[d]);
    }
    if (lo.overflow() || hi.overflow() || !lo.same_terms(hi)) return sp;
    if (probing_ && (tainted(lo) || tainted(hi))) return sp;  // moves with the loop: not interned
    precise_ = true;
    sp.base = in_.base_of(lo);
    sp.lo = lo.constant() * bi.es;
    sp.hi = (hi.constant() + 1) * bi.es;
    return sp;
  }

  /// The instructions of `op` and what each touches (tl/access.h), looked up once per op: a
  /// copy's pipe is its path's.
  const std::vector<analysis::Instr>& instrs_of(const TileOpNode& op) {
    auto [it, fresh] = instrs_.try_emplace(&op);
    if (fresh) it->second = analysis::instructions(op, target_);
    return it->second;
  }

  void tile_op(const TileOpNode& op) {
    if (probing_) undo_.push_back(&op);
    if (reuse_) {
      auto it = reuse_->ranges.find(&op);
      const size_t k = taken_[&op]++;
      if (it == reuse_->ranges.end() || k >= it->second.size()) {
        if (probing_) return probe_fail();
        missed_ = true;
        return fail();
      }
      const auto [b, e] = it->second[k];
      // Every recording a walk reuses holds the stream its ranges point into (unroll_one, Prover::
      // adopt): a recording without it is a bug, never a walk to take (it would copy garbage).
      TL_ASSERT(e <= reuse_->stream.stored().size(),
                "a reused recording's range [{}, {}) ends past its "
                "stream of {} events",
                b, e, reuse_->stream.stored().size());
      if (trace_) trace_->push_back({&op, static_cast<int64_t>(k)});
      emitted_ += e - b;
      if (!trace_only_)
        out_.stored().insert(out_.stored().end(), reuse_->stream.stored().begin() + b,
                             reuse_->stream.stored().begin() + e);
      return;
    }
    const size_t begin = out_.stored().size();
    op_events(op);
    emitted_ = out_.size();
    if (record_ && !failed_ && !probe_failed_)
      record_->ranges[&op].push_back(
          {static_cast<uint32_t>(begin), static_cast<uint32_t>(out_.stored().size())});
    else if (probing_)
      undo_.pop_back();  // nothing recorded to undo
  }
  void op_events(const TileOpNode& op) {
    auto [channel, push] = channel_of(op);
    for (const analysis::Instr& in : instrs_of(op)) {
      if (in.barrier_all) {
        out_.push_back(event(Event::Barrier, kPipes));
        continue;
      }
      Event e = event(Event::Op, pipe_index(in.pipe));
      if (e.pipe >= kPipes || (accesses_ && e.pipe == pipe_index(Pipe::S))) return fail();
      e.channel = channel;
      e.push = push;
      if (push) e.first = as_const_int(op.args[1].region.ranges.back().min) == 0;
      if (accesses_) {
        const size_t at = arena_->size();
        spans(op, in, *arena_);
        e.spans =
            SpanList(arena_, static_cast<uint32_t>(at), static_cast<uint32_t>(arena_->size() - at));
      }
      out_.push_back(std::move(e));
    }
  }

  void spans(const TileOpNode& n, const analysis::Instr& in, std::vector<Span>& out) const {
    for (const analysis::Use& u : in.uses) {
      if (u.kind == analysis::Use::Scratch) {  // from offset 0: the whole memory, conservatively
        Span s;
        s.mem = memory_key(u.scratch);
        s.base = -1;
        if (u.read) out.push_back(s);
        if (u.write) out.push_back((s.write = true, s));
        continue;
      }
      if (u.kind == analysis::Use::Scalar) continue;  // no memory (unroll_block checked)
      const BufferRegion& r = n.args[static_cast<size_t>(u.arg)].region;
      if (probing_ && reads_probe(r)) {  // fold(): the same bytes in every iteration, or no reader
        Span sp = bytes_of(r, false);
        if (sp.base < 0 || !precise_) {
          if (r.buffer->scope != MemScope::GM || !written_gm_ || written_gm_->has(sp.mem))
            return probe_fail();
          sp.base = -1, sp.lo = 0, sp.hi = INT64_MAX;  // read only: no replay reads it
        }
        if (u.read) out.push_back(sp);
        if (u.write) out.push_back((sp.write = true, sp));
        continue;
      }
      if (u.read) out.push_back(span_of(r, false));
      if (u.write) out.push_back(span_of(r, true));
    }
  }

  void sync(const SyncNode& y) {
    auto id = y.event_id.defined() ? value(y.event_id) : std::optional<int64_t>(0);
    if (!id) id = ranged(y.event_id);
    if (!id) return undecided();
    const int p = pipe_index(y.src), q = pipe_index(y.dst), i = static_cast<int>(*id);
    if (trace_) trace_->push_back({&y, *id});
    if (trace_only_) {  // the event alone decides failure: mode-2 cross flags, SyncAll
      if ((y.sync_kind == SyncKind::SetCrossFlag && y.mode != 2) ||
          y.sync_kind == SyncKind::SyncAll)
        return fail();
      ++emitted_;
      return;
    }
    switch (y.sync_kind) {
      case SyncKind::SetFlag:
      case SyncKind::WaitFlag:
        out_.push_back(event(y.sync_kind == SyncKind::SetFlag ? Event::Set : Event::Wait, p, q, i));
        break;
      case SyncKind::PipeBarrier:
        out_.push_back(event(Event::Barrier, p >= kPipes ? kPipes : p));
        break;
      case SyncKind::BarrierAll:
        out_.push_back(event(Event::Barrier, kPipes));
        break;
      case SyncKind::SetCrossFlag:
        if (y.mode != 2) return fail();
        out_.push_back(event(Event::SetCross, p, 0, i));
        break;
      case SyncKind::WaitCrossFlag:
        out_.push_back(event(Event::WaitCross, 0, 0, i));
        break;
      case SyncKind::SyncAll:
        return fail();
    }
    out_.back().sync = &y;
    emitted_ = out_.size();
  }

  const Target& target_;
  const std::vector<Channel>& channels_;
  const int core_;
  const bool accesses_;
  Interner& in_;
  arith::VarMap env_;                                  // constants: trip counts, conditions, ids
  std::unordered_map<const VarNode*, Linear> lin_;     // addresses
  std::unordered_set<const VarNode*> unknown_;         // variables of loops taken once
  std::unordered_map<const StmtNode*, bool> matters_;  // matters(), by statement
  std::unordered_map<const StmtNode*, bool> moving_;   // writes_moving(), by loop body
  std::unordered_map<const TileOpNode*, std::vector<analysis::Instr>> instrs_;  // instrs_of()
  mutable std::unordered_map<const BufferNode*, BufferInfo> buffers_;           // info()
  mutable std::unordered_map<const ExprNode*, bool> can_fail_;                  // can_fail()
  // span_of(): the bytes of each region whose bounds are immediates (nullopt: not constant).
  mutable std::unordered_map<const BufferRegion*, std::optional<Span>> constant_regions_;
  mutable std::vector<Linear> first_, last_;  // span_of()'s scratch
  mutable std::vector<int64_t> f_, l_;
  Stream out_;
  bool failed_ = false;
  // fold(): walking a loop's middle range once (probing_), failed, its variable, the lets that
  // read it (tainted_) and their atoms, the ops whose recorded ranges or reuse counts to undo.
  bool probing_ = false;
  mutable bool probe_failed_ = false;
  const VarNode* probe_var_ = nullptr;
  std::unordered_set<const VarNode*> tainted_;
  std::unordered_set<int64_t> tainted_atoms_;
  std::vector<const TileOpNode*> undo_;
  mutable bool precise_ = false;     // bytes_of(): the span is the region's own bytes
  size_t folds_at_ = 0;              // reuse: the recording's folds compared so far
  WrittenGm* written_gm_ = nullptr;  // GM tensors some op writes
  OpEvents* record_ = nullptr;
  const OpEvents* reuse_ = nullptr;
  std::unordered_map<const TileOpNode*, size_t> taken_;  // reuse: executions so far, per op
  // The spans of this walk's events (SpanList): appended to, never changed below its end.
  std::shared_ptr<std::vector<Span>> arena_ = std::make_shared<std::vector<Span>>();
  bool missed_ = false;
  Trace* trace_ = nullptr;
  bool trace_only_ = false;
  size_t emitted_ = 0;         // events the stream holds (or would hold, trace only): kMaxEvents
  arith::VarIntervals range_;  // cid_range(): cid's values
  arith::VarMap sym_;          // ... and the lets' values in cid, the other variables bound
  mutable Expr split_;         // the last value ranged() found to differ between blocks
  bool unknown_decision_ = false;
};

}  // namespace tl::replay::walk
