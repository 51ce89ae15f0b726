// `tlc ops` and `tlc op NAME --set k=v ...`: the cann_ops_tilelang operator library from the
// command line (tools/tlc/ops_cmd.cpp).
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "tl/target.h"

struct OpsCommands {
  CLI::App* ops = nullptr;
  CLI::App* op = nullptr;
  std::string name;
  std::vector<std::string> sets;
  bool profile = false;  // --profile: a timed run, its profile and the call's GM peak printed
};

/// Adds the two subcommands to `app`.
OpsCommands add_ops_commands(CLI::App& app);
/// Runs whichever of them was parsed: its exit status (0 ok, 1 the op's check failed), or -1 if
/// neither was. Bad --set values are tl::Errors.
int run_ops_commands(const OpsCommands& c, const tl::Target& target);
