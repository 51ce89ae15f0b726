// The kernel registry: TL_REGISTER_KERNEL records where each kernel was registered, and a
// name registered twice makes every lookup a user error naming both sites (registration
// itself, at static-initialisation time, never throws).
#include <gtest/gtest.h>

#include "pass/pass_test_util.h"
#include "tl/kernel_registry.h"
#include "tl/lang.h"

namespace tl {
namespace {

KernelEntry entry(const std::string& name) {
  return KernelEntry{
      .name = name, .summary = "test kernel", .params = {}, .build = [](const KernelArgs&) {
        return PrimFunc();
      }};
}

using testing::error_of;

TEST(KernelRegistry, MacroRecordsTheRegistrationSite) {
  const KernelEntry& gemm = find_kernel("gemm");
  EXPECT_EQ(gemm.site.file, "examples/gemm.cpp");
  EXPECT_GT(gemm.site.line, 0);
  for (const KernelEntry* k : registered_kernels()) {
    EXPECT_EQ(k->site.file.rfind("examples/", 0), 0u) << k->name << " at " << k->site.str();
    EXPECT_TRUE(k->site.known()) << k->name;
  }
}

TEST(KernelRegistry, UniqueNamesAreFound) {
  KernelRegistry r;
  EXPECT_TRUE(r.add(entry("b"), SourceLoc{"b.cpp", 2}));
  EXPECT_TRUE(r.add(entry("a"), SourceLoc{"a.cpp", 1}));
  ASSERT_EQ(r.entries().size(), 2u);
  EXPECT_EQ(r.entries()[0]->name, "a");  // sorted by name
  EXPECT_EQ(r.find("b").site.str(), "b.cpp:2");
  std::string msg = error_of([&] { r.find("c"); });
  EXPECT_NE(msg.find("unknown kernel 'c'; registered kernels: a, b"), std::string::npos) << msg;
}

TEST(KernelRegistry, DuplicateNameIsReportedByEveryLookupWithBothSites) {
  KernelRegistry r;
  EXPECT_TRUE(r.add(entry("gemm"), SourceLoc{"examples/gemm.cpp", 39}));
  EXPECT_TRUE(r.add(entry("other"), SourceLoc{"examples/other.cpp", 5}));
  EXPECT_TRUE(r.add(entry("gemm"), SourceLoc{"examples/my_gemm.cpp", 12}));  // accepted: no throw
  for (const std::string& msg : {error_of([&] { r.entries(); }), error_of([&] { r.find("gemm"); }),
                                 error_of([&] { r.find("other"); })}) {
    EXPECT_NE(msg.find("kernel 'gemm' at examples/gemm.cpp:39 and at examples/my_gemm.cpp:12"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("registered twice"), std::string::npos) << msg;
  }
}

TEST(KernelRegistry, GlobalRegistryHasNoDuplicates) {
  EXPECT_NO_THROW(registered_kernels());
  EXPECT_EQ(&KernelRegistry::global().find("gemm"), &find_kernel("gemm"));
}

}  // namespace
}  // namespace tl
