// "Lowered from a developer kernel" is an IR annotation (issue 28, item 4): split_cube_vector
// writes PrimFuncNode::lowered_from_developer, the printer and the parser carry it
// (`@T.prim_func(lowered_from_developer=2)`), structural equality and hashing see it, and
// tl::lower's gates read it from the kernel each pass gets instead of a flag captured before the
// first pass.
#include <gtest/gtest.h>

#include <map>

#include "pass_test_util.h"
#include "tl/ir_equal.h"
#include "tl/kernel_registry.h"

namespace tl {
namespace {

using testing::error_of;

PrimFunc registered(const std::string& name, std::map<std::string, std::string> params = {}) {
  return build_kernel(find_kernel(name), params);
}

/// The passes up to split_cube_vector, the one that makes an expert kernel of a developer one.
PrimFunc split(const PrimFunc& f) {
  return run_named_passes(f, default_target(),
                          {"verify", "simplify", "infer_scopes", "lower_cube_ops", "mask_tails",
                           "legalize_copies", "split_cube_vector"},
                          {});
}

TEST(LoweredAnnotation, SplitCubeVectorWritesItAndTheTextIrCarriesIt) {
  for (const char* name : {"add_dev", "gemm_dev"}) {
    SCOPED_TRACE(name);
    PrimFunc f = registered(name);
    const int threads = kernel_of(f)->threads;
    ASSERT_GT(threads, 0);
    EXPECT_EQ(f->lowered_from_developer, 0);  // a developer kernel is not lowered yet
    PrimFunc s = split(f);
    EXPECT_EQ(s->lowered_from_developer, threads);
    const std::string text = print(s);
    EXPECT_NE(text.find(fmt::format("@T.prim_func(lowered_from_developer={})\n", threads)),
              std::string::npos)
        << text.substr(0, 200);
    // Round trip: the parsed text is the same function, annotation included.
    PrimFunc back = parse(text);
    EXPECT_EQ(back->lowered_from_developer, threads);
    EXPECT_TRUE(structural_equal(back, s)) << first_difference(back, s);
    EXPECT_EQ(structural_hash(back), structural_hash(s));
    EXPECT_EQ(print(back), text);
    // The annotation is part of the function: without it, another function.
    auto plain = std::make_shared<PrimFuncNode>(*s);
    plain->lowered_from_developer = 0;
    EXPECT_FALSE(structural_equal(PrimFunc(plain), s));
    EXPECT_NE(first_difference(PrimFunc(plain), s).find("lowered_from_developer"),
              std::string::npos);
    EXPECT_EQ(print(PrimFunc(plain)).rfind("@T.prim_func\n", 0), 0u);
  }
}

TEST(LoweredAnnotation, TheGatesReadTheIrNotACapturedFlag) {
  // lower() of the printed and re-parsed split_cube_vector output lowers it as the developer
  // kernel's own lowering does: the developer-gated passes (insert_syncs, the sync passes, ...)
  // run because the kernel says where it comes from. Before, lower() decided once, from the
  // kernel it was given (an expert kernel here), and ran none of them: the result had no
  // synchronisation at all.
  PrimFunc f = registered("add_dev");
  PrimFunc whole = lower(f, default_target(), {});
  // The first two passes already ran on the split kernel (verify, simplify): not again.
  PassOptions resume;
  resume.disabled_passes = {"verify", "simplify"};
  PrimFunc resumed = lower(parse(print(split(f))), default_target(), resume);
  EXPECT_EQ(print(resumed, {.locations = false}), print(whole, {.locations = false}));
  EXPECT_EQ(whole->lowered_from_developer, kernel_of(f)->threads);
}

/// The channels of a kernel: each GM workspace's name and BufferNode::channel_slots.
std::map<std::string, int> channels(const PrimFunc& f) {
  std::map<std::string, int> out;
  pre_order_visit(f->body, [&](const Stmt& s) {
    if (auto* a = s.as<AllocateNode>(); a && a->buffer->scope == MemScope::GM)
      out[a->buffer->name] = a->buffer->channel_slots;
  });
  return out;
}

TEST(LoweredAnnotation, AChannelWorkspaceSaysItIsOneAndHowManySlots) {
  // matmul_add_dev moves the cube's result to the vector core through a channel
  // (legalize_copies: one slot); flash_attention_dev's channels sit in a T.Pipelined loop
  // (pipeline_loops: one slot per stage). The role was a shape convention ([num_blocks, slots,
  // ...] read from dimension 1 of any GM buffer of the kernel); now it is the annotation,
  // printed and parsed with the workspace.
  for (const char* name : {"matmul_add_dev", "flash_attention_dev"}) {
    SCOPED_TRACE(name);
    PrimFunc f = registered(name);
    PrimFunc s = split(f);
    const auto made = channels(s);
    ASSERT_FALSE(made.empty());
    for (const auto& [ws, slots] : made) EXPECT_EQ(slots, 1) << ws;
    const std::string text = print(s);
    EXPECT_NE(text.find("channel_slots=1)"), std::string::npos);
    PrimFunc back = parse(text);
    EXPECT_EQ(channels(back), made);
    EXPECT_TRUE(structural_equal(back, s)) << first_difference(back, s);
    // Fully lowered: the slots pipeline_loops gave, and the channel syncs that follow them.
    PrimFunc low = lower(f, default_target(), {});
    for (const auto& [ws, slots] : channels(low)) EXPECT_GE(slots, 1) << ws;
    PrimFunc low_back = parse(print(low));
    EXPECT_TRUE(structural_equal(low_back, low)) << first_difference(low_back, low);
  }
  // A workspace of the author's is no channel, and its text says nothing of one.
  EXPECT_EQ(print(parse(R"(@T.prim_func
def k(A: T.Tensor((8,), "float16")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        w = T.alloc_workspace((1, 2, 8), "float16")
        T.barrier_all()
)"))
                .find("channel_slots"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse(R"(@T.prim_func
def k(A: T.Tensor((8,), "float16")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        w = T.alloc_workspace((1, 2, 8), "float16", channel_slots=9)
        T.barrier_all()
)");
            }).find("channel_slots"),
            std::string::npos);
}

TEST(LoweredAnnotation, TheParserRejectsABadAnnotation) {
  const char* body = R"(
def k(A: T.Tensor((8,), "float16")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        T.barrier_all()
)";
  EXPECT_NE(error_of([&] {
              parse(std::string("@T.prim_func(lowered_from_developer=3)") + body);
            }).find("lowered_from_developer"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              parse(std::string("@T.prim_func(no_such_annotation=1)") + body);
            }).find("lowered_from_developer"),
            std::string::npos);
  EXPECT_EQ(
      parse(std::string("@T.prim_func(lowered_from_developer=1)") + body)->lowered_from_developer,
      1);
}

}  // namespace
}  // namespace tl
