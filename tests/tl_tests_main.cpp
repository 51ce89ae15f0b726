// tl_tests' main: gtest's, plus the op tests' --seed flag (tests/ops/ops_seed.h; docs/ops.md
// "Tests"), taken out of argv before gtest parses it, so `tl_tests --seed 7 --gtest_filter=...`
// gives every op test the data OPS_TILELANG_SEED=7 gives it.
#include <gtest/gtest.h>

#include <cstdio>

#include "ops/ops_seed.h"

int main(int argc, char** argv) {
  if (std::string err = opstest::take_seed_flag(argc, argv); !err.empty()) {
    std::fprintf(stderr, "tl_tests: %s\n", err.c_str());
    return 2;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
