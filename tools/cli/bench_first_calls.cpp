// `kjit bench`: first calls (issues 4 and 5): a new kernel's, a new reduction's, and a fresh
// process's with the kernel on disk (kjit-probe, beside this program, started again and again).
#include <algorithm>
#include <filesystem>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <sstream>
#include <unistd.h>
#include <utility>

#include "jit/kernels/elementwise/calls.hpp"
#include "runtime/detail/device_attributes.hpp"
#include "tools/cli/bench_support.hpp"

namespace kjit::cli::bench {

namespace {
// 'text' for the shell (the paths here hold no quote).
std::string quoted(const std::string& text) {
    std::string q;
    q.reserve(text.size() + 2);
    q.push_back('\'');
    q.append(text);
    q.push_back('\'');
    return q;
}
// A variant record of case `r`: the first calls of new kernels on 2^20 float32 elements.
void add_large_first_call(const Record& r, const std::string& variant, const std::string& what, const std::vector<double>& whole,
                          const std::vector<double>& nvrtc) {
    Record big = r;
    big.n = std::int64_t{1} << 20;
    big.ms = median(whole);
    big.variant = variant;
    std::ostringstream note;
    note << "median of 5 new " << what << ", first call on 2^20 float32; NVRTC's part " << median(nvrtc) << " ms";
    big.note = note.str();
    extra_records().push_back(big);
}

}  // namespace

void add_first_call_cases(Cases& c, const std::string& self) {
    c.emplace_back("ew_first_new", [=](const Stream& s) {
        // Kernels no cache has seen (their operations name this process), in a process whose NVRTC
        // has started already. The first call is timed whole; the same steps are then timed one by
        // one on another new kernel: the program of the variant the call launches (front end +
        // NVRTC + cache write), its module load, and the call (binding, launch, sync). 1000
        // elements take the small variant; a variant record times a first call on 2^20 elements,
        // which takes the vectorised contiguous variant.
        const Array x = filled(DType::float32, {1000}, 1.5, s);
        const Array large = filled(DType::float32, {std::int64_t{1} << 20}, 1.5, s);
        auto fresh = [](int k) {
            return ElementwiseKernel("T x", "T y",
                                     "y = x * " + std::to_string(getpid()) + ".0f + " + std::to_string(k) + "." +
                                         std::to_string(std::time(nullptr) % 100000) + "f",
                                     "fresh");
        };
        std::vector<double> whole, nvrtc, compile, load, call, whole_large, nvrtc_large;
        auto ms_since = [](Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); };
        for (int k = 0; k < 5; ++k) {
            const ElementwiseKernel a = fresh(3 * k);
            double before = cache_stats().compile_ms;
            auto t = Clock::now();
            (void)a({x}, {s, -1});
            s.synchronize();
            whole.push_back(ms_since(t));
            nvrtc.push_back(cache_stats().compile_ms - before);
            const ElementwiseKernel b = fresh(3 * k + 1);
            const TypeBinding types{{"T", DType::float32}};
            t = Clock::now();
            (void)jit::kernels::compile_elementwise_entry(b, types, {}, "", jit::kernels::ElementwiseEntry::small32);
            compile.push_back(ms_since(t));
            t = Clock::now();
            (void)jit::kernels::elementwise_variants(b, types, {}, 0).function(jit::kernels::ElementwiseEntry::small32);
            load.push_back(ms_since(t));
            t = Clock::now();
            (void)b({x}, {s, -1});
            s.synchronize();
            call.push_back(ms_since(t));
            const ElementwiseKernel c = fresh(3 * k + 2);
            before = cache_stats().compile_ms;
            t = Clock::now();
            (void)c({large}, {s, -1});
            s.synchronize();
            whole_large.push_back(ms_since(t));
            nvrtc_large.push_back(cache_stats().compile_ms - before);
        }
        Record r;
        r.name = "ew_first_new";
        r.dtype = "float32";
        r.n = 1000;
        r.ms = median(whole);
        std::ostringstream note;
        note << "median of 5 new kernels (parse, generate, NVRTC of the small variant, cache write, load, launch, sync), NVRTC's part "
             << median(nvrtc) << " ms; by step, medians: program " << median(compile) << " ms, load " << median(load)
             << " ms, then the call " << median(call) << " ms";
        r.note = note.str();
        add_large_first_call(r, "2^20 elements (the contiguous variant: vector loads, unrolled)", "kernels", whole_large, nvrtc_large);
        return r;
    });
    c.emplace_back("red_first_new", [=](const Stream& s) {
        // Reductions no cache has seen, summed whole: the first call compiles the module of the
        // one strategy it launches (small: one block for 1000 elements), loads it and launches
        // (NVRTC started already). A variant record: 2^20 elements, the `full` strategy.
        const Array x = filled(DType::float32, {1000}, 1.5, s);
        const Array large = filled(DType::float32, {std::int64_t{1} << 20}, 1.5, s);
        const auto first_calls = [&](const Array& input, int salt, std::vector<double>& whole, std::vector<double>& nvrtc) {
            for (int k = 0; k < 5; ++k) {
                const ReductionKernel r("T x", "T y",
                                        "x * " + std::to_string(getpid()) + ".0f + " + std::to_string(10 * k + salt) + "." +
                                            std::to_string(std::time(nullptr) % 100000) + "f",
                                        "a + b", "y = a", "0", "fresh_sum");
                const double before = cache_stats().compile_ms;
                const auto t = Clock::now();
                (void)r({input}, ReduceOptions{{s}});
                s.synchronize();
                whole.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t).count());
                nvrtc.push_back(cache_stats().compile_ms - before);
            }
        };
        std::vector<double> whole, nvrtc, whole_large, nvrtc_large;
        first_calls(x, 1, whole, nvrtc);
        first_calls(large, 2, whole_large, nvrtc_large);
        Record rec;
        rec.name = "red_first_new";
        rec.dtype = "float32";
        rec.n = 1000;
        rec.ms = median(whole);
        std::ostringstream note;
        note << "median of 5 new reductions of everything (parse, generate, NVRTC of the small strategy, cache write, load, "
                "launch, sync); NVRTC's part: "
             << median(nvrtc) << " ms";
        rec.note = note.str();
        add_large_first_call(rec, "2^20 elements (the full strategy: many blocks, vector loads)", "reductions", whole_large, nvrtc_large);
        return rec;
    });
    c.emplace_back("ew_first_disk", [=](const Stream&) {
        // Fresh processes (kjit-probe) whose kernel is on disk: the first call's time after
        // CUDA has started, as the probe measures it.
        Record r;
        r.name = "ew_first_disk";
        r.dtype = "float32";
        r.n = 1000;
        std::vector<double> ms, faults;
        for (int k = 0; k < 6; ++k) {
            const std::string cmd = quoted(probe_program(self));
            FILE* p = popen(cmd.c_str(), "r");
            if (!p) throw Error("cannot run " + cmd);
            double v[2] = {};
            const bool got = std::fscanf(p, "%lf %lf", &v[0], &v[1]) == 2;
            pclose(p);
            if (got && k > 0) {  // the first run fills the cache
                ms.push_back(v[0]);
                faults.push_back(v[1]);
            }
        }
        if (ms.empty()) throw Error("the probe printed nothing: " + probe_program(self));
        std::sort(ms.begin(), ms.end());
        r.ms = ms[ms.size() / 2];
        std::ostringstream note;
        note << "median of " << ms.size() << " fresh processes, kernel on disk; min " << ms.front() << " max " << ms.back()
             << " ms; CUDA's own start excluded; page faults in the call (median) " << median(faults);
        r.note = note.str();
        return r;
    });
    c.emplace_back("ew_first_readonly", [=](const Stream&) {
        // A shipped cache: the probe's kernel precompiled (`kjit precompile`, which notes its plan)
        // into a temporary folder, then fresh processes (kjit-probe) that use it as their only cache
        // layer, read-only, with no writable folder and no NVRTC: the first call goes through the
        // plan note's alias keys.
        char made[] = "/tmp/kjit-bench-readonly-XXXXXX";
        if (::mkdtemp(made) == nullptr) throw Error("cannot make a temporary folder for ew_first_readonly");
        const std::string dir = made;
        struct Remove {
            std::string dir;
            ~Remove() {
                std::error_code ignored;
                std::filesystem::remove_all(dir, ignored);
            }
        } remove{dir};
        const std::string arch = "sm_" + std::to_string(kjit::detail::device_attributes(0).compute_capability());
        const ReadonlyProbe commands = readonly_probe_commands(self, dir, arch);
        if (std::system(commands.record.c_str()) != 0) throw Error("cannot record the probe's kernel: " + commands.record);
        if (std::system(commands.precompile.c_str()) != 0) throw Error("cannot precompile the probe's kernel: " + commands.precompile);
        std::vector<double> ms;
        for (int k = 0; k < 5; ++k) {
            FILE* p = popen(commands.probe.c_str(), "r");
            if (!p) throw Error("cannot run " + commands.probe);
            double v = 0;
            const bool got = std::fscanf(p, "%lf", &v) == 1;
            pclose(p);
            if (got) ms.push_back(v);
        }
        if (ms.empty()) throw Error("the read-only probe printed nothing (its errors: " + dir + "/probe.err, removed now)");
        std::sort(ms.begin(), ms.end());
        Record r;
        r.name = "ew_first_readonly";
        r.dtype = "float32";
        r.n = 1000;
        r.ms = ms[ms.size() / 2];
        std::ostringstream note;
        note << "median of " << ms.size() << " fresh processes, kernel precompiled for " << arch
             << " into a read-only layer (KJIT_CACHE_PATH), no writable folder, NVRTC absent (KJIT_NVRTC_LIBRARY=/nonexistent); min "
             << ms.front() << " max " << ms.back() << " ms; CUDA's own start excluded";
        r.note = note.str();
        return r;
    });
}

std::string probe_program(const std::string& self) {
    const std::size_t slash = self.rfind('/');
    return (slash == std::string::npos ? std::string() : self.substr(0, slash + 1)) + "kjit-probe";
}

ReadonlyProbe readonly_probe_commands(const std::string& self, const std::string& dir, const std::string& arch) {
    const std::string probe = quoted(probe_program(self));
    ReadonlyProbe c;
    // A probe with a cache of its own records the kernel as it calls it (binding and variant).
    c.record = "KJIT_CACHE_DIR='" + dir + "/record' KJIT_CACHE_RECORD='" + dir + "/manifest.json' " + probe +
               " >/dev/null 2>>'" + dir + "/probe.err'";
    c.precompile = "'" + self + "' precompile '" + dir + "/manifest.json' --arch " + arch + " --cache-dir '" + dir +
                   "/shipped' >/dev/null 2>>'" + dir + "/probe.err'";
    // No writable folder (none of the variables that name one), the shipped folder read-only, and
    // an NVRTC that is not there.
    c.probe = "env -u KJIT_CACHE_DIR -u XDG_CACHE_HOME -u HOME -u KJIT_CACHE_RECORD KJIT_CACHE_PATH='" + dir +
              "/shipped' KJIT_NVRTC_LIBRARY=/nonexistent " + probe + " 2>>'" + dir + "/probe.err'";
    return c;
}

}  // namespace kjit::cli::bench
