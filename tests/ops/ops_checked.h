// One check the library's edge tests share: a set of op calls runs clean under the hazard checker
// and, in timed mode with data, computes the same bytes in simulated-time order as in program
// order (no time-order effect on any launch). Test-only (needs gtest and the library's
// ScopedRun, include/cann_ops_tilelang/core.h).
#pragma once
#include <cstddef>
#include <functional>
#include <string>

#include <gtest/gtest.h>

#include "cann_ops_tilelang/core.h"

namespace opstest {

/// Runs `calls` under the hazard checker (no error may be thrown), then again in timed mode; the
/// timed run must profile `launches` kernels with no time-order effect. `what` prefixes each
/// failure (a dtype, a case name).
inline void expect_hazard_free_and_time_order_free(const std::function<void()>& calls,
                                                   size_t launches, const std::string& what = "") {
  cann_ops_tilelang::RunOptions hazards;
  hazards.launch.check_hazards = true;
  {
    cann_ops_tilelang::ScopedRun s(hazards);
    EXPECT_NO_THROW(calls()) << what;
  }
  cann_ops_tilelang::RunOptions timed;
  timed.profile = true;
  {
    cann_ops_tilelang::ScopedRun s(timed);
    calls();
  }
  ASSERT_EQ(timed.profiles.size(), launches) << what;
  for (const auto& p : timed.profiles)
    for (const auto& e : p.time_order_effects)
      ADD_FAILURE() << what << " " << p.kernel << ": " << e;
}

}  // namespace opstest
