// Helpers for pass tests: IR text in, IR text out (Triton's lit tests, TileLang's
// before/after tests). The input is parsed, one pass runs, and the result is printed without
// source locations so expected texts stay short.
#pragma once

#include <string>
#include <string_view>

#include "common/error_of.h"
#include "tl/ir_functor.h"
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

// error_of (tests/common/error_of.h) under the name the pass tests use.
using tltest::error_of;

/// The address of the buffer called `name` in `f` (-1 when it has none or is not declared).
inline int64_t address_of(const PrimFunc& f, std::string_view name) {
  int64_t at = -1;
  pre_order_visit(f->body, [&](const Stmt& s) {
    if (auto* a = s.as<AllocateNode>(); a && a->buffer->name == name) at = a->buffer->address;
  });
  return at;
}

}  // namespace tl::testing
