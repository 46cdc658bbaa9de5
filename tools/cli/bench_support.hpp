// What the cases of `kjit bench` share (tools/cli/bench_command.cpp runs them): the record a case
// returns, timing with CUDA events, arrays filled on the GPU. The cases live in one file per group
// (bench_elementwise.cpp, bench_first_calls.cpp, bench_reductions.cpp, bench_matmul.cpp,
// bench_raw.cpp, bench_graph.cpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kjit/kjit.hpp"

namespace kjit::cli::bench {

using Clock = std::chrono::steady_clock;

struct Record {
    std::string name;
    std::string dtype;
    std::int64_t n = 0;
    double bytes = 0;
    std::optional<double> gbps, us_per_call, ms;
    std::string note, error;
    std::string variant;  // a secondary measurement of the case (tools/bench/README.md)
    std::optional<double> tflops;
    std::string impl = "kjit";  // or "cublas": the raw library on the same shapes
};

using Case = std::function<Record(const Stream&)>;
using Cases = std::vector<std::pair<std::string, Case>>;

// Today's date (UTC), as records carry it.
std::string today();

// The middle value of `v` (the upper one of an even count).
double median(std::vector<double> v);

// Milliseconds per call of `launch` on `stream`: median over `repeats` batches of `batch` calls.
double time_ms(const std::function<void()>& launch, const Stream& stream, int batch = 20, int repeats = 7);

// Host-timed milliseconds per run of `run`, for work that spans several streams or waits on the
// host itself: `warmup` untimed runs, then `rounds` rounds of `batch` runs, each round closed by
// a synchronisation of every stream in `streams`; the median over the rounds.
double median_host_ms(const std::function<void()>& run, const std::vector<Stream>& streams, int rounds, int batch = 1,
                      int warmup = 1);

// Host seconds of `calls` calls of `call` then one sync of `stream`, all timed (as the peers time
// host cost: the GPU's own pace can bound it).
double timed_calls(const std::function<void()>& call, int calls, const Stream& stream);

// A new device array of `shape` holding `value` everywhere.
Array filled(DType t, const Shape& shape, double value, const Stream& s);

// A bandwidth record: `launch` timed by time_ms(), `bytes` moved per call.
Record bandwidth_case(const std::string& name, DType t, std::int64_t n, double bytes, const std::function<void()>& launch,
                      const Stream& s, const std::string& note);

// Records a case adds beside its own (raw cuBLAS beside kjit's matmul), printed after it.
std::vector<Record>& extra_records();

// The groups of cases, in the order the table lists them. `self`: this program's path (the
// fresh-process cases start it again).
void add_elementwise_cases(Cases& c);
void add_first_call_cases(Cases& c, const std::string& self);
// The shell commands of ew_first_readonly, for this program `self` and the temporary folder `dir`:
// record the probe's kernel, precompile it for `arch` into <dir>/shipped, and a fresh probe that
// uses that folder as its only, read-only layer, without NVRTC (prints what kjit-probe prints).
struct ReadonlyProbe {
    std::string record, precompile, probe;
};
ReadonlyProbe readonly_probe_commands(const std::string& self, const std::string& dir, const std::string& arch);
// kjit-probe (tools/bench/first_call_probe.cpp), which the build puts beside this program: a
// program linked to libkjit.so, as applications are, unlike this one.
std::string probe_program(const std::string& self);
void add_reduction_cases(Cases& c);
void add_matmul_cases(Cases& c, std::vector<Record>& extra);
void add_raw_cases(Cases& c);
void add_graph_cases(Cases& c);
void add_expr_cases(Cases& c);
void add_device_cases(Cases& c);  // several GPUs (mg_*)

}  // namespace kjit::cli::bench
