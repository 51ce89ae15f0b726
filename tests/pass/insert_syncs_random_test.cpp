// insert_syncs on random vector kernels without synchronisation, checked by the virtual NPU's
// hazard checker: straight-line code, loops (0 to 3 iterations, nested) and if/else on 2-4 UB
// tiles whose planned addresses may share bytes, with MTE2 copies in (from the input and
// back from the output), V ops, MTE3 copies out (to fixed rows and to rows that move with the
// loop), and scalar loads and stores of UB and GM. Property: the launch reports no unordered
// access pair, no deadlock and no flag left set (rows that move with a loop exercise the
// rule that iterations of one loop touch disjoint rows); the output has no barrier_all, and its
// event ids are constants within the target's budget. 5000 kernels by default (about 4 s);
// TL_TEST_LEVEL=2 runs 20000, TL_INSERT_SYNCS_PROGRAMS=N runs N.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <random>

#include "tl/ir_functor.h"
#include "tl/lang.h"
#include "tl/npu/npu.h"
#include "tl/pass.h"
#include "tl/printer.h"

namespace tl {
namespace {

constexpr int R = 8, C = 64;  // every tile: 2 KB of fp32
constexpr int kOuts = 8;      // row blocks of Y

class RandomKernel {
 public:
  explicit RandomKernel(uint64_t seed) : rng_(seed) {}

  PrimFunc build() {
    auto X = T::Tensor("X", {R, C}, f32);
    auto Y = T::Tensor("Y", {kOuts * R, C}, f32);
    auto Z = T::Tensor("Z", {C}, f32);
    return T::prim_func("random_kernel", {X, Y, Z}, [&] {
      T::Kernel(1, [&](Expr cid, Expr vid) {
        T::Scope(Core::Vector, [&] {
          int n = 2 + pick(3);
          // Tiles at the same slot share their bytes. plan_memory refuses two pinned buffers on
          // the same bytes while both are live (a clobber on the chip), so a tile landing on an
          // earlier tile's slot is a view of it: the same bytes, one buffer for the planner.
          std::vector<int> slots;
          for (int i = 0; i < n; ++i) {
            int slot = pick(n);
            auto same = std::find(slots.begin(), slots.end(), slot);
            std::string name = fmt::format("t{}", i);
            if (same != slots.end())
              tiles_.push_back(
                  T::view(name, tiles_[static_cast<size_t>(same - slots.begin())], f32));
            else
              tiles_.push_back(T::alloc_ub(name, {R, C}, f32, 2048 * slot));
            slots.push_back(slot);
          }
          // AIV1 stays idle: both AIVs writing the same GM rows would be a cross-core race.
          T::If(vid == 0, [&] { block(0, cid, X, Y, Z); });
        });
      });
    });
  }

 private:
  std::mt19937_64 rng_;
  std::vector<Buffer> tiles_;

  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  const Buffer& tile() { return tiles_[pick(static_cast<int>(tiles_.size()))]; }

  void block(int depth, Expr k, const Buffer& X, const Buffer& Y, const Buffer& Z) {
    int n = 2 + pick(4);
    for (int i = 0; i < n; ++i) {
      int c = pick(10);
      if (c == 0 && depth < 2) {
        T::serial(fmt::format("i{}", depth), pick(4),
                  [&](Expr i) { block(depth + 1, i, X, Y, Z); });
      } else if (c == 1 && depth < 2) {
        Expr cond = k % 2 == 0;
        if (pick(2))
          T::If(
              cond, [&] { block(depth + 1, k, X, Y, Z); }, [&] { block(depth + 1, k, X, Y, Z); });
        else
          T::If(cond, [&] { block(depth + 1, k, X, Y, Z); });
      } else {
        op(k, X, Y, Z);
      }
    }
  }

  void op(Expr k, const Buffer& X, const Buffer& Y, const Buffer& Z) {
    int j = pick(C);
    // Output rows: fixed, moving with the loop by a whole tile (k < 3 here, so k * R stays
    // inside Y) or by half a tile (consecutive iterations overlap), or wrapping; UB rows fixed
    // or moving.
    int how = pick(4);
    Expr row = how == 0   ? Expr(pick(kOuts) * R)
               : how == 1 ? k * R
               : how == 2 ? k * (R / 2)
                          : (k % kOuts) * R;
    Expr urow = pick(2) ? Expr(pick(R)) : k;
    switch (pick(10)) {
      case 0:
        T::copy(X, tile());
        break;
      case 9:
        T::copy(X.region({urow, 0}, {1, C}), tile().region({urow, 0}, {1, C}));
        break;
      case 1:
        T::copy(Y.region({row, 0}, {R, C}), tile());
        break;
      case 2:
        T::tile::fill(tile(), 1.0);
        break;
      case 3:
        T::tile::exp(tile(), tile());
        break;
      case 4: {
        const Buffer& a = tile();
        T::tile::add(a, a, tile());
        break;
      }
      case 5:
      case 6:
        T::copy(tile(), Y.region({row, 0}, {R, C}));
        break;
      case 7:
        T::store(tile(), {urow, j}, Expr(2.0f));
        break;
      default:
        if (pick(2))
          T::store(Z, {j}, tile()(urow, j));
        else
          T::store(tile(), {urow, j}, Z(j));
        break;
    }
  }
};

int programs() {
  if (const char* n = std::getenv("TL_INSERT_SYNCS_PROGRAMS")) return std::atoi(n);
  const char* level = std::getenv("TL_TEST_LEVEL");
  return level && std::atoi(level) >= 2 ? 20000 : 5000;
}

/// The output's syncs: none of barrier_all / PIPE_ALL, constant event ids within the budget.
std::string bad_syncs(const PrimFunc& f, const Target& t) {
  std::string bad;
  pre_order_visit(f->body, [&](const Stmt& s) {
    auto* y = s.as<SyncNode>();
    if (!y) return;
    if (y->sync_kind == SyncKind::BarrierAll || y->src == Pipe::ALL)
      bad += "a barrier over all pipes; ";
    if (y->sync_kind == SyncKind::SetFlag || y->sync_kind == SyncKind::WaitFlag) {
      auto id = as_const_int(y->event_id);
      bool reserved = id && std::find(t.reserved_event_ids.begin(), t.reserved_event_ids.end(),
                                      *id) != t.reserved_event_ids.end();
      if (!id || *id < 0 || *id >= t.num_event_ids || reserved)
        bad += "event id " + print(y->event_id) + "; ";
    }
    if (y->origin != SyncOrigin::Auto) bad += "a sync not marked auto; ";
  });
  return bad;
}

/// What the hazard checker (or the launch) reports when `f` runs on its inputs; empty: nothing.
std::string hazards_of(const PrimFunc& f, const Target& t) {
  Device dev;
  std::vector<Arg> args = {uniform(dev, {R, C}, f32, 1), uniform(dev, {kOuts * R, C}, f32, 2),
                           uniform(dev, {C}, f32, 3)};
  try {
    // The random kernels read memory they never wrote (by construction: they test ordering, not
    // data), which the stale-data checker would report: it is off here.
    compile(f, t, {.cache = false})
        .launch(dev, args, {.threads = 1, .check_hazards = true, .check_stale = false});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(InsertSyncsRandom, HazardCheckerFindsNothingUnordered) {
  const Target& t = default_target();
  const int n = programs();
  int loops = 0, flags = 0;
  for (int seed = 0; seed < n; ++seed) {
    PrimFunc f = RandomKernel(static_cast<uint64_t>(seed)).build();
    PrimFunc g = insert_syncs(f, t);
    std::string text = print(g, {.locations = false});
    ASSERT_EQ(bad_syncs(g, t), "") << "seed " << seed << "\n" << text;
    loops += text.find("T.serial") != std::string::npos;
    flags += text.find("set_flag") != std::string::npos;
    ASSERT_EQ(hazards_of(g, t), "") << "seed " << seed << "\n" << text;
  }
  // The generator exercises what it claims to.
  EXPECT_GT(loops, n / 4);
  EXPECT_GT(flags, n / 2);
}

// elide_implied_syncs on the same kernels: whatever it drops (on one core: flags a trip count
// or a branch taken at compile time makes unnecessary), the hazard checker still finds every
// pair ordered. (The replay skips programs with scalar memory accesses; a program it changes is
// launched, about one in sixty.)
TEST(InsertSyncsRandom, ElideImpliedSyncsLeavesNothingUnordered) {
  const Target& t = default_target();
  const int n = programs();
  int changed = 0;
  for (int seed = 0; seed < n; ++seed) {
    PrimFunc f = RandomKernel(static_cast<uint64_t>(seed)).build();
    PrimFunc g = insert_syncs(f, t);
    PrimFunc h = elide_implied_syncs(g, t);
    if (h == g) continue;
    ++changed;
    std::string text = print(h, {.locations = false});
    ASSERT_EQ(hazards_of(h, t), "") << "seed " << seed << "\n" << text;
  }
  EXPECT_GT(changed, n / 100) << "the pass dropped flags in too few programs to test it";
}

// merge_flags and guard_loop_credits on what elide_implied_syncs leaves: a merged flag or a
// guarded credit still orders every pair, and the flags stay balanced.
TEST(InsertSyncsRandom, MergedFlagsAndGuardedCreditsLeaveNothingUnordered) {
  const Target& t = default_target();
  const int n = programs();
  int merged = 0, guarded = 0;
  for (int seed = 0; seed < n; ++seed) {
    PrimFunc f = RandomKernel(static_cast<uint64_t>(seed)).build();
    PrimFunc g = elide_implied_syncs(insert_syncs(f, t), t);
    PrimFunc m = merge_flags(g, t), h = guard_loop_credits(m, t);
    merged += !(m == g);
    guarded += !(h == m);
    if (h == g) continue;
    std::string text = print(h, {.locations = false});
    ASSERT_EQ(bad_syncs(h, t), "") << "seed " << seed << "\n" << text;
    ASSERT_EQ(hazards_of(h, t), "") << "seed " << seed << "\n" << text;
  }
  // Merges are rare here (about 1 in 800 programs; MergeFlags.* and gemm_dev test them), guarded
  // credits about 1 in 150.
  EXPECT_GT(merged + guarded, n / 500) << merged << " merged, " << guarded << " guarded";
}

}  // namespace
}  // namespace tl
