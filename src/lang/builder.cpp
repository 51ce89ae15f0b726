// The DSL's builder state (open blocks, the thread's source-location override) and the
// structural T:: calls: functions, launch, scopes, memory, scalars and control flow.
#include "builder.h"

#include <iostream>
#include <map>
#include <set>

#include "tl/ir_functor.h"

#include "tl/lang.h"
#include "tl/parser.h"

namespace tl {

namespace {
// The innermost live ScopedSourceLoc of this thread (the guards form a stack through outer_).
thread_local const SourceLoc* g_loc_override = nullptr;
// Kernel lines that called the helpers being built, outermost first (T::HelperCall).
thread_local std::vector<SourceLoc> g_helper_callers;
}  // namespace

SourceLoc source_loc(const Loc& l) {
  if (g_loc_override) return *g_loc_override;
  SourceLoc here{l.file_name(), static_cast<int>(l.line())};
  if (g_helper_callers.empty()) return here;
  SourceLoc loc = g_helper_callers.front();
  for (size_t i = 1; i < g_helper_callers.size(); ++i) loc.via += g_helper_callers[i].str() + ", ";
  loc.via += here.str();
  return loc;
}

namespace T {
HelperCall::HelperCall(const Loc& caller) {
  g_helper_callers.push_back(g_loc_override
                                 ? *g_loc_override
                                 : SourceLoc{caller.file_name(), static_cast<int>(caller.line())});
}
HelperCall::~HelperCall() {
  g_helper_callers.pop_back();
}
}  // namespace T

ScopedSourceLoc::ScopedSourceLoc(SourceLoc loc) : loc_(std::move(loc)), outer_(g_loc_override) {
  g_loc_override = &loc_;
}
ScopedSourceLoc::~ScopedSourceLoc() {
  g_loc_override = outer_;
}

namespace lang {
namespace {
struct FuncState {
  std::vector<std::vector<Stmt>> blocks;
  std::set<std::string> names;
  bool has_kernel = false;
  // T::annotate_address: buffer -> pinned address, applied to the whole body when the function
  // is finished (the annotation usually follows the allocation, and may follow uses).
  std::map<const BufferNode*, int64_t> pins;
  // T::annotate_l2_cache: GM tensor -> its L2 cache mode, applied like the pins (parameters
  // included: the annotation comes after the signature).
  std::map<const BufferNode*, L2CacheMode> l2_modes;
};
thread_local std::vector<FuncState*> g_funcs;  // nested prim_func calls build independently

FuncState& current(const SourceLoc& loc) {
  if (g_funcs.empty())
    user_error(loc, "T:: statements must be written inside the body of T::prim_func");
  return *g_funcs.back();
}
}  // namespace

namespace {
/// Rewrites every occurrence of a pinned buffer, and of the views of one (a view shares its
/// base's bytes, so it gets the same address), to a copy with the address set.
class Pin : public IRMutator {
 public:
  explicit Pin(const std::map<const BufferNode*, int64_t>& pins) : pins_(pins) {}
  Buffer mutate_buffer(const Buffer& b) override {
    auto done = made_.find(b.get());
    if (done != made_.end()) return done->second;
    auto it = pins_.find(b.get());
    if (it == pins_.end()) return b;
    Buffer p = BufferNode::make(b->name, b->dtype, b->shape, b->scope, b->strides, it->second,
                                b->loc, b->origin, b->channel_slots, b->l2_cache, b->slot);
    made_.emplace(b.get(), p);
    return p;
  }
  std::map<const BufferNode*, int64_t> pins_;

 private:
  std::map<const BufferNode*, Buffer> made_;
};
}  // namespace

Stmt apply_pins(const Stmt& body, const std::map<const BufferNode*, int64_t>& pins) {
  Pin pin(pins);
  // Views are declared after their base, so one walk in program order reaches every chain.
  pre_order_visit(body, [&](const Stmt& s) {
    if (auto* a = s.as<AllocateNode>(); a && a->is_view()) {
      auto it = pin.pins_.find(a->view_of.get());
      if (it != pin.pins_.end()) pin.pins_[a->buffer.get()] = it->second;
    }
  });
  return pin.mutate(body);
}

namespace {
/// Rewrites every occurrence of an annotated GM tensor to a copy with its L2 cache mode.
class SetL2 : public IRMutator {
 public:
  explicit SetL2(const std::map<const BufferNode*, L2CacheMode>& modes) : modes_(modes) {}
  Buffer mutate_buffer(const Buffer& b) override {
    auto done = made_.find(b.get());
    if (done != made_.end()) return done->second;
    auto it = modes_.find(b.get());
    if (it == modes_.end()) return b;
    Buffer p = BufferNode::make(b->name, b->dtype, b->shape, b->scope, b->strides, b->address,
                                b->loc, b->origin, b->channel_slots, it->second, b->slot);
    made_.emplace(b.get(), p);
    return p;
  }

 private:
  const std::map<const BufferNode*, L2CacheMode>& modes_;
  std::map<const BufferNode*, Buffer> made_;
};
}  // namespace

Stmt apply_l2_modes(const Stmt& body, std::vector<Param>& params,
                    const std::map<const BufferNode*, L2CacheMode>& modes) {
  SetL2 m(modes);
  for (Param& p : params)
    if (p.is_tensor()) p.tensor = m.mutate_buffer(p.tensor);
  return m.mutate(body);
}

bool building() {
  return !g_funcs.empty();
}

void emit(Stmt s, const SourceLoc& loc) {
  auto& f = current(loc);
  TL_ASSERT(!f.blocks.empty(), "no open block");
  f.blocks.back().push_back(std::move(s));
}

[[noreturn]] void rethrow_located(const SourceLoc& loc) {
  try {
    throw;
  } catch (const Error& e) {
    // An error without a location (an expression operator's, e.g. the IR's nesting limit) is
    // attributed to the innermost DSL statement whose body raised it.
    if (!e.loc().known() && loc.known())
      throw Error(
          loc, fmt::format("{} (raised in the body of the T:: statement at this line)", e.what()));
    throw;
  }
}

Stmt capture(const std::function<void()>& body, const SourceLoc& loc) {
  auto& f = current(loc);
  f.blocks.emplace_back();
  try {
    if (body) body();
  } catch (...) {
    f.blocks.pop_back();
    rethrow_located(loc);
  }
  std::vector<Stmt> stmts = std::move(f.blocks.back());
  f.blocks.pop_back();
  return SeqNode::make(std::move(stmts), loc);
}

std::string fresh_name(const std::string& base) {
  if (g_funcs.empty()) return base;
  const auto& names = g_funcs.back()->names;
  std::string n = base;
  for (int i = 1; names.count(n); ++i) n = fmt::format("{}_{}", base, i);
  return n;
}
std::string unique_name(const std::string& base) {
  std::string n = fresh_name(base);
  if (!g_funcs.empty()) g_funcs.back()->names.insert(n);
  return n;
}

bool is_identifier(const std::string& s) {
  return is_ir_name(s);
}

std::string name_rule() {
  return fmt::format(
      "expected an identifier (an ASCII letter or _, then letters, digits or _, at most {} "
      "characters) that is not a keyword of the IR text format",
      kMaxIrNameBytes);
}

std::string shown_name(const std::string& name) {
  return name.size() <= 64 ? name
                           : name.substr(0, 64) + fmt::format("... ({} characters)", name.size());
}

void claim_name(const std::string& name, const SourceLoc& loc) {
  if (!is_identifier(name))
    user_error(loc, "'{}' cannot name a buffer or variable: {}", shown_name(name), name_rule());
  auto& f = current(loc);
  if (!f.names.insert(name).second)
    user_error(loc,
               "the name '{}' is already used in this kernel; buffer, variable and parameter "
               "names must be unique",
               name);
}

void note_kernel(const SourceLoc& loc) {
  auto& f = current(loc);
  if (f.has_kernel) user_error(loc, "a kernel has exactly one T::Kernel launch");
  if (f.blocks.size() != 1) user_error(loc, "T::Kernel must be at the top level of T::prim_func");
  f.has_kernel = true;
}

}  // namespace lang

namespace T {
using lang::capture;
using lang::emit;

namespace {
void collect_dynamics(const Expr& e, std::vector<Var>& out) {
  if (!e.defined()) return;
  if (auto* v = e.as<VarNode>()) {
    for (const auto& d : out)
      if (d.get() == v) return;
    out.push_back(Var(e.ptr()));
    return;
  }
  if (auto* b = e.as<BinaryNode>()) {
    collect_dynamics(b->a, out);
    collect_dynamics(b->b, out);
  } else if (auto* c = e.as<CastNode>()) {
    collect_dynamics(c->value, out);
  } else if (auto* s = e.as<SelectNode>()) {
    collect_dynamics(s->cond, out);
    collect_dynamics(s->t, out);
    collect_dynamics(s->f, out);
  } else if (auto* c2 = e.as<CallNode>()) {
    for (const auto& a : c2->args) collect_dynamics(a, out);
  }
}

Buffer alloc(std::string name, std::vector<Expr> shape, DType dtype, MemScope scope,
             int64_t address, const Loc& l) {
  SourceLoc loc = source_loc(l);
  if (name.empty()) user_error(loc, "T::alloc_{}: a buffer needs a name", scope_name(scope));
  if (shape.empty()) user_error(loc, "T::alloc_{}('{}'): shape is empty", scope_name(scope), name);
  lang::claim_name(name, loc);
  Buffer b = BufferNode::make(name, dtype, std::move(shape), scope, {}, address, loc);
  emit(AllocateNode::make(b, loc), loc);
  return b;
}

void loop(Expr min, Expr extent, ForKind kind, int stages, const std::function<void(Expr)>& body,
          const Loc& l, const char* var_base, int skew = 1) {
  SourceLoc loc = source_loc(l);
  std::string name =
      lang::is_identifier(var_base) ? lang::unique_name(var_base) : std::string(var_base);
  if (!lang::is_identifier(name))  // a valid base may still grow too long with its suffix
    user_error(loc, "'{}' cannot name a loop variable: {}", lang::shown_name(name),
               lang::name_rule());
  Var v(name);
  Stmt s = capture([&] { body(v); }, loc);
  emit(ForNode::make(v, std::move(min), std::move(extent), kind, stages, skew, s, loc), loc);
}
}  // namespace

Buffer Tensor(std::string name, std::vector<Expr> shape, DType dtype, std::vector<Expr> strides,
              const Loc& l) {
  SourceLoc loc = source_loc(l);
  if (!strides.empty() && strides.size() != shape.size())
    user_error(loc, "T::Tensor('{}'): {} strides for {} dimensions", name, strides.size(),
               shape.size());
  return BufferNode::make(std::move(name), dtype, std::move(shape), MemScope::GM,
                          std::move(strides), -1, loc);
}

Var Scalar(std::string name, DType dtype) {
  return Var(std::move(name), dtype);
}
Var dynamic(std::string name, DType dtype) {
  return Var(std::move(name), dtype);
}

PrimFunc prim_func(std::string name, std::vector<ParamRef> params,
                   const std::function<void()>& body, const Loc& l) {
  SourceLoc loc = source_loc(l);
  lang::FuncState state;
  state.blocks.emplace_back();
  std::vector<Param> ps;
  std::vector<Var> dynamics;
  if (!lang::is_identifier(name))
    user_error(loc, "T::prim_func: '{}' cannot name a function: {}", lang::shown_name(name),
               lang::name_rule());
  for (auto& p : params) {
    if (!lang::is_identifier(p.p.name()))
      user_error(loc, "T::prim_func('{}'): parameter name '{}' is not an identifier: {}", name,
                 lang::shown_name(p.p.name()), lang::name_rule());
    if (!state.names.insert(p.p.name()).second)
      user_error(loc, "T::prim_func('{}'): two parameters are called '{}'", name, p.p.name());
    if (p.p.is_tensor()) {
      for (const auto& s : p.p.tensor->shape) collect_dynamics(s, dynamics);
      for (const auto& s : p.p.tensor->strides) collect_dynamics(s, dynamics);
    }
    ps.push_back(p.p);
  }
  for (const auto& d : dynamics) {
    if (!lang::is_identifier(d.name()))
      user_error(loc, "T::prim_func('{}'): dynamic symbol name '{}' is not an identifier: {}", name,
                 lang::shown_name(d.name()), lang::name_rule());
    state.names.insert(d.name());
  }
  lang::g_funcs.push_back(&state);
  try {
    body();
  } catch (...) {
    lang::g_funcs.pop_back();
    lang::rethrow_located(loc);
  }
  lang::g_funcs.pop_back();
  if (!state.has_kernel) user_error(loc, "T::prim_func('{}') has no T::Kernel launch", name);
  Stmt b = SeqNode::make(std::move(state.blocks.back()), loc);
  if (!state.pins.empty()) b = lang::apply_pins(b, state.pins);
  if (!state.l2_modes.empty()) b = lang::apply_l2_modes(b, ps, state.l2_modes);
  return make_prim_func(std::move(name), std::move(dynamics), std::move(ps), b, loc);
}

namespace {
/// The launch being built (its block count and cid), for T::Persistent's check of the workers
/// it deals tiles to against the blocks launched.
struct Launch {
  Expr blocks;
  Var cid;
};
thread_local std::vector<Launch> g_launches;
struct LaunchScope {
  LaunchScope(Expr blocks, const Var& cid) { g_launches.push_back({std::move(blocks), cid}); }
  ~LaunchScope() { g_launches.pop_back(); }
  LaunchScope(const LaunchScope&) = delete;
  LaunchScope& operator=(const LaunchScope&) = delete;
};
}  // namespace

void Kernel(Expr num_blocks, const std::function<void(Expr, Expr)>& body, const Loc& l) {
  SourceLoc loc = source_loc(l);
  lang::note_kernel(loc);
  Var cid(lang::unique_name("cid")), vid(lang::unique_name("vid"));
  LaunchScope launch(num_blocks, cid);
  Stmt s = capture([&] { body(cid, vid); }, loc);
  emit(KernelNode::make(std::move(num_blocks), cid, vid, s, loc), loc);
}

void Kernel(Expr num_blocks, const std::function<void(Expr)>& body, KernelOptions opt,
            const Loc& l) {
  SourceLoc loc = source_loc(l);
  if (opt.threads != 1 && opt.threads != 2)
    user_error(loc, "T::Kernel: threads must be 1 or 2 (vector cores per cube core on A2), got {}",
               opt.threads);
  lang::note_kernel(loc);
  Var cid(lang::unique_name("cid"));
  LaunchScope launch(num_blocks, cid);
  Stmt s = capture([&] { body(cid); }, loc);
  emit(KernelNode::make(std::move(num_blocks), cid, Var(), s, loc, opt.threads), loc);
}

void Scope(Core core, const std::function<void()>& body, const Loc& l) {
  SourceLoc loc = source_loc(l);
  Stmt s = capture(body, loc);
  emit(ScopeNode::make(core, s, loc), loc);
}

Buffer alloc_L1(std::string n, std::vector<Expr> s, DType t, int64_t a, const Loc& l) {
  return alloc(std::move(n), std::move(s), t, MemScope::L1, a, l);
}
Buffer alloc_L0A(std::string n, std::vector<Expr> s, DType t, int64_t a, const Loc& l) {
  return alloc(std::move(n), std::move(s), t, MemScope::L0A, a, l);
}
Buffer alloc_L0B(std::string n, std::vector<Expr> s, DType t, int64_t a, const Loc& l) {
  return alloc(std::move(n), std::move(s), t, MemScope::L0B, a, l);
}
Buffer alloc_L0C(std::string n, std::vector<Expr> s, DType t, int64_t a, const Loc& l) {
  return alloc(std::move(n), std::move(s), t, MemScope::L0C, a, l);
}
Buffer alloc_ub(std::string n, std::vector<Expr> s, DType t, int64_t a, const Loc& l) {
  return alloc(std::move(n), std::move(s), t, MemScope::UB, a, l);
}
Buffer alloc_shared(std::string n, std::vector<Expr> s, DType t, const Loc& l) {
  return alloc(std::move(n), std::move(s), t, MemScope::Shared, -1, l);
}
Buffer alloc_fragment(std::string n, std::vector<Expr> s, DType t, const Loc& l) {
  return alloc(std::move(n), std::move(s), t, MemScope::Fragment, -1, l);
}
Buffer alloc_workspace(std::string n, std::vector<Expr> s, DType t, const Loc& l) {
  return alloc(std::move(n), std::move(s), t, MemScope::GM, -1, l);
}
Buffer alloc_var(std::string n, DType t, std::optional<Expr> init, const Loc& l) {
  Buffer b = alloc(std::move(n), {Expr(1)}, t, MemScope::Var, -1, l);
  if (init) assign(b, *init, l);
  return b;
}

void annotate_address(const std::vector<std::pair<Buffer, int64_t>>& pins, const Loc& l) {
  SourceLoc loc = source_loc(l);
  auto& f = lang::current(loc);
  for (const auto& [b, address] : pins) {
    if (!b.defined()) user_error(loc, "T::annotate_address: a buffer is undefined");
    if (b->scope != MemScope::L1 && b->scope != MemScope::L0A && b->scope != MemScope::L0B &&
        b->scope != MemScope::L0C && b->scope != MemScope::UB)
      user_error(loc,
                 "T::annotate_address: '{}' is a {} buffer; only L1, L0A, L0B, L0C and UB buffers "
                 "(T.alloc_L1 ... T.alloc_ub) take an address",
                 b->name, scope_name(b->scope));
    if (address < 0)
      user_error(loc, "T::annotate_address: the address of '{}' is {}, expected a byte offset >= 0",
                 b->name, address);
    int64_t before = b->address >= 0 ? b->address : -1;
    if (auto it = f.pins.find(b.get()); it != f.pins.end()) before = it->second;
    if (before >= 0 && before != address)
      user_error(loc,
                 "T::annotate_address: '{}' is already at address {} (address= or an earlier "
                 "annotation), this annotation gives {}",
                 b->name, before, address);
    f.pins[b.get()] = address;
  }
}

void annotate_l2_cache(const std::vector<std::pair<Buffer, L2CacheMode>>& modes, const Loc& l) {
  SourceLoc loc = source_loc(l);
  auto& f = lang::current(loc);
  for (const auto& [b, mode] : modes) {
    if (!b.defined()) user_error(loc, "T::annotate_l2_cache: a buffer is undefined");
    if (b->scope != MemScope::GM)
      user_error(loc,
                 "T::annotate_l2_cache: '{}' is a {} buffer; only GM tensors (kernel parameters "
                 "and T.alloc_workspace) have an L2 cache mode",
                 b->name, scope_name(b->scope));
    L2CacheMode before = b->l2_cache;
    bool set = before != L2CacheMode::Normal;
    if (auto it = f.l2_modes.find(b.get()); it != f.l2_modes.end()) {
      before = it->second;
      set = true;
    }
    if (set && before != mode)
      user_error(loc,
                 "T::annotate_l2_cache: '{}' already has L2 cache mode \"{}\", this annotation "
                 "gives \"{}\"",
                 b->name, l2_cache_name(before), l2_cache_name(mode));
    f.l2_modes[b.get()] = mode;
  }
}

Buffer view(std::string name, const Buffer& base, DType dtype, const Loc& l) {
  SourceLoc loc = source_loc(l);
  if (!base.defined()) user_error(loc, "T::view('{}'): the buffer to view is undefined", name);
  lang::claim_name(name, loc);
  Buffer b =
      BufferNode::make(name, dtype, base->shape, base->scope, base->strides, base->address, loc);
  emit(AllocateNode::make_view(b, base, loc), loc);
  return b;
}

void assign(const Buffer& var, Expr value, const Loc& l) {
  SourceLoc loc = source_loc(l);
  if (var->scope != MemScope::Var)
    user_error(loc, "T::assign: '{}' is a {} buffer, expected a scalar made by T::alloc_var",
               var->name, scope_name(var->scope));
  emit(StoreNode::make(var, {Expr(0)}, std::move(value), loc), loc);
}

void store(const Buffer& buf, std::vector<Expr> indices, Expr value, const Loc& l) {
  SourceLoc loc = source_loc(l);
  if (indices.size() != buf->ndim())
    user_error(loc, "T::store to '{}': {} indices for {} dimensions", buf->name, indices.size(),
               buf->ndim());
  emit(StoreNode::make(buf, std::move(indices), std::move(value), loc), loc);
}

}  // namespace T

const ElemRef& ElemRef::operator=(const Expr& value) const {
  if (buffer_.defined() && buffer_->scope == MemScope::Var && indices_.empty())
    T::assign(buffer_, value, at_);
  else
    T::store(buffer_, indices_, value, at_);
  return *this;
}

namespace T {

Var let(std::string name, Expr value, const Loc& l) {
  SourceLoc loc = source_loc(l);
  lang::claim_name(name, loc);
  Var v(std::move(name), value.dtype());
  emit(LetNode::make(v, std::move(value), loc), loc);
  return v;
}

void serial(Expr extent, const std::function<void(Expr)>& body, const Loc& l) {
  loop(Expr(0), std::move(extent), ForKind::Serial, 0, body, l, "i");
}
void serial(Expr min, Expr extent, const std::function<void(Expr)>& body, const Loc& l) {
  loop(std::move(min), std::move(extent), ForKind::Serial, 0, body, l, "i");
}
void unroll(Expr extent, const std::function<void(Expr)>& body, const Loc& l) {
  loop(Expr(0), std::move(extent), ForKind::Unrolled, 0, body, l, "u");
}
void Parallel(Expr extent, const std::function<void(Expr)>& body, const Loc& l) {
  loop(Expr(0), std::move(extent), ForKind::Parallel, 0, body, l, "p");
}
void Parallel(std::vector<Expr> extents, const std::function<void(Expr, Expr)>& body,
              const Loc& l) {
  if (extents.size() != 2)
    user_error(source_loc(l), "T::Parallel: a body of 2 indices needs 2 extents, got {}",
               extents.size());
  loop(
      Expr(0), extents[0], ForKind::Parallel, 0,
      [&](Expr i) {
        loop(
            Expr(0), extents[1], ForKind::Parallel, 0, [&](Expr j) { body(i, j); }, l, "j");
      },
      l, "i");
}
void Parallel(std::vector<Expr> extents, const std::function<void(Expr, Expr, Expr)>& body,
              const Loc& l) {
  if (extents.size() != 3)
    user_error(source_loc(l), "T::Parallel: a body of 3 indices needs 3 extents, got {}",
               extents.size());
  loop(
      Expr(0), extents[0], ForKind::Parallel, 0,
      [&](Expr i) {
        loop(
            Expr(0), extents[1], ForKind::Parallel, 0,
            [&](Expr j) {
              loop(
                  Expr(0), extents[2], ForKind::Parallel, 0, [&](Expr k) { body(i, j, k); }, l,
                  "k");
            },
            l, "j");
      },
      l, "i");
}
void Pipelined(Expr extent, int num_stages, const std::function<void(Expr)>& body, const Loc& l) {
  if (num_stages < 1)
    user_error(source_loc(l), "T::Pipelined: num_stages must be >= 1, got {}", num_stages);
  loop(Expr(0), std::move(extent), ForKind::Pipelined, num_stages, body, l, "k");
}

void serial(std::string name, Expr extent, const std::function<void(Expr)>& body, const Loc& l) {
  loop(Expr(0), std::move(extent), ForKind::Serial, 0, body, l, name.c_str());
}
void serial(std::string name, Expr min, Expr extent, const std::function<void(Expr)>& body,
            const Loc& l) {
  loop(std::move(min), std::move(extent), ForKind::Serial, 0, body, l, name.c_str());
}
void unroll(std::string name, Expr extent, const std::function<void(Expr)>& body, const Loc& l) {
  loop(Expr(0), std::move(extent), ForKind::Unrolled, 0, body, l, name.c_str());
}
void Parallel(std::string name, Expr extent, const std::function<void(Expr)>& body, const Loc& l) {
  loop(Expr(0), std::move(extent), ForKind::Parallel, 0, body, l, name.c_str());
}
void Pipelined(std::string name, Expr extent, int num_stages, const std::function<void(Expr)>& body,
               const Loc& l) {
  if (num_stages < 1)
    user_error(source_loc(l), "T::Pipelined: num_stages must be >= 1, got {}", num_stages);
  loop(Expr(0), std::move(extent), ForKind::Pipelined, num_stages, body, l, name.c_str());
}
void Pipelined(std::string name, Expr extent, int num_stages, PipelineOptions opt,
               const std::function<void(Expr)>& body, const Loc& l) {
  if (num_stages < 1)
    user_error(source_loc(l), "T::Pipelined: num_stages must be >= 1, got {}", num_stages);
  // Iterations t .. t + skew are in flight at once, each in its own slot: num_stages > skew.
  if (opt.skew < 1 || (opt.skew > 1 && opt.skew >= num_stages))
    user_error(source_loc(l),
               "T::Pipelined: skew must be >= 1 and below num_stages (each iteration in flight "
               "needs its own slot), got skew {} with num_stages {}",
               opt.skew, num_stages);
  loop(Expr(0), std::move(extent), ForKind::Pipelined, num_stages, body, l, name.c_str(), opt.skew);
}

void Persistent(std::vector<Expr> domain, Expr num_workers, Expr worker,
                const std::function<void(std::vector<Expr>)>& body, const Loc& l) {
  SourceLoc loc = source_loc(l);
  if (domain.empty()) user_error(loc, "T::Persistent: the tile domain is empty");
  Expr total = domain[0];
  for (size_t i = 1; i < domain.size(); ++i) total = total * domain[i];
  // Worker w takes tiles w, w + W, ...: a launch of more blocks than W workers, indexed by cid,
  // gives block b >= W tile b, which block b - W takes too in its second wave. Both compute and
  // store it, unordered (gemm/example_gemm_persistent.py: 32 blocks, 24 workers). When the
  // tile's result depends only on the tile, the two stores write the same bytes and the chip's
  // result is right whichever lands last: the hazard checker then reports a duplicate store (a
  // remark), different bytes a WAW hazard (docs/virtual_npu.md, "Duplicate stores"). A remark
  // here, as the work is done twice.
  if (!g_launches.empty() && worker.as<VarNode>() == g_launches.back().cid.get()) {
    auto blocks = as_const_int(g_launches.back().blocks), w = as_const_int(num_workers);
    auto tiles = as_const_int(total);
    if (blocks && w && tiles && *w > 0 && *w < std::min(*blocks, *tiles)) {
      const int64_t last = std::min(*blocks, *tiles) - 1;
      std::cerr << fmt::format(
          "{}: remark: T.Persistent: num_workers is {} but the kernel launches {} blocks and "
          "worker is cid: blocks {} to {} take tiles {} to {}, which blocks 0 to {} take again "
          "in their second wave; both compute and store them (a duplicate store, checked by the "
          "hazard checker); launch {} blocks or pass the block count as num_workers to do each "
          "tile once\n",
          loc.str(), *w, *blocks, *w, last, *w, last, last - *w, *w);
    }
  }
  serial(
      ceildiv(total, num_workers),
      [&](Expr it) {
        // The tile index is a let, so the guard below bounds a variable: the compiler then knows
        // every coordinate lies inside the domain (no tail handling for a whole number of tiles).
        Var tile(lang::unique_name("persistent_tile"));
        lang::emit(LetNode::make(tile, it * num_workers + worker, loc), loc);
        If(
            tile < total,
            [&] {
              std::vector<Expr> coords(domain.size());
              Expr rest = tile;
              for (size_t d = domain.size(); d-- > 0;) {
                coords[d] = d == 0 ? rest : rest % domain[d];
                rest = rest / domain[d];
              }
              body(coords);
            },
            nullptr, l);
      },
      l);
}

void If(Expr cond, const std::function<void()>& then_body, const std::function<void()>& else_body,
        const Loc& l) {
  SourceLoc loc = source_loc(l);
  Stmt t = capture(then_body, loc);
  Stmt e = else_body ? capture(else_body, loc) : Stmt();
  emit(IfNode::make(std::move(cond), t, e, loc), loc);
}

}  // namespace T
}  // namespace tl
