#include "jit/kernels/worker_threads.hpp"

#include <atomic>
#include <cerrno>
#include <exception>
#include <mutex>
#include <new>
#include <system_error>
#include <thread>
#include <vector>

namespace kjit::jit::kernels {
namespace {

// ScopedThreadStartLimit's limit; -1: none.
std::atomic<int> g_start_limit{-1};

// Joins every thread started, whatever left run_on_threads: a std::thread destroyed while still
// joinable calls std::terminate.
struct JoinAll {
    std::vector<std::thread>& threads;
    ~JoinAll() {
        for (std::thread& t : threads)
            if (t.joinable()) t.join();
    }
};

}  // namespace

int run_on_threads(int threads, const std::function<void()>& work, std::string* why_fewer) {
    std::mutex error_mutex;
    std::exception_ptr first_error;
    // Only what escapes `work` is kept; a std::thread's function must not throw (terminate again).
    const auto guarded = [&] {
        try {
            work();
        } catch (...) {
            std::lock_guard lock(error_mutex);
            if (!first_error) first_error = std::current_exception();
        }
    };
    std::vector<std::thread> started;
    started.reserve(threads > 1 ? static_cast<std::size_t>(threads - 1) : 0);  // emplace_back cannot throw then
    {
        const JoinAll join{started};
        for (int t = 1; t < threads; ++t) {
            try {
                const int limit = g_start_limit.load();
                if (limit >= 0 && static_cast<int>(started.size()) >= limit)
                    throw std::system_error(EAGAIN, std::generic_category(), "ScopedThreadStartLimit");
                started.emplace_back(guarded);
            } catch (const std::system_error& e) {
                if (why_fewer) *why_fewer = e.code().message();
                break;
            } catch (const std::bad_alloc&) {  // no memory for the thread's shared state
                if (why_fewer) *why_fewer = "out of memory";
                break;
            }
        }
        guarded();  // the calling thread works too: with no thread started, it does everything
    }
    if (first_error) std::rethrow_exception(first_error);
    return static_cast<int>(started.size()) + 1;
}

ScopedThreadStartLimit::ScopedThreadStartLimit(int allowed) : previous_(g_start_limit.exchange(allowed)) {}
ScopedThreadStartLimit::~ScopedThreadStartLimit() { g_start_limit.store(previous_); }

}  // namespace kjit::jit::kernels
