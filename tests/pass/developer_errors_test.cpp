// Developer-mode errors as a user meets them: each kernel below goes through the whole
// pipeline (`compile`, as `tlc run` and the JIT do), fails with a tl::Error, and the test
// asserts the message's words and the kernel line it points at. Lines are the IR text's
// `# @k.py:N` annotations, the form in which the printer records a statement's source line
// (a DSL kernel's C++ line, a Python kernel's line), each written here as the line's own
// number in the text. One test or more per pass that can reject a developer kernel;
// docs/developer_mode.md, "Errors", lists them.
#include <gtest/gtest.h>

#include "pass/pass_test_util.h"
#include "tl/npu/npu.h"

namespace tl {
namespace {

using testing::error_of;

/// `text` with each statement line annotated as line N of k.py (N: its line in `text`).
std::string annotated(const std::string& text) {
  std::string out, line;
  int n = 0;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    line = text.substr(at, end - at);
    ++n;
    if (n > 2 && !line.empty()) line += fmt::format("  # @k.py:{}", n);
    out += line + "\n";
    at = end + 1;
  }
  return out;
}

/// The message of compiling `text` (annotated as k.py) for A2.
std::string compile_error(const std::string& text, const CompileOptions& o = {}) {
  return error_of([&] { compile(parse(annotated(text), "k.py"), default_target(), o); });
}

/// Expects `msg` to contain each of `parts`.
void expect_says(const std::string& msg, std::initializer_list<std::string_view> parts) {
  for (std::string_view p : parts)
    EXPECT_NE(msg.find(p), std::string::npos) << "missing: " << p << "\nin: " << msg;
}

TEST(DeveloperErrors, VerifierRejectsASyncInADeveloperKernel) {
  std::string msg = compile_error(R"(@T.prim_func
def f(X: T.Tensor((16, 64), "float32")):
    with T.Kernel(1, threads=1) as cid:
        x = T.alloc_shared((16, 64), "float32")
        T.copy(X, x)
        T.pipe_barrier("V")
        T.copy(x, X)
)");
  expect_says(msg, {"k.py:6", "pipe_barrier"});
}

TEST(DeveloperErrors, InferScopesRejectsAnAccumulatorMadeByAllocShared) {
  std::string msg = compile_error(R"(@T.prim_func
def f(A: T.Tensor((32, 32), "float16")):
    with T.Kernel(1, threads=1) as cid:
        a = T.alloc_shared((32, 32), "float16")
        c = T.alloc_shared((32, 32), "float32")
        T.copy(A, a)
        T.gemm(a, a, c, True)
)");
  expect_says(
      msg, {"k.py:5: buffer 'c' (k.py:5) is the accumulator of", "make it with T::alloc_fragment"});
}

TEST(DeveloperErrors, InferScopesRejectsACrossingCarriedAcrossIterations) {
  std::string msg = compile_error(R"(@T.prim_func
def f(A: T.Tensor((32, 32), "float16"), C: T.Tensor((32, 32), "float32")):
    with T.Kernel(1, threads=1) as cid:
        a = T.alloc_shared((32, 32), "float16")
        c = T.alloc_fragment((32, 32), "float32")
        T.copy(A, a)
        T.gemm(a, a, c, True)
        for k in T.serial(2):
            T.tile.exp(c, c)
            T.gemm(a, a, c, True)
        T.copy(c, C)
)");
  expect_says(msg,
              {"k.py:9: buffer 'c' (k.py:5): `T.tile.exp(c, c)` at k.py:9 reads it from the vector "
               "unit before "
               "the cube writes it in the same iteration of `for k in T.serial(2)` at k.py:8"});
}

TEST(DeveloperErrors, LowerCubeOpsRejectsAClearWithoutItsGemm) {
  std::string msg = compile_error(R"(@T.prim_func
def f(A: T.Tensor((32, 32), "float16"), C: T.Tensor((32, 32), "float32")):
    with T.Kernel(1, threads=1) as cid:
        a = T.alloc_shared((32, 32), "float16")
        c = T.alloc_fragment((32, 32), "float32")
        T.copy(A, a)
        T.gemm(a, a, c, True)
        T.copy(c, C)
        T.tile.fill(c, 0.0)
)");
  expect_says(msg,
              {"k.py:9", "T.clear of the accumulator 'c' is not followed by a T.gemm into it"});
}

TEST(DeveloperErrors, LowerCubeOpsRejectsANonZeroFillOfAnAccumulator) {
  std::string msg = compile_error(R"(@T.prim_func
def f(A: T.Tensor((32, 32), "float16"), C: T.Tensor((32, 32), "float32")):
    with T.Kernel(1, threads=1) as cid:
        a = T.alloc_shared((32, 32), "float16")
        c = T.alloc_fragment((32, 32), "float32")
        T.copy(A, a)
        T.tile.fill(c, 1.0)
        T.gemm(a, a, c)
        T.copy(c, C)
)");
  expect_says(msg, {"k.py:7", "T.fill of the accumulator 'c' with a value other than 0"});
}

TEST(DeveloperErrors, LowerCubeOpsRejectsTilesTooBigForL0) {
  // 2048 x 16 fp16 fits L1, and its 2048 x 16 fp32 product fits L0C, but the cube double-buffers
  // L0A: two 2048 x 16 chunks need 128 KB of its 64 KB.
  std::string msg = compile_error(R"(@T.prim_func
def f(A: T.Tensor((2048, 16), "float16"), B: T.Tensor((16, 16), "float16"), C: T.Tensor((2048, 16), "float32")):
    with T.Kernel(1, threads=1) as cid:
        a = T.alloc_shared((2048, 16), "float16")
        b = T.alloc_shared((16, 16), "float16")
        c = T.alloc_fragment((2048, 16), "float32")
        T.copy(A, a)
        T.copy(B, b)
        T.gemm(a, b, c, True)
        T.copy(c, C)
)");
  expect_says(
      msg, {"k.py:9: T.gemm: an M x K chunk of 2048 x 16", "do not fit L0A", "use smaller tiles"});
}

TEST(DeveloperErrors, SplitCubeVectorRejectsACubeBranchOnVectorData) {
  std::string msg = compile_error(R"(@T.prim_func
def f(A: T.Tensor((32, 32), "float16"), X: T.Tensor((32,), "int32"), C: T.Tensor((32, 32), "float32")):
    with T.Kernel(1, threads=1) as cid:
        x = T.alloc_shared((32,), "int32")
        a = T.alloc_shared((32, 32), "float16")
        c = T.alloc_fragment((32, 32), "float32")
        T.copy(X, x)
        if x[0] > 0:
            T.copy(A, a)
            T.gemm(a, a, c, True)
            T.copy(c, C)
)");
  expect_says(msg, {"k.py:8: `if x[0] > 0` at k.py:8: its condition reads 'x' (UB), which lives on "
                    "the Vector core, "
                    "but it also controls work of the Cube core"});
}

TEST(DeveloperErrors, SplitRejectsAScalarGmStoreToATensorTheOtherCoreCopies) {
  // The vector core's scalar unit stores to C, which the cube's fixpipe writes too: nothing
  // would order the two (GM crosses cores only through the compiler's channels).
  std::string msg = compile_error(R"(@T.prim_func
def f(A: T.Tensor((32, 32), "float16"), X: T.Tensor((32,), "float32"), C: T.Tensor((32, 32), "float32")):
    with T.Kernel(1, threads=1) as cid:
        a = T.alloc_shared((32, 32), "float16")
        c = T.alloc_fragment((32, 32), "float32")
        x = T.alloc_shared((32,), "float32")
        T.copy(A, a)
        T.gemm(a, a, c, True)
        T.copy(c, C)
        T.copy(X, x)
        C[0, 0] = x[0]
)");
  expect_says(msg, {"k.py:11: `C[0, 0] = x[0]` at k.py:11 stores to the GM tensor 'C' from the "
                    "scalar unit of the "
                    "Vector core, and `T.copy(c, C)` at k.py:9 on the Cube core touches it too"});
}

TEST(DeveloperErrors, SplitRejectsAGmElementTheOtherCoreStoresInALoopBound) {
  // N[0] is stored on the vector core (from UB data) and bounds the cube's K loop.
  std::string msg = compile_error(R"(@T.prim_func
def f(A: T.Tensor((32, 64), "float16"), X: T.Tensor((32,), "int32"), N: T.Tensor((1,), "int32"), C: T.Tensor((32, 32), "float32")):
    with T.Kernel(1, threads=1) as cid:
        a = T.alloc_shared((32, 32), "float16")
        c = T.alloc_fragment((32, 32), "float32")
        x = T.alloc_shared((32,), "int32")
        T.copy(X, x)
        N[0] = x[0]
        for k in T.serial(N[0]):
            T.copy(A[0:32, k * 32:k * 32 + 32], a)
            T.gemm(a, a, c, k == 0)
        T.copy(c, C)
)");
  expect_says(msg, {"k.py:9: `for k in T.serial(N[0])` at k.py:9 reads the GM tensor 'N' on the "
                    "Cube core, but the "
                    "Vector core writes it"});
}

TEST(DeveloperErrors, VectorizeRejectsACrossIterationRead) {
  std::string msg = compile_error(R"(@T.prim_func
def f(X: T.Tensor((16, 64), "float32")):
    with T.Kernel(1, threads=1) as cid:
        x = T.alloc_shared((16, 64), "float32")
        T.copy(X, x)
        for i in T.Parallel(16):
            for j in T.Parallel(32):
                x[i, j] = x[i, j + 32] + 1.0
        for i in T.Parallel(16):
            for j in T.Parallel(63):
                x[i, j] = x[i, j + 1] + 1.0
        T.copy(x, X)
)");
  expect_says(msg, {"k.py:9: T.Parallel: cannot vectorise: cross-iteration read: x[i, j + 1] is "
                    "read while x[i, j] "
                    "is written"});
}

TEST(DeveloperErrors, VectorizeRejectsAMiddleLoopVariableAsAValue) {
  std::string msg = compile_error(R"(@T.prim_func
def f(X: T.Tensor((2, 8, 64), "float32")):
    with T.Kernel(1, threads=1) as cid:
        x = T.alloc_shared((2, 8, 64), "float32")
        T.copy(X, x)
        for b in T.Parallel(2):
            for i in T.Parallel(8):
                for j in T.Parallel(64):
                    x[b, i, j] = T.if_then_else(i < 4, x[b, i, j], 0.0)
        T.copy(x, X)
)");
  expect_says(msg,
              {"k.py:6: T.Parallel: cannot vectorise: the loop variable i is used as a value in a "
               "3-dimensional loop"});
}

TEST(DeveloperErrors, VectorizeRejectsAnInexactIntrinsicUnlessAllowed) {
  const std::string text = R"(@T.prim_func
def f(X: T.Tensor((16, 64), "float32")):
    with T.Kernel(1, threads=1) as cid:
        x = T.alloc_shared((16, 64), "float32")
        T.copy(X, x)
        for i in T.Parallel(16):
            for j in T.Parallel(64):
                x[i, j] = T.exp(x[i, j])
        T.copy(x, X)
)";
  expect_says(compile_error(text), {"k.py:6: T.Parallel: cannot vectorise:", "exp"});
  CompileOptions o;
  o.dev.allow_inexact_math = true;
  EXPECT_NO_THROW(compile(parse(annotated(text), "k.py"), default_target(), o));
}

TEST(DeveloperErrors, PlanMemoryNamesCompilerMadeBuffersInTheOverflowTable) {
  // 64 x 512 fp32 accumulators: the UB twin of c and the workspace data do not fit UB twice.
  std::string msg = compile_error(R"(@T.prim_func
def f(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 512), "float16"), D: T.Tensor((64, 512), "float32")):
    with T.Kernel(1, threads=1) as cid:
        a = T.alloc_shared((64, 64), "float16")
        b = T.alloc_shared((64, 512), "float16")
        c = T.alloc_fragment((64, 512), "float32")
        d = T.alloc_shared((64, 512), "float32")
        e = T.alloc_shared((64, 512), "float32")
        T.copy(A, a)
        T.copy(B, b)
        T.gemm(a, b, c, True)
        T.copy(D, d)
        for i in T.Parallel(64):
            for j in T.Parallel(512):
                e[i, j] = c[i, j] + d[i, j]
        T.copy(e, D)
)");
  expect_says(msg, {"UB needs", "c_ub", "UB twin of 'c', k.py:6"});
}

TEST(DeveloperErrors, ChannelSyncsRejectMoreChannelsThanCrossCoreFlags) {
  // Twelve accumulators cross to the vector unit: each channel needs a cross-core flag id.
  std::string decls, body;
  for (int n = 0; n < 12; ++n) {
    decls += fmt::format("        c{} = T.alloc_fragment((16, 16), \"float32\")\n", n);
    body += fmt::format("        T.gemm(a, a, c{}, True)\n", n);
  }
  for (int n = 0; n < 12; ++n) body += fmt::format("        T.tile.exp(c{0}, c{0})\n", n);
  std::string msg = compile_error(R"(@T.prim_func
def f(A: T.Tensor((16, 16), "float16")):
    with T.Kernel(1, threads=1) as cid:
        a = T.alloc_shared((16, 16), "float16")
)" + decls + "        T.copy(A, a)\n" +
                                  body);
  // Line 41 is the twelfth crossing's consumer, the first that finds no id.
  expect_says(msg, {"k.py:41: kernel f: the cross-core channels need more than 11 cross-core flags "
                    "(ids 0-10; 11-14 "
                    "belong to sync_all)"});
}

}  // namespace
}  // namespace tl
