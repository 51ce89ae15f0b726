// tlc: the tl-ascend command-line driver. `tlc list` shows the registered kernels,
// `tlc print KERNEL` prints one as IR text, `tlc verify KERNEL --target A2` checks it.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "tl/kernel_registry.h"
#include "tl/printer.h"

namespace {

std::map<std::string, std::string> parse_sets(const std::vector<std::string>& sets) {
  std::map<std::string, std::string> m;
  for (const auto& s : sets) {
    auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0)
      throw tl::Error(fmt::format("--set expects NAME=VALUE, got '{}'", s));
    m[s.substr(0, eq)] = s.substr(eq + 1);
  }
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tlc: the tl-ascend compiler driver"};
  app.require_subcommand(1);

  auto* list = app.add_subcommand("list", "list the registered kernels");

  std::string kernel;
  std::vector<std::string> sets;
  bool no_loc = false;
  auto* print_cmd = app.add_subcommand("print", "print a kernel as IR text");
  print_cmd->add_option("kernel", kernel, "kernel name (see tlc list)")->required();
  print_cmd->add_option("--set", sets, "override a kernel parameter: NAME=VALUE");
  print_cmd->add_flag("--no-loc", no_loc, "omit `# @file:line` source locations");

  auto* demo = app.add_subcommand("demo", "the main job: build and print every example kernel");

  CLI11_PARSE(app, argc, argv);
  try {
    if (*list) {
      for (const auto* k : tl::registered_kernels()) {
        fmt::print("{:<24} {}\n", k->name, k->summary);
        for (const auto& p : k->params)
          fmt::print("    {:<12} = {:<10} {}\n", p.name, p.default_value, p.help);
      }
      return 0;
    }
    if (*demo) {
      for (const auto* k : tl::registered_kernels()) {
        auto f = tl::build_kernel(*k);
        fmt::print("==== {}: {}\n{}\n", k->name, k->summary, tl::print(f));
      }
      return 0;
    }
    if (*print_cmd) {
      auto f = tl::build_kernel(tl::find_kernel(kernel), parse_sets(sets));
      std::cout << tl::print(f, {.locations = !no_loc});
      return 0;
    }
  } catch (const tl::Error& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
  return 0;
}
