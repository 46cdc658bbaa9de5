#include "jit/host/host_pool.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace kjit::jit::host {
namespace {

class Pool {
public:
    explicit Pool(int threads) {
        for (int t = 1; t < threads; ++t) workers_.emplace_back([this] { work(); });
    }
    ~Pool() {
        {
            std::lock_guard lock(mutex_);
            stop_ = true;
        }
        wake_.notify_all();
        for (std::thread& t : workers_) t.join();
    }

    int size() const { return static_cast<int>(workers_.size()) + 1; }

    // One job at a time: a second caller (or a nested call) runs its chunks itself.
    bool try_run(std::int64_t chunks, const std::function<void(std::int64_t)>& body) {
        std::unique_lock busy(busy_, std::try_to_lock);
        if (!busy.owns_lock()) return false;
        {
            std::lock_guard lock(mutex_);
            body_ = &body;
            chunks_ = chunks;
            next_.store(0);
            error_ = nullptr;
            active_ = static_cast<int>(workers_.size());
            ++generation_;
        }
        wake_.notify_all();
        take_chunks();
        std::unique_lock lock(mutex_);
        done_.wait(lock, [&] { return active_ == 0; });
        body_ = nullptr;
        if (error_) std::rethrow_exception(error_);
        return true;
    }

private:
    void take_chunks() {
        for (std::int64_t c = next_.fetch_add(1); c < chunks_; c = next_.fetch_add(1)) {
            try {
                (*body_)(c);
            } catch (...) {
                std::lock_guard lock(mutex_);
                if (!error_) error_ = std::current_exception();
                next_.store(chunks_);  // stop handing out chunks
            }
        }
    }

    void work() {
        std::uint64_t seen = 0;
        for (;;) {
            {
                std::unique_lock lock(mutex_);
                wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
                if (stop_) return;
                seen = generation_;
            }
            take_chunks();
            std::lock_guard lock(mutex_);
            if (--active_ == 0) done_.notify_one();
        }
    }

    std::vector<std::thread> workers_;
    std::mutex busy_;
    std::mutex mutex_;
    std::condition_variable wake_, done_;
    bool stop_ = false;
    std::uint64_t generation_ = 0;
    int active_ = 0;
    const std::function<void(std::int64_t)>* body_ = nullptr;
    std::int64_t chunks_ = 0;
    std::atomic<std::int64_t> next_{0};
    std::exception_ptr error_;
};

int configured_threads() {
    if (const char* e = std::getenv("KJIT_HOST_THREADS"); e != nullptr && *e) {
        const long v = std::strtol(e, nullptr, 10);
        if (v > 0) return static_cast<int>(std::min<long>(v, 1024));
    }
    return std::max(1u, std::thread::hardware_concurrency());
}

Pool& pool() {
    static Pool p(configured_threads());
    return p;
}

// 0: the pool; 1: serial in increasing order; 2: serial in decreasing order (ScopedSerialChunks).
thread_local int t_serial = 0;

}  // namespace

ScopedSerialChunks::ScopedSerialChunks(bool reversed) : previous_(t_serial) { t_serial = reversed ? 2 : 1; }
ScopedSerialChunks::~ScopedSerialChunks() { t_serial = previous_; }

int host_threads() { return pool().size(); }

void parallel_chunks(std::int64_t chunks, const std::function<void(std::int64_t)>& body) {
    if (chunks <= 0) return;
    if (t_serial == 2) {
        for (std::int64_t c = chunks - 1; c >= 0; --c) body(c);
        return;
    }
    if (t_serial == 1) {
        for (std::int64_t c = 0; c < chunks; ++c) body(c);
        return;
    }
    if (chunks == 1 || pool().size() == 1 || !pool().try_run(chunks, body))
        for (std::int64_t c = 0; c < chunks; ++c) body(c);
}

}  // namespace kjit::jit::host
