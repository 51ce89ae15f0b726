// Random instruction traces for the hazard checker's tests (hazard_index_test.cpp compares the
// checker with the linear scan on them, hazard_stream_test.cpp the checker while a launch runs
// with the checker after it).
#pragma once

#include <random>
#include <string>

#include "tl/npu/trace.h"
#include "tl/ops.h"

namespace tl::npu {

/// A random trace: `blocks` blocks of 3 cores, ops on every pipe touching strided ranges of GM
/// (shared), UB and L1 (per core), random flags (some unmatched), barriers, a sync_all in some,
/// scalar GM loads / stores and dccis, atomic adds and digested GM stores of a few digests (so
/// identical stores occur). With `inputs`, half the GM reads read a tensor no access writes
/// (the checker neither tests nor records those: hazard.cpp, `inert`).
inline Trace random_trace(std::mt19937_64& rng, int blocks, bool sync_all, bool inputs = false) {
  Trace t;
  t.kernel = "random";
  t.num_blocks = blocks;
  t.physical_blocks = blocks;
  t.cores.resize(static_cast<size_t>(blocks) * 3);
  const Pipe pipes[] = {Pipe::S, Pipe::V, Pipe::M, Pipe::MTE1, Pipe::MTE2, Pipe::MTE3, Pipe::FIX};
  const int nev = 20 + static_cast<int>(rng() % 60);
  for (size_t ci = 0; ci < t.cores.size(); ++ci) {
    CoreTrace& ct = t.cores[ci];
    ct.block = static_cast<int64_t>(ci / 3);
    ct.kind = ci % 3 == 0 ? CoreKind::Cube : CoreKind::Vector;
    ct.vid = ci % 3 == 0 ? 0 : static_cast<int>(ci % 3) - 1;
    auto access = [&](bool gm) {
      Access a;
      if (!gm)
        a.mem = {rng() % 2 ? MemScope::UB : MemScope::L1, static_cast<int32_t>(ct.block),
                 static_cast<int>(ci % 3)};
      // Small address spaces, so that ranges meet; GM around a host-like base.
      a.start = (gm ? 0x10000 : 0) + (rng() % 64) * 32 + rng() % 3;
      a.len = 1 + rng() % 96;
      a.count = rng() % 3 == 0 ? 1 : 1 + rng() % 12;
      a.pitch = a.count > 1 ? a.len + (rng() % 3) * (rng() % 200) : 0;
      if (rng() % 10 == 0) a.len = 1 + rng() % 3000;  // a long one widens the old queries
      a.write = rng() % 2 == 0;
      a.buffer = gm ? (rng() % 2 ? "X" : "Y") : "buf" + std::to_string(rng() % 3);
      if (gm && a.write) {
        a.atomic = rng() % 8 == 0;
        if (!a.atomic && rng() % 2) {
          a.digested = true;
          a.digest = {rng() % 3, 0};
          if (rng() % 2) {  // one of two GM tiles: identical stores of one range happen
            a.start = rng() % 2 ? 0x10000 : 0x10400;
            a.len = 64;
            a.count = 4;
            a.pitch = 256;
          }
        }
      }
      if (inputs && gm && !a.write && rng() % 2) {
        a.start += 0x30000;
        a.buffer = "Z";
      }
      return a;
    };
    for (int i = 0; i < nev; ++i) {
      TraceEvent e;
      e.loc = SourceLoc{"k.py", static_cast<int>(1 + rng() % 12)};
      const int kind = static_cast<int>(rng() % 20);
      if (sync_all && i == nev / 2) {
        e.kind = EventKind::SyncAll;
        e.pipe = Pipe::ALL;
        e.name = "sync_all";
      } else if (kind < 12) {
        e.kind = EventKind::Op;
        e.pipe = pipes[rng() % 7];
        e.name = "op" + std::to_string(rng() % 4);
        int n = 1 + static_cast<int>(rng() % 2);
        for (int k = 0; k < n; ++k) e.accesses.push_back(access(rng() % 2 == 0));
        if (e.pipe == Pipe::M && rng() % 2) {
          e.cost = CostClass::Mmad;
          e.accumulates = rng() % 2;
          e.m = e.n = 16;
          e.accesses.push_back(Access{
              .mem = {MemScope::L0C, static_cast<int32_t>(ct.block), static_cast<int>(ci % 3)},
              .start = 0,
              .len = 1024,
              .write = true,
              .buffer = "c"});
        }
      } else if (kind < 14) {
        e.kind = EventKind::Op;  // a scalar GM load or store, or a dcci
        e.pipe = Pipe::S;
        Access a = access(true);
        a.atomic = false;
        a.digested = false;
        a.count = 1;
        a.len = 1 + rng() % 8;
        if (rng() % 3 == 0) {
          e.name = ops::dcci().name;
          e.mode = static_cast<int>(rng() % 2);
          a.write = true;
          a.len = 1 + rng() % 512;
        } else {
          e.name = a.write ? "store" : "load";
        }
        e.accesses.push_back(a);
      } else if (kind < 17) {
        e.kind = rng() % 2 ? EventKind::SetFlag : EventKind::WaitFlag;
        e.pipe = pipes[rng() % 7];
        e.dst = pipes[rng() % 7];
        e.id = static_cast<int>(rng() % 2);
        e.name = e.kind == EventKind::SetFlag ? "set_flag" : "wait_flag";
      } else {
        e.kind = EventKind::Barrier;
        e.pipe = rng() % 3 == 0 ? Pipe::ALL : pipes[rng() % 7];
        e.name = "pipe_barrier";
      }
      ct.events.push_back(std::move(e));
    }
  }
  return t;
}

}  // namespace tl::npu
