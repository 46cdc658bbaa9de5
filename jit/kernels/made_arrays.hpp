// The arrays kjit makes during one kernel call (outputs the caller did not give, copies of inputs
// that overlap an output), by parameter index. Nothing is constructed until an array is made:
// a std::array of 64 std::optional<Array> cost a third of a warm launch's instructions to build
// and destroy (callgrind, docs/perf-log.md), and a warm launch with every output given makes
// none.
#pragma once

#include <cstdint>
#include <memory>
#include <new>
#include <utility>

#include "jit/kernels/call_memo.hpp"
#include "kjit/array.hpp"

namespace kjit::jit::kernels {

class MadeArrays {
public:
    MadeArrays() = default;
    MadeArrays(const MadeArrays&) = delete;
    MadeArrays& operator=(const MadeArrays&) = delete;
    ~MadeArrays() {
        for (std::size_t k = 0; made_ != 0; ++k, made_ >>= 1)
            if (made_ & 1u) std::destroy_at(slot(k));
    }

    // The array made for parameter k, or null.
    const Array* find(std::size_t k) const { return k < kSlots && ((made_ >> k) & 1u) ? slot(k) : nullptr; }
    void set(std::size_t k, Array a) {
        if (find(k) != nullptr) {
            *slot(k) = std::move(a);
            return;
        }
        ::new (static_cast<void*>(storage_[k])) Array(std::move(a));
        made_ |= std::uint64_t{1} << k;
    }

private:
    static constexpr std::size_t kSlots = kMaxCallParams;
    static_assert(kSlots <= 64, "one bit of made_ per parameter");
    Array* slot(std::size_t k) const { return std::launder(reinterpret_cast<Array*>(const_cast<unsigned char*>(storage_[k]))); }

    std::uint64_t made_ = 0;
    alignas(Array) unsigned char storage_[kSlots][sizeof(Array)];
};

}  // namespace kjit::jit::kernels
