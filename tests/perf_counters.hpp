// The processor's event counters around a piece of code (perf_event_open), for the first-call
// probes: what makes a cold call slow (instruction cache, TLB or branch misses) where the PMU
// is exposed. Counts this thread, user and kernel where allowed, user only otherwise.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <linux/perf_event.h>
#include <sstream>
#include <string>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace kjit::test {

constexpr std::uint64_t perf_cache_event(std::uint64_t id, std::uint64_t op, std::uint64_t result) {
    return id | (op << 8) | (result << 16);
}

class PerfCounters {
public:
    PerfCounters() {
        for (std::size_t k = 0; k < kEvents.size(); ++k) fds_[k] = open_event(kEvents[k].type, kEvents[k].config);
    }
    ~PerfCounters() {
        for (int fd : fds_)
            if (fd >= 0) ::close(fd);
    }
    PerfCounters(const PerfCounters&) = delete;
    PerfCounters& operator=(const PerfCounters&) = delete;

    void start() {
        for (int fd : fds_)
            if (fd >= 0) {
                ioctl(fd, PERF_EVENT_IOC_RESET, 0);
                ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
            }
    }
    // "cycles 1234, instructions ..." for the events this machine counts.
    std::string stop() {
        std::ostringstream s;
        for (std::size_t k = 0; k < kEvents.size(); ++k) {
            if (fds_[k] < 0) continue;
            ioctl(fds_[k], PERF_EVENT_IOC_DISABLE, 0);
            std::uint64_t v = 0;
            if (::read(fds_[k], &v, sizeof v) == sizeof v) s << kEvents[k].name << " " << v << ", ";
        }
        const std::string out = s.str();
        return out.empty() ? "no counters" : out;
    }

private:
    struct Event {
        const char* name;
        std::uint32_t type;
        std::uint64_t config;
    };
    static constexpr std::array<Event, 9> kEvents{{
        {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
        {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
        {"branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES},
        {"L1i-misses", PERF_TYPE_HW_CACHE, perf_cache_event(PERF_COUNT_HW_CACHE_L1I, PERF_COUNT_HW_CACHE_OP_READ, PERF_COUNT_HW_CACHE_RESULT_MISS)},
        {"iTLB-misses", PERF_TYPE_HW_CACHE, perf_cache_event(PERF_COUNT_HW_CACHE_ITLB, PERF_COUNT_HW_CACHE_OP_READ, PERF_COUNT_HW_CACHE_RESULT_MISS)},
        {"dTLB-misses", PERF_TYPE_HW_CACHE, perf_cache_event(PERF_COUNT_HW_CACHE_DTLB, PERF_COUNT_HW_CACHE_OP_READ, PERF_COUNT_HW_CACHE_RESULT_MISS)},
        {"LLC-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES},
        {"page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS},
        {"task-clock-ns", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK},
    }};
    static int open_event(std::uint32_t type, std::uint64_t config) {
        for (int exclude_kernel = 0; exclude_kernel < 2; ++exclude_kernel) {
            perf_event_attr a;
            std::memset(&a, 0, sizeof a);
            a.size = sizeof a;
            a.type = type;
            a.config = config;
            a.disabled = 1;
            a.exclude_kernel = static_cast<unsigned>(exclude_kernel);
            a.exclude_hv = 1;
            const long fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
            if (fd >= 0) return static_cast<int>(fd);
        }
        return -1;
    }
    std::array<int, kEvents.size()> fds_{};
};

}  // namespace kjit::test
