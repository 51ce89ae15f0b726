// The AscendC emitter's skeleton: the kernel entry and its parameters, the TBuf of each memory
// with the planned buffers in it, the block index, the AIC/AIV scopes, scalar code (loops,
// branches, declarations, scalar loads and stores), the synchronisation statements, and the
// host launch stub. Tile ops go to the per-family files (emit_move.cpp, emit_vector.cpp,
// emit_cube.cpp ...), scalar expressions to emit_expr.cpp. The API pages cited are asc-devkit's
// docs/api/context pages of the same name (docs/ascendc.md lists them).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "emitter.h"
#include "tl/arith.h"
#include "tl/ir_functor.h"
#include "tl/ir_ops.h"
#include "tl/npu/numerics.h"
#include "tl/ops.h"
#include "tl/storage.h"

namespace tl::ascendc {
namespace {

// C++ keywords and names the emitted file itself uses: an IR name equal to one is renamed.
const std::set<std::string>& reserved() {
  static const std::set<std::string> r = {
      "alignas",  "alignof",    "and",      "asm",       "auto",      "bool",      "break",
      "case",     "catch",      "char",     "class",     "const",     "constexpr", "continue",
      "default",  "delete",     "do",       "double",    "else",      "enum",      "explicit",
      "extern",   "false",      "float",    "for",       "friend",    "goto",      "if",
      "inline",   "int",        "long",     "mutable",   "namespace", "new",       "not",
      "operator", "or",         "private",  "protected", "public",    "register",  "return",
      "short",    "signed",     "sizeof",   "static",    "struct",    "switch",    "template",
      "this",     "throw",      "true",     "try",       "typedef",   "typename",  "union",
      "unsigned", "using",      "virtual",  "void",      "volatile",  "while",     "xor",
      "half",     "bfloat16_t", "int8_t",   "uint8_t",   "int16_t",   "uint16_t",  "int32_t",
      "uint32_t", "int64_t",    "uint64_t", "AscendC",   "GM_ADDR",   "pipe",      "main"};
  return r;
}

std::string sanitize(const std::string& s) {
  std::string o;
  for (char c : s) o += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (o.empty() || std::isdigit(static_cast<unsigned char>(o[0]))) o = "v_" + o;
  return o;
}

std::string pipe_macro(Pipe p) {
  return "PIPE_" + std::string(pipe_name(p));
}

/// Bit 1: a T.sync_all in cube code, bit 2: in vector code (outside a scope: both).
int sync_all_kinds(const Stmt& body) {
  struct V : IRVisitor {
    int kinds = 0, core = 0;
    void visit_(const SyncNode* n) override {
      if (n->sync_kind == SyncKind::SyncAll) kinds |= core == 0 ? 3 : core;
    }
    void visit_(const ScopeNode* n) override {
      const int saved = core;
      core = n->core == CoreKind::Cube ? 1 : 2;
      IRVisitor::visit_(n);
      core = saved;
    }
  } v;
  v.visit(body);
  return v.kinds;
}

}  // namespace

Emitter::Emitter(const PrimFunc& f, const Target& t, const EmitOptions& o)
    : f_(f), target_(t), opt_(o) {
  for (const auto& r : reserved()) used_.insert(r);
}

void Emitter::unsupported(const SourceLoc& loc, const std::string& what) const {
  throw Error(loc, fmt::format("AscendC emitter: {} has no AscendC form in the emitter (kernel "
                               "{}; docs/ascendc.md, \"Not emitted yet\")",
                               what, f_->name));
}

std::string Emitter::fresh(const std::string& base, bool internal) {
  std::string b = sanitize(base);
  if (!internal && b.starts_with("tl_")) b = "u_" + b;  // tl_ names are the emitter's own
  std::string n = b;
  for (int i = 1; used_.count(n); ++i) n = fmt::format("{}_{}", b, i);
  used_.insert(n);
  return n;
}

std::string Emitter::var(const Var& v) {
  auto it = vars_.find(v.node());
  if (it != vars_.end()) return it->second;
  return vars_[v.node()] = fresh(v.name());
}

std::string Emitter::bind(const Var& v) {
  Bound b{v.node(), fresh(v.name()), std::nullopt};
  if (auto it = vars_.find(v.node()); it != vars_.end()) b.previous = it->second;
  vars_[v.node()] = b.name;
  frames_.back().push_back(b);
  return b.name;
}

void Emitter::pop_frame() {
  TL_ASSERT(frames_.size() > 1, "AscendC emitter: a C++ block closed that was never opened");
  auto& frame = frames_.back();
  for (auto it = frame.rbegin(); it != frame.rend(); ++it) {
    used_.erase(it->name);
    if (!it->var) continue;
    if (it->previous) {
      vars_[it->var] = *it->previous;
    } else {
      vars_.erase(it->var);
    }
  }
  frames_.pop_back();
}

const std::string& Emitter::name(const Buffer& b) {
  auto it = bufs_.find(b.get());
  if (it != bufs_.end()) return it->second;
  return bufs_[b.get()] = fresh(b->name);
}

void Emitter::line(const std::string& text, const SourceLoc& loc) {
  std::string l(static_cast<size_t>(indent_) * 2, ' ');
  l += text;
  if (opt_.locations && loc.known()) l += fmt::format("  // {}:{}", loc.file, loc.line);
  out_ += l + "\n";
}
void Emitter::open(const std::string& text, const SourceLoc& loc) {
  line(text.empty() ? "{" : text + " {", loc);
  ++indent_;
  frames_.emplace_back();
}
void Emitter::close() {
  pop_frame();
  --indent_;
  line("}");
}

std::string Emitter::ctype(DType t, const SourceLoc& loc, const Emitter* e) {
  switch (t) {
    case DType::Bool:
      return "bool";
    case DType::Int8:
      return "int8_t";
    case DType::Int16:
      return "int16_t";
    case DType::Int32:
      return "int32_t";
    case DType::Int64:
      return "int64_t";
    case DType::UInt8:
      return "uint8_t";
    case DType::UInt16:
      return "uint16_t";
    case DType::UInt32:
      return "uint32_t";
    case DType::UInt64:
      return "uint64_t";
    case DType::Float16:
      return "half";
    case DType::BFloat16:
      return "bfloat16_t";
    case DType::Float32:
      return "float";
    default:
      break;
  }
  const std::string what = fmt::format("dtype {}", dtype_name(t));
  if (e) e->unsupported(loc, what);
  throw Error(loc, "AscendC emitter: " + what + " has no AscendC element type");
}

// ---- statements ------------------------------------------------------------------------------

void Emitter::stmt(const Stmt& s) {
  const SourceLoc& loc = s->loc;
  switch (s.kind()) {
    case StmtKind::Seq:
      for (const auto& x : s.as<SeqNode>()->stmts) stmt(x);
      return;
    case StmtKind::For: {
      auto* n = s.as<ForNode>();
      // The loop variable and its end live in the for statement's own block (opened below).
      const std::string t = ctype(n->var.dtype(), loc);
      const std::string min = expr(n->min, loc), stop = expr(n->min + n->extent, loc);
      frames_.emplace_back();
      std::string v = bind(n->var);
      // The extent is evaluated once, at the loop's entry (tl/ir.h).
      std::string end = fresh(v + "_end");
      frames_.back().push_back({nullptr, end, std::nullopt});
      {
        const auto m = arith::bound(n->min, ivs_), x = arith::bound(n->extent, ivs_);
        ivs_[n->var.node()] = {m.lo, std::max(m.lo, static_cast<int64_t>(std::min<__int128>(
                                                        __int128(m.hi) + x.hi - 1, INT64_MAX)))};
      }
      line(fmt::format("for ({0} {1} = {2}, {3} = {4}; {1} < {3}; ++{1}) {{", t, v, min, end, stop),
           loc);
      ++indent_;  // not open(): the block's frame is the one pushed above
      stmt(n->body);
      close();
      return;
    }
    case StmtKind::If: {
      auto* n = s.as<IfNode>();
      open(fmt::format("if ({})", expr(n->cond, loc)), loc);
      stmt(n->then_case);
      if (n->else_case.defined()) {
        pop_frame();
        --indent_;
        open("} else");
        stmt(n->else_case);
      }
      close();
      return;
    }
    case StmtKind::Let: {
      auto* n = s.as<LetNode>();
      std::string value = expr(n->value, loc);
      ivs_[n->var.node()] = arith::bound(n->value, ivs_);
      line(fmt::format("const {} {} = {};", ctype(n->var.dtype(), loc), bind(n->var), value), loc);
      return;
    }
    case StmtKind::Allocate: {
      auto* n = s.as<AllocateNode>();
      const Buffer& b = n->buffer;
      const std::string t = ctype(b->dtype, loc);
      if (b->scope == MemScope::GM) {
        line(fmt::format("// workspace '{}': the kernel argument {}_handle", b->name, name(b)),
             loc);
        return;
      }
      if (b->scope == MemScope::Var) {
        auto elems = const_product(b->shape);
        if (!elems)
          unsupported(loc, fmt::format("the variable '{}' of non-constant size", b->name));
        line(fmt::format("{} {}[{}];", t, name(b), *elems), loc);
        return;
      }
      if (n->is_view()) {
        // LocalTensor::ReinterpretCast ("ReinterpretCast" API page): the same bytes as T.
        line(fmt::format("AscendC::LocalTensor<{}> {} = {}.ReinterpretCast<{}>();", t, name(b),
                         name(n->view_of), t),
             loc);
        return;
      }
      std::vector<int64_t> shape;
      for (const auto& d : b->shape) {
        auto c = as_const_int(d);
        if (!c) unsupported(loc, fmt::format("the on-chip buffer '{}' of dynamic shape", b->name));
        shape.push_back(*c);
      }
      if (b->address < 0) unsupported(loc, fmt::format("the unplanned buffer '{}'", b->name));
      const char* tbuf = nullptr;
      switch (b->scope) {
        case MemScope::UB:
          tbuf = "tl_ub";
          break;
        case MemScope::L1:
          tbuf = "tl_l1";
          break;
        case MemScope::L0A:
          tbuf = "tl_l0a";
          break;
        case MemScope::L0B:
          tbuf = "tl_l0b";
          break;
        case MemScope::L0C:
          tbuf = "tl_l0c";
          break;
        default:
          unsupported(loc, fmt::format("a buffer in {} ('{}')", scope_name(b->scope), b->name));
      }
      // UB buffers own whole 32-byte blocks (every planned address is 32-byte aligned): a
      // padded copy into a buffer whose size is not whole blocks writes its last block's tail.
      int64_t bytes = storage_bytes(b->scope, b->dtype, shape);
      if (b->scope == MemScope::UB) bytes = (bytes + 31) / 32 * 32;
      // TBuf::GetWithOffset ("GetWithOffset" API page): `elems` elements at byte `offset`.
      line(fmt::format("AscendC::LocalTensor<{}> {} = {}.GetWithOffset<{}>({}, {});", t, name(b),
                       tbuf, t, bytes / dtype_bytes(b->dtype), b->address),
           loc);
      return;
    }
    case StmtKind::Store: {
      auto* n = s.as<StoreNode>();
      const Buffer& b = n->buffer;
      std::string v = scalar(n->value, b->dtype, loc);
      if (b->scope == MemScope::Var) {
        std::string idx = n->indices.empty() ? "0" : expr(n->indices[0], loc);
        line(fmt::format("{}[{}] = {};", name(b), idx, v), loc);
        return;
      }
      if (b->scope != MemScope::GM && b->scope != MemScope::UB)
        unsupported(loc,
                    fmt::format("a scalar store to '{}' in {}", b->name, scope_name(b->scope)));
      Expr off = 0, stride = 1;
      for (size_t d = n->indices.size(); d-- > 0;) {
        off = off + n->indices[d] * (b->strides.empty() ? stride : b->strides[d]);
        stride = stride * b->shape[d];
      }
      // SetValue: LocalTensor / GlobalTensor "SetValue" API pages.
      line(fmt::format("{}.SetValue({}, {});", name(b), expr(off, loc), v), loc);
      return;
    }
    case StmtKind::TileOp:
      tile_op(*s.as<TileOpNode>());
      return;
    case StmtKind::Sync:
      sync(*s.as<SyncNode>());
      return;
    case StmtKind::Scope: {
      auto* n = s.as<ScopeNode>();
      if (in_scope_) unsupported(loc, "a core scope nested in another");
      in_scope_ = true;
      // ASCEND_IS_AIC / ASCEND_IS_AIV: the mixed-kernel core test ("混合编程" pages).
      open(n->core == CoreKind::Cube ? "if ASCEND_IS_AIC" : "if ASCEND_IS_AIV", loc);
      stmt(n->body);
      close();
      in_scope_ = false;
      return;
    }
    case StmtKind::Kernel:
      unsupported(loc, "a second T.Kernel");
  }
}

void Emitter::tile_op(const TileOpNode& n) {
  // A leading dimension (beyond the last two) whose extent is an expression worth 0 or 1 (a
  // copy clipped at a tensor's end, docs/developer_mode.md "Tails"): the op runs with extent
  // 1 under `if (extent > 0)`, so the matrix paths see whole matrices.
  std::vector<Expr> guards;
  std::vector<TileArg> args = n.args;
  for (auto& a : args) {
    if (!a.is_region()) continue;
    const size_t nd = a.region.ranges.size();
    for (size_t d = 0; d + 2 < nd; ++d) {
      Range& r = a.region.ranges[d];
      if (!r.extent.defined() || as_const_int(r.extent)) continue;
      const auto b = arith::bound(r.extent, ivs_);
      if (b.lo < 0 || b.hi > 1) continue;
      bool seen = false;
      for (const auto& g : guards) seen = seen || g.same_as(r.extent);
      if (!seen) guards.push_back(r.extent);
      r.extent = 1;
    }
  }
  if (!guards.empty()) {
    std::string cond;
    for (const auto& g : guards)
      cond += (cond.empty() ? "" : " && ") + fmt::format("({} > 0)", expr(g, n.loc));
    open(fmt::format("if ({})", cond), n.loc);
    Stmt one = TileOpNode::make(n.op, args, n.attrs, n.loc);
    tile_op(*one.as<TileOpNode>());
    close();
    return;
  }
  if (emit_activation(n) || emit_reduce(n) || emit_progression(n) || emit_vector(n) ||
      emit_cube(n) || emit_sort(n))
    return;
  if (n.op == &ops::copy()) return emit_copy(n);
  if (n.op == &ops::dcci()) return emit_dcci(n);
  unsupported(n.loc, fmt::format("T.{}", n.op->name));
}

void Emitter::sync(const SyncNode& n) {
  const SourceLoc& loc = n.loc;
  switch (n.sync_kind) {
    case SyncKind::SetFlag:
    case SyncKind::WaitFlag: {
      // SetFlag/WaitFlag ("SetFlag/WaitFlag(ISASI)" API page): HardEvent SRC_DST, event id.
      const char* fn = n.sync_kind == SyncKind::SetFlag ? "SetFlag" : "WaitFlag";
      line(fmt::format("AscendC::{}<AscendC::HardEvent::{}_{}>({});", fn, pipe_name(n.src),
                       pipe_name(n.dst), expr(n.event_id, loc)),
           loc);
      return;
    }
    case SyncKind::PipeBarrier:
      // PipeBarrier ("PipeBarrier(ISASI)" API page).
      line(fmt::format("AscendC::PipeBarrier<{}>();", pipe_macro(n.src)), loc);
      return;
    case SyncKind::BarrierAll:
      line("AscendC::PipeBarrier<PIPE_ALL>();", loc);
      return;
    case SyncKind::SetCrossFlag:
      // CrossCoreSetFlag ("CrossCoreSetFlag(ISASI)" API page): mode and pipe as template args.
      line(fmt::format("AscendC::CrossCoreSetFlag<{}, {}>({});", n.mode, pipe_macro(n.src),
                       expr(n.event_id, loc)),
           loc);
      return;
    case SyncKind::WaitCrossFlag:
      // CrossCoreWaitFlag ("CrossCoreWaitFlag(ISASI)" API page).
      line(fmt::format("AscendC::CrossCoreWaitFlag({});", expr(n.event_id, loc)), loc);
      return;
    case SyncKind::SyncAll: {
      // SyncAll ("SyncAll" API page): SyncAll<true> (isAIVOnly) is a barrier over every AIV of
      // the launch, SyncAll<false> over every core. Who takes part is the virtual NPU's rule:
      // the kinds of core whose code has a T.sync_all (outside a core scope: both).
      const int kinds = sync_all_kinds(f_->body);
      if (kinds == 1)
        unsupported(loc, "T.sync_all in cube code only (SyncAll has no AIC-only form)");
      line(kinds == 2 ? "AscendC::SyncAll<true>();" : "AscendC::SyncAll<false>();", loc);
      return;
    }
  }
}

// ---- the kernel ------------------------------------------------------------------------------

void Emitter::declare_buffers_and_params() {
  // GlobalTensor::SetGlobalBuffer ("SetGlobalBuffer" API page); the kernel's workspaces are
  // arguments after the tensors (the caller allocates them, as the virtual NPU's launch does).
  std::vector<Buffer> gm;
  for (const auto& p : f_->params)
    if (p.is_tensor()) gm.push_back(p.tensor);
  gm.insert(gm.end(), workspaces_.begin(), workspaces_.end());
  for (const auto& b : gm) {
    const std::string t = ctype(b->dtype, f_->loc);
    const std::string& n = name(b);
    used_.insert(n + "_handle");
    line(fmt::format("AscendC::GlobalTensor<{}> {};", t, n));
    line(fmt::format("{}.SetGlobalBuffer((__gm__ {}*){}_handle);", n, t, n));
    // T.annotate_l2_cache ("SetL2CacheHint" API page; the default mode is CACHE_MODE_NORMAL).
    if (b->l2_cache == L2CacheMode::Disable)
      line(fmt::format("{}.SetL2CacheHint(AscendC::CacheMode::CACHE_MODE_DISABLE);", n));
  }
  // One TBuf per memory, the target's whole capacity ("TBuf" and "InitBuffer" API pages).
  struct Mem {
    MemScope s;
    const char* pos;
    const char* name;
  };
  for (const Mem& m : {Mem{MemScope::UB, "VECCALC", "tl_ub"}, Mem{MemScope::L1, "A1", "tl_l1"},
                       Mem{MemScope::L0A, "A2", "tl_l0a"}, Mem{MemScope::L0B, "B2", "tl_l0b"},
                       Mem{MemScope::L0C, "CO1", "tl_l0c"}}) {
    if (!scopes_.count(m.s)) continue;
    line(fmt::format("AscendC::TBuf<AscendC::TPosition::{}> {};", m.pos, m.name));
    line(fmt::format("tl_pipe.InitBuffer({}, {});", m.name, target_.cap(m.s)));
  }
}

std::string Emitter::ub_scratch(DType t, int64_t bytes, const SourceLoc& loc) {
  const int64_t base = (ub_end_ + 31) / 32 * 32;
  if (base + bytes > target_.cap(MemScope::UB))
    unsupported(loc, fmt::format("an op needing {} bytes of UB scratch (the planned buffers end "
                                 "at {}, UB holds {})",
                                 bytes, ub_end_, target_.cap(MemScope::UB)));
  scratch_bytes_ = std::max(scratch_bytes_, bytes);
  auto it = scratch_.find(t);
  if (it != scratch_.end()) return it->second;
  return scratch_[t] = fmt::format("tl_scratch_{}", dtype_name(t));
}

void Emitter::kernel(const KernelNode& k) {
  if (k.developer())
    unsupported(k.loc, "a developer-mode kernel before lowering (emit the tl::lower output)");
  vars_[k.cid.node()] = fresh(k.cid.name());
  vars_[k.vid.node()] = fresh(k.vid.name());
  const std::string cid = vars_[k.cid.node()], vid = vars_[k.vid.node()];
  const auto nb = arith::bound(k.num_blocks, ivs_);
  ivs_[k.cid.node()] = {0, std::max<int64_t>(nb.hi - 1, 0)};
  ivs_[k.vid.node()] = {0, 1};
  // Mixed kernel, 1 AIC : 2 AIV per block ("KERNEL_TASK_TYPE_DEFAULT" API page): GetBlockIdx
  // counts AIVs on the vector cores, so a block's index is half of it; GetSubBlockIdx is vid.
  line(fmt::format("int32_t {} = 0;", cid));
  line(fmt::format("int32_t {} = 0;", vid));
  line(fmt::format("if ASCEND_IS_AIC {{ {} = AscendC::GetBlockIdx(); }}", cid));
  line(fmt::format(
      "if ASCEND_IS_AIV {{ {} = AscendC::GetBlockIdx() / 2; {} = AscendC::GetSubBlockIdx(); }}",
      cid, vid));
  stmt(k.body);
}

void Emitter::host_stub() {
  const KernelNode* k = kernel_of(f_);
  out_ += "\n#ifndef TL_ASCENDC_NO_HOST_STUB\n";
  out_ +=
      "// Host launch in the form of a CANN project's kernel invocation (<<<numBlocks, l2ctrl,\n";
  out_ += "// stream>>>): one block = 1 AIC + 2 AIV (KERNEL_TYPE_MIX_AIC_1_2).\n";
  // The kernel's argument order: tensors, workspaces, scalar parameters, dynamic sizes.
  std::string params = "void* stream", args;
  auto add = [&](const std::string& type, const std::string& n) {
    params += fmt::format(", {} {}", type, n);
    args += fmt::format("{}{}", args.empty() ? "" : ", ", n);
  };
  for (const auto& p : f_->params)
    if (p.is_tensor()) add("uint8_t*", name(p.tensor));
  for (const auto& w : workspaces_) add("uint8_t*", name(w));
  for (const auto& p : f_->params)
    if (!p.is_tensor()) add(ctype(p.scalar.dtype(), f_->loc), vars_.at(p.scalar.node()));
  for (const auto& d : f_->dynamics) add("int32_t", vars_.at(d.node()));
  out_ += fmt::format("extern \"C\" void {}_launch({}) {{\n", f_->name, params);
  out_ += fmt::format("  const uint32_t numBlocks = static_cast<uint32_t>({});\n",
                      expr(k->num_blocks, k->loc));
  out_ += fmt::format("  {}<<<numBlocks, nullptr, stream>>>({});\n", f_->name, args);
  out_ += "}\n#endif  // TL_ASCENDC_NO_HOST_STUB\n";
}

std::string Emitter::run() {
  const KernelNode* k = kernel_of(f_);
  if (!k) unsupported(f_->loc, "a function without a T.Kernel");
  // Which memories the kernel uses, and where its planned UB buffers end (the scratch above).
  struct Scan : IRVisitor {
    Emitter* e = nullptr;
    void visit_(const AllocateNode* n) override {
      const Buffer& b = n->buffer;
      if (b->scope == MemScope::GM) e->workspaces_.push_back(b);
      if (b->scope == MemScope::Var || b->scope == MemScope::GM || n->is_view()) return;
      e->scopes_.insert(b->scope);
      if (b->scope == MemScope::UB && b->address >= 0) {
        std::vector<int64_t> shape;
        for (const auto& d : b->shape)
          if (auto c = as_const_int(d)) shape.push_back(*c);
        if (shape.size() == b->shape.size())
          e->ub_end_ = std::max(e->ub_end_, b->address + storage_bytes(b->scope, b->dtype, shape));
      }
    }
    void visit_(const TileOpNode* n) override {
      if (n->op == &ops::gemm_v0()) {  // loads into L0A/L0B at offset 0 (tl/op.h)
        e->scopes_.insert(MemScope::L0A);
        e->scopes_.insert(MemScope::L0B);
      }
      IRVisitor::visit_(n);
    }
  } scan;
  scan.e = this;
  scan.visit(f_->body);

  out_ += fmt::format("// {}: AscendC source generated by tl-ascend from {} for target {} ({}).\n",
                      f_->name, f_->loc.known() ? f_->loc.str() : "IR text", target_.name,
                      target_.chip);
  out_ +=
      "// One TBuf per on-chip memory; every buffer at the address tl-ascend's memory "
      "planning chose.\n";
  out_ += "#include \"kernel_operator.h\"\n\n";
  out_ +=
      "// Integer helpers of the Tile IR: min/max, floor division and modulo (toward -infinity).\n";
  out_ +=
      "__aicore__ inline int64_t tl_floordiv(int64_t a, int64_t b) {\n"
      "  const int64_t q = a / b;\n"
      "  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;\n}\n";
  out_ +=
      "template <typename T>\n__aicore__ inline T tl_min(T a, T b) { return a < b ? a : b; }\n"
      "template <typename T>\n__aicore__ inline T tl_max(T a, T b) { return a > b ? a : b; }\n";
  out_ +=
      "__aicore__ inline int64_t tl_floormod(int64_t a, int64_t b) {\n"
      "  const int64_t r = a % b;\n"
      "  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;\n}\n\n";

  // Signature: tensors as GM_ADDR, then scalar parameters and dynamic sizes by value. Those
  // may go unused (a dynamic size only a host-side check reads), hence [[maybe_unused]]: an
  // emitted file must compile cleanly under -Wall -Wextra -Werror.
  std::string sig;
  for (const auto& p : f_->params) {
    if (p.is_tensor())
      sig += fmt::format("{}GM_ADDR {}_handle", sig.empty() ? "" : ", ", name(p.tensor));
  }
  for (const auto& w : workspaces_)
    sig += fmt::format("{}GM_ADDR {}_handle", sig.empty() ? "" : ", ", name(w));
  for (const auto& p : f_->params) {
    if (p.is_tensor()) continue;
    std::string n = var(p.scalar);
    sig += fmt::format("{}[[maybe_unused]] {} {}", sig.empty() ? "" : ", ",
                       ctype(p.scalar.dtype(), f_->loc), n);
  }
  for (const auto& d : f_->dynamics) {
    if (d.dtype() != DType::Int32)
      unsupported(f_->loc, fmt::format("the dynamic size '{}' of dtype {}", d.name(),
                                       dtype_name(d.dtype())));
    sig += fmt::format("{}[[maybe_unused]] int32_t {}", sig.empty() ? "" : ", ", var(d));
  }
  out_ +=
      fmt::format("extern \"C\" __global__ __aicore__ void {}({}) {{\n", sanitize(f_->name), sig);
  used_.insert(sanitize(f_->name));
  indent_ = 1;
  line("KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);", f_->loc);
  line("AscendC::TPipe tl_pipe;");
  declare_buffers_and_params();
  scratch_pos_ = out_.size();
  // Statements before the kernel (rare: Lets at function level) run on every core too.
  if (auto* seq = f_->body.as<SeqNode>()) {
    for (const auto& s : seq->stmts) {
      if (s.kind() == StmtKind::Kernel)
        kernel(*s.as<KernelNode>());
      else
        stmt(s);
    }
  } else {
    kernel(*k);
  }
  indent_ = 0;
  out_ += "}\n";
  if (!scratch_.empty()) {
    std::string decls;
    const int64_t base = (ub_end_ + 31) / 32 * 32;
    for (const auto& [t, n] : scratch_)
      decls += fmt::format(
          "  AscendC::LocalTensor<{}> {} = tl_ub.GetWithOffset<{}>({}, {});  // "
          "scratch above the planned UB buffers\n",
          ctype(t, f_->loc), n, ctype(t, f_->loc), scratch_bytes_ / dtype_bytes(t), base);
    if (!scopes_.count(MemScope::UB))
      decls = fmt::format(
                  "  AscendC::TBuf<AscendC::TPosition::VECCALC> tl_ub;\n  "
                  "tl_pipe.InitBuffer(tl_ub, {});\n",
                  target_.cap(MemScope::UB)) +
              decls;
    out_.insert(scratch_pos_, decls);
  }
  if (opt_.host_stub) host_stub();
  return out_;
}

std::string emit(const PrimFunc& lowered, const Target& target, const EmitOptions& opt) {
  TL_ASSERT(lowered != nullptr, "ascendc::emit: no function");
  return Emitter(lowered, target, opt).run();
}

}  // namespace tl::ascendc
