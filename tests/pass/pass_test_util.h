// Helpers for pass tests: IR text in, IR text out (Triton's lit tests, TileLang's
// before/after tests). The input is parsed, one pass runs, and the result is printed without
// source locations so expected texts stay short.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "tl/parser.h"
#include "tl/pass.h"
#include "tl/printer.h"

namespace tl::testing {

/// Parses `text`, runs `pass`, prints the result without locations.
template <typename PassFn>
std::string run_on_text(std::string_view text, PassFn&& pass) {
  PrimFunc f = parse(text);
  return print(pass(f), {.locations = false});
}

/// The message of the tl::Error `fn` throws ("" and a test failure if it throws none).
template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a tl::Error";
  return "";
}

}  // namespace tl::testing
