// The subcommands of the `kjit` program. Each registers itself on the app and returns the exit
// status through its callback: 0 ok, 1 user error, 2 internal error.
#pragma once

#include <CLI/CLI.hpp>

namespace kjit::cli {

void add_info_command(CLI::App& app, int& exit_status);
void add_demo_command(CLI::App& app, int& exit_status);
void add_kernel_commands(CLI::App& app, int& exit_status);  // check, source, compile
void add_cache_commands(CLI::App& app, int& exit_status);   // precompile, cache ...
void add_bench_command(CLI::App& app, int& exit_status);
void add_run_command(CLI::App& app, int& exit_status);    // run a kernel on .npy files

// Prints what `kjit info` prints (human-readable) to stdout.
void print_system_info();

}  // namespace kjit::cli
