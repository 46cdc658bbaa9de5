// Not tests: benchmarks of a fresh process's first call of a cached kernel (issue 4), whole and
// in steps, and the probes that say where its time goes (a traced driver, page faults, counters,
// a second kernel's first call). Hidden ([.]); run by hand as each case's comment says, and on the
// GPU machine by docs/PERFORMANCE.md's commands.
#include "allocation_counter.hpp"
#include "test_support.hpp"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <iomanip>
#include <map>
#include <sstream>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cache/kernel_cache.hpp"
#include "fake_driver.hpp"
#include "jit/elementwise_calls.hpp"
#include "jit/nvrtc_identity.hpp"
#include "jit/warm_start.hpp"
#include "kjit/cache.hpp"
#include "kjit/device.hpp"
#include "kjit/elementwise_kernel.hpp"
#include "perf_counters.hpp"
#include "runtime/detail/driver.hpp"
#include "runtime/detail/nvrtc.hpp"
#include "runtime/detail/trace_points.hpp"

using kjit::test::cache_in;
using kjit::test::ProcessCacheGuard;
using kjit::DType;

// Not a test: run twice as separate processes with KJIT_BENCH_CACHE_DIR set to one folder; the
// first fills it, the second reports what its first call of the (now cached) kernel costs.
TEST_CASE("first call of a cached kernel in a fresh process", "[.][cache_bench_fresh]") {
    using clock = std::chrono::steady_clock;
    auto us_since = [](clock::time_point t) { return std::chrono::duration<double, std::micro>(clock::now() - t).count(); };
    const char* dir = std::getenv("KJIT_BENCH_CACHE_DIR");
    REQUIRE(dir != nullptr);
    const ProcessCacheGuard restore;
    // The CUDA driver's start is paid by every CUDA program: before the clock.
    const bool gpu = kjit::Device::count() > 0;
    if (gpu) (void)kjit::Device::current().properties();
    kjit::configure_cache(cache_in(dir));
    const kjit::ElementwiseKernel k("T x, T a, T b", "T y", "y = a * x + b", "fresh");
    auto t = clock::now();
    const kjit::KernelBinary b = k.compile({{"T", DType::float32}});
    const double compile_us = us_since(t);
    const bool nvrtc_was_loaded = kjit::detail::nvrtc_loaded();
    double load_us = 0;
    if (gpu) {
        auto& d = kjit::detail::driver_on(0);
        CUmodule m = nullptr;
        t = clock::now();
        REQUIRE(d.cuModuleLoadData(&m, b.cubin.data()) == CUDA_SUCCESS);
        load_us = us_since(t);
        d.cuModuleUnload(m);
    }
    if (b.compile_ms > 0)
        WARN("filled the cache (compiled in " << b.compile_ms << " ms); run again to measure");
    else
        WARN("first call of a cached kernel in a fresh process (" << b.arch << "): compile() from disk " << compile_us
                                                                 << " us (NVRTC loaded: " << nvrtc_was_loaded
                                                                 << "), cuModuleLoadData " << load_us << " us");
}

// Not a test: where a fresh process's first cached call spends its time, phase by phase (each
// phase is the first of its kind in the process). Run after "[cache_bench_fresh]" filled the
// folder: KJIT_BENCH_CACHE_DIR=DIR kjit_tests "[cache_bench_phases]".
TEST_CASE("phases of a fresh process's first cached call", "[.][cache_bench_phases]") {
    using clock = std::chrono::steady_clock;
    auto us_since = [](clock::time_point t) { return std::chrono::duration<double, std::micro>(clock::now() - t).count(); };
    const char* dir = std::getenv("KJIT_BENCH_CACHE_DIR");
    REQUIRE(dir != nullptr);
    const ProcessCacheGuard restore;
    if (kjit::Device::count() > 0) (void)kjit::Device::current().properties();
    const kjit::ElementwiseKernel k("T x, T a, T b", "T y", "y = a * x + b", "fresh");
    const kjit::TypeBinding f32{{"T", DType::float32}};
    auto t = clock::now();
    k.check(f32);
    const double check_us = us_since(t);
    t = clock::now();
    const std::string src = k.source(f32);
    const double source_us = us_since(t);
    t = clock::now();
    kjit::configure_cache(cache_in(dir));
    (void)kjit::cache::process_cache();
    const double cache_us = us_since(t);
    t = clock::now();
    const auto id = kjit::jit::remembered_nvrtc(dir);
    const double record_us = us_since(t);
    t = clock::now();
    const kjit::KernelBinary b = k.compile(f32);
    const double compile_us = us_since(t);
    WARN("fresh process, first of each: check " << check_us << " us, source " << source_us
                                              << " us (parse+check+generate again), cache object " << cache_us
                                              << " us, NVRTC record " << record_us << " us (found: " << id.has_value()
                                              << "), then compile() " << compile_us << " us (from cache: "
                                              << (b.compile_ms == 0) << ", NVRTC loaded: " << kjit::detail::nvrtc_loaded()
                                              << ")");
}

namespace {

// KJIT_BENCH_TRACE_DRIVER=1: the real driver with every entry timed, so that a fresh process's
// first call shows which driver calls it makes and what each costs (tracer_calls).
struct TracedCall {
    const char* name;
    double us;
};
std::vector<TracedCall>& tracer_calls() {
    static std::vector<TracedCall> calls;
    return calls;
}
kjit::detail::DriverApi& tracer_real() {
    static kjit::detail::DriverApi api = kjit::detail::real_driver_api();
    return api;
}
template <auto Member, class Fn>
struct Tracer;
template <auto Member, class R, class... A>
struct Tracer<Member, R (*)(A...)> {
    inline static const char* name = nullptr;
    static R call(A... a) {
        const auto t = std::chrono::steady_clock::now();
        const R r = (tracer_real().*Member)(a...);
        tracer_calls().push_back({name, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count()});
        return r;
    }
};
kjit::detail::DriverApi traced_driver() {
    kjit::detail::DriverApi api = tracer_real();
    tracer_calls().reserve(4096);
#define KJIT_TRACE_ENTRY(entry, version)                                                               \
    if (api.entry != nullptr) {                                                                        \
        using T = Tracer<&kjit::detail::DriverApi::entry, decltype(kjit::detail::DriverApi::entry)>;   \
        T::name = #entry;                                                                              \
        api.entry = &T::call;                                                                          \
    }
    KJIT_DRIVER_FUNCTIONS(KJIT_TRACE_ENTRY)
#undef KJIT_TRACE_ENTRY
    return api;
}
std::string traced_since(std::size_t first) {
    std::ostringstream s;
    for (std::size_t k = first; k < tracer_calls().size(); ++k)
        s << (k == first ? "" : ", ") << tracer_calls()[k].name << " " << tracer_calls()[k].us;
    return s.str();
}

// What the fresh-process benches below set up before any clock: the cache in
// KJIT_BENCH_CACHE_DIR, CUDA started (a pretend driver when there is no GPU), two arrays of 1000
// float32.
struct FreshProcess {
    const ProcessCacheGuard restore;
    std::optional<kjit::detail::ScopedDriverOverride> fake;
    std::optional<kjit::test::ScopedEnv> cache_env;
    kjit::Array x, y;
    // `lazy_cache`: the process's cache is made by the first call from KJIT_CACHE_DIR, as in
    // `kjit bench --probe` (and any application that does not configure the cache itself).
    explicit FreshProcess(bool lazy_cache = false) {
        const char* dir = std::getenv("KJIT_BENCH_CACHE_DIR");
        REQUIRE(dir != nullptr);
        // Lazy: the environment set before the context is made, as a process started with it
        // has it (what jit/warm_start.cpp reads then).
        if (lazy_cache) {
            cache_env.emplace("KJIT_CACHE_DIR", dir);
            kjit::cache::forget_process_cache();
        }
        // KJIT_BENCH_PRETEND_DRIVER=1 on a GPU machine times kjit's own part of the first call
        // on that machine's processor (the real driver's calls left out).
        const char* pretend = std::getenv("KJIT_BENCH_PRETEND_DRIVER");
        const char* trace = std::getenv("KJIT_BENCH_TRACE_DRIVER");
        if (kjit::Device::count() == 0 || (pretend != nullptr && std::string(pretend) == "1"))
            fake.emplace(kjit::test::make_fake_launching_driver(), 1);
        else if (trace != nullptr && std::string(trace) == "1")
            fake.emplace(traced_driver(), kjit::Device::count());
        (void)kjit::Device::current().properties();
        x = kjit::Array::empty({1000}, DType::float32, kjit::Device::cuda(0));
        y = kjit::Array::empty({1000}, DType::float32, kjit::Device::cuda(0));
        kjit::Stream::current().synchronize();
        // The real driver takes 100 ms or more to make the context, beside which the warm start
        // (jit/warm_start.hpp) finishes; the pretend one takes no time, so the probe waits for it.
        kjit::jit::wait_for_warm_start();
        if (!lazy_cache) kjit::configure_cache(cache_in(dir));
    }
};

}  // namespace

// Not a test: a fresh process's first call of a kernel, as a call makes it, step by step (each
// the first of its kind in the process): the kernel object, its check, the small variant's
// program (from disk once a first run filled the folder), its module loaded, the call. On a
// pretend driver when there is no GPU (no real load or launch then). Run twice:
// KJIT_BENCH_CACHE_DIR=DIR kjit_tests "[cache_bench_first_call]".
TEST_CASE("a fresh process's first call of a cached kernel, step by step", "[.][cache_bench_first_call]") {
    using clock = std::chrono::steady_clock;
    auto us_since = [](clock::time_point t) { return std::chrono::duration<double, std::micro>(clock::now() - t).count(); };
    const FreshProcess fresh;
    const kjit::TypeBinding f32{{"T", DType::float32}};
    auto t = clock::now();
    const kjit::ElementwiseKernel k("T x, T a, T b", "T y", "y = a * x + b", "fresh_call");
    const double object_us = us_since(t);
    // As a call binds (x, 2, 1, y): a and b passed by value, no input stored in another dtype.
    const kjit::jit::ModuleVariant scalars{{false, true, true, false}, std::vector<std::optional<DType>>(4)};
    t = clock::now();
    k.check(f32);
    const double check_us = us_since(t);
    t = clock::now();
    const kjit::jit::CompiledModules c = kjit::jit::compile_elementwise_entry(k, f32, scalars, "", kjit::jit::ElementwiseEntry::small32);
    const double program_us = us_since(t);
    t = clock::now();
    (void)kjit::jit::elementwise_variants(k, f32, scalars, 0).function(kjit::jit::ElementwiseEntry::small32);
    const double load_us = us_since(t);
    t = clock::now();
    k.launch({fresh.x, 2.0f, 1.0f, fresh.y});
    kjit::Stream::current().synchronize();
    const double call_us = us_since(t);
    WARN((c.compile_ms > 0 ? "filled the cache; run again to measure. " : "") << "object " << object_us << " us, check " << check_us
         << " us, program " << program_us << " us (NVRTC loaded: " << kjit::detail::nvrtc_loaded() << "), load " << load_us
         << " us, call " << call_us << " us; total " << object_us + check_us + program_us + load_us + call_us << " us");
}

// KJIT_BENCH_PAGES=1: which pages the call maps in (a page fault each), by mapping: the present
// bits of /proc/self/pagemap for every mapping before and after the call. The snapshot lives in
// memory of its own (an mmap, not the heap), so that taking it does not move where the call's
// allocations land and add faults of its own.
class PresentPages {
public:
    PresentPages() {
        void* p = ::mmap(nullptr, kArenaBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        arena_ = p == MAP_FAILED ? nullptr : static_cast<unsigned char*>(p);
        maps_ = reinterpret_cast<Mapping*>(arena_);
    }
    ~PresentPages() {
        if (arena_ != nullptr) ::munmap(arena_, kArenaBytes);
    }
    PresentPages(const PresentPages&) = delete;
    PresentPages& operator=(const PresentPages&) = delete;

    void take() {
        count_ = 0;
        used_ = 0;
        if (arena_ == nullptr) return;
        char* text = reinterpret_cast<char*>(bump(kMapsBytes));
        const int maps = ::open("/proc/self/maps", O_RDONLY);
        std::size_t size = 0;
        for (ssize_t n; maps >= 0 && size + 1 < kMapsBytes && (n = ::read(maps, text + size, kMapsBytes - 1 - size)) > 0;)
            size += static_cast<std::size_t>(n);
        if (maps >= 0) ::close(maps);
        text[size] = '\0';
        const int pagemap = ::open("/proc/self/pagemap", O_RDONLY);
        for (char* line = text; *line != '\0' && count_ < kMaxMaps;) {
            char* eol = std::strchr(line, '\n');
            if (eol != nullptr) *eol = '\0';
            Mapping& m = maps_[count_];
            if (std::sscanf(line, "%lx-%lx", &m.lo, &m.hi) == 2 && m.hi - m.lo <= (std::uintptr_t{1} << 30)) {
                const char* name = std::strchr(line, '/');
                if (name == nullptr) name = std::strchr(line, '[');
                std::snprintf(m.name, sizeof m.name, "%s", name != nullptr ? name : "(anonymous)");
                const std::size_t pages = (m.hi - m.lo) / 4096;
                m.words = reinterpret_cast<std::uint64_t*>(bump(pages * 8));
                if (m.words != nullptr && pagemap >= 0 &&
                    ::pread(pagemap, m.words, pages * 8, static_cast<off_t>(m.lo / 4096 * 8)) == static_cast<ssize_t>(pages * 8))
                    ++count_;
            }
            line = eol != nullptr ? eol + 1 : line + std::strlen(line);
        }
        if (pagemap >= 0) ::close(pagemap);
    }
    std::string newly_present_since(const PresentPages& before) const {
        std::map<std::string, int> count;
        for (std::size_t i = 0; i < count_; ++i)
            for (std::size_t j = 0; j < before.count_; ++j) {
                const Mapping &a = maps_[i], &b = before.maps_[j];
                if (a.lo != b.lo || a.hi != b.hi) continue;
                for (std::size_t k = 0; k < (a.hi - a.lo) / 4096; ++k)
                    if ((a.words[k] >> 63 & 1) && !(b.words[k] >> 63 & 1)) ++count[a.name];
            }
        std::string out;
        for (const auto& [name, n] : count) out += name + " " + std::to_string(n) + "; ";
        return out;
    }

private:
    struct Mapping {  // an implicit-lifetime aggregate: lives in the mmap'd arena
        std::uintptr_t lo, hi;
        char name[160];
        std::uint64_t* words;
    };
    static constexpr std::size_t kArenaBytes = std::size_t{1} << 30, kMapsBytes = 1 << 20, kMaxMaps = 4096;
    unsigned char* bump(std::size_t bytes) {
        bytes = (bytes + 63) & ~std::size_t{63};
        if (used_ + bytes > kArenaBytes - sizeof(Mapping) * kMaxMaps) return nullptr;
        unsigned char* p = arena_ + sizeof(Mapping) * kMaxMaps + used_;
        used_ += bytes;
        return p;
    }
    unsigned char* arena_ = nullptr;
    Mapping* maps_ = nullptr;
    std::size_t count_ = 0, used_ = 0;
};

// Not a test: the whole first call of a kernel in a fresh process, as `kjit bench --probe` times it
// on the GPU (on a pretend driver when there is no GPU). Run twice:
namespace {

// A library built with KJIT_TRACE_POINTS=ON: where a call's time went, point by point (the
// time-stamp counter read at `tsc0` and `tsc1` around a call of `us` microseconds).
void print_trace_points(const char* call, std::uint64_t tsc0, std::uint64_t tsc1, double us) {
    const auto points = kjit::detail::trace_points();
    if (points.empty()) return;
    const double ticks_per_us = static_cast<double>(tsc1 - tsc0) / us;
    std::ostringstream o;
    std::uint64_t last = tsc0;
    for (const auto& p : points) {
        o << "\n  " << std::fixed << std::setprecision(1) << std::setw(7) << static_cast<double>(p.tsc - last) / ticks_per_us
          << " us  " << p.what;
        last = p.tsc;
    }
    o << "\n  " << std::setw(7) << static_cast<double>(tsc1 - last) / ticks_per_us << " us  synchronised, returned";
    WARN("trace points of " << call << " (us since the point before):" << o.str());
}

}  // namespace

// KJIT_BENCH_CACHE_DIR=DIR kjit_tests "[cache_bench_probe]". The test runner turns the warm
// start off unless KJIT_WARM_START is set: KJIT_WARM_START=1 measures a first call as a process
// has it by default.
TEST_CASE("a fresh process's first call of a cached kernel, whole", "[.][cache_bench_probe]") {
    using clock = std::chrono::steady_clock;
    const FreshProcess fresh(/*lazy_cache=*/true);
    auto minor_faults = [] {
        rusage u{};
        getrusage(RUSAGE_SELF, &u);
        return u.ru_minflt;
    };
    // KJIT_BENCH_MARK=1: a line on stderr before and after the call, so that LD_DEBUG=bindings
    // shows which symbols the call binds (the dynamic linker's lazy lookups are part of it).
    // The line names where libkjit's kjit::cache_stats is, so that addresses traced in the call
    // can be mapped to libkjit's symbols (tools/first-call-order.sh).
    const bool mark = std::getenv("KJIT_BENCH_MARK") != nullptr;
    if (mark) {
        char line[96];
        const int n = std::snprintf(line, sizeof line, "probe: call begins; kjit::cache_stats at %p\n",
                                    reinterpret_cast<void*>(&kjit::cache_stats));
        (void)!::write(2, line, static_cast<std::size_t>(n));
    }
    const bool pages = std::getenv("KJIT_BENCH_PAGES") != nullptr;
    std::optional<PresentPages> before;
    if (pages) {
        before.emplace();
        before->take();
    }
    // KJIT_BENCH_COUNTERS=1: the processor's event counters around each call (where exposed).
    const bool counting = std::getenv("KJIT_BENCH_COUNTERS") != nullptr;
    std::optional<kjit::test::PerfCounters> counters;
    if (counting) counters.emplace();
    const long faults = minor_faults();
    const std::size_t traced = tracer_calls().size();
    if (counting) counters->start();
    kjit::detail::reset_trace_points();
    const std::uint64_t tsc0 = kjit::detail::trace_clock();
    std::optional<kjit::test::CountAllocations> allocations(std::in_place);
    const auto t = clock::now();
    // As `kjit bench --probe` calls it: the output allocated, on the legacy default stream.
    const kjit::Stream s = kjit::Stream::legacy_default(kjit::Device::cuda(0));
    const kjit::ElementwiseKernel k("T x, T a, T b", "T y", "y = a * x + b", "fresh_probe");
    (void)k({fresh.x, 2.0f, 1.0f}, {s, -1});
    s.synchronize();
    const double us = std::chrono::duration<double, std::micro>(clock::now() - t).count();
    const std::uint64_t tsc1 = kjit::detail::trace_clock();
    const long call_faults = minor_faults() - faults;
    const std::size_t call_allocations = allocations->count();
    allocations.reset();
    print_trace_points("the first call", tsc0, tsc1, us);
    if (counting) WARN("counters, first call: " << counters->stop());
    if (mark) (void)!::write(2, "probe: call ends\n", 17);
    if (pages) {
        PresentPages after;
        after.take();
        WARN("pages mapped in by the call: " << after.newly_present_since(*before));
    }
    // KJIT_BENCH_SECOND=1: then the first call of another kernel on disk, whose code the first
    // call has run already: what the first call pays for running cold code.
    if (const char* e = std::getenv("KJIT_BENCH_SECOND"); e != nullptr && e[0] == '1') {
        const std::size_t traced2 = tracer_calls().size();
        if (counting) counters->start();
        kjit::detail::reset_trace_points();
        const std::uint64_t tsc2 = kjit::detail::trace_clock();
        const auto t2 = clock::now();
        const kjit::ElementwiseKernel k2("T x, T a, T b", "T y", "y = a * x - b", "fresh_probe2");
        (void)k2({fresh.x, 2.0f, 1.0f}, {s, -1});
        s.synchronize();
        const double us2 = std::chrono::duration<double, std::micro>(clock::now() - t2).count();
        print_trace_points("the second kernel's first call", tsc2, kjit::detail::trace_clock(), us2);
        if (counting) WARN("counters, second kernel: " << counters->stop());
        WARN("second kernel's first call " << us2 << " us; driver calls (us): " << traced_since(traced2));
    }
    WARN((kjit::cache_stats().compiles > 0 ? "filled the cache; run again to measure. " : "") << "first call " << us << " us, "
         << call_faults << " minor page faults, " << call_allocations
         << " heap allocations; driver calls (us): " << traced_since(traced));
}
