// The AscendC CPU model's launch and per-core context (include/ascendc_cpu/model.h): runs an
// AscendC kernel function once per core of every block on a tl::npu::DirectLaunch, and the
// synchronisation and scalar-access calls. The copies and vector calls are in ops.cpp.
//
// Scheduling: each block's three cores (AIC, AIV0, AIV1: KERNEL_TYPE_MIX_AIC_1_2) are three
// host threads of which exactly one runs at a time, holding the baton. A core keeps it until
// it finishes or meets a CrossCoreWaitFlag whose flag is not set; it then hands it to the next
// core in the fixed order AIC, AIV0, AIV1. The interleaving is thus a function of the program
// alone (same inputs, same trace, same outputs), as the VM's cooperative scheduler
// (src/npu/scheduler.cpp) is; blocks run one after the other (the VM's results do not depend
// on how blocks are spread either, docs/virtual_npu.md). When every unfinished core waits and
// none made progress since, the launch is a deadlock, reported with each core's wait.
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

/// Unwinds a core's thread when another core failed.
struct Abort {};

struct Sched {
  std::mutex mu;
  std::condition_variable cv;
  int turn = 0;
  std::array<bool, 3> done{};
  std::array<int64_t, 3> blocked_at{-1, -1, -1};  // progress count when its wait last failed
  std::array<std::string, 3> waits;
  int64_t progress = 0;  // statements executed by any core of the block
  bool abort = false;
  std::exception_ptr error;

  void wait_turn(int slot) {
    std::unique_lock<std::mutex> g(mu);
    cv.wait(g, [&] { return turn == slot || abort; });
    if (abort && turn != slot) throw Abort{};
  }
  /// Gives the baton to the next unfinished core after `slot` (itself if it is the only one).
  void pass(int slot) {
    std::lock_guard<std::mutex> g(mu);
    for (int k = 1; k <= 3; ++k) {
      int next = (slot + k) % 3;
      if (!done[next]) {
        turn = next;
        break;
      }
    }
    cv.notify_all();
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
  const int slot = c.kind == tl::CoreKind::Cube ? 0 : 1 + c.vid;
  while (true) {
    bool ok;
    try {
      ok = c.launch->direct.exec(c.kind, c.vid, s);
    } catch (const tl::Error& e) {
      // The VM's message names its tile op; say which AscendC call it came from.
      std::string msg = e.what();
      const std::string at = e.loc().known() ? e.loc().str() + ": " : std::string();
      if (!at.empty() && msg.rfind(at, 0) == 0) msg = msg.substr(at.size());
      throw tl::Error(loc_of(w), fmt::format("AscendC::{}: {}", w.api, msg));
    }
    if (ok) {
      ++sched->progress;
      sched->blocked_at[slot] = -1;
      return;
    }
    // A cross-core wait that cannot complete yet: deadlock if no core can move.
    sched->blocked_at[slot] = sched->progress;
    sched->waits[slot] = fmt::format("{}: {} at {}", c.name(), w.api, loc_of(w).str());
    bool stuck = true;
    std::string report;
    for (int k = 0; k < 3; ++k) {
      if (sched->done[k]) continue;
      if (sched->blocked_at[k] != sched->progress) stuck = false;
      report += "\n    " + sched->waits[k];
    }
    if (stuck)
      fail(w, fmt::format("deadlock: every core of block {} waits and none can move:{}", c.block,
                          report));
    sched->pass(slot);
    sched->wait_turn(slot);
  }
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
  for (int64_t b = 0; b < cfg.num_blocks; ++b) {
    Sched sched;
    std::array<CoreCtx, 3> cores;
    std::array<std::thread, 3> threads;
    for (int slot = 0; slot < 3; ++slot) {
      CoreCtx& c = cores[slot];
      c.launch = &lc;
      c.sched = &sched;
      c.block = b;
      c.kind = slot == 0 ? tl::CoreKind::Cube : tl::CoreKind::Vector;
      c.vid = slot == 0 ? 0 : slot - 1;
      lc.direct.start(b, c.kind, c.vid);
    }
    for (int slot = 0; slot < 3; ++slot)
      threads[slot] = std::thread([&, slot] {
        CoreCtx& c = cores[slot];
        g_ctx = &c;
        try {
          sched.wait_turn(slot);
          kernel();
          lc.direct.finish(c.kind, c.vid, !cfg.check_hazards);
        } catch (const Abort&) {
        } catch (...) {
          std::lock_guard<std::mutex> g(sched.mu);
          if (!sched.error) sched.error = std::current_exception();
          sched.abort = true;
        }
        g_ctx = nullptr;
        {
          std::lock_guard<std::mutex> g(sched.mu);
          sched.done[slot] = true;
        }
        sched.pass(slot);
      });
    for (auto& t : threads) t.join();
    if (sched.error) std::rethrow_exception(sched.error);
  }
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
  return c.launch->direct.scalar_access(c.kind, c.vid, b, 0, write, loc_of(w));
}

uint8_t* global_element(const Where& w, const GlobalRef& t, int64_t index, bool write) {
  CoreCtx& c = ctx(w);
  if (index < 0 || (t.count > 0 && index >= t.count))
    fail(w, fmt::format("element {} is outside the GlobalTensor's {} elements", index, t.count));
  const int64_t es = tl::dtype_bytes(t.dtype);
  tl::Buffer b = gm_view(w, t.addr + index * es, t.dtype, {1}, {1});
  return c.launch->direct.scalar_access(c.kind, c.vid, b, 0, write, loc_of(w));
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
