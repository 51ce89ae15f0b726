// The message of the error a callable throws, for tests that assert on a tl::Error's (or a
// tl::InternalError's) text. One definition instead of a copy in every test file: the strict
// form fails the test when nothing is thrown, so an assertion on the message can never pass on
// a run that silently succeeded; the lenient form is for the tests that expect success and
// want the message printed when it is not.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>

#include "tl/error.h"

namespace tltest {

/// The message of the `E` (tl::Error, tl::InternalError or a subclass) that `fn` throws, none
/// when it returns. Other exceptions propagate (gtest reports them).
template <typename E = tl::Error, typename Fn>
std::optional<std::string> thrown_message(Fn&& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  return std::nullopt;
}

/// The message of the `E` that `fn` throws; "" and a test failure if it throws none.
template <typename E = tl::Error, typename Fn>
std::string error_of(Fn&& fn) {
  if (auto msg = thrown_message<E>(std::forward<Fn>(fn))) return *msg;
  ADD_FAILURE() << "expected a "
                << (std::is_same_v<E, tl::Error>           ? "tl::Error"
                    : std::is_same_v<E, tl::InternalError> ? "tl::InternalError"
                                                           : typeid(E).name())
                << ", none was thrown";
  return "";
}

/// The message of the `E` that `fn` throws, or "" when it returns: for the runs that must
/// succeed, `EXPECT_EQ(error_if_any(...), "")` shows the message when one does not.
template <typename E = tl::Error, typename Fn>
std::string error_if_any(Fn&& fn) {
  return thrown_message<E>(std::forward<Fn>(fn)).value_or("");
}

}  // namespace tltest
