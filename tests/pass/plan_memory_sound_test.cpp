// Soundness of plan_memory's reuse against the hazard checker, on random vector kernels: UB
// tiles declared next to their first use (so many are dead before others are born), copies in
// (MTE2) and out (MTE3), vector ops (V), the flags and barriers each tile needs plus random
// extra ones, some inside a loop whose tiles are fresh per iteration and which may end in an
// if/else. Property: if the kernel with every tile in bytes of its own is hazard-free, the
// planned kernel is too. Planning must
// never add a race (the reuse must be ordered by what the program already has), and it must
// still reuse bytes often (the test counts the kernels where it did).
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "tl/ir_functor.h"
#include "tl/lang.h"
#include "tl/npu/npu.h"
#include "tl/pass.h"
#include "tl/printer.h"

namespace tl {
namespace {

constexpr int R = 8, C = 64;  // every tile: 2 KB of fp32
constexpr int kOuts = 24;     // output row blocks of Y (one per store, so GM never races)

/// A statement of a random kernel, before it is written in the DSL: what it does to which
/// tiles, and the flags and barriers to put in front of it.
struct Op {
  enum Kind { Load, Fill, Exp, Add, Store } kind;
  int a = -1, b = -1;  // tiles: Load/Fill/Store a; Exp b -> a (declares a); Add a += b
  int out = 0;         // Store: the output row block
  std::vector<std::pair<Pipe, Pipe>> flags{};  // set_flag/wait_flag pairs before the op
  std::vector<Pipe> barriers{};                // pipe_barrier(P) before the op
  bool barrier_all = false;
};

Pipe pipe_of(const Op& o) {
  return o.kind == Op::Load ? Pipe::MTE2 : o.kind == Op::Store ? Pipe::MTE3 : Pipe::V;
}
/// (tile, write) pairs of the op.
std::vector<std::pair<int, bool>> touches(const Op& o) {
  switch (o.kind) {
    case Op::Load:
    case Op::Fill:
      return {{o.a, true}};
    case Op::Exp:
      return {{o.b, false}, {o.a, true}};
    case Op::Add:
      return {{o.a, false}, {o.b, false}, {o.a, true}};
    case Op::Store:
      return {{o.a, false}};
  }
  return {};
}

/// Accesses not yet known complete by every pipe, and which pipes know: the state the
/// generator keeps to give each tile the syncs it needs (and nothing more, apart from random
/// extra ones), so the kernel as written is hazard-free and the planner decides every reuse.
struct Pending {
  struct Acc {
    int tile;
    Pipe pipe;
    bool write;
    uint32_t known;
  };
  std::vector<Acc> accs;
  static uint32_t bit(Pipe p) { return 1u << static_cast<int>(p); }
  void flag(Pipe src, Pipe dst) {
    for (auto& a : accs)
      if (a.pipe == src || (a.known & bit(src))) a.known |= bit(dst);
  }
  void barrier(Pipe p) {
    for (auto& a : accs)
      if (a.pipe == p) a.known |= bit(p);
  }
  void all() {
    for (auto& a : accs) a.known = ~0u;
  }
  /// After an if whose branches started from `before`: every access of either branch, and a
  /// pipe knows an earlier access only if it does on both paths.
  static Pending join(const Pending& before, const Pending& a, const Pending& b) {
    Pending m = a;
    size_t n = before.accs.size();
    for (size_t i = 0; i < n; ++i) m.accs[i].known &= b.accs[i].known;
    m.accs.insert(m.accs.end(), b.accs.begin() + static_cast<std::ptrdiff_t>(n), b.accs.end());
    return m;
  }
  /// Adds to `o` the syncs its accesses need after everything pending, applying them.
  void order_before(Op& o) {
    Pipe p = pipe_of(o);
    for (auto [tile, write] : touches(o))
      for (size_t i = 0; i < accs.size(); ++i) {
        const Acc& e = accs[i];
        if (e.tile != tile || !(write || e.write) || (e.known & bit(p))) continue;
        if (e.pipe == p) {
          o.barriers.push_back(p);
          barrier(p);
        } else {
          o.flags.push_back({e.pipe, p});
          flag(e.pipe, p);
        }
      }
    for (auto [tile, write] : touches(o)) accs.push_back({tile, p, write, 0});
  }
};

class RandomKernel {
 public:
  explicit RandomKernel(uint64_t seed) : rng_(seed) {}

  PrimFunc build() {
    // Abstract program: a segment, maybe a loop (its tiles fresh per iteration) that may end in
    // an if/else (then on even iterations, else on odd ones), a segment.
    std::vector<Op> head = segment(4 + pick(5)), body, then_ops, else_ops, tail;
    if (pick(3) > 0) body = segment(3 + pick(4));
    if (!body.empty() && pick(2)) then_ops = segment(2 + pick(3)), else_ops = segment(2 + pick(3));
    tail = segment(2 + pick(4));
    // The syncs each tile needs: the loop body's are those of two iterations in a row (its
    // tiles reuse their bytes in the next iteration), each iteration taking either branch,
    // plus random extra ones.
    Pending pend;
    for (auto& o : head) extra_and_needed(pend, o);
    for (int it = 0; it < 2; ++it) {
      for (auto& o : body) extra_and_needed(pend, o);
      Pending in_then = pend, in_else = pend;
      for (auto& o : then_ops) extra_and_needed(in_then, o);
      for (auto& o : else_ops) extra_and_needed(in_else, o);
      pend = Pending::join(pend, in_then, in_else);
    }
    for (auto& o : tail) extra_and_needed(pend, o);

    auto X = T::Tensor("X", {R, C}, f32);
    auto Y = T::Tensor("Y", {kOuts * R, C}, f32);
    return T::prim_func("random_kernel", {X, Y}, [&] {
      T::Kernel(1, [&](Expr, Expr vid) {
        T::Scope(Core::Vector, [&] {
          T::If(vid == 0, [&] {
            std::map<int, Buffer> tiles;
            emit(head, tiles, X, Y);
            if (!body.empty())
              T::serial("k", 2, [&](Expr k) {
                std::map<int, Buffer> fresh = tiles;  // body tiles are declared in the body
                emit(body, fresh, X, Y);
                if (!then_ops.empty())
                  T::If(
                      k % 2 == 0, [&] { emit(then_ops, fresh, X, Y); },
                      [&] { emit(else_ops, fresh, X, Y); });
              });
            emit(tail, tiles, X, Y);
          });
        });
      });
    });
  }

 private:
  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }

  std::vector<Op> segment(int n) {
    std::vector<Op> ops;
    std::vector<int> live;
    for (int i = 0; i < n; ++i) {
      int k = pick(live.empty() ? 1 : 5);
      Op o{Op::Fill};
      if (k == 0 || (k == 4 && live.size() < 2)) {
        o.kind = pick(2) ? Op::Load : Op::Fill;
        o.a = tiles_++;
        live.push_back(o.a);
      } else if (k == 1) {
        o.kind = Op::Exp;
        o.b = live[pick(static_cast<int>(live.size()))];
        o.a = tiles_++;
        live.push_back(o.a);
      } else if (k == 2) {
        o.kind = Op::Add;
        o.a = live[pick(static_cast<int>(live.size()))];
        o.b = live[pick(static_cast<int>(live.size()))];
      } else {
        if (outs_ >= kOuts) continue;
        size_t at = static_cast<size_t>(pick(static_cast<int>(live.size())));
        o.kind = Op::Store;
        o.a = live[at];
        o.out = outs_++;
        if (pick(2))
          live.erase(live.begin() + static_cast<std::ptrdiff_t>(at));  // the tile dies here
      }
      ops.push_back(o);
    }
    return ops;
  }

  void extra_and_needed(Pending& pend, Op& o) {
    static const std::pair<Pipe, Pipe> kPairs[] = {
        {Pipe::MTE2, Pipe::V}, {Pipe::V, Pipe::MTE2},    {Pipe::V, Pipe::MTE3},
        {Pipe::MTE3, Pipe::V}, {Pipe::MTE2, Pipe::MTE3}, {Pipe::MTE3, Pipe::MTE2}};
    static const Pipe kPipes[] = {Pipe::V, Pipe::MTE2, Pipe::MTE3};
    int k = pick(12);
    if (k < 3) {
      auto pr = kPairs[pick(6)];
      o.flags.push_back(pr);
      pend.flag(pr.first, pr.second);
    } else if (k < 5) {
      Pipe p = kPipes[pick(3)];
      o.barriers.push_back(p);
      pend.barrier(p);
    } else if (k == 5) {
      o.barrier_all = true;
      pend.all();
    }
    pend.order_before(o);
  }

  void emit(const std::vector<Op>& ops, std::map<int, Buffer>& tiles, const Buffer& X,
            const Buffer& Y) {
    auto tile = [&](int id) {
      auto [it, fresh] = tiles.try_emplace(id);
      if (fresh) it->second = T::alloc_ub(fmt::format("t{}", id), {R, C}, f32);
      return it->second;
    };
    for (const Op& o : ops) {
      if (o.barrier_all) T::barrier_all();
      for (Pipe p : o.barriers) T::pipe_barrier(p);
      for (auto [src, dst] : o.flags) {
        T::set_flag(src, dst, 0);
        T::wait_flag(src, dst, 0);
      }
      switch (o.kind) {
        case Op::Load:
          T::copy(X, tile(o.a));
          break;
        case Op::Fill:
          T::tile::fill(tile(o.a), 1.0);
          break;
        case Op::Exp:
          T::tile::exp(tile(o.a), tile(o.b));
          break;
        case Op::Add:
          T::tile::add(tile(o.a), tile(o.a), tile(o.b));
          break;
        case Op::Store:
          T::copy(tile(o.a), Y.region({o.out * R, 0}, {R, C}));
          break;
      }
    }
  }

  std::mt19937_64 rng_;
  int tiles_ = 0, outs_ = 0;
};

/// "" when the launch is hazard-free, else the checker's report.
std::string hazards(const PrimFunc& f, const CompileOptions& opt) {
  Device dev;
  Tensor X = uniform(dev, {R, C}, f32, 1), Y = Tensor::empty(dev, {kOuts * R, C}, f32);
  try {
    compile(f, default_target(), opt).launch(dev, {X, Y}, {.threads = 1, .check_hazards = true});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

/// Number of tiles that share bytes with an earlier one after planning.
int reused(const PrimFunc& planned) {
  std::map<int64_t, int> at;
  int n = 0;
  pre_order_visit(planned->body, [&](const Stmt& s) {
    if (auto* a = s.as<AllocateNode>()) n += at[a->buffer->address]++ > 0;
  });
  return n;
}

TEST(PlanMemorySound, PlanningNeverAddsAHazard) {
  int clean = 0, with_reuse = 0;
  const int trials = 400;
  for (int trial = 0; trial < trials; ++trial) {
    PrimFunc f = RandomKernel(1000 + trial).build();
    // Every tile in bytes of its own: the kernel as written.
    if (auto h = hazards(f, {.lower = false, .cache = false}); !h.empty()) {
      ADD_FAILURE() << "trial " << trial << ": the generator's kernel is racy as written\n" << h;
      continue;
    }
    ++clean;
    std::string planned = hazards(f, {.cache = false});
    ASSERT_EQ(planned, "") << "trial " << trial << ": planning added a hazard\n"
                           << print(lower(f, default_target()), {.locations = false});
    with_reuse += reused(lower(f, default_target())) > 0;
  }
  RecordProperty("kernels", trials);
  RecordProperty("hazard_free_as_written", clean);
  RecordProperty("planned_with_reuse", with_reuse);
  EXPECT_EQ(clean, trials);
  EXPECT_GT(with_reuse, clean / 4)
      << "the planner should still reuse bytes where the program orders it";
}

}  // namespace
}  // namespace tl
