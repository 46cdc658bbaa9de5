// `kjit bench`: kjit's side of the benchmark table (tools/bench/README.md). Each case times kjit on
// the H200-sized problems of the issues with CUDA events (median of several repeats of a batch of
// launches, arrays far larger than the L2), and the device-to-device copy ceiling is measured in
// the same run. Results are JSON lines, one per case. The cases: tools/cli/bench_support.hpp.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "kjit/kjit.hpp"
#include "tools/cli/bench_crossover.hpp"
#include "tools/cli/bench_support.hpp"
#include "tools/cli/commands.hpp"

namespace kjit::cli {
namespace {

using bench::Record;

nlohmann::json to_json(const Record& r, const std::string& device) {
    nlohmann::json j;
    j["impl"] = r.name == "copy" ? "ceiling" : r.impl;
    j["tflops"] = r.tflops ? nlohmann::json(*r.tflops) : nlohmann::json();
    if (!r.variant.empty()) {
        j["variant"] = r.variant;
        j["primary"] = false;
    }
    j["case"] = r.name;
    j["gbps"] = r.gbps ? nlohmann::json(*r.gbps) : nlohmann::json();
    j["us_per_call"] = r.us_per_call ? nlohmann::json(*r.us_per_call) : nlohmann::json();
    j["ms"] = r.ms ? nlohmann::json(*r.ms) : nlohmann::json();
    j["bytes"] = static_cast<std::int64_t>(r.bytes);
    j["n"] = r.n;
    j["dtype"] = r.dtype;
    j["note"] = r.note;
    if (!r.error.empty()) j["error"] = r.error;
    j["date"] = bench::today();
    j["device"] = device;
    return j;
}

}  // namespace

void add_bench_command(CLI::App& app, int& exit_status) {
    auto* cmd = app.add_subcommand("bench", "Time kjit on the benchmark cases (GPU needed): JSON lines");
    static std::string json_path, only;
    static bool list = false, crossover = false;
    static std::string crossover_csv = "crossover.csv";
    static int crossover_max_exponent = 9;
    cmd->add_option("--json", json_path, "Also append the records to this file");
    cmd->add_option("--cases", only, "Comma-separated case names (default: all)");
    cmd->add_flag("--list", list, "List the cases");
    cmd->add_flag("--crossover", crossover,
                  "Instead: y = a*x + b over 10^3 ... 10^9 floats on the CPU (1 thread, all cores) and the GPU (kernel; with copies), as CSV");
    cmd->add_option("--csv", crossover_csv, "With --crossover: the CSV file (default crossover.csv)");
    cmd->add_option("--max-exp", crossover_max_exponent, "With --crossover: the largest size is 10^N (3-9, default 9)")
        ->check(CLI::Range(3, 9));
    cmd->callback([&exit_status] {
        if (crossover) {
            exit_status = run_crossover(crossover_csv, crossover_max_exponent);
            return;
        }
        const std::string self = std::filesystem::canonical("/proc/self/exe").string();
        bench::Cases all;
        bench::add_elementwise_cases(all);
        bench::add_first_call_cases(all, self);
        bench::add_reduction_cases(all);
        bench::add_matmul_cases(all, bench::extra_records());
        bench::add_raw_cases(all);
        bench::add_graph_cases(all);
        bench::add_expr_cases(all);
        bench::add_device_cases(all);
        if (list) {
            for (const auto& [name, fn] : all) std::printf("%s\n", name.c_str());
            return;
        }
        if (Device::count() == 0) throw NoDeviceError("kjit bench needs a GPU: " + no_device_reason());
        Device::set_current(0);
        const std::string device = Device::cuda(0).properties().name;
        const Stream s = Stream::create(Device::cuda(0));
        std::ofstream file;
        if (!json_path.empty()) file.open(json_path, std::ios::app);
        for (const auto& [name, fn] : all) {
            if (!only.empty() && ("," + only + ",").find("," + name + ",") == std::string::npos) continue;
            Record r;
            try {
                r = fn(s);
            } catch (const std::exception& e) {
                r.name = name;
                r.error = e.what();
                exit_status = 1;
            }
            std::vector<Record> records{r};
            records.insert(records.end(), bench::extra_records().begin(), bench::extra_records().end());
            bench::extra_records().clear();
            for (const Record& rec : records) {
                const std::string line = to_json(rec, device).dump();
                std::printf("%s\n", line.c_str());
                std::fflush(stdout);
                if (file) file << line << "\n" << std::flush;
            }
        }
    });
}

}  // namespace kjit::cli
