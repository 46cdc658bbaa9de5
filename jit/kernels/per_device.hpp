// One value per CUDA device, made on first use and then read without a lock: what a kernel object
// keeps of its loaded module and entry points, so that a warm launch is one atomic load.
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "kjit/error.hpp"
#include "runtime/detail/driver.hpp"

namespace kjit::jit::kernels {

template <class T>
class PerDevice {
public:
    static constexpr int kMaxDevices = detail::Driver::kMaxDevices;

    // The value for device `ordinal`, or null when it has not been made yet.
    const T* find(int ordinal) const noexcept {
        if (ordinal < 0 || ordinal >= kMaxDevices) return nullptr;
        return slots_[ordinal].load(std::memory_order_acquire);
    }

    // The value for device `ordinal`, made by `make()` (a std::unique_ptr<T>) when there is none.
    // `make` runs without a lock: two threads' first uses may both make one, and one is kept (the
    // makers used here are idempotent: the kernel cache and the module registry do the work once).
    template <class Make>
    const T& get(int ordinal, Make&& make) const {
        if (const T* found = find(ordinal)) return *found;
        if (ordinal < 0 || ordinal >= kMaxDevices)
            throw Error("device ordinal " + std::to_string(ordinal) + " is out of range (kjit handles " +
                        std::to_string(kMaxDevices) + " devices)");
        std::unique_ptr<T> made = make();
        std::lock_guard lock(mutex_);
        if (const T* found = slots_[ordinal].load(std::memory_order_relaxed)) return *found;
        owned_[ordinal] = std::move(made);
        slots_[ordinal].store(owned_[ordinal].get(), std::memory_order_release);
        return *owned_[ordinal];
    }

private:
    mutable std::array<std::atomic<const T*>, kMaxDevices> slots_{};
    mutable std::array<std::unique_ptr<T>, kMaxDevices> owned_;
    mutable std::mutex mutex_;
};

}  // namespace kjit::jit::kernels
