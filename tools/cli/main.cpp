// kjit: the command-line program. Exit status 0 ok, 1 user error, 2 internal error.
#include <cstdio>
#include <exception>
#include <cctype>
#include <string_view>

#include "kjit/error.hpp"
#include "kjit/version.hpp"
#include "tools/cli/commands.hpp"

namespace {

// Whether a message starts "where:LINE:COL: error: ", as kjit's diagnostics do.
bool has_position(std::string_view m) {
    std::size_t k = 0;
    while (k < m.size() && (std::islower(static_cast<unsigned char>(m[k])) || m[k] == '_')) ++k;
    for (int field = 0; field < 2; ++field) {
        if (k == 0 || k >= m.size() || m[k] != ':') return false;
        const std::size_t digits = ++k;
        while (k < m.size() && std::isdigit(static_cast<unsigned char>(m[k]))) ++k;
        if (k == digits) return false;
    }
    return m.substr(k, 9) == ": error: ";
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"kjit: JIT-compiled elementwise and reduction kernels for NVIDIA GPUs"};
    app.set_version_flag("--version", kjit::version_string);
    app.require_subcommand(1);
    int exit_status = 0;
    kjit::cli::add_info_command(app, exit_status);
    kjit::cli::add_demo_command(app, exit_status);
    kjit::cli::add_kernel_commands(app, exit_status);
    kjit::cli::add_cache_commands(app, exit_status);
    kjit::cli::add_run_command(app, exit_status);
    kjit::cli::add_bench_command(app, exit_status);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int rc = app.exit(e);  // prints help or the usage error
        return rc == 0 ? 0 : 1;
    } catch (const kjit::NvrtcError& e) {
        std::fprintf(stderr, "kjit: internal error: %s\n", e.what());  // NVRTC itself failed
        return 2;
    } catch (const kjit::Error& e) {
        // Diagnostics with a position already read "where:LINE:COL: error: ..." with the snippet.
        if (has_position(e.what()))
            std::fprintf(stderr, "%s\n", e.what());
        else
            std::fprintf(stderr, "kjit: error: %s\n", e.what());
        return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "kjit: internal error: %s\n", e.what());
        return 2;
    }
    return exit_status;
}
