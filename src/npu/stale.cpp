// The stale-data checker (tl/npu/stale.h, src/npu/stale.h): the per-launch origin table and GM
// shadows, the scalar side (registers, loads, stores, branches, loop bounds, addresses), the
// driver every tile op's rule runs in, and the findings. The per-op rules are beside the
// semantics (exec_move.cpp, exec_cube.cpp) and in stale_rules.cpp.
#include "stale.h"

#include <fmt/ranges.h>
#include <sys/mman.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstring>

#include "tl/ir_functor.h"
#include "tl/ops.h"
#include "tl/pass.h"
#include "tl/storage.h"

namespace tl::npu {

// ---------------------------------------------------------------------------------------------
// Switches and the per-launch state

bool stale_check_enabled(const LaunchOptions& opt) {
  if (opt.timing_only) return false;  // no data is computed, so there is nothing to check
  if (opt.check_stale) return *opt.check_stale;
  const std::string env = env_value("TL_CHECK_STALE");
  if (env == "1") return true;
  if (env == "0") return false;
  if (!env.empty())
    throw Error(fmt::format(
        "TL_CHECK_STALE must be 1 (run the stale-data checker on every launch) or 0 (never), "
        "got '{}'",
        env));
  return opt.check_hazards;
}

namespace {
/// At least `n` read-only zero bytes: an anonymous mapping (the kernel's zero page, so reading
/// it costs no memory), shared by every launch and only replaced by a larger one (older ones
/// stay mapped: another device's launch may still read them).
const uint8_t* zero_bytes(int64_t n) {
  static std::mutex mu;
  static const uint8_t* zeros = nullptr;
  static int64_t size = 0;
  std::lock_guard<std::mutex> lock(mu);
  if (n <= size) return zeros;
  void* p = mmap(nullptr, static_cast<size_t>(n), PROT_READ,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    throw Error(fmt::format("the stale-data checker cannot map {} bytes of zeros", n));
  zeros = static_cast<const uint8_t*>(p);
  size = n;
  return zeros;
}
}  // namespace

StaleLaunch::StaleLaunch(const Program& p, const LaunchState& ls) {
  origin = {"", "never written in this launch",
            "left in the core's memory by an earlier block (this block never wrote it)",
            "a variable never set in this launch"};
  auto add = [&](std::string what) -> uint8_t {
    if (origin.size() >= kManyOrigins) return kManyOrigins;
    origin.push_back(std::move(what));
    return static_cast<uint8_t>(origin.size() - 1);
  };
  // Every variable starts invalid, with an origin naming it, except those set when a block
  // starts (parameters, dynamic sizes, cid, vid) and loop variables (set by their loop).
  slot_unset.assign(p.num_slots, kUnsetVariable);
  const PrimFuncNode& f = *p.func;
  for (const auto& prm : f.params)
    if (!prm.is_tensor()) slot_unset[p.slot_of(prm.scalar.node())] = kValid;
  for (const auto& d : f.dynamics) slot_unset[p.slot_of(d.node())] = kValid;
  slot_unset[p.slot_of(p.kernel->cid.node())] = kValid;
  slot_unset[p.slot_of(p.kernel->vid.node())] = kValid;
  pre_order_visit(f.body, [&](const Stmt& s) {
    if (auto* l = s.as<LetNode>()) {
      slot_unset[p.slot_of(l->var.node())] =
          add(fmt::format("the variable '{}' (set at {}) was never set in this launch",
                          l->var.name(), s->loc.str()));
    } else if (auto* a = s.as<AllocateNode>(); a && a->buffer->scope == MemScope::Var) {
      const BufferInfo& info = p.buffer(a->buffer.get());
      if (info.slot >= 0)
        slot_unset[info.slot] =
            add(fmt::format("the T.alloc_var '{}' ({}) was never assigned in this launch",
                            a->buffer->name, s->loc.str()));
    } else if (auto* t = s.as<TileOpNode>(); t && t->op == &ops::copy()) {
      if (t->attr_bool("clipped"))
        clipped[t] = add(fmt::format(
            "stale since the clipped copy at {} (its destination's elements outside the "
            "copied region)",
            s->loc.str()));
      if (t->attr_bool("pad_undefined"))
        pad_lanes[t] = add(fmt::format(
            "the pad lanes of the copy at {} (from the row's end to its 32-byte boundary: "
            "TileLang-Ascend's DataCopyPad leaves them undefined)",
            s->loc.str()));
    }
  });
  // GM: parameters are valid at launch, workspaces invalid until written. A shadow covers the
  // bytes the tensor's view spans (strides of any sign), indexed from its first element.
  gm.reset(new std::atomic<uint8_t*>[ls.tensors.size()]);
  int64_t largest = 0;
  for (size_t i = 0; i < ls.tensors.size(); ++i) {
    const Tensor& t = ls.tensors[i];
    gm[i].store(nullptr);
    gm_param.push_back(i < f.params.size());
    int64_t lo = 0, hi = 0;
    const int64_t es = t.defined() ? dtype_bytes(t.dtype()) : 1;
    for (size_t d = 0; t.defined() && d < t.shape().size(); ++d) {
      const int64_t span = (t.shape()[d] - 1) * t.strides()[d];
      (span < 0 ? lo : hi) += span;
    }
    const bool empty = !t.defined() || t.numel() == 0;
    gm_before.push_back(-lo * es);
    gm_bytes.push_back(empty ? 0 : (hi - lo + 1) * es);
    if (empty) continue;
    if (gm_param.back()) {
      largest = std::max(largest, gm_bytes.back());
      continue;
    }
    check_host_memory(gm_bytes.back(),
                      fmt::format("the stale-data checker's shadow of workspace {} of kernel {}",
                                  i - f.params.size(), f.name));
    auto* storage = static_cast<uint8_t*>(std::malloc(static_cast<size_t>(gm_bytes.back())));
    if (!storage)
      throw Error(fmt::format("kernel {}: out of host memory for the stale-data checker", f.name));
    std::memset(storage, kNeverWritten, static_cast<size_t>(gm_bytes.back()));
    gm_storage.emplace_back(storage);
    gm[i].store(storage + gm_before.back());
  }
  zeros = zero_bytes(largest);
}

uint8_t* StaleLaunch::gm_for_write(size_t i, const std::string& kernel) {
  if (uint8_t* g = gm[i].load(std::memory_order_acquire)) return g;
  std::lock_guard<std::mutex> lock(gm_mu);
  if (uint8_t* g = gm[i].load(std::memory_order_acquire)) return g;
  check_host_memory(
      gm_bytes[i],
      fmt::format("the stale-data checker's shadow of tensor {} of kernel {}", i, kernel));
  auto* storage = static_cast<uint8_t*>(std::calloc(static_cast<size_t>(gm_bytes[i]), 1));
  if (!storage)
    throw Error(fmt::format("kernel {}: out of host memory for the stale-data checker", kernel));
  gm_storage.emplace_back(storage);
  gm[i].store(storage + gm_before[i], std::memory_order_release);
  return storage + gm_before[i];
}

namespace {
TileRef gm_shadow(Core& c, const TileRef& t, bool write) {
  TileRef s = t;
  StaleLaunch& st = *c.launch.stale;
  const auto i = static_cast<size_t>(c.program.buffer(t.buffer).param);
  uint8_t* g =
      write ? st.gm_for_write(i, c.program.func->name) : st.gm[i].load(std::memory_order_acquire);
  // Without a shadow, the read-only zeros stand for one (every byte valid).
  if (!g) g = const_cast<uint8_t*>(st.zeros) + st.gm_before[i];
  s.base = g + (t.base - c.launch.tensors[i].data());
  return s;
}
}  // namespace

TileRef shadow_for_write(Core& c, const TileRef& t) {
  return t.scope == MemScope::GM ? gm_shadow(c, t, true) : shadow_of(c, t);
}

bool gm_all_valid(Core& c, const TileRef& t) {
  return !c.launch.stale->gm[c.program.buffer(t.buffer).param].load(std::memory_order_acquire);
}

TileRef shadow_of(Core& c, const TileRef& t) {
  if (t.scope == MemScope::GM) return gm_shadow(c, t, false);
  TileRef s = t;
  CoreShadow& sh = *c.shadow();
  {
    const auto k = static_cast<size_t>(t.scope);
    s.base = sh.mem[k].data() + (t.base - c.mem[k].data());
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// Region helpers

namespace {
/// How many leading bytes of [p, p + n) are certainly zero (a multiple of the block size; the
/// rest is scanned byte by byte): most shadows are all zero, so this is the checker's inner loop.
int64_t zero_prefix(const uint8_t* p, int64_t n) {
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    uint64_t w[4];
    std::memcpy(w, p + i, 32);
    if (w[0] | w[1] | w[2] | w[3]) break;
  }
  return i;
}
#if defined(__x86_64__)
__attribute__((target("avx2"))) int64_t zero_prefix_avx2(const uint8_t* p, int64_t n) {
  int64_t i = 0;
  for (; i + 128 <= n; i += 128) {
    const auto* q = reinterpret_cast<const __m256i*>(p + i);
    const __m256i o =
        _mm256_or_si256(_mm256_or_si256(_mm256_loadu_si256(q), _mm256_loadu_si256(q + 1)),
                        _mm256_or_si256(_mm256_loadu_si256(q + 2), _mm256_loadu_si256(q + 3)));
    if (!_mm256_testz_si256(o, o)) return i;
  }
  return i + zero_prefix(p + i, n - i);
}
#endif
}  // namespace

uint8_t first_nonzero(const uint8_t* p, int64_t n) {
#if defined(__x86_64__)
  int64_t i = n >= 128 && host_has_avx2() ? zero_prefix_avx2(p, n) : zero_prefix(p, n);
#else
  int64_t i = zero_prefix(p, n);
#endif
  for (; i < n; ++i)
    if (p[i]) return p[i];
  return 0;
}

uint8_t region_origin(const TileRef& s) {
  const int64_t es = dtype_bytes(s.dtype);
  // A whole on-chip buffer: one scan of its storage (fractal padding included); only if that
  // finds an invalid byte, which may be padding, is the region scanned run by run.
  bool whole = s.scope != MemScope::GM && s.start.size() == s.shape.size();
  for (size_t d = 0; whole && d < s.shape.size(); ++d)
    whole = s.start[d] == 0 && s.extent[d] == s.shape[d];
  if (whole && first_nonzero(s.base, storage_bytes(s.scope, s.dtype, s.shape)) == kValid)
    return kValid;
  uint8_t o = 0;
  for_each_run(s, [&](int64_t, const uint8_t* p, int64_t n) {
    o = first_nonzero(p, n * es);
    return o == 0;
  });
  return o;
}

void region_origins(const TileRef& s, std::vector<uint8_t>& out) {
  const int64_t es = dtype_bytes(s.dtype);
  out.assign(s.numel(), 0);
  for_each_run(s, [&](int64_t flat, const uint8_t* p, int64_t n) {
    if (first_nonzero(p, n * es))
      for (int64_t k = 0; k < n; ++k) out[flat + k] = first_nonzero(p + k * es, es);
    return true;
  });
}

void region_store(const TileRef& s, const std::vector<uint8_t>& in) {
  const int64_t es = dtype_bytes(s.dtype);
  for_each_run(s, [&](int64_t flat, uint8_t* p, int64_t n) {
    if (es == 1) {
      std::memcpy(p, in.data() + flat, n);
    } else {
      // Usually one origin for the whole run (all valid): one memset instead of one per element.
      const uint8_t* o = in.data() + flat;
      if (std::all_of(o, o + n, [&](uint8_t v) { return v == o[0]; }))
        std::memset(p, o[0], static_cast<size_t>(n * es));
      else
        for (int64_t k = 0; k < n; ++k) std::memset(p + k * es, o[k], es);
    }
    return true;
  });
}

void region_fill(const TileRef& s, uint8_t origin) {
  const int64_t es = dtype_bytes(s.dtype);
  for_each_run(s, [&](int64_t, uint8_t* p, int64_t n) {
    std::memset(p, origin, n * es);
    return true;
  });
}

uint8_t scalar_operand_taint(const TileOpNode& n, Core& c, std::string_view name) {
  const TileArg* a = op_operand(n, name);
  if (!a || !a->is_scalar()) return 0;
  return c.expr_taint(a->scalar);
}

uint8_t scalar_taints(const TileOpNode& n, Core& c) {
  uint8_t o = 0;
  for (const auto& a : n.args)
    if (a.is_scalar()) o = first_of(o, c.expr_taint(a.scalar));
  return o;
}

// ---------------------------------------------------------------------------------------------
// Findings

std::string StaleFinding::kind_name() const {
  switch (kind) {
    case Kind::StoreToGM:
      return "invalid data stored to GM";
    case Kind::Branch:
      return "branch on an invalid value";
    case Kind::LoopBound:
      return "loop bound from an invalid value";
    case Kind::Address:
      return "address from an invalid value";
    case Kind::FlagId:
      return "flag id from an invalid value";
  }
  return "?";
}

std::string StaleFinding::str() const {
  std::string what;
  switch (kind) {
    case Kind::StoreToGM:
      what = fmt::format("T.{} stores {} invalid of {} elements into '{}', the first {}[{}]", op,
                         invalid, total, buffer, buffer, fmt::join(element, ", "));
      break;
    case Kind::Branch:
      what = "the condition of an `if`";
      break;
    case Kind::LoopBound:
      what = "the start or extent of a loop";
      break;
    case Kind::Address:
      what = op == "load" || op == "store"
                 ? fmt::format("the index of a scalar {} of '{}'", op, buffer)
                 : fmt::format("T.{} operand '{}' ('{}')", op, operand, buffer);
      break;
    case Kind::FlagId:
      what = fmt::format("the event id of T.{}", op);
      break;
  }
  return fmt::format("{} at {}: {}; {} (first in {}{})", kind_name(), loc.str(), what, origin, core,
                     count > 1 ? fmt::format("; {} times", count) : "");
}

void add_finding(Core& c, StaleFinding f, uint8_t origin) {
  CoreShadow& sh = *c.shadow();
  f.loc = c.current_loc();
  const auto& table = c.launch.stale->origin;
  f.origin = origin < table.size() ? table[origin]
                                   : "computed from one of more than 250 sources of invalid data";
  CoreShadow::Key key{static_cast<int>(f.kind), f.op, f.operand, f.buffer, f.loc.file, f.loc.line};
  auto it = sh.findings.find(key);
  if (it != sh.findings.end()) {
    ++it->second.f.count;
    return;
  }
  f.core = c.name();
  const auto seq = static_cast<int64_t>(sh.findings.size());  // program order on this core
  sh.findings.emplace(key, CoreShadow::Entry{std::move(f), c.block, seq});
}

namespace {

/// A StoreToGM finding when shadow region `s` (of GM tensor `t`'s buffer) holds invalid elements.
void check_gm_store(Core& c, const std::string& op, const std::string& operand, const TileRef& t,
                    const TileRef& s) {
  if (region_origin(s) == 0) return;
  std::vector<uint8_t> o;
  region_origins(s, o);
  StaleFinding f;
  f.kind = StaleFinding::Kind::StoreToGM;
  f.op = op;
  f.operand = operand;
  f.buffer = t.buffer->name;
  f.total = static_cast<int64_t>(o.size());
  uint8_t first = 0;
  for (size_t i = 0; i < o.size(); ++i) {
    if (!o[i]) continue;
    if (!first) {
      first = o[i];
      int64_t rem = static_cast<int64_t>(i);
      f.element.assign(t.extent.size(), 0);
      for (size_t d = t.extent.size(); d-- > 0;) {
        f.element[d] = t.start[d] + rem % t.extent[d];
        rem /= t.extent[d];
      }
    }
    ++f.invalid;
    if (f.invalid_positions.size() < StaleFinding::kMaxListed)
      f.invalid_positions.push_back(static_cast<int64_t>(i));
  }
  add_finding(c, std::move(f), first);
}

bool is_gm_param(Core& c, const BufferNode* b) {
  const BufferInfo& info = c.program.buffer(b);
  return info.scope == MemScope::GM && c.launch.stale->gm_param[info.param];
}

}  // namespace

std::vector<StaleFinding> merge_findings(const std::vector<const CoreShadow*>& cores) {
  // Each core's entries keep their first occurrence (block, and order on the core); across
  // cores the earliest (block, core slot, order) wins: the same for any host thread count.
  struct Item {
    int64_t block, slot, seq;
    const CoreShadow::Entry* e;
    const CoreShadow::Key* key;
  };
  std::vector<Item> all;
  for (size_t i = 0; i < cores.size(); ++i)
    for (const auto& [k, e] : cores[i]->findings)
      all.push_back({e.block, static_cast<int64_t>(i % 3), e.seq, &e, &k});
  std::sort(all.begin(), all.end(), [](const Item& a, const Item& b) {
    return std::tie(a.block, a.slot, a.seq) < std::tie(b.block, b.slot, b.seq);
  });
  std::vector<StaleFinding> out;
  std::map<CoreShadow::Key, size_t> at;
  for (const auto& it : all) {
    auto [pos, fresh] = at.emplace(*it.key, out.size());
    if (fresh)
      out.push_back(it.e->f);
    else
      out[pos->second].count += it.e->f.count;
  }
  return out;
}

std::string stale_report(const std::string& kernel, const std::vector<StaleFinding>& findings) {
  if (findings.empty()) return "";
  std::string msg = fmt::format("stale-data check of kernel {}: {} use(s) of invalid data", kernel,
                                findings.size());
  for (const auto& f : findings) msg += "\n  " + f.str();
  return msg;
}

// ---------------------------------------------------------------------------------------------
// The scalar side (Core members)

void Core::taint_slot(int slot) {
  shadow_->taint = first_of(shadow_->taint, shadow_->slot[slot]);
}

void Core::taint_load(const TileRef& t, std::span<const int64_t> idx) {
  const uint8_t o = first_nonzero(shadow_of(*this, t).at(idx), dtype_bytes(t.dtype));
  shadow_->taint = first_of(shadow_->taint, o);
}

namespace {
/// The origin of `e` evaluated by core `c`, node by node: a T.if_then_else counts its
/// condition and the branch it takes; an index from an invalid value is a finding.
uint8_t precise_taint(Core& c, const Expr& e) {
  CoreShadow& sh = *c.shadow();
  switch (e.kind()) {
    case ExprKind::IntImm:
    case ExprKind::FloatImm:
    case ExprKind::StringImm:
      return 0;
    case ExprKind::Var:
      return sh.slot[c.program.slot_of(static_cast<const VarNode*>(e.get()))];
    case ExprKind::Binary: {
      auto* n = static_cast<const BinaryNode*>(e.get());
      return first_of(precise_taint(c, n->a), precise_taint(c, n->b));
    }
    case ExprKind::Not:
      return precise_taint(c, static_cast<const NotNode*>(e.get())->a);
    case ExprKind::Cast:
      return precise_taint(c, static_cast<const CastNode*>(e.get())->value);
    case ExprKind::Call: {
      uint8_t o = 0;
      for (const auto& a : static_cast<const CallNode*>(e.get())->args)
        o = first_of(o, precise_taint(c, a));
      return o;
    }
    case ExprKind::Select: {
      auto* n = static_cast<const SelectNode*>(e.get());
      const uint8_t o = precise_taint(c, n->cond);
      const bool take = c.eval(n->cond).as_int() != 0;
      return first_of(o, precise_taint(c, take ? n->t : n->f));
    }
    case ExprKind::Load: {
      auto* n = static_cast<const LoadNode*>(e.get());
      const BufferInfo& info = c.program.buffer(n->buffer.get());
      if (info.scope == MemScope::Var) return sh.slot[info.slot];
      uint8_t o = 0;
      std::vector<int64_t> idx;
      BufferRegion r{n->buffer, {}};
      for (const auto& i : n->indices) {
        o = first_of(o, precise_taint(c, i));
        idx.push_back(c.eval_int(i));
        r.ranges.push_back({Expr(idx.back()), Expr(1)});
      }
      if (o) {
        StaleFinding f;
        f.kind = StaleFinding::Kind::Address;
        f.op = "load";
        f.buffer = n->buffer->name;
        add_finding(c, std::move(f), o);
      }
      TileRef t = c.resolve(r, "load", n->buffer->name);
      return first_of(o, first_nonzero(shadow_of(c, t).at(idx), dtype_bytes(t.dtype)));
    }
  }
  return 0;
}
}  // namespace

uint8_t Core::expr_taint(const Expr& e, Scalar* value) {
  if (!e.defined()) return 0;  // an absent operand (a pipe_barrier's event id)
  if (!value && (e.kind() == ExprKind::IntImm || e.kind() == ExprKind::FloatImm)) return 0;
  shadow_->taint = 0;
  Scalar v = eval(e);
  if (value) *value = v;
  // The hooks over-approximate (both branches of a select count): confirm node by node.
  return shadow_->taint ? precise_taint(*this, e) : 0;
}

void Core::stale_block_start() {
  // What an earlier block left in this core's memories is not this block's data: every valid
  // (zero) shadow byte becomes kEarlierBlock, eight at a time (a zero byte's high bit is set
  // in `z` below, and only a zero byte's).
  constexpr uint64_t k7f = 0x7f7f7f7f7f7f7f7fULL;
  static_assert(kEarlierBlock == 2, "the multiplier below");
  for (auto& m : shadow_->mem) {
    size_t i = 0;
    for (; i + 8 <= m.size(); i += 8) {
      uint64_t w;
      std::memcpy(&w, m.data() + i, 8);
      const uint64_t z = ~(((w & k7f) + k7f) | w | k7f);
      w |= (z >> 7) * kEarlierBlock;
      std::memcpy(m.data() + i, &w, 8);
    }
    for (; i < m.size(); ++i) m[i] = m[i] ? m[i] : kEarlierBlock;
  }
  shadow_->slot = launch.stale->slot_unset;
}

void Core::stale_let(const LetNode& n) {
  Scalar v;
  const uint8_t o = expr_taint(n.value, &v);
  const int slot = program.slot_of(n.var.node());
  slots_[slot] = v;
  shadow_->slot[slot] = o;
}

void Core::stale_store(const StoreNode& n, const TileRef* ref, const std::vector<int64_t>& idx) {
  CoreShadow& sh = *shadow_;
  const BufferInfo& info = program.buffer(n.buffer.get());
  if (!ref) {  // before the store: the value's and the indices' origins
    sh.address_taint = 0;
    for (const auto& i : n.indices) sh.address_taint = first_of(sh.address_taint, expr_taint(i));
    const uint8_t o = expr_taint(n.value);
    if (info.scope == MemScope::Var) {
      sh.slot[info.slot] = first_of(o, sh.address_taint);
      return;
    }
    if (sh.address_taint) {
      StaleFinding f;
      f.kind = StaleFinding::Kind::Address;
      f.op = "store";
      f.buffer = n.buffer->name;
      add_finding(*this, std::move(f), sh.address_taint);
    }
    sh.held = first_of(o, sh.address_taint);
    return;
  }
  const uint8_t o = sh.held;
  if (!o && ref->scope == MemScope::GM && gm_all_valid(*this, *ref)) return;  // stays all valid
  TileRef s = shadow_for_write(*this, *ref);
  std::memset(s.at(idx), o, static_cast<size_t>(dtype_bytes(ref->dtype)));
  if (o && is_gm_param(*this, ref->buffer)) {
    TileRef one = *ref, sone = s;  // the one element as a region, for the finding
    check_gm_store(*this, "store", "", one, sone);
  }
}

void Core::stale_control(const StmtNode& s, const Expr& e, int kind) {
  StaleFinding f;
  uint8_t o = 0;
  if (kind == 0) {  // a loop: start and extent; its variable is as valid as its start
    auto& loop = static_cast<const ForNode&>(s);
    const uint8_t from = expr_taint(loop.min);
    o = first_of(from, expr_taint(loop.extent));
    shadow_->slot[program.slot_of(loop.var.node())] = from;
    f.kind = StaleFinding::Kind::LoopBound;
    f.op = "for";
  } else if (kind == 1) {
    o = expr_taint(e);
    f.kind = StaleFinding::Kind::Branch;
    f.op = "if";
  } else {
    o = expr_taint(e);
    f.kind = StaleFinding::Kind::FlagId;
    f.op = sync_name(static_cast<const SyncNode&>(s).sync_kind);
  }
  if (o) add_finding(*this, std::move(f), o);
}

// ---------------------------------------------------------------------------------------------
// The tile-op driver

void stale_before(const TileOpNode& n, Core& c) {
  CoreShadow& sh = *c.shadow();
  sh.rule_error.reset();
  // Region starts and extents: an address from an invalid value is a finding, and whatever
  // the op writes there is invalid too.
  sh.address_taint = 0;
  const auto& specs = n.op->operands;
  for (size_t i = 0; i < n.args.size(); ++i) {
    const TileArg& a = n.args[i];
    if (!a.is_region()) continue;
    uint8_t o = 0;
    for (const auto& r : a.region.ranges) {
      if (r.min.kind() != ExprKind::IntImm) o = first_of(o, c.expr_taint(r.min));
      if (r.extent.defined() && r.extent.kind() != ExprKind::IntImm)
        o = first_of(o, c.expr_taint(r.extent));
    }
    if (!o) continue;
    StaleFinding f;
    f.kind = StaleFinding::Kind::Address;
    f.op = n.op->name;
    f.operand = specs.empty() ? "" : specs[std::min(i, specs.size() - 1)].name;
    f.buffer = a.region.buffer->name;
    add_finding(c, std::move(f), o);
    sh.address_taint = first_of(sh.address_taint, o);
  }
  try {
    find_stale_rule(n.op)(n, c);
  } catch (const Error& e) {
    sh.rule_error = e;  // the semantics' own error, if they raise one, wins
  }
}

void stale_after(const TileOpNode& n, Core& c) {
  CoreShadow& sh = *c.shadow();
  if (sh.rule_error) {
    Error e = *sh.rule_error;
    sh.rule_error.reset();
    throw e;
  }
  const auto& specs = n.op->operands;
  for (size_t i = 0; i < n.args.size(); ++i) {
    const TileArg& a = n.args[i];
    if (!a.is_region() || specs.empty()) continue;
    const OperandSpec& spec = specs[std::min(i, specs.size() - 1)];
    if (spec.access == Access::Read) continue;
    TileRef t = c.resolve(a.region, n.op->name, spec.name);
    if (sh.address_taint) region_fill(shadow_for_write(c, t), sh.address_taint);
    if (is_gm_param(c, t.buffer) && !gm_all_valid(c, t))
      check_gm_store(c, n.op->name, spec.name, t, shadow_of(c, t));
  }
}

}  // namespace tl::npu
