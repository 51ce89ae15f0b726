// Rules of synchronization statements: event ids and HardEvent pairs of set_flag/wait_flag,
// pipes per core, pipe_barrier's pipe, cross-core flag ids, modes and pipes. All limits come
// from the Target.
#include <algorithm>

#include "verify_util.h"

namespace tl::rules {
namespace {

std::string ids(const std::vector<int>& v) {
  std::string s;
  for (int i : v) s += (s.empty() ? "" : ", ") + std::to_string(i);
  return "{" + s + "}";
}
std::string pipes(const std::vector<Pipe>& v) {
  std::string s;
  for (Pipe p : v) s += (s.empty() ? "" : ", ") + std::string(pipe_name(p));
  return "{" + s + "}";
}
bool contains(const std::vector<int>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

void check_pipe_core(const SyncNode& n, VerifyContext& ctx, const std::string& op,
                     const std::string& operand, Pipe p) {
  auto core = ctx.core();
  if (!core || ctx.target().pipe_on_core(p, *core)) return;
  const auto& on = *core == CoreKind::Cube ? ctx.target().cube_pipes : ctx.target().vector_pipes;
  ctx.error(n.loc, op, operand, "pipe-core",
            fmt::format("pipe {} does not exist on the {} core; T::Scope(Core::{}) has pipes {}",
                        pipe_name(p), core_name(*core), core_name(*core), pipes(on)));
}

void require_scope(const SyncNode& n, VerifyContext& ctx, const std::string& op) {
  if (!ctx.core())
    ctx.error(n.loc, op, "", "op-outside-scope",
              "expert mode needs flags and barriers inside T::Scope(Core::Cube) or "
              "T::Scope(Core::Vector), to name the core whose pipes they order");
}

}  // namespace

void check_sync(const SyncNode& n, VerifyContext& ctx) {
  const Target& t = ctx.target();
  const std::string op = fmt::format("T.{}", sync_name(n.sync_kind));
  switch (n.sync_kind) {
    case SyncKind::SetFlag:
    case SyncKind::WaitFlag: {
      require_scope(n, ctx, op);
      // Event ids [0, num_event_ids), all of them the author's: AscendC's SetFlag/WaitFlag
      // page (hiascend.com, ascendcopapi atlasascendc_api_07_0270, "eventID ... Atlas A2/A3:
      // 0-7") reserves none; only TPipe/TQue code must take its ids from AllocEventID /
      // FetchEventID, and TileLang-Ascend's kernels allocate TBufs, no TQue (issue 29: ids 6-7
      // were refused as "reserved by the runtime", which no public page says).
      if (auto id = const_int(n.event_id)) {
        if (*id < 0 || *id >= t.num_event_ids)
          ctx.error(n.loc, op, "event_id", "event-id-range",
                    fmt::format("expected an event id in [0, {}) on {}, got {}", t.num_event_ids,
                                t.name, *id));
      } else if (n.event_id.defined() && !is_int(n.event_id.dtype())) {
        ctx.error(n.loc, op, "event_id", "event-id-range",
                  fmt::format("expected an integer event id, got a {} expression",
                              dtype_name(n.event_id.dtype())));
      }
      if (!t.hard_event_ok(n.src, n.dst))
        ctx.error(n.loc, op, "pipes", "hard-event",
                  fmt::format("{} -> {} is not a HardEvent on {}; a flag orders two pipes of one "
                              "core that have a hardware event between them",
                              pipe_name(n.src), pipe_name(n.dst), t.name));
      check_pipe_core(n, ctx, op, "src", n.src);
      check_pipe_core(n, ctx, op, "dst", n.dst);
      return;
    }
    case SyncKind::PipeBarrier:
      require_scope(n, ctx, op);
      if (n.src == Pipe::S)
        ctx.error(n.loc, op, "pipe", "pipe-barrier-pipe",
                  "pipe_barrier orders an asynchronous pipe; the scalar pipe S runs in order and "
                  "has no barrier. Expected V, M, MTE1, MTE2, MTE3, FIX or ALL");
      else
        check_pipe_core(n, ctx, op, "pipe", n.src);
      return;
    case SyncKind::SetCrossFlag:
    case SyncKind::WaitCrossFlag: {
      require_scope(n, ctx, op);
      if (auto id = const_int(n.event_id)) {
        if (*id < 0 || *id >= t.num_cross_flags)
          ctx.error(n.loc, op, "event_id", "cross-flag-id-range",
                    fmt::format("expected a cross-core flag id in [0, {}) on {}, got {}",
                                t.num_cross_flags, t.name, *id));
        else if (contains(t.sync_all_cross_flags, *id))
          ctx.error(n.loc, op, "event_id", "cross-flag-reserved",
                    fmt::format("cross-core flag {} is used by sync_all on {} (ids {}); pick "
                                "another id",
                                *id, t.name, ids(t.sync_all_cross_flags)));
      }
      if (n.sync_kind == SyncKind::SetCrossFlag) {
        if (n.mode < 0 || n.mode >= t.num_cross_flag_modes)
          ctx.error(n.loc, op, "mode", "cross-flag-mode",
                    fmt::format("expected mode in [0, {}) (0: all AICs or all AIVs, 1: the two "
                                "AIVs of a block, 2: AIC <-> its AIVs), got {}",
                                t.num_cross_flag_modes, n.mode));
        const auto& ok = t.cross_flag_pipes;
        if (std::find(ok.begin(), ok.end(), n.src) == ok.end())
          ctx.error(n.loc, op, "pipe", "cross-flag-pipe",
                    fmt::format("set_cross_flag is issued on one of {}, got {}", pipes(ok),
                                pipe_name(n.src)));
        else
          check_pipe_core(n, ctx, op, "pipe", n.src);
      }
      return;
    }
    case SyncKind::BarrierAll:
    case SyncKind::SyncAll:
      return;
  }
}

}  // namespace tl::rules
