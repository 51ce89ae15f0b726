// The hazard checker (tl/npu/hazard.h) on small hand-written kernels: each missing sync is
// reported with both instructions and their source lines, and the synchronised version is clean.
#include <gtest/gtest.h>

#include "load_exp_store.h"
#include "tl/lang.h"
#include "tl/npu/hazard.h"
#include "tl/npu/npu.h"
#include "tl/npu/trace.h"

namespace tl {
namespace {

using npu::Hazard;

constexpr int R = 8, C = 64;  // a small fp32 tile

std::vector<Hazard> hazards_of(const PrimFunc& f, int blocks_rows = 1) {
  Device dev;
  auto kern = compile(f, default_target(), {.cache = false});
  Tensor X = uniform(dev, {blocks_rows * 2 * R, C}, f32, 1),
         Y = Tensor::empty(dev, {blocks_rows * 2 * R, C}, f32);
  npu::Trace trace;
  kern.launch(dev, {X, Y}, {.threads = 1, .trace = &trace});
  EXPECT_TRUE(npu::check_flags(trace).empty());
  return npu::check_hazards(trace);
}

std::string all(const std::vector<Hazard>& hs) {
  std::string s;
  for (const auto& h : hs) s += h.str() + "\n";
  return s;
}

TEST(Hazard, MissingMte2ToVFlagIsReported) {
  int copy_line = 0, exp_line = 0;
  auto hs = hazards_of(load_exp_store(R, C, false, &copy_line, &exp_line));
  ASSERT_EQ(hs.size(), 1u) << all(hs);  // deduplicated: both AIVs, one pair of lines
  const Hazard& h = hs[0];
  EXPECT_EQ(h.kind, "RAW");
  EXPECT_EQ(h.count, 2);
  EXPECT_EQ(h.first.op, "copy");
  EXPECT_EQ(h.first.pipe, Pipe::MTE2);
  EXPECT_TRUE(h.first.write);
  EXPECT_EQ(h.first.buffer, "x_ub");
  EXPECT_EQ(h.first.loc.line, copy_line);
  EXPECT_EQ(h.second.op, "tile.exp");
  EXPECT_EQ(h.second.pipe, Pipe::V);
  EXPECT_FALSE(h.second.write);
  EXPECT_EQ(h.second.loc.line, exp_line);
  EXPECT_EQ(h.first.start, 0u);
  EXPECT_EQ(h.first.end, uint64_t{R} * C * 4);
  EXPECT_EQ(h.memory, "UB of block 0 AIV0");
  std::string s = h.str();
  EXPECT_NE(s.find("copy (MTE2, block 0 AIV0) writes x_ub"), std::string::npos) << s;
  EXPECT_NE(s.find("tile.exp (V, block 0 AIV0) reads x_ub"), std::string::npos) << s;
  EXPECT_NE(s.find(fmt::format(":{}", exp_line)), std::string::npos) << s;
  EXPECT_NE(s.find(fmt::format(":{}", copy_line)), std::string::npos) << s;
}

TEST(Hazard, WithTheFlagIsClean) {
  int a = 0, b = 0;
  auto hs = hazards_of(load_exp_store(R, C, true, &a, &b));
  EXPECT_TRUE(hs.empty()) << all(hs);
}

TEST(Hazard, LaunchOptionThrowsListingTheHazard) {
  int a = 0, b = 0;
  Device dev;
  auto kern = compile(load_exp_store(R, C, false, &a, &b), default_target(), {.cache = false});
  Tensor X = uniform(dev, {2 * R, C}, f32, 1), Y = Tensor::empty(dev, {2 * R, C}, f32);
  try {
    kern.launch(dev, {X, Y}, {.check_hazards = true});
    FAIL() << "expected a hazard error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("RAW hazard on UB of block 0 AIV0"), std::string::npos) << m;
  }
  auto ok = compile(load_exp_store(R, C, true, &a, &b), default_target(), {.cache = false});
  EXPECT_NO_THROW(ok.launch(dev, {X, Y}, {.check_hazards = true}));
}

/// A (300, 1, 8) UB tile loaded in two parts; only the first part is flagged before the exp
/// that reads all 300 rows. The unsynchronised rows 280..299 lie beyond the first 256 rows, where
/// an earlier trace recorder stopped recording a region's leading rows.
PrimFunc late_rows_unsynchronised(bool flag_tail, int* tail_line, int* exp_line) {
  auto X = T::Tensor("X", {300, 1, 8}, f32);
  auto Y = T::Tensor("Y", {300, 1, 8}, f32);
  return T::prim_func("late_rows", {X, Y}, [&] {
    T::Kernel(1, [&](Expr, Expr vid) {
      T::Scope(Core::Vector, [&] {
        auto x = T::alloc_ub("x_ub", {300, 1, 8}, f32);
        T::If(vid == 0, [&] {
          T::copy(X.region({0, 0, 0}, {280, 1, 8}), x.region({0, 0, 0}, {280, 1, 8}));
          T::set_flag(Pipe::MTE2, Pipe::V, 0);
          T::wait_flag(Pipe::MTE2, Pipe::V, 0);
          *tail_line = __LINE__ + 1;
          T::copy(X.region({280, 0, 0}, {20, 1, 8}), x.region({280, 0, 0}, {20, 1, 8}));
          if (flag_tail) {
            T::set_flag(Pipe::MTE2, Pipe::V, 1);
            T::wait_flag(Pipe::MTE2, Pipe::V, 1);
          }
          *exp_line = __LINE__ + 1;
          T::tile::exp(x, x);
          T::set_flag(Pipe::V, Pipe::MTE3, 0);
          T::wait_flag(Pipe::V, Pipe::MTE3, 0);
          T::copy(x, Y);
        });
      });
    });
  });
}

TEST(Hazard, RowsBeyondTheFirst256AreChecked) {
  int tail = 0, exp = 0;
  Device dev;
  auto run = [&](bool flag) {
    auto kern =
        compile(late_rows_unsynchronised(flag, &tail, &exp), default_target(), {.cache = false});
    Tensor X = uniform(dev, {300, 1, 8}, f32, 1), Y = Tensor::empty(dev, {300, 1, 8}, f32);
    npu::Trace trace;
    kern.launch(dev, {X, Y}, {.threads = 1, .trace = &trace});
    EXPECT_TRUE(npu::check_flags(trace).empty());
    return npu::check_hazards(trace);
  };
  // exp reads (RAW) and writes (WAW) the tail rows, and the store after it reads them (RAW):
  // every report names the unflagged copy of rows 280..299 (32 bytes a row) as the first side.
  auto hs = run(false);
  ASSERT_FALSE(hs.empty());
  bool raw_exp = false;
  for (const auto& h : hs) {
    EXPECT_EQ(h.first.loc.line, tail) << all(hs);
    EXPECT_EQ(h.first.start, 280u * 32);
    EXPECT_EQ(h.first.end, 300u * 32);
    raw_exp |= h.kind == "RAW" && h.second.loc.line == exp;
  }
  EXPECT_TRUE(raw_exp) << all(hs);
  auto clean = run(true);
  EXPECT_TRUE(clean.empty()) << all(clean);
}

/// exp writes y, MTE3 stores y, then fill overwrites y: WAR between MTE3 and V unless MTE3 -> V.
PrimFunc store_then_overwrite(bool flag) {
  auto X = T::Tensor("X", {2 * R, C}, f32);
  auto Y = T::Tensor("Y", {2 * R, C}, f32);
  return T::prim_func("store_then_overwrite", {X, Y}, [&] {
    T::Kernel(1, [&](Expr, Expr vid) {
      T::Scope(Core::Vector, [&] {
        auto y = T::alloc_ub("y_ub", {R, C}, f32);
        T::tile::fill(y, 1.0);
        T::set_flag(Pipe::V, Pipe::MTE3, 0);
        T::wait_flag(Pipe::V, Pipe::MTE3, 0);
        T::copy(y, Y.at({vid * R, 0}));
        if (flag) {
          T::set_flag(Pipe::MTE3, Pipe::V, 0);
          T::wait_flag(Pipe::MTE3, Pipe::V, 0);
        }
        T::tile::fill(y, 2.0);
      });
    });
  });
}

TEST(Hazard, WarBetweenMte3AndV) {
  // Without the flag the second fill may overtake the store's read of y_ub (WAR), and nothing
  // orders the two fills either (set_flag(V, MTE3) does not order V after V): WAW.
  auto hs = hazards_of(store_then_overwrite(false));
  bool war = false, waw = false;
  for (const auto& h : hs) {
    war |= h.kind == "WAR" && h.first.op == "copy" && h.first.pipe == Pipe::MTE3 &&
           h.second.op == "tile.fill";
    waw |= h.kind == "WAW" && h.first.op == "tile.fill" && h.second.op == "tile.fill";
  }
  EXPECT_TRUE(war && waw) << all(hs);
  auto clean = hazards_of(store_then_overwrite(true));  // MTE3 -> V also orders V after V
  EXPECT_TRUE(clean.empty()) << all(clean);
}

/// Two dependent V instructions: V may overlap them unless a pipe_barrier(V) separates them.
PrimFunc vector_chain(bool barrier) {
  auto X = T::Tensor("X", {2 * R, C}, f32);
  auto Y = T::Tensor("Y", {2 * R, C}, f32);
  return T::prim_func("vector_chain", {X, Y}, [&] {
    T::Kernel(1, [&](Expr, Expr vid) {
      T::Scope(Core::Vector, [&] {
        auto x = T::alloc_ub("x_ub", {R, C}, f32);
        auto y = T::alloc_ub("y_ub", {R, C}, f32);
        T::copy(X.at({vid * R, 0}), x);
        T::set_flag(Pipe::MTE2, Pipe::V, 0);
        T::wait_flag(Pipe::MTE2, Pipe::V, 0);
        T::tile::add(y, x, x);
        if (barrier) T::pipe_barrier(Pipe::V);
        T::tile::mul(y, y, y);
        T::set_flag(Pipe::V, Pipe::MTE3, 0);
        T::wait_flag(Pipe::V, Pipe::MTE3, 0);
        T::copy(y, Y.at({vid * R, 0}));
      });
    });
  });
}

TEST(Hazard, VToVNeedsPipeBarrier) {
  auto hs = hazards_of(vector_chain(false));
  ASSERT_FALSE(hs.empty());
  bool raw = false;
  for (const auto& h : hs)
    raw |= h.kind == "RAW" && h.first.op == "tile.add" && h.second.op == "tile.mul" &&
           h.first.pipe == Pipe::V;
  EXPECT_TRUE(raw) << all(hs);
  auto clean = hazards_of(vector_chain(true));
  EXPECT_TRUE(clean.empty()) << all(clean);
}

/// AIV0 stores its tile to Y; AIV1 loads it back (a GM handoff between the two AIVs).
PrimFunc handoff(bool flags) {
  auto X = T::Tensor("X", {2 * R, C}, f32);
  auto Y = T::Tensor("Y", {2 * R, C}, f32);
  return T::prim_func("handoff", {X, Y}, [&] {
    T::Kernel(1, [&](Expr, Expr vid) {
      T::Scope(Core::Vector, [&] {
        auto x = T::alloc_ub("x_ub", {R, C}, f32);
        T::If(
            vid == 0,
            [&] {
              T::copy(X.at({0, 0}), x);
              T::set_flag(Pipe::MTE2, Pipe::MTE3, 0);
              T::wait_flag(Pipe::MTE2, Pipe::MTE3, 0);
              T::copy(x, Y.at({0, 0}));
              if (flags) {  // mode 1 is a rendezvous: both AIVs set, both wait
                T::set_cross_flag(Pipe::MTE3, 1, /*mode=*/1);
                T::wait_cross_flag(1);
              }
            },
            [&] {
              if (flags) {
                T::set_cross_flag(Pipe::MTE2, 1, /*mode=*/1);
                T::wait_cross_flag(1);
              }
              T::copy(Y.at({0, 0}), x);
            });
      });
    });
  });
}

TEST(Hazard, CrossCoreHandoffNeedsCrossFlag) {
  auto hs = hazards_of(handoff(false));
  ASSERT_EQ(hs.size(), 1u) << all(hs);
  EXPECT_EQ(hs[0].memory, "GM");
  EXPECT_EQ(hs[0].kind, "RAW");
  EXPECT_EQ(hs[0].first.core, "block 0 AIV0");
  EXPECT_EQ(hs[0].second.core, "block 0 AIV1");
  EXPECT_EQ(hs[0].first.buffer, "Y");
  auto clean = hazards_of(handoff(true));
  EXPECT_TRUE(clean.empty()) << all(clean);
}

/// Every AIV of 2 blocks writes its rows of Y, then reads the rows of the other block.
PrimFunc exchange(bool sync) {
  auto X = T::Tensor("X", {4 * R, C}, f32);
  auto Y = T::Tensor("Y", {4 * R, C}, f32);
  return T::prim_func("exchange", {X, Y}, [&] {
    T::Kernel(2, [&](Expr cid, Expr vid) {
      T::Scope(Core::Vector, [&] {
        auto x = T::alloc_ub("x_ub", {R, C}, f32);
        T::copy(X.at({(cid * 2 + vid) * R, 0}), x);
        T::set_flag(Pipe::MTE2, Pipe::MTE3, 0);
        T::wait_flag(Pipe::MTE2, Pipe::MTE3, 0);
        T::copy(x, Y.at({(cid * 2 + vid) * R, 0}));
        if (sync) T::sync_all();
        T::set_flag(Pipe::MTE3, Pipe::MTE2, 0);
        T::wait_flag(Pipe::MTE3, Pipe::MTE2, 0);
        T::copy(Y.at({((1 - cid) * 2 + vid) * R, 0}), x);
      });
    });
  });
}

TEST(Hazard, SyncAllOrdersBlocks) {
  // Block 1's store overwrites rows block 0 read (WAR) and reads rows block 0 wrote (RAW).
  auto hs = hazards_of(exchange(false), 2);
  ASSERT_EQ(hs.size(), 2u) << all(hs);
  for (const auto& h : hs) {
    EXPECT_EQ(h.memory, "GM");
    EXPECT_EQ(h.first.core.substr(0, 7), "block 0");
    EXPECT_EQ(h.second.core.substr(0, 7), "block 1");
    EXPECT_EQ(h.count, 2);  // both AIVs
  }
  auto clean = hazards_of(exchange(true), 2);
  EXPECT_TRUE(clean.empty()) << all(clean);
}

// ---- check_flags on hand-built traces (functional mode already throws on these) -------------

npu::TraceEvent sync_ev(npu::EventKind k, Pipe src, Pipe dst, int id, int mode = 2) {
  npu::TraceEvent e;
  e.kind = k;
  e.pipe = src;
  e.dst = dst;
  e.id = id;
  e.mode = mode;
  e.name = "sync";
  e.loc = {"k.cpp", 7};
  return e;
}

npu::Trace one_block() {
  npu::Trace t;
  t.kernel = "k";
  t.num_blocks = 1;
  t.cores.resize(3);
  for (int i = 0; i < 3; ++i) {
    t.cores[i].kind = i == 0 ? CoreKind::Cube : CoreKind::Vector;
    t.cores[i].vid = i == 0 ? 0 : i - 1;
  }
  return t;
}

TEST(HazardFlags, WaitWithoutSet) {
  auto t = one_block();
  t.cores[1].events.push_back(sync_ev(npu::EventKind::WaitFlag, Pipe::MTE2, Pipe::V, 3));
  auto is = npu::check_flags(t);
  ASSERT_EQ(is.size(), 1u);
  EXPECT_EQ(is[0].kind, "deadlock");
  EXPECT_EQ(is[0].core, "block 0 AIV0");
  EXPECT_EQ(is[0].pipe, Pipe::V);
  EXPECT_NE(is[0].str().find("wait_flag(MTE2, V, 3)"), std::string::npos) << is[0].str();
}

TEST(HazardFlags, SetTwice) {
  auto t = one_block();
  t.cores[2].events.push_back(sync_ev(npu::EventKind::SetFlag, Pipe::V, Pipe::MTE3, 1));
  t.cores[2].events.push_back(sync_ev(npu::EventKind::SetFlag, Pipe::V, Pipe::MTE3, 1));
  auto is = npu::check_flags(t);
  ASSERT_EQ(is.size(), 2u);
  EXPECT_EQ(is[0].kind, "set twice");
  EXPECT_EQ(is[0].core, "block 0 AIV1");
  ASSERT_EQ(is[0].last_events.size(), 1u);
  EXPECT_NE(is[0].last_events[0].find("set_flag(V, MTE3, 1)"), std::string::npos);
  // And neither set is ever consumed.
  EXPECT_EQ(is[1].kind, "flag left set");
  EXPECT_NE(is[1].str().find("2 set(s) never consumed"), std::string::npos) << is[1].str();
}

TEST(HazardFlags, FlagLeftSetWhenTheCoreFinishes) {
  // Balanced: set, wait, set, wait. Then one more set that nothing waits for.
  auto t = one_block();
  for (int i = 0; i < 2; ++i) {
    t.cores[1].events.push_back(sync_ev(npu::EventKind::SetFlag, Pipe::MTE2, Pipe::V, 2));
    t.cores[1].events.push_back(sync_ev(npu::EventKind::WaitFlag, Pipe::MTE2, Pipe::V, 2));
  }
  EXPECT_TRUE(npu::check_flags(t).empty());
  t.cores[1].events.push_back(sync_ev(npu::EventKind::SetFlag, Pipe::MTE2, Pipe::V, 2));
  t.cores[1].events.back().loc = {"k.cpp", 9};
  auto is = npu::check_flags(t);
  ASSERT_EQ(is.size(), 1u);
  EXPECT_EQ(is[0].kind, "flag left set");
  EXPECT_EQ(is[0].core, "block 0 AIV0");
  EXPECT_EQ(is[0].pipe, Pipe::MTE2);
  EXPECT_EQ(is[0].loc.line, 9);
  EXPECT_NE(is[0].str().find("set_flag(MTE2, V, 2)"), std::string::npos) << is[0].str();
}

TEST(HazardFlags, CrossFlagLeftSetWhenTheWaiterFinishes) {
  // The AIC sets mode 2 (one set per AIV); AIV0 waits, AIV1 finishes without waiting.
  auto t = one_block();
  t.cores[0].events.push_back(sync_ev(npu::EventKind::SetCross, Pipe::FIX, Pipe::S, 5));
  t.cores[1].events.push_back(sync_ev(npu::EventKind::WaitCross, Pipe::S, Pipe::S, 5));
  auto is = npu::check_flags(t);
  ASSERT_EQ(is.size(), 1u);
  EXPECT_EQ(is[0].kind, "cross flag left set");
  EXPECT_EQ(is[0].core, "block 0 AIV1");
  EXPECT_NE(is[0].str().find("cross-core flag 5"), std::string::npos) << is[0].str();
  // With AIV1's wait it is balanced.
  t.cores[2].events.push_back(sync_ev(npu::EventKind::WaitCross, Pipe::S, Pipe::S, 5));
  EXPECT_TRUE(npu::check_flags(t).empty());
}

TEST(HazardFlags, CrossWaitNeverSatisfiedAndTooManyPending) {
  auto t = one_block();
  // The AIC waits for both AIVs; only AIV0 sets.
  t.cores[1].events.push_back(sync_ev(npu::EventKind::SetCross, Pipe::MTE3, Pipe::S, 4));
  t.cores[0].events.push_back(sync_ev(npu::EventKind::WaitCross, Pipe::S, Pipe::S, 4));
  auto is = npu::check_flags(t);
  ASSERT_EQ(is.size(), 1u);
  EXPECT_EQ(is[0].kind, "deadlock");
  EXPECT_EQ(is[0].core, "block 0 AIC");
  EXPECT_NE(is[0].str().find("wait_cross_flag(4)"), std::string::npos);

  auto u = one_block();
  for (int i = 0; i < 16; ++i)
    u.cores[0].events.push_back(sync_ev(npu::EventKind::SetCross, Pipe::FIX, Pipe::S, 0));
  auto js = npu::check_flags(u);
  ASSERT_FALSE(js.empty());
  EXPECT_EQ(js[0].kind, "too many pending cross-core sets");
}

/// Both AIVs of a block add their tile into row block 0 of Y, one with T.atomic_add and the
/// other with T.atomic_add (`plain` false) or a plain copy (`plain` true).
PrimFunc two_adders(bool plain) {
  auto X = T::Tensor("X", {2 * R, C}, f32);
  auto Y = T::Tensor("Y", {2 * R, C}, f32);
  return T::prim_func("two_adders", {X, Y}, [&] {
    T::Kernel(1, [&](Expr, Expr vid) {
      T::Scope(Core::Vector, [&] {
        auto x = T::alloc_ub("x_ub", {R, C}, f32);
        T::copy(X.at({vid * R, 0}), x);
        T::set_flag(Pipe::MTE2, Pipe::MTE3, 0);
        T::wait_flag(Pipe::MTE2, Pipe::MTE3, 0);
        if (plain) {
          T::If(
              vid == 0,
              [&] {
                T::atomic_add(Y.at({0, 0}), x);
              },
              [&] {
                T::copy(x, Y.at({0, 0}));
              });
        } else {
          T::atomic_add(Y.at({0, 0}), x);
        }
      });
    });
  });
}

TEST(Hazard, AtomicAddsOfTwoCoresDoNotRaceButAPlainStoreAgainstOneDoes) {
  // SetAtomicAdd: the memory system serialises the read-modify-writes, in any order (the sum
  // is the same up to rounding order); a plain store racing with one is a real race.
  auto atomic = hazards_of(two_adders(false));
  EXPECT_TRUE(atomic.empty()) << all(atomic);
  auto mixed = hazards_of(two_adders(true));
  ASSERT_FALSE(mixed.empty());
  EXPECT_NE(all(mixed).find("atomic_add"), std::string::npos) << all(mixed);
}

TEST(Hazard, GmRangesAreNamedByTensorElementsNotHostAddresses) {
  // The racing rows of Y are rows 0-7 of the (16, 64) tensor: the report says so, and shows
  // no host address (which means nothing to the kernel's author and changes every run).
  std::string s = all(hazards_of(two_adders(true)));
  EXPECT_NE(s.find("Y elements [0, 0] to [7, 63]"), std::string::npos) << s;
  EXPECT_EQ(s.find("0x"), std::string::npos) << s;
}

}  // namespace
}  // namespace tl
