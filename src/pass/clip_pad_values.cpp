// The pad values past a tensor's end in an expert kernel's UB tiles (clip_pad_values.h), for
// clip_expert_copies. Per tile and per dimension d the analysis knows what the elements past the
// tensor's end along d (inside it along the other dimensions) hold: a constant, finite data
// (the tensor's own values, or values computed from them: assumed finite, as tail_identity.h
// assumes), anything defined (possibly inf or NaN), or undefined. It runs in program order
// (loops to a fixpoint, both branches of an if joined), since a tile's clipped part is
// rewritten as the kernel goes: layer_norm's `sum_i` is filled with 0, then accumulates a
// 0-padded tile, so its clipped part still holds 0 at the reduce_sum. Which tiles have a
// clipped dimension at all is the flow-insensitive closure of the clipped reads through vector
// ops (a tile computed from a clipped one anywhere), as before this analysis.
#include "clip_pad_values.h"

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "developer.h"
#include "tile_bounds.h"
#include "tl/arith.h"
#include "tl/ir_functor.h"
#include "tl/op.h"
#include "tl/ops.h"

namespace tl::dev {
namespace {

struct Val {
  enum Kind : uint8_t { Const, Data, Any, Undef } kind = Undef;
  double c = 0;
  static Val of(double x) { return std::isnan(x) ? Val{Any, 0} : Val{Const, x}; }
  static Val data() { return {Data, 0}; }
  static Val any() { return {Any, 0}; }
  static Val undef() { return {Undef, 0}; }
  bool is(double x) const { return kind == Const && c == x; }
  bool is_inf() const { return kind == Const && std::isinf(c); }
  bool operator==(const Val& o) const { return kind == o.kind && (kind != Const || c == o.c); }
};

Val join(const Val& a, const Val& b) {
  if (a == b) return a;
  if (a.kind == Val::Undef || b.kind == Val::Undef) return Val::undef();
  if (a.kind == Val::Any || b.kind == Val::Any || a.is_inf() || b.is_inf()) return Val::any();
  return Val::data();  // two finite constants, or one with data
}

std::optional<double> const_of(const Expr& e) {
  if (!e.defined()) return std::nullopt;
  Expr s = simplify(e);
  if (auto i = as_const_int(s)) return static_cast<double>(*i);
  if (const auto* f = s.as<FloatImmNode>()) return f->value;
  return std::nullopt;
}

double eval(BinOp op, double a, double b) {
  switch (op) {
    case BinOp::Add:
      return a + b;
    case BinOp::Sub:
      return a - b;
    case BinOp::Mul:
      return a * b;
    case BinOp::Div:
      return a / b;
    case BinOp::Max:
      return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
    case BinOp::Min:
      return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
    default:
      return NAN;
  }
}

/// a op b, elementwise. Data is finite, so x + 0, x * 0, max(x, -inf), x - inf are known.
Val binary(BinOp op, const Val& a, const Val& b) {
  if (a.kind == Val::Undef || b.kind == Val::Undef) return Val::undef();
  if (a.kind == Val::Const && b.kind == Val::Const) return Val::of(eval(op, a.c, b.c));
  const bool any = a.kind == Val::Any || b.kind == Val::Any;
  const bool both_data = a.kind == Val::Data && b.kind == Val::Data;
  const Val& k = a.kind == Val::Const ? a : b;  // the constant side, if one is constant
  switch (op) {
    case BinOp::Add:
      if (a.is(0)) return b;
      if (b.is(0)) return a;
      if (any) return Val::any();
      return both_data || !k.is_inf() ? Val::data() : k;
    case BinOp::Sub:
      if (b.is(0)) return a;
      if (any) return Val::any();
      if (both_data || !k.is_inf()) return Val::data();
      return a.kind == Val::Const ? a : Val::of(-b.c);
    case BinOp::Mul:
      if (any) return Val::any();
      if (both_data) return Val::data();
      if (k.is(0)) return Val::of(0.0);
      return k.is_inf() ? Val::any() : Val::data();
    case BinOp::Div:
      if (a.kind == Val::Data && b.kind == Val::Const && std::isfinite(b.c) && b.c != 0)
        return Val::data();
      return Val::any();
    case BinOp::Max:
    case BinOp::Min: {
      const double neutral = op == BinOp::Max ? -INFINITY : INFINITY;
      if (a.is(neutral)) return b;
      if (b.is(neutral)) return a;
      if (any) return Val::any();
      return both_data || !k.is_inf() ? Val::data() : k;  // max(x, +inf) = +inf
    }
    default:
      return any ? Val::any() : Val::data();
  }
}

/// f(x) for the unary vector ops; nullopt for an op this does not know.
std::optional<Val> unary(const std::string& name, const Val& x, DType dst) {
  static const std::map<std::string, double (*)(double)> fs = {
      {"tile.exp", [](double v) { return std::exp(v); }},
      {"tile.ln", [](double v) { return std::log(v); }},
      {"tile.abs", [](double v) { return std::fabs(v); }},
      {"tile.sqrt", [](double v) { return std::sqrt(v); }},
      {"tile.rsqrt", [](double v) { return v <= 0 ? NAN : 1 / std::sqrt(v); }},
      {"tile.reciprocal", [](double v) { return v == 0 ? NAN : 1 / v; }},
      {"tile.sigmoid", [](double v) { return 1 / (1 + std::exp(-v)); }},
      {"tile.silu", [](double v) { return v / (1 + std::exp(-v)); }},
      {"tile.sin", [](double v) { return std::sin(v); }},
      {"tile.cos", [](double v) { return std::cos(v); }},
      {"tile.relu", [](double v) { return std::max(v, 0.0); }},
      {"tile.cast", [](double v) { return v; }},
      {"copy", [](double v) { return v; }}};
  auto it = fs.find(name);
  if (it == fs.end()) return std::nullopt;
  if (x.kind == Val::Undef || x.kind == Val::Any) return x;
  const bool to_int = !is_float(dst);
  if (x.kind == Val::Const) {
    const double v = it->second(x.c);
    if (to_int && (!std::isfinite(v) || v != std::trunc(v))) return Val::any();
    return Val::of(v);
  }
  // Finite data stays finite through the bounded ones and through moves.
  static const std::set<std::string> bounded = {"tile.abs", "tile.sigmoid", "tile.silu", "tile.sin",
                                                "tile.cos", "tile.relu",    "tile.cast", "copy"};
  return bounded.count(name) ? Val::data() : Val::any();
}

bool whole(const BufferRegion& r) {
  if (r.ranges.size() != r.buffer->shape.size()) return false;
  for (size_t d = 0; d < r.ranges.size(); ++d) {
    auto mn = as_const_int(r.ranges[d].min);
    if (!mn || *mn != 0 || !same_extent(r.ranges[d].extent, r.buffer->shape[d])) return false;
  }
  return true;
}

bool on_chip(const Buffer& b) {
  return b->scope != MemScope::GM;
}

struct Clipped {
  uint32_t dims = 0;
  Stmt copy;
};

using State = std::unordered_map<const BufferNode*, std::vector<Val>>;

class PadValues {
 public:
  PadValues(const std::unordered_map<const TileOpNode*, ClippedRead>& reads,
            std::unordered_map<const BufferNode*, Clipped> clipped)
      : reads_(reads), clipped_(std::move(clipped)) {}

  void walk(const Stmt& s) {
    if (const auto* q = s.as<SeqNode>()) {
      for (const auto& x : q->stmts) walk(x);
    } else if (const auto* f = s.as<ForNode>()) {
      loop(f->body);
    } else if (const auto* i = s.as<IfNode>()) {
      State before = state_;
      walk(i->then_case);
      State then = std::move(state_);
      state_ = std::move(before);
      if (i->else_case.defined()) walk(i->else_case);
      state_ = joined(then, state_);
    } else if (const auto* sc = s.as<ScopeNode>()) {
      walk(sc->body);
    } else if (const auto* k = s.as<KernelNode>()) {
      walk(k->body);
    } else if (const auto* st = s.as<StoreNode>()) {
      auto it = state_.find(st->buffer.get());
      if (it != state_.end())
        for (Val& v : it->second) v = join(v, Val::data());
    } else if (const auto* t = s.as<TileOpNode>()) {
      op(*t);
    }
  }

 private:
  /// The loop's body from the fixpoint of its entry states (a state is one of finitely many
  /// per dimension and joins only climb), checked once from there.
  void loop(const Stmt& body) {
    const bool checking = checking_;
    checking_ = false;
    for (int round = 0; round < 16; ++round) {
      State entry = state_;
      walk(body);
      state_ = joined(entry, state_);
      if (same(state_, entry)) break;
    }
    checking_ = checking;
    if (!checking) return;
    State entry = state_;
    walk(body);
    state_ = joined(entry, state_);
  }

  static bool same(const State& a, const State& b) {
    if (a.size() != b.size()) return false;
    for (const auto& [k, v] : a) {
      auto it = b.find(k);
      if (it == b.end() || it->second.size() != v.size()) return false;
      for (size_t d = 0; d < v.size(); ++d)
        if (!(v[d] == it->second[d])) return false;
    }
    return true;
  }
  /// A tile missing from one side was not written there yet: the other side's state.
  static State joined(const State& a, const State& b) {
    State out = a;
    for (const auto& [k, v] : b) {
      auto it = out.find(k);
      if (it == out.end() || it->second.size() != v.size()) {
        out[k] = v;
        continue;
      }
      for (size_t d = 0; d < v.size(); ++d) it->second[d] = join(it->second[d], v[d]);
    }
    return out;
  }

  /// What operand `a` contributes where dst's elements lie past the tensor along `d`.
  Val operand_at(const TileArg& a, const BufferRegion& dst, size_t d, bool row_expand) const {
    if (a.is_scalar()) {
      auto c = const_of(a.scalar);
      return c ? Val::of(*c) : Val::data();
    }
    if (!a.is_region()) return Val::any();
    const BufferRegion& r = a.region;
    auto it = state_.find(r.buffer.get());
    if (it == state_.end()) return Val::undef();  // never written
    const std::vector<Val>& s = it->second;
    const size_t nr = r.ranges.size(), nd = dst.ranges.size();
    // row_expand's src1 ([M] or [M, 1]) pairs with dst's rows only.
    if (row_expand && nr <= nd && d > 0) return Val::data();
    if (row_expand && nr <= nd && d == 0) return s.empty() ? Val::data() : s[0];
    if (nr <= nd && d + nr >= nd) {
      const size_t e = d + nr - nd;  // trailing dimensions aligned, as broadcast aligns them
      if (same_extent(r.ranges[e].extent, dst.ranges[d].extent) && e < s.size()) return s[e];
      if (auto one = as_const_int(r.ranges[e].extent); one && *one == 1) return Val::data();
    } else if (nr < nd) {
      return Val::data();  // a missing leading dimension: one element inside the tensor
    }
    Val all = Val::data();  // no known correspondence: whatever it holds anywhere
    for (const Val& v : s) all = join(all, v);
    return all;
  }

  void write(const BufferRegion& dst, std::vector<Val> vals) {
    auto it = state_.find(dst.buffer.get());
    if (it == state_.end() || whole(dst) || it->second.size() != vals.size()) {
      state_[dst.buffer.get()] = std::move(vals);
      return;
    }
    for (size_t d = 0; d < vals.size(); ++d) it->second[d] = join(it->second[d], vals[d]);
  }

  const TileArg* arg(const TileOpNode& t, std::string_view name) const {
    return op_operand(t, name);
  }

  void op(const TileOpNode& t) {
    if (t.op->rows == RowMap::Reduce || t.op->rows == RowMap::Whole) check(t);
    const OpDef& def = *t.op;
    if (&def == &ops::copy() || &def == &ops::atomic_add()) {
      if (t.args.size() < 2 || !t.args[0].is_region() || !t.args[1].is_region()) return;
      const BufferRegion& src = t.args[0].region;
      const BufferRegion& dst = t.args[1].region;
      if (!on_chip(dst.buffer)) return;
      const size_t n = dst.ranges.size();
      std::vector<Val> vals(n, Val::data());
      if (auto r = reads_.find(&t); r != reads_.end()) {
        for (size_t d = 0; d < n; ++d)
          if (r->second.dims >> d & 1u)
            vals[d] = r->second.pad ? Val::of(*r->second.pad) : Val::undef();
      } else if (on_chip(src.buffer)) {
        for (size_t d = 0; d < n; ++d)
          vals[d] = *unary("copy", operand_at(t.args[0], dst, d, false), dst.buffer->dtype);
      }
      write(dst, std::move(vals));
      return;
    }
    // Every destination (written operand) of any other op.
    for (size_t i = 0; i < t.args.size() && i < def.operands.size(); ++i) {
      const OperandSpec& spec = def.operands[i];
      if (spec.access == Access::Read || !t.args[i].is_region()) continue;
      const BufferRegion& dst = t.args[i].region;
      if (!on_chip(dst.buffer)) continue;
      std::vector<Val> vals(dst.ranges.size());
      for (size_t d = 0; d < vals.size(); ++d) vals[d] = result_at(t, dst, d);
      write(dst, std::move(vals));
    }
  }

  Val result_at(const TileOpNode& t, const BufferRegion& dst, size_t d) const {
    const OpDef& def = *t.op;
    const bool rowx = def.rows == RowMap::RowExpand;
    const bool elementwise = def.rows == RowMap::Elementwise || rowx;
    auto at = [&](std::string_view name, bool second = false) {
      const TileArg* a = arg(t, name);
      return a ? operand_at(*a, dst, d, rowx && second) : Val::any();
    };
    if (def.name == "tile.fill") return at("value");
    if (def.name == "tile.broadcast") return at("src");
    if (elementwise && def.binop->has_value() && arg(t, "src0") && arg(t, "src1")) {
      const BinOp b = **def.binop;
      if (b == BinOp::Add || b == BinOp::Sub || b == BinOp::Mul || b == BinOp::Div ||
          b == BinOp::Max || b == BinOp::Min)
        return binary(b, at("src0"), at("src1", true));
    }
    if (def.name == "tile.axpy") {
      auto it = state_.find(dst.buffer.get());
      Val old = it == state_.end() || d >= it->second.size() ? Val::undef() : it->second[d];
      return binary(BinOp::Add, old, binary(BinOp::Mul, at("src"), at("alpha")));
    }
    if (def.name == "tile.select") return join(at("src0"), at("src1"));
    if (elementwise && arg(t, "src") && def.operands.size() == 2)
      if (auto v = unary(def.name, at("src"), dst.buffer->dtype)) return *v;
    // Anything else (reductions, sorts, gathers, compares, bitwise ops): defined if its sources
    // were written, nothing known about its value.
    for (const auto& a : t.args)
      if (a.is_region() && &a.region != &dst && on_chip(a.region.buffer) &&
          !state_.count(a.region.buffer.get()))
        return Val::undef();
    return Val::any();
  }

  /// The dimension `t` (a reduction) combines, as an index of its source, or -1 for every one
  /// (sorts and top-k read their source as one queue).
  static int combined_dim(const TileOpNode& t, const BufferRegion& src) {
    if (t.op->rows != RowMap::Reduce) return -1;
    const int64_t d = t.attr_int("dim");
    return static_cast<int>(d < 0 ? d + static_cast<int64_t>(src.ranges.size()) : d);
  }

  void check(const TileOpNode& t) const {
    if (!checking_ || t.op->operands.empty()) return;
    const TileArg* dst_arg = arg(t, "dst");
    for (const auto& a : t.args) {
      if (!a.is_region() || (dst_arg && &a == dst_arg)) continue;
      auto c = clipped_.find(a.region.buffer.get());
      if (c == clipped_.end()) continue;
      const int cd = combined_dim(t, a.region);
      auto st = state_.find(a.region.buffer.get());
      const std::optional<double> id = *t.op->identity;
      for (size_t d = 0; d < a.region.ranges.size(); ++d) {
        if (!(c->second.dims >> d & 1u) || (cd >= 0 && static_cast<size_t>(cd) != d)) continue;
        // One index along d: the op reads elements either all inside the tensor along d or all
        // past its end, never both, so nothing past the end is combined with data (a sort or
        // top-k of one row of a tile whose tail rows are pad: those rows' results are pad too,
        // and their stores are clipped).
        if (auto one = as_const_int(a.region.ranges[d].extent); one && *one == 1) continue;
        Val v = st == state_.end() || d >= st->second.size() ? Val::undef() : st->second[d];
        if (id && v.is(*id)) continue;
        reject(t, a.region.buffer, v, id, c->second.copy);
      }
    }
  }

  [[noreturn]] static void reject(const TileOpNode& t, const Buffer& b, const Val& v,
                                  std::optional<double> id, const Stmt& copy) {
    const std::string identity =
        id ? fmt::format("its identity {}", *id) : std::string("any value (it has no identity)");
    if (v.kind == Val::Undef)
      throw Error(t.loc,
                  fmt::format("T.{}: its operand '{}' holds undefined elements past the end of a "
                              "tensor (the {} is clipped there, and TileLang-Ascend's "
                              "copy_gm_to_ub pads a partial tile only of a 16- or 32-bit dtype), "
                              "which this op would combine into its result; expected a 16- or "
                              "32-bit tile read with pad_value= the op's identity (0 for a sum, "
                              "-T.infinity for a max), or blocks that divide the tensor",
                              t.op->name, b->name, describe(copy)));
    const std::string held =
        v.kind == Val::Const ? fmt::format("{}", v.c) : std::string("values computed from the pad");
    throw Error(t.loc,
                fmt::format("T.{}: its operand '{}' holds {} past the end of a tensor (the {} is "
                            "clipped there; TileLang-Ascend's copy_gm_to_ub fills a partial tile "
                            "with pad_value, 0 without one), not {}, so the result would count "
                            "them; expected that copy with pad_value= the op's identity (0 for a "
                            "sum, -T.infinity for a max) kept so up to this op, or blocks that "
                            "divide the tensor",
                            t.op->name, b->name, held, describe(copy), identity));
  }

  const std::unordered_map<const TileOpNode*, ClippedRead>& reads_;
  std::unordered_map<const BufferNode*, Clipped> clipped_;
  State state_;
  bool checking_ = true;
};

/// The tiles with a clipped dimension: the clipped reads' tiles, and (flow-insensitively) every
/// tile a vector op or an on-chip copy computes from one, with the dimensions it pairs.
std::unordered_map<const BufferNode*, Clipped> clipped_tiles(
    const Stmt& body, const std::unordered_map<const TileOpNode*, ClippedRead>& reads) {
  std::unordered_map<const BufferNode*, Clipped> out;
  std::vector<const TileOpNode*> vec_ops;
  pre_order_visit(body, [&](const Stmt& s) {
    auto* t = s.as<TileOpNode>();
    if (!t) return;
    if (auto r = reads.find(t); r != reads.end()) {
      Clipped& c = out[t->args[1].region.buffer.get()];
      c.dims |= r->second.dims;
      if (!c.copy.defined()) c.copy = r->second.copy;
    }
    const bool on_chip_copy = t->op == &ops::copy() && t->args.size() >= 2 &&
                              t->args[0].is_region() && t->args[1].is_region() &&
                              on_chip(t->args[0].region.buffer) &&
                              on_chip(t->args[1].region.buffer);
    if (t->op->unit == OpUnit::Vector || on_chip_copy) vec_ops.push_back(t);
  });
  if (out.empty()) return out;
  for (bool grew = true; grew;) {
    grew = false;
    for (const TileOpNode* t : vec_ops) {
      const TileArg* dst = op_operand(*t, "dst");
      if (!dst || !dst->is_region() || t->op->rows == RowMap::Reduce ||
          t->op->rows == RowMap::Whole)
        continue;
      for (const auto& a : t->args) {
        if (!a.is_region() || &a == dst) continue;
        auto it = out.find(a.region.buffer.get());
        if (it == out.end()) continue;
        const Clipped src = it->second;
        Clipped& u = out[dst->region.buffer.get()];
        // A row operand of a row-expand op (`dst[i, j] = f(src0[i, j], src1[i])`) pairs its one
        // dimension with dst's rows: its elements past the end along it reach only dst rows past
        // the end (a mean read from GM with the tail of a row tile, subtracted from that tile),
        // never the columns. Any other rank change pairs nothing, so every dimension is marked.
        const bool row_operand = t->op->rows == RowMap::RowExpand && a.region.ranges.size() == 1 &&
                                 dst->region.ranges.size() == 2 && op_operand(*t, "src1") == &a;
        const uint32_t dims = a.region.ranges.size() == dst->region.ranges.size() ? src.dims
                              : row_operand                                       ? src.dims & 1u
                                                                                  : ~0u;
        if ((u.dims | dims) != u.dims) grew = true;
        u.dims |= dims;
        if (!u.copy.defined()) u.copy = src.copy;
      }
    }
  }
  return out;
}

}  // namespace

void check_pad_values(const Stmt& body,
                      const std::unordered_map<const TileOpNode*, ClippedRead>& reads) {
  if (reads.empty()) return;
  auto clipped = clipped_tiles(body, reads);
  PadValues(reads, std::move(clipped)).walk(body);
}

}  // namespace tl::dev
