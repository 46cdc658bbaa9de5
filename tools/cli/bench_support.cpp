#include "tools/cli/bench_support.hpp"

#include <algorithm>
#include <ctime>

namespace kjit::cli::bench {

std::string today() {
    char buf[32];
    const std::time_t t = std::time(nullptr);
    std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&t));
    return buf;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

double timed_calls(const std::function<void()>& call, int calls, const Stream& stream) {
    const auto t0 = Clock::now();
    for (int k = 0; k < calls; ++k) call();
    stream.synchronize();
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

double time_ms(const std::function<void()>& launch, const Stream& stream, int batch, int repeats) {
    launch();  // warm: compiles, loads, touches the memory
    stream.synchronize();
    std::vector<double> per_call;
    Event start, end;
    for (int r = 0; r < repeats; ++r) {
        start.record(stream);
        for (int k = 0; k < batch; ++k) launch();
        end.record(stream);
        end.synchronize();
        per_call.push_back(Event::elapsed_ms(start, end) / batch);
    }
    std::sort(per_call.begin(), per_call.end());
    return per_call[per_call.size() / 2];
}

double median_host_ms(const std::function<void()>& run, const std::vector<Stream>& streams, int rounds, int batch, int warmup) {
    const auto sync = [&] {
        for (const Stream& s : streams) s.synchronize();
    };
    for (int k = 0; k < warmup; ++k) run();
    sync();
    std::vector<double> per_run;
    for (int r = 0; r < rounds; ++r) {
        const auto t0 = Clock::now();
        for (int k = 0; k < batch; ++k) run();
        sync();
        per_run.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / batch);
    }
    return median(per_run);
}

Array filled(DType t, const Shape& shape, double value, const Stream& s) {
    const ElementwiseKernel fill("T v", "T y", "y = v", "bench_fill");
    Array a = Array::empty(shape, t, Device::cuda(0), s);
    fill.launch({Scalar(value).cast(t), a}, {s, -1});
    return a;
}

Record bandwidth_case(const std::string& name, DType t, std::int64_t n, double bytes, const std::function<void()>& launch,
                      const Stream& s, const std::string& note) {
    Record r;
    r.name = name;
    r.dtype = std::string(t.name());
    r.n = n;
    r.bytes = bytes;
    r.ms = time_ms(launch, s);
    r.gbps = bytes / (*r.ms * 1e-3) / 1e9;
    r.note = note;
    return r;
}

std::vector<Record>& extra_records() {
    static std::vector<Record> extra;
    return extra;
}

}  // namespace kjit::cli::bench
