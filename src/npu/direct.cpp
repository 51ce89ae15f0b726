// Direct execution (tl/npu/direct.h): the cores of one block of a launch whose program is not
// Tile IR but a client issuing tile ops and syncs one at a time (the AscendC CPU model,
// docs/ascendc.md "CPU model"). It owns a Program with no body whose buffer table grows as the
// client declares buffers, a LaunchState holding the GM views, and core groups (AIC, AIV0,
// AIV1; physical blocks) whose memories persist from block to block as on the chip: one unless
// the client keeps several blocks resident at once (a SyncAll across blocks). Each statement goes
// through the interpreter's own paths (Core::exec_leaf, Core::exec_sync, record_op, record_sync),
// so the semantics, the checks and the trace are those of an interpreted launch.
#include "tl/npu/direct.h"

#include <deque>
#include <iostream>
#include <map>

#include <fmt/ranges.h>

#include "exec.h"
#include "program.h"
#include "tl/npu/trace.h"
#include "tl/op.h"
#include "tl/storage.h"
#include "trace_record.h"

namespace tl::npu {

namespace {
int slot_of(CoreKind k, int vid) {
  return k == CoreKind::Cube ? 0 : 1 + vid;
}
}  // namespace

// ---------------------------------------------------------------------------------------------
// The core's side: start / execute / record without a program body.

void Core::start_direct(int64_t b) {
  block = b;
  flags_.fill(0);
  trace_ = nullptr;
  if (launch.trace) {
    trace_ = &launch.trace->cores[b * 3 + slot_of(kind, vid)];
    trace_->block = b;
    trace_->kind = kind;
    trace_->vid = vid;
    trace_->phys = phys;
  }
  stack_.clear();
  recent_.clear();
  steps_ = steps_reported_ = 0;
  step_mark_ = INT64_MAX;
  own_loc_ = {};
  loc_ = &own_loc_;
  status_ = Status::Runnable;
}

bool Core::exec_direct(const StmtNode& s) {
  own_loc_ = s.loc;  // the client's statement may not outlive the call
  loc_ = &own_loc_;
  if (s.kind == StmtKind::Sync) {
    const auto& n = static_cast<const SyncNode&>(s);
    if (!exec_sync(n)) return false;
    if (trace_) record_sync(*this, *trace_, n);
  } else if (s.kind == StmtKind::TileOp) {
    exec_leaf(&s);
  } else {
    TL_ASSERT(false, "direct execution of a statement that is neither a tile op nor a sync");
  }
  recent_.push(&s);  // DirectLaunch keeps the statement alive while it is listed here
  ++steps_;
  return true;
}

void Core::record_direct(TraceEvent&& ev) {
  if (trace_) push_event(*trace_, std::move(ev));
}

// ---------------------------------------------------------------------------------------------

struct DirectLaunch::Impl {
  /// One core group (AIC, AIV0, AIV1) with its memories: a physical block.
  struct Group {
    std::array<std::array<CoreMemory, kNumMemScopes>, 3> mems;
    std::array<std::unique_ptr<Core>, 3> cores;
    std::array<std::deque<Stmt>, 3> recent;  // the statements the cores' recent_ lists point to
  };
  const Target* target = nullptr;
  Options opt;
  std::shared_ptr<Program> program;
  std::unique_ptr<LaunchState> ls;
  std::vector<std::unique_ptr<Group>> groups;  // created on first use; never moved
  std::map<std::string, Buffer> onchip;
  std::map<std::string, Buffer> gm;
  std::map<std::string, GmTensor> gm_names;

  Group& group(int g) {
    TL_ASSERT(g >= 0 && g < static_cast<int>(groups.size()), "no core group {}", g);
    return *groups[static_cast<size_t>(g)];
  }
  Core& core(CoreKind kind, int vid, int g) {
    TL_ASSERT(vid == 0 || (kind == CoreKind::Vector && vid == 1), "no core {} {}",
              kind == CoreKind::Cube ? "AIC" : "AIV", vid);
    return *group(g).cores[slot_of(kind, vid)];
  }
  void add_group() {
    auto grp = std::make_unique<Group>();
    const int phys = static_cast<int>(groups.size());
    for (int slot = 0; slot < 3; ++slot) {
      CoreKind kind = slot == 0 ? CoreKind::Cube : CoreKind::Vector;
      grp->cores[slot] = std::make_unique<Core>(*program, *ls, kind, slot == 0 ? 0 : slot - 1, phys,
                                                grp->mems[slot]);
      if (opt.poison)
        for (auto& span : grp->cores[slot]->mem) std::fill(span.begin(), span.end(), uint8_t{0xFF});
    }
    groups.push_back(std::move(grp));
    ls->physical_blocks = static_cast<int64_t>(groups.size());
    if (opt.trace) opt.trace->physical_blocks = static_cast<int>(groups.size());
  }
  Buffer add(Buffer b, BufferInfo info) {
    program->buffer_index.emplace(b.get(), static_cast<int>(program->buffers.size()));
    info.node = b.get();
    program->buffers.push_back(std::move(info));
    return b;
  }
};

DirectLaunch::DirectLaunch(Options opt) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  check_op_tables();
  m.target = opt.target ? opt.target : &default_target();
  if (opt.num_blocks < 1 || opt.num_blocks > kMaxLaunchBlocks)
    throw Error(fmt::format("{}: numBlocks {} is outside [1, {}]", opt.kernel, opt.num_blocks,
                            kMaxLaunchBlocks));
  m.opt = opt;
  m.program = std::make_shared<Program>();
  Program& p = *m.program;
  p.func = make_prim_func(opt.kernel, {}, {}, SeqNode::make({}));
  p.target = m.target;
  p.has_cube_code = true;
  for (MemScope s : {MemScope::L1, MemScope::L0A, MemScope::L0B, MemScope::L0C, MemScope::UB})
    p.scope_bytes[static_cast<size_t>(s)] = m.target->cap(s);
  m.ls = std::make_unique<LaunchState>(p);
  m.ls->num_blocks = opt.num_blocks;
  m.ls->physical_blocks = 1;
  m.ls->cross.assign(static_cast<size_t>(opt.num_blocks) * LaunchState::kCrossSlots, {});
  m.ls->trace = opt.trace;
  m.ls->digest_gm_stores = opt.trace != nullptr;  // the duplicate-store rule of the checker
  if (opt.trace) {
    opt.trace->kernel = opt.kernel;
    opt.trace->num_blocks = opt.num_blocks;
    opt.trace->physical_blocks = 1;
    opt.trace->cores.assign(static_cast<size_t>(opt.num_blocks) * 3, {});
  }
  m.ls->output.open(&std::cout, false);  // printf lines (none are issued yet)
  // SyncAll: the client runs the barrier itself (it alone knows when every block has arrived);
  // the statement it then issues passes at once and is recorded for the hazard checker.
  m.ls->barrier_participants = 1;
  m.add_group();
}

DirectLaunch::~DirectLaunch() = default;

const Target& DirectLaunch::target() const {
  return *impl_->target;
}
int64_t DirectLaunch::num_blocks() const {
  return impl_->opt.num_blocks;
}

Buffer DirectLaunch::gm_buffer(const std::string& name, const Tensor& view) {
  Impl& m = *impl_;
  std::string key = fmt::format("{}|{}|{}|{}|{}", name, static_cast<const void*>(view.data()),
                                fmt::join(view.shape(), ","), fmt::join(view.strides(), ","),
                                dtype_name(view.dtype()));
  if (auto it = m.gm.find(key); it != m.gm.end()) return it->second;
  std::vector<Expr> shape;
  for (int64_t d : view.shape()) shape.push_back(Expr(d));
  Buffer b = BufferNode::make(name, view.dtype(), shape, MemScope::GM);
  BufferInfo info;
  info.scope = MemScope::GM;
  info.param = static_cast<int>(m.ls->tensors.size());
  m.ls->tensors.push_back(view);
  m.gm.emplace(key, b);
  return m.add(b, std::move(info));
}

void DirectLaunch::name_gm_tensor(const std::string& name, const Tensor& whole) {
  impl_->gm_names[name] = GmTensor{reinterpret_cast<uintptr_t>(whole.data()),
                                   dtype_bytes(whole.dtype()), whole.shape(), whole.strides()};
}

Buffer DirectLaunch::onchip_buffer(const std::string& name, MemScope scope, int64_t offset,
                                   DType dtype, const std::vector<int64_t>& shape,
                                   const std::vector<int64_t>& strides) {
  Impl& m = *impl_;
  TL_ASSERT(scope != MemScope::GM, "onchip_buffer in GM");
  std::string key = fmt::format("{}|{}|{}|{}|{}|{}", name, scope_name(scope), offset,
                                dtype_name(dtype), fmt::join(shape, ","), fmt::join(strides, ","));
  if (auto it = m.onchip.find(key); it != m.onchip.end()) return it->second;
  TL_ASSERT(strides.empty() || strides.size() == shape.size(), "strides of rank {} for rank {}",
            strides.size(), shape.size());
  std::vector<Expr> eshape;
  for (int64_t d : shape) eshape.push_back(Expr(d));
  BufferInfo info;
  info.scope = scope;
  info.offset = offset;
  info.shape = shape;
  if (strides.empty()) {
    info.strides.assign(shape.size(), 1);
    for (size_t d = shape.size(); d-- > 1;) info.strides[d - 1] = info.strides[d] * shape[d];
    info.bytes = storage_bytes(scope, dtype, shape);
  } else {
    info.strides = strides;
    int64_t last = 0;
    for (size_t d = 0; d < shape.size(); ++d) last += (shape[d] - 1) * strides[d];
    info.bytes = (last + 1) * dtype_bytes(dtype);
  }
  const int64_t cap = m.target->cap(scope);
  if (offset < 0 || offset > cap || info.bytes > cap - offset)
    throw Error(fmt::format("{}: '{}' covers bytes [{}, {}) of {}, which has {} bytes",
                            m.opt.kernel, name, offset, offset + info.bytes, scope_name(scope),
                            cap));
  Buffer b = BufferNode::make(name, dtype, eshape, scope, {}, offset);
  m.onchip.emplace(key, b);
  return m.add(b, std::move(info));
}

int DirectLaunch::core_groups() const {
  return static_cast<int>(impl_->groups.size());
}

void DirectLaunch::start(int64_t block, CoreKind kind, int vid, int group) {
  Impl& m = *impl_;
  TL_ASSERT(block >= 0 && block < m.opt.num_blocks, "block {} of {}", block, m.opt.num_blocks);
  TL_ASSERT(group >= 0 && group <= static_cast<int>(m.groups.size()) && group < m.opt.num_blocks,
            "core group {} of {}", group, m.groups.size());
  if (group == static_cast<int>(m.groups.size())) m.add_group();
  Core& c = m.core(kind, vid, group);
  c.start_direct(block);
  m.group(group).recent[slot_of(kind, vid)].clear();
  if (CoreTrace* ct = c.trace())
    for (const auto& [name, t] : m.gm_names) ct->gm.try_emplace(name, t);
}

bool DirectLaunch::exec(CoreKind kind, int vid, const Stmt& s, int group) {
  Impl& m = *impl_;
  Core& c = m.core(kind, vid, group);
  if (s->kind == StmtKind::TileOp) {
    const auto& n = static_cast<const TileOpNode&>(*s.get());
    auto where = op_core(n, *m.target);
    if (where && *where != kind)
      throw Error(s->loc,
                  fmt::format("{} ({}): T.{} runs on the {}, not here", c.name(), m.opt.kernel,
                              n.op->name, *where == CoreKind::Cube ? "AIC" : "AIVs"));
  }
  auto& keep = m.group(group).recent[slot_of(kind, vid)];
  keep.push_back(s);
  if (!c.exec_direct(*s.get())) {
    keep.pop_back();
    return false;
  }
  if (keep.size() > 8) keep.pop_front();
  return true;
}

uint8_t* DirectLaunch::scalar_access(CoreKind kind, int vid, const Buffer& b, int64_t index,
                                     bool write, const SourceLoc& loc, int group) {
  Impl& m = *impl_;
  Core& c = m.core(kind, vid, group);
  BufferRegion r{b, {}};
  // Element `index` of the buffer in row-major order of its shape.
  std::vector<int64_t> idx(b->shape.size());
  int64_t rem = index;
  for (size_t d = b->shape.size(); d-- > 0;) {
    const int64_t n = *as_const_int(b->shape[d]);
    idx[d] = n > 0 ? rem % n : 0;
    rem = n > 0 ? rem / n : rem;
  }
  if (index < 0 || rem != 0)
    throw Error(loc, fmt::format("{} ({}): {}: element {} is outside '{}' ({} elements)", c.name(),
                                 m.opt.kernel, write ? "SetValue" : "GetValue", index, b->name,
                                 index < 0 ? 0 : index - rem));
  for (int64_t i : idx) r.ranges.push_back({Expr(i), Expr(1)});
  TileRef t = c.resolve(r, write ? "store" : "load", b->name);
  if (CoreTrace* ct = c.trace()) {
    TraceEvent ev;
    ev.kind = EventKind::Op;
    ev.pipe = Pipe::S;
    ev.loc = loc;
    ev.name = write ? "store" : "load";
    ev.accesses = accesses_of(c, t, write, ct);
    c.record_direct(std::move(ev));
  }
  return t.at_flat(0);
}

void DirectLaunch::finish(CoreKind kind, int vid, bool check_flags, int group) {
  Core& c = impl_->core(kind, vid, group);
  if (check_flags) {
    auto pending = c.pending_flags();
    if (!pending.empty())
      throw Error(fmt::format("{} ({}): the block ended with flags set that no wait consumed: {}",
                              c.name(), impl_->opt.kernel, fmt::join(pending, ", ")));
  }
  c.finish_direct();
}

CoreMemory& DirectLaunch::memory(CoreKind kind, int vid, MemScope scope, int group) {
  return impl_->group(group).mems[slot_of(kind, vid)][static_cast<size_t>(scope)];
}

}  // namespace tl::npu
