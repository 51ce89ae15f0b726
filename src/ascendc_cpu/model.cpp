// The AscendC CPU model's launch and per-core context (include/ascendc_cpu/model.h): runs an
// AscendC kernel function once per core of every block on a tl::npu::DirectLaunch, and the
// synchronisation and scalar-access calls. The copies and vector calls are in ops.cpp.
//
// Scheduling: every core (AIC, AIV0, AIV1 of each block: KERNEL_TYPE_MIX_AIC_1_2) is a host
// thread, and exactly one of them runs at a time. The launching thread is the scheduler: a core
// runs until it finishes, meets a CrossCoreWaitFlag whose flag is not set, or arrives at a
// SyncAll, and then hands control back. The scheduler runs one block at a time, its cores in
// the fixed order AIC, AIV0, AIV1 (round robin while they make progress), on a core group
// (physical block) whose memories persist from block to block as on the chip. A block whose
// cores all wait at a SyncAll (or on a cross-core flag behind one) stays resident, on its core
// group, and the next block starts on the next group; once every block has arrived the barrier
// opens and the scheduler resumes the blocks in order. Every decision is a function of the
// program alone (same inputs, same trace, same outputs), as the VM's cooperative scheduler
// (src/npu/scheduler.cpp) is. A deadlock -- the cores of a block all waiting on cross-core
// flags with no SyncAll to wait for, or a SyncAll that some participant never reaches -- is
// an error naming every waiting core and its line.
#include <algorithm>
#include <array>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

#include "ascendc_cpu/model.h"
#include "internal.h"
#include "tl/npu/hazard.h"
#include "tl/npu/numerics.h"
#include "tl/npu/trace.h"

namespace ascendc_cpu {

namespace {

/// Unwinds a core's thread when the launch stops (another core failed).
struct Abort {};

constexpr int kScheduler = -1;  // the baton's holder when no core runs

struct Sched {
  std::mutex mu;
  std::condition_variable cv;
  int turn = kScheduler;  // the core (block * 3 + slot) that may run
  bool abort = false;
  std::exception_ptr error;
  int64_t progress = 0;  // statements executed by any core
  struct Core {
    bool done = false;
    int64_t blocked_at = -1;  // progress count when its cross-core wait last failed
    int barrier = 0;          // 1: arrived at a SyncAll, waiting; 2: released, to pass it
    std::string wait;         // what it waits on, for deadlock reports
  };
  std::vector<Core> cores;
  // The barrier: arrivals of the current generation and who takes part (every AIV, or every
  // core: SyncAll<isAIVOnly>), set by the first arrival.
  int64_t arrived = 0;
  int aiv_only = -1;

  /// Called by core `me`: hands the baton to the scheduler and waits for it to come back.
  void yield(int me) {
    std::unique_lock<std::mutex> g(mu);
    turn = kScheduler;
    cv.notify_all();
    cv.wait(g, [&] { return turn == me || abort; });
    if (abort) throw Abort{};
  }
  /// Called by the scheduler: lets core `c` run until it hands the baton back.
  void run(int c) {
    std::unique_lock<std::mutex> g(mu);
    turn = c;
    cv.notify_all();
    cv.wait(g, [&] { return turn == kScheduler; });
  }
};

thread_local CoreCtx* g_ctx = nullptr;

}  // namespace

CoreCtx& ctx(const Where& w) {
  if (!g_ctx)
    throw tl::Error(
        tl::SourceLoc(w.file, w.line),
        fmt::format("{} called outside a kernel launched by ascendc_cpu::launch", w.api));
  return *g_ctx;
}

tl::SourceLoc loc_of(const Where& w) {
  return tl::SourceLoc(w.file, w.line);
}

void fail(const Where& w, const std::string& msg) {
  std::string who = g_ctx ? g_ctx->name() : std::string("host");
  throw tl::Error(loc_of(w), fmt::format("{} ({}): {}: {}", who,
                                         g_ctx ? g_ctx->launch->cfg.kernel : "?", w.api, msg));
}

std::string CoreCtx::name() const {
  return kind == tl::CoreKind::Cube ? fmt::format("block {} AIC", block)
                                    : fmt::format("block {} AIV{}", block, vid);
}

void run(const Where& w, const tl::Stmt& s) {
  CoreCtx& c = ctx(w);
  auto* sched = static_cast<Sched*>(c.sched);
  const int me = static_cast<int>(c.block * 3 + (c.kind == tl::CoreKind::Cube ? 0 : 1 + c.vid));
  while (true) {
    bool ok;
    try {
      ok = c.launch->direct.exec(c.kind, c.vid, s, c.group);
    } catch (const tl::Error& e) {
      // The VM's message names its tile op; say which AscendC call it came from.
      std::string msg = e.what();
      const std::string at = e.loc().known() ? e.loc().str() + ": " : std::string();
      if (!at.empty() && msg.rfind(at, 0) == 0) msg = msg.substr(at.size());
      throw tl::Error(loc_of(w), fmt::format("AscendC::{}: {}", w.api, msg));
    }
    auto& st = sched->cores[static_cast<size_t>(me)];
    if (ok) {
      ++sched->progress;
      st.blocked_at = -1;
      return;
    }
    // A cross-core wait that cannot complete yet: the scheduler runs another core first.
    st.blocked_at = sched->progress;
    st.wait = fmt::format("{}: {} at {}", c.name(), w.api, loc_of(w).str());
    sched->yield(me);
  }
}

void sync_all(const Where& w, bool aiv_only) {
  CoreCtx& c = ctx(w);
  auto* sched = static_cast<Sched*>(c.sched);
  if (aiv_only && c.kind == tl::CoreKind::Cube)
    fail(w, "SyncAll<true> (isAIVOnly) synchronises the AIVs; the AIC cannot call it");
  const int me = static_cast<int>(c.block * 3 + (c.kind == tl::CoreKind::Cube ? 0 : 1 + c.vid));
  auto& st = sched->cores[static_cast<size_t>(me)];
  if (sched->aiv_only >= 0 && sched->aiv_only != static_cast<int>(aiv_only))
    fail(w, fmt::format("SyncAll<{}> while other cores wait at SyncAll<{}>", aiv_only,
                        sched->aiv_only == 1));
  sched->aiv_only = aiv_only;
  ++sched->arrived;
  st.barrier = 1;
  st.wait = fmt::format("{}: SyncAll at {}", c.name(), loc_of(w).str());
  while (st.barrier != 2) sched->yield(me);
  st.barrier = 0;
  // Every participant arrived: the statement passes and is recorded (the hazard checker orders
  // what every block did before it ahead of what any block does after it).
  run(w, tl::SyncNode::make(tl::SyncKind::SyncAll, Pipe::ALL, Pipe::ALL, tl::Expr(), 0, loc_of(w)));
}

const GmArg& find_gm(const Where& w, const uint8_t* addr, int64_t bytes) {
  CoreCtx& c = ctx(w);
  for (const auto& t : c.launch->cfg.tensors) {
    const uint8_t* base = t.tensor.data();
    if (addr >= base && addr < base + t.tensor.nbytes()) {
      if (bytes > base + t.tensor.nbytes() - addr)
        fail(w, fmt::format("GM access of {} bytes from element {} of '{}' ({}) runs past its end",
                            bytes, (addr - base) / tl::dtype_bytes(t.tensor.dtype()), t.name,
                            t.tensor.describe()));
      return t;
    }
  }
  fail(w,
       "a GM address that lies in no tensor of the launch (SetGlobalBuffer with a pointer "
       "the host did not pass?)");
}

void launch(const LaunchConfig& cfg, const std::function<void()>& kernel) {
  tl::npu::Trace local;
  tl::npu::Trace* trace = cfg.trace ? cfg.trace : &local;
  LaunchCtx lc(cfg, trace);
  for (const auto& t : cfg.tensors) {
    if (!t.tensor.defined() || !t.tensor.device())
      throw tl::Error(
          fmt::format("{}: GM argument '{}' is not a tensor on a device", cfg.kernel, t.name));
    lc.direct.name_gm_tensor(t.name, t.tensor);
  }
  const int64_t nb = cfg.num_blocks;
  Sched sched;
  sched.cores.resize(static_cast<size_t>(nb * 3));
  std::vector<CoreCtx> cores(static_cast<size_t>(nb * 3));
  std::vector<std::thread> threads(static_cast<size_t>(nb * 3));
  std::vector<int> group_of(static_cast<size_t>(nb), -1);  // a resident block's core group
  std::vector<bool> group_busy;
  const int64_t max_groups = lc.direct.target().num_aic;

  auto start_block = [&](int64_t b) {
    int g = 0;
    while (g < static_cast<int>(group_busy.size()) && group_busy[static_cast<size_t>(g)]) ++g;
    if (g == static_cast<int>(group_busy.size())) {
      if (g >= max_groups)
        throw tl::Error(fmt::format(
            "{}: blocks 0..{} wait at a SyncAll and block {} cannot start: a SyncAll needs "
            "every block resident at once ({} blocks, {} AICs on {})",
            cfg.kernel, b - 1, b, nb, max_groups, lc.direct.target().name));
      group_busy.push_back(false);
    }
    group_busy[static_cast<size_t>(g)] = true;
    group_of[static_cast<size_t>(b)] = g;
    for (int slot = 0; slot < 3; ++slot) {
      const size_t i = static_cast<size_t>(b * 3 + slot);
      CoreCtx& c = cores[i];
      c.launch = &lc;
      c.sched = &sched;
      c.block = b;
      c.group = g;
      c.kind = slot == 0 ? tl::CoreKind::Cube : tl::CoreKind::Vector;
      c.vid = slot == 0 ? 0 : slot - 1;
      lc.direct.start(b, c.kind, c.vid, g);
    }
    for (int slot = 0; slot < 3; ++slot) {
      const int me = static_cast<int>(b * 3 + slot);
      threads[static_cast<size_t>(me)] = std::thread([&, me] {
        CoreCtx& c = cores[static_cast<size_t>(me)];
        g_ctx = &c;
        try {
          {
            std::unique_lock<std::mutex> g(sched.mu);
            sched.cv.wait(g, [&] { return sched.turn == me || sched.abort; });
            if (sched.abort) throw Abort{};
          }
          kernel();
          lc.direct.finish(c.kind, c.vid, !cfg.check_hazards, c.group);
        } catch (const Abort&) {
        } catch (...) {
          std::lock_guard<std::mutex> g(sched.mu);
          if (!sched.error) sched.error = std::current_exception();
        }
        g_ctx = nullptr;
        std::lock_guard<std::mutex> g(sched.mu);
        sched.cores[static_cast<size_t>(me)].done = true;
        sched.turn = kScheduler;
        sched.cv.notify_all();
      });
    }
  };
  auto stop_all = [&] {
    {
      std::lock_guard<std::mutex> g(sched.mu);
      sched.abort = true;
      sched.cv.notify_all();
    }
    for (auto& t : threads)
      if (t.joinable()) t.join();
  };
  auto core = [&](int64_t i) -> Sched::Core& { return sched.cores[static_cast<size_t>(i)]; };
  auto block_done = [&](int64_t b) {
    return core(b * 3).done && core(b * 3 + 1).done && core(b * 3 + 2).done;
  };

  // Runs block b's cores in order while any can move; true when one made progress.
  auto run_block = [&](int64_t b) {
    bool moved = false;
    while (true) {
      bool any = false;
      for (int slot = 0; slot < 3; ++slot) {
        const int64_t i = b * 3 + slot;
        Sched::Core& st = core(i);
        if (st.done || st.barrier == 1) continue;
        if (st.blocked_at >= 0 && st.blocked_at == sched.progress) continue;  // nothing new
        const int64_t before = sched.progress;
        const bool was_done = st.done;
        sched.run(static_cast<int>(i));
        if (sched.error) return moved;
        if (sched.progress != before || st.done != was_done || st.barrier == 1) any = true;
      }
      if (!any) return moved;
      moved = true;
    }
  };

  try {
    int64_t next = 0;  // the next block to start
    while (true) {
      // Run the resident blocks in order, then start the next one.
      bool moved = false;
      for (int64_t b = 0; b < next; ++b) {
        if (group_of[static_cast<size_t>(b)] < 0) continue;  // finished earlier
        moved |= run_block(b);
        if (sched.error) std::rethrow_exception(sched.error);
        if (block_done(b)) {
          for (int slot = 0; slot < 3; ++slot) threads[static_cast<size_t>(b * 3 + slot)].join();
          group_busy[static_cast<size_t>(group_of[static_cast<size_t>(b)])] = false;
          group_of[static_cast<size_t>(b)] = -1;
          continue;
        }
        // The block cannot move: a wait on a cross-core flag with no core of it at a SyncAll
        // can never complete.
        bool at_barrier = false;
        for (int slot = 0; slot < 3; ++slot) at_barrier |= core(b * 3 + slot).barrier == 1;
        if (!at_barrier) {
          std::string report;
          for (int slot = 0; slot < 3; ++slot)
            if (!core(b * 3 + slot).done) report += "\n    " + core(b * 3 + slot).wait;
          throw tl::Error(
              fmt::format("{}: deadlock: every core of block {} waits and none can "
                          "move:{}",
                          cfg.kernel, b, report));
        }
      }
      if (next < nb) {
        start_block(next++);
        continue;
      }
      bool resident = false;
      for (int64_t b = 0; b < nb; ++b) resident |= group_of[static_cast<size_t>(b)] >= 0;
      if (!resident) break;
      // Every block started and none can move: the SyncAll opens if every participant arrived.
      const int64_t participants = sched.aiv_only == 1 ? 2 * nb : 3 * nb;
      if (sched.arrived == participants) {
        for (auto& st : sched.cores)
          if (st.barrier == 1) st.barrier = 2;
        sched.arrived = 0;
        sched.aiv_only = -1;
        continue;
      }
      if (!moved) {
        std::string report;
        for (int64_t i = 0; i < nb * 3; ++i)
          if (!core(i).done) report += "\n    " + core(i).wait;
        throw tl::Error(fmt::format(
            "{}: deadlock at SyncAll: {} of {} participating cores arrived; the others finished "
            "or wait elsewhere:{}",
            cfg.kernel, sched.arrived, participants, report));
      }
    }
  } catch (...) {
    stop_all();
    if (sched.error) std::rethrow_exception(sched.error);
    throw;
  }
  for (auto& t : threads)
    if (t.joinable()) t.join();
  if (cfg.check_hazards) tl::npu::throw_on_hazards(*trace, lc.direct.target());
}

// ---- The current core ------------------------------------------------------------------------

namespace {
const Where kQuery{"", 0, "GetBlockIdx"};
}
bool on_aic() {
  return ctx(kQuery).kind == tl::CoreKind::Cube;
}
int64_t block_idx() {
  const CoreCtx& c = ctx(kQuery);
  return c.kind == tl::CoreKind::Cube ? c.block : c.block * 2 + c.vid;
}
int64_t block_num() {
  return ctx(kQuery).launch->cfg.num_blocks;
}
int64_t sub_block_idx() {
  return ctx(kQuery).vid;
}
int64_t capacity(MemScope s) {
  return ctx(kQuery).launch->direct.target().cap(s);
}

// ---- Synchronisation ------------------------------------------------------------------------

namespace {
tl::Expr event_id(const Where& w, int64_t id) {
  if (id < 0 || id > INT32_MAX) fail(w, fmt::format("event id {} is negative or too large", id));
  return tl::Expr(static_cast<int>(id));
}
}  // namespace

void set_flag(const Where& w, Pipe src, Pipe dst, int64_t id) {
  run(w, tl::SyncNode::make(tl::SyncKind::SetFlag, src, dst, event_id(w, id), 0, loc_of(w)));
}
void wait_flag(const Where& w, Pipe src, Pipe dst, int64_t id) {
  run(w, tl::SyncNode::make(tl::SyncKind::WaitFlag, src, dst, event_id(w, id), 0, loc_of(w)));
}
void pipe_barrier(const Where& w, Pipe p) {
  if (p == Pipe::S) fail(w, "PipeBarrier<PIPE_S> does not exist (the scalar pipe is in order)");
  auto kind = p == Pipe::ALL ? tl::SyncKind::BarrierAll : tl::SyncKind::PipeBarrier;
  run(w, tl::SyncNode::make(kind, p, p, tl::Expr(), 0, loc_of(w)));
}
void cross_set(const Where& w, int mode, Pipe p, int64_t id) {
  if (mode < 0 || mode > 2) fail(w, fmt::format("mode {} is not 0, 1 or 2", mode));
  run(w, tl::SyncNode::make(tl::SyncKind::SetCrossFlag, p, p, event_id(w, id), mode, loc_of(w)));
}
void cross_wait(const Where& w, int64_t id) {
  run(w, tl::SyncNode::make(tl::SyncKind::WaitCrossFlag, Pipe::S, Pipe::S, event_id(w, id), 0,
                            loc_of(w)));
}

// ---- Scalar access ----------------------------------------------------------------------------

uint8_t* local_element(const Where& w, const LocalRef& t, int64_t index, bool write) {
  CoreCtx& c = ctx(w);
  if (index < 0 || (t.count > 0 && index >= t.count))
    fail(w, fmt::format("element {} is outside the tensor's {} elements", index, t.count));
  const int64_t es = tl::dtype_bytes(t.dtype);
  tl::Buffer b =
      c.launch->direct.onchip_buffer(local_name(t), t.scope, t.offset + index * es, t.dtype, {1});
  return c.launch->direct.scalar_access(c.kind, c.vid, b, 0, write, loc_of(w), c.group);
}

uint8_t* global_element(const Where& w, const GlobalRef& t, int64_t index, bool write) {
  CoreCtx& c = ctx(w);
  if (index < 0 || (t.count > 0 && index >= t.count))
    fail(w, fmt::format("element {} is outside the GlobalTensor's {} elements", index, t.count));
  const int64_t es = tl::dtype_bytes(t.dtype);
  tl::Buffer b = gm_view(w, t.addr + index * es, t.dtype, {1}, {1});
  return c.launch->direct.scalar_access(c.kind, c.vid, b, 0, write, loc_of(w), c.group);
}

void dcci(const Where& w, const uint8_t* addr, bool entire) {
  // The tensor the line overlaps: an emitted kernel passes each line by its 64-byte aligned
  // start, which may lie before the tensor's first byte.
  const auto line = reinterpret_cast<uintptr_t>(addr) / 64 * 64;
  const GmArg* t = nullptr;
  for (const auto& g : ctx(w).launch->cfg.tensors) {
    const auto start = reinterpret_cast<uintptr_t>(g.tensor.data());
    const auto end = start + static_cast<uintptr_t>(g.tensor.nbytes());
    if ((entire ? reinterpret_cast<uintptr_t>(addr) : line) < end &&
        (entire ? reinterpret_cast<uintptr_t>(addr) + 1 : line + 64) > start)
      t = &g;
  }
  if (!t) fail(w, "a GM address that lies in no tensor of the launch");
  uint8_t* base = t->tensor.data();
  const int64_t bytes = t->tensor.nbytes(), es = tl::dtype_bytes(t->tensor.dtype());
  int64_t lo = 0, hi = bytes;  // byte offsets in the tensor
  if (!entire) {
    const auto start = reinterpret_cast<uintptr_t>(base);
    lo = line > start ? static_cast<int64_t>(line - start) : 0;
    hi = std::min<int64_t>(bytes, static_cast<int64_t>(line + 64 - start));
  }
  const int64_t first = lo / es, count = (hi + es - 1) / es - first;
  tl::Buffer b = gm_view(w, base + first * es, t->tensor.dtype(), {count}, {1});
  exec_op(w, "dcci", {tl::BufferRegion::full(b)}, {{"entire", entire}});
}

float f16_to_float(uint16_t bits) {
  return tl::npu::f16_to_f32(bits);
}
uint16_t float_to_f16(float x) {
  return tl::npu::f32_to_f16(x);
}
float bf16_to_float(uint16_t bits) {
  return tl::npu::bf16_to_f32(bits);
}
uint16_t float_to_bf16(float x) {
  return tl::npu::f32_to_bf16(x);
}

}  // namespace ascendc_cpu
