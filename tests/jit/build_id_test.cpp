// tl::build_id(): a content hash of the library's sources, baked in at build time by
// cmake/build_id.cmake. Same sources, same id (recomputed here from the source tree into
// another place); any edit, another id; the JIT cache key carries it.
#include <gtest/gtest.h>

#include <cstdlib>

#include "jit/jit_test_util.h"
#include "tl/jit.h"
#include "tl/npu/npu.h"
#include "tl/parser.h"

namespace tl {
namespace {

using jittest::TempDir;

/// Runs cmake/build_id.cmake on `source_dir`; the id it writes ("" on failure).
std::string compute_id(const std::string& source_dir) {
  const char* root = std::getenv("TL_SOURCE_DIR");
  TempDir out;
  std::string cpp = (out.path() / "build_id.cpp").string();
  std::string cmd =
      fmt::format("\"{}\" -DSOURCE_DIR=\"{}\" -DOUTPUT=\"{}\" -P \"{}/cmake/build_id.cmake\"",
                  TL_CMAKE_COMMAND, source_dir, cpp, root);
  if (std::system(cmd.c_str()) != 0) return "";
  std::string text = jittest::read_file(cpp);
  size_t at = text.find("return \"");
  return at == std::string::npos ? "" : text.substr(at + 8, 64);
}

TEST(BuildId, IsASha256InHex) {
  std::string_view id = build_id();
  ASSERT_EQ(id.size(), 64u);
  for (char c : id) EXPECT_TRUE((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) << id;
}

TEST(BuildId, IsInTheCacheKey) {
  PrimFunc f = parse(R"(@T.prim_func
def f(X: T.Tensor((64,), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            T.pipe_barrier("V")
)");
  std::string key = jit::cache_key(npu_backend(), f, default_target());
  EXPECT_NE(key.find(std::string(build_id())), std::string::npos) << key;
}

TEST(BuildId, SameSourcesGiveTheSameId) {
  const char* root = std::getenv("TL_SOURCE_DIR");
  if (!root) GTEST_SKIP() << "TL_SOURCE_DIR not set (run through ctest)";
  // The tree this binary was built from, hashed again into another file: the same id (unless
  // a source was edited after the build).
  EXPECT_EQ(compute_id(root), build_id()) << "the sources under src/ and include/ changed since "
                                             "this binary was built: rebuild, then run ctest";
}

TEST(BuildId, DependsOnContentsAndPathsOnly) {
  if (!std::getenv("TL_SOURCE_DIR")) GTEST_SKIP() << "TL_SOURCE_DIR not set (run through ctest)";
  TempDir a, b;
  for (const TempDir* d : {&a, &b}) {
    std::filesystem::create_directories(d->path() / "src" / "ir");
    std::filesystem::create_directories(d->path() / "include" / "tl");
    jittest::write_file(d->path() / "src" / "ir" / "x.cpp", "int x;\n");
    jittest::write_file(d->path() / "include" / "tl" / "x.h", "int y;\n");
  }
  jittest::write_file(a.path() / "src" / "notes.txt", "not a source\n");  // ignored
  std::string id = compute_id(a.str());
  ASSERT_EQ(id.size(), 64u);
  EXPECT_EQ(compute_id(b.str()), id);  // another directory, other times: the same id
  jittest::write_file(b.path() / "src" / "ir" / "x.cpp", "int x = 1;\n");
  EXPECT_NE(compute_id(b.str()), id);
  jittest::write_file(b.path() / "src" / "ir" / "x.cpp", "int x;\n");
  EXPECT_EQ(compute_id(b.str()), id);
  std::filesystem::rename(b.path() / "src" / "ir" / "x.cpp", b.path() / "src" / "ir" / "z.cpp");
  EXPECT_NE(compute_id(b.str()), id);
}

}  // namespace
}  // namespace tl
