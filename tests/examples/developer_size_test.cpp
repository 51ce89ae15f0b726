// Developer mode's promise in code lines (docs/developer_mode.md): each *_dev kernel is at most
// 40 % of the code lines of its expert twin. The count is this file's (kernel_lines): the
// kernel's code between `namespace tl::examples {` and its registration, helpers included. The
// ratios are printed, so a run of `ctest -R DeveloperSize -V` is the table.
//
// gemm_dev is persistent with a pipelined K loop, so its twin is gemm_pipelined (persistent
// AICs, double-buffered L1 panels and L0 chunks, every flag by hand). docs/developer_mode.md
// keeps the table.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "tl/error.h"

namespace tl {
namespace {

/// Code lines of the kernel in examples/`file`: every line from `namespace tl::examples {` to
/// the TL_REGISTER_KERNEL registration (the generator and any helpers it calls; not the
/// includes, the registration or the file's opening comment) that is neither blank nor only a
/// comment.
int kernel_lines(const std::string& file) {
  const char* root = std::getenv("TL_SOURCE_DIR");
  std::ifstream in(std::string(root ? root : ".") + "/examples/" + file);
  if (!in) throw Error(fmt::format("cannot read examples/{}", file));
  std::string line;
  bool inside = false, done = false;
  int count = 0;
  while (std::getline(in, line)) {
    if (!inside) {
      inside = line.rfind("namespace tl::examples {", 0) == 0;
      continue;
    }
    if (line.rfind("TL_REGISTER_KERNEL", 0) == 0) {
      done = true;
      break;
    }
    size_t first = line.find_first_not_of(" \t");
    count += first != std::string::npos && line.compare(first, 2, "//") != 0;
  }
  if (!done)
    throw Error(
        fmt::format("examples/{}: no `namespace tl::examples {{` ... TL_REGISTER_KERNEL", file));
  return count;
}

TEST(DeveloperSize, DevKernelsAreAFractionOfTheirExpertTwins) {
  if (!std::getenv("TL_SOURCE_DIR")) GTEST_SKIP() << "TL_SOURCE_DIR not set (run through ctest)";
  struct Pair {
    const char *dev_file, *expert_file;
    int max_percent;
  };
  for (const Pair& p :
       {Pair{"gemm_dev.cpp", "gemm_pipelined.cpp", 40},
        Pair{"add_dev.cpp", "elementwise_add.cpp", 40},
        Pair{"rms_norm_dev.cpp", "rms_norm.cpp", 40}, Pair{"gelu_dev.cpp", "gelu.cpp", 40},
        Pair{"flash_attention_dev.cpp", "flash_attention.cpp", 40}}) {
    int d = kernel_lines(p.dev_file), e = kernel_lines(p.expert_file);
    std::printf("  %-18s %3d lines   %-20s %3d lines   %3.0f %%\n", p.dev_file, d, p.expert_file, e,
                100.0 * d / e);
    EXPECT_LE(d * 100, e * p.max_percent)
        << p.dev_file << " has " << d << " code lines, " << p.expert_file << " " << e;
  }
}

}  // namespace
}  // namespace tl
