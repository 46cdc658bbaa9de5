// `kjit demo`: for now, what kjit finds on this machine; the scenarios of the demo come with the
// elementwise, reduction and matmul kernels.
#include <fmt/format.h>

#include "kjit/device.hpp"
#include "tools/cli/commands.hpp"

namespace kjit::cli {

void add_demo_command(CLI::App& app, int& exit_status) {
    CLI::App* cmd = app.add_subcommand("demo", "Show what kjit does on this machine");
    cmd->callback([&exit_status] {
        print_system_info();
        if (Device::count() == 0) fmt::print("\nNo GPU was found, so nothing runs on one here.\n");
        exit_status = 0;
    });
}

}  // namespace kjit::cli
