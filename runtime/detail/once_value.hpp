// A value made once by the first thread that asks for it while later askers wait: what a
// std::shared_future gave the kernel cache and the module registry, without its std::call_once
// (a futex wake each time a value is set, and a cold stretch of libstdc++, on a fresh process's
// first cached call: docs/perf-log.md).
#pragma once

#include <condition_variable>
#include <exception>
#include <mutex>
#include <utility>

namespace kjit::detail {

template <class T>
class OnceValue {
public:
    OnceValue() = default;  // pending until set() or fail()
    explicit OnceValue(T value) : value_(std::move(value)), state_(State::ready) {}
    OnceValue(const OnceValue&) = delete;
    OnceValue& operator=(const OnceValue&) = delete;

    // The value once there; waits while it is being made; rethrows the failure that ended that.
    T get() {
        std::unique_lock lock(mutex_);
        if (state_ == State::pending) {
            ++waiters_;
            made_.wait(lock, [&] { return state_ != State::pending; });
            --waiters_;
        }
        if (state_ == State::failed) std::rethrow_exception(error_);
        return value_;
    }
    void set(T value) { finish(State::ready, std::move(value), nullptr); }
    void fail(std::exception_ptr error) { finish(State::failed, T(), std::move(error)); }

private:
    enum class State { pending, ready, failed };
    void finish(State state, T value, std::exception_ptr error) {
        bool waited;
        {
            std::lock_guard lock(mutex_);
            value_ = std::move(value);
            error_ = std::move(error);
            state_ = state;
            waited = waiters_ > 0;
        }
        // Only when someone waits: notify_all costs about a thousand instructions even then not.
        if (waited) made_.notify_all();
    }

    std::mutex mutex_;
    std::condition_variable made_;
    T value_{};
    std::exception_ptr error_;
    State state_ = State::pending;
    int waiters_ = 0;
};

}  // namespace kjit::detail
