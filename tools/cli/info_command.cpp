// `kjit info`: driver, devices, NVRTC and its architectures, cache folders.
#include <cstdio>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kjit/info.hpp"
#include "tools/cli/commands.hpp"

namespace kjit::cli {
namespace {

std::string cuda_version(int v) { return fmt::format("{}.{}", v / 1000, v % 1000 / 10); }

nlohmann::json to_json(const SystemInfo& info) {
    nlohmann::json j;
    j["kjit_version"] = info.kjit_version;
    j["driver"] = {{"loaded", info.driver_loaded}, {"cuda_version", info.driver_loaded ? cuda_version(info.driver_version) : ""},
                   {"problem", info.driver_problem}};
    j["devices"] = nlohmann::json::array();
    for (const DeviceProperties& d : info.devices) {
        j["devices"].push_back({{"ordinal", d.ordinal}, {"name", d.name}, {"arch", d.arch()}, {"sm_count", d.sm_count},
                                {"total_memory", d.total_memory}, {"l2_cache_bytes", d.l2_cache_bytes},
                                {"pci_bus_id", d.pci_bus_id}});
    }
    nlohmann::json archs = nlohmann::json::array();
    for (int a : info.nvrtc_archs) archs.push_back("sm_" + std::to_string(a));
    j["nvrtc"] = {{"loaded", info.nvrtc_loaded},
                  {"version", info.nvrtc_loaded ? fmt::format("{}.{}", info.nvrtc_major, info.nvrtc_minor) : ""},
                  {"library", info.nvrtc_library}, {"archs", archs}, {"problem", info.nvrtc_problem}};
    j["cache"] = {{"dir", info.cache_dir}, {"path", info.cache_path}, {"disabled", info.cache_disabled}};
    return j;
}

}  // namespace

void print_system_info() {
    const SystemInfo info = system_info();
    fmt::print("kjit {}\n", info.kjit_version);
    if (info.driver_loaded)
        fmt::print("driver:  CUDA {}\n", cuda_version(info.driver_version));
    else
        fmt::print("driver:  none\n");
    fmt::print("devices: {}\n", info.devices.size());
    for (const DeviceProperties& d : info.devices) {
        fmt::print("  [{}] {}, {}, {} SMs, {:.1f} GiB, L2 {} MiB, PCI {}\n", d.ordinal, d.name, d.arch(), d.sm_count,
                   static_cast<double>(d.total_memory) / (1u << 30), d.l2_cache_bytes >> 20, d.pci_bus_id);
    }
    if (info.devices.empty()) fmt::print("no GPU: {}\n", info.driver_problem);
    if (info.nvrtc_loaded) {
        std::string archs;
        for (int a : info.nvrtc_archs) archs += fmt::format(" sm_{}", a);
        fmt::print("nvrtc:   {}.{} ({})\n  archs:{}\n", info.nvrtc_major, info.nvrtc_minor, info.nvrtc_library, archs);
    } else {
        fmt::print("nvrtc:   none: {}\n", info.nvrtc_problem);
    }
    fmt::print("cache:   {}{}\n", info.cache_dir.empty() ? "(memory only: no KJIT_CACHE_DIR, XDG_CACHE_HOME or HOME)" : info.cache_dir,
               info.cache_disabled ? " (disabled by KJIT_CACHE_DISABLE=1)" : "");
    for (const std::string& dir : info.cache_path) fmt::print("  read-only layer: {}\n", dir);
}

void add_info_command(CLI::App& app, int& exit_status) {
    CLI::App* cmd = app.add_subcommand("info", "Show the driver, GPUs, NVRTC and cache folders kjit finds");
    auto json = std::make_shared<bool>(false);
    cmd->add_flag("--json", *json, "Print as JSON");
    cmd->callback([json, &exit_status] {
        if (*json)
            std::puts(to_json(system_info()).dump(2).c_str());
        else
            print_system_info();
        exit_status = 0;
    });
}

}  // namespace kjit::cli
