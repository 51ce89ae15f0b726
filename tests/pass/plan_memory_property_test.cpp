// Properties of memory planning over random inputs:
//  - assign_offsets (the pure interval-assignment core): blocks live at the same time never
//    share a byte, free blocks are aligned, fixed blocks stay put, and the footprint is
//    never worse than placing every block after the previous one.
//  - plan_memory on random programs (allocations, uses, nested loops): an independent oracle
//    executes each program abstractly (every loop twice, a fresh buffer instance per
//    executed declaration) and checks that no two buffer instances whose accesses interleave
//    in time were given overlapping bytes.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "tl/ir_functor.h"
#include "tl/lang.h"
#include "tl/pass.h"
#include "tl/printer.h"
#include "tl/storage.h"

namespace tl {
namespace {

int64_t align_up(int64_t v, int64_t a) {
  return (v + a - 1) / a * a;
}

TEST(PlanMemoryProperty, AssignOffsetsNeverOverlapsLiveBlocks) {
  std::mt19937_64 rng(12345);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (int trial = 0; trial < 2000; ++trial) {
    int n = static_cast<int>(pick(1, 24));
    std::vector<LiveBlock> blocks;
    int64_t fixed_top = 0;  // fixed blocks are stacked so they never overlap each other
    for (int i = 0; i < n; ++i) {
      LiveBlock b;
      b.bytes = pick(0, 3) == 0 ? pick(0, 64) : pick(1, 8192);
      b.align = int64_t{32} << pick(0, 4);
      b.first = pick(0, 40);
      b.last = b.first + pick(0, 20);
      if (pick(0, 7) == 0) {
        b.fixed = align_up(fixed_top + pick(0, 256), 32);
        fixed_top = b.fixed + b.bytes;
      }
      blocks.push_back(b);
    }
    std::vector<int64_t> off = assign_offsets(blocks);
    ASSERT_EQ(off.size(), blocks.size());
    int64_t footprint = 0, bump = 0;
    for (int i = 0; i < n; ++i) {
      const LiveBlock& b = blocks[i];
      if (b.fixed >= 0) {
        EXPECT_EQ(off[i], b.fixed);
        bump = std::max(bump, b.fixed + b.bytes);
      } else {
        EXPECT_GE(off[i], 0);
        EXPECT_EQ(off[i] % b.align, 0) << "trial " << trial << " block " << i;
      }
      footprint = std::max(footprint, off[i] + b.bytes);
      for (int j = 0; j < i; ++j) {
        const LiveBlock& o = blocks[j];
        bool live_together = b.first <= o.last && o.first <= b.last;
        bool both_fixed = b.fixed >= 0 && o.fixed >= 0;
        if (!live_together || both_fixed || b.bytes == 0 || o.bytes == 0) continue;
        EXPECT_TRUE(off[i] + b.bytes <= off[j] || off[j] + o.bytes <= off[i])
            << "trial " << trial << ": blocks " << j << " [" << off[j] << ", +" << o.bytes
            << ") and " << i << " [" << off[i] << ", +" << b.bytes
            << ") are live together and overlap";
      }
    }
    // Never worse than a bump allocator stacked above the fixed blocks.
    for (const auto& b : blocks)
      if (b.fixed < 0) bump = align_up(bump, b.align) + b.bytes;
    EXPECT_LE(footprint, bump) << "trial " << trial;
  }
}

// ---- random programs ------------------------------------------------------------------------

/// A random program: a tree of declarations, uses and loops (extent 2), one buffer per
/// declaration, all in UB (small enough that everything fits).
struct Node {
  enum Kind { Decl, Use, Loop } kind;
  int buffer = -1;
  std::vector<Node> body;
};

struct Gen {
  std::mt19937_64 rng;
  int num_buffers = 0;
  std::vector<int64_t> sizes;  // fp32 elements per buffer
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

  std::vector<Node> block(int depth, std::vector<int> visible) {
    std::vector<Node> out;
    int n = pick(1, 6);
    for (int i = 0; i < n; ++i) {
      int r = pick(0, 9);
      if (r < 3 && num_buffers < 16) {
        out.push_back({Node::Decl, num_buffers, {}});
        visible.push_back(num_buffers++);
        sizes.push_back(8 * pick(1, 64));
      } else if (r < 8 && !visible.empty()) {
        out.push_back({Node::Use, visible[pick(0, static_cast<int>(visible.size()) - 1)], {}});
      } else if (depth < 3) {
        out.push_back({Node::Loop, -1, block(depth + 1, visible)});
      }
    }
    return out;
  }
};

std::vector<Buffer> emit(const std::vector<Node>& nodes, const std::vector<int64_t>& sizes,
                         std::vector<Buffer>& bufs) {
  for (const auto& n : nodes) {
    switch (n.kind) {
      case Node::Decl:
        bufs[n.buffer] = T::alloc_ub(fmt::format("b{}", n.buffer), {sizes[n.buffer]}, f32);
        break;
      case Node::Use:
        T::tile::fill(bufs[n.buffer], 1.0);
        break;
      case Node::Loop:
        T::serial(2, [&](Expr) { emit(n.body, sizes, bufs); });
        break;
    }
  }
  return bufs;
}

/// The oracle: runs the program abstractly and returns, per executed declaration (buffer
/// instance), the buffer and the first and last time it was accessed (-1 if never).
struct Instance {
  int buffer;
  int64_t first = -1, last = -1;
};
void execute(const std::vector<Node>& nodes, int64_t& clock, std::vector<Instance>& inst,
             std::map<int, size_t>& current) {
  for (const auto& n : nodes) {
    ++clock;
    switch (n.kind) {
      case Node::Decl:
        current[n.buffer] = inst.size();
        inst.push_back({n.buffer});
        break;
      case Node::Use: {
        Instance& i = inst[current.at(n.buffer)];
        if (i.first < 0) i.first = clock;
        i.last = clock;
        break;
      }
      case Node::Loop:
        for (int it = 0; it < 2; ++it) execute(n.body, clock, inst, current);
        break;
    }
  }
}

TEST(PlanMemoryProperty, RandomProgramsNeverShareBytesBetweenValuesLiveTogether) {
  Gen gen;
  gen.rng.seed(777);
  const Target& target = default_target();
  for (int trial = 0; trial < 300; ++trial) {
    gen.num_buffers = 0;
    gen.sizes.clear();
    std::vector<Node> program = gen.block(0, {});
    std::vector<Buffer> bufs(gen.num_buffers);
    PrimFunc f = T::prim_func("random", {}, [&] {
      T::Kernel(
          1, [&](Expr, Expr) { T::Scope(Core::Vector, [&] { emit(program, gen.sizes, bufs); }); });
    });
    PrimFunc g = plan_memory(f, target);

    // Planned addresses by buffer name.
    std::map<std::string, int64_t> address;
    pre_order_visit(g->body, [&](const Stmt& s) {
      if (auto* a = s.as<AllocateNode>()) address[a->buffer->name] = a->buffer->address;
    });
    ASSERT_EQ(static_cast<int>(address.size()), gen.num_buffers) << print(g);
    int64_t footprint = 0;
    for (int b = 0; b < gen.num_buffers; ++b) {
      int64_t at = address.at(fmt::format("b{}", b));
      ASSERT_GE(at, 0);
      EXPECT_EQ(at % planning_alignment(target, MemScope::UB), 0);
      footprint = std::max(footprint, at + gen.sizes[b] * 4);
    }
    EXPECT_LE(footprint, target.cap(MemScope::UB));

    int64_t clock = 0;
    std::vector<Instance> inst;
    std::map<int, size_t> current;
    execute(program, clock, inst, current);
    for (size_t i = 0; i < inst.size(); ++i) {
      for (size_t j = 0; j < i; ++j) {
        const Instance &x = inst[i], &y = inst[j];
        if (x.buffer == y.buffer || x.first < 0 || y.first < 0) continue;
        if (x.last < y.first || y.last < x.first) continue;  // not live at the same time
        int64_t ax = address.at(fmt::format("b{}", x.buffer)),
                ay = address.at(fmt::format("b{}", y.buffer));
        int64_t sx = gen.sizes[x.buffer] * 4, sy = gen.sizes[y.buffer] * 4;
        EXPECT_TRUE(ax + sx <= ay || ay + sy <= ax)
            << "trial " << trial << ": b" << x.buffer << " and b" << y.buffer
            << " are live together but share bytes\n"
            << print(g, {.locations = false});
      }
    }
  }
}

}  // namespace
}  // namespace tl
