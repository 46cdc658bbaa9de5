// Memory that arrays view: device memory from CUDA's stream-ordered pool, host memory (pageable
// or pinned), or memory owned by someone else (borrowed).
//
// Device buffers are allocated on a stream with cuMemAllocFromPoolAsync from a pool kjit keeps per
// device, and freed with cuMemFreeAsync on the stream that last used them (record_stream() says
// which; kjit's own calls record the stream they run on). If a buffer is used on several streams
// at once, synchronise them before dropping the last reference, as with PyTorch's record_stream.
#pragma once

#include "kjit/export.hpp"

#include <cstddef>
#include <memory>
#include <mutex>

#include "kjit/device.hpp"
#include "kjit/stream.hpp"

namespace kjit {

class KJIT_API Buffer : public std::enable_shared_from_this<Buffer> {
public:
    enum class Kind { device_pool, host, host_pinned, borrowed };

    // `bytes` of device memory on `stream`'s device, usable in stream order on `stream` at once.
    // Throws OutOfMemory (naming the size asked and the free memory) when it does not fit, after
    // returning the pool's cached memory to the driver and trying once more.
    static std::shared_ptr<Buffer> allocate_device(std::size_t bytes, const Stream& stream = Stream::current());
    // Host memory, 64-byte aligned; pinned (page-locked) memory makes copies asynchronous and fast
    // but needs the driver.
    static std::shared_ptr<Buffer> allocate_host(std::size_t bytes, bool pinned = false);
    // Memory kjit does not own. `keep_alive` is released when the buffer dies (a DLPack deleter,
    // say); kjit never frees `data` itself.
    static std::shared_ptr<Buffer> borrow(void* data, std::size_t bytes, Device device,
                                          std::shared_ptr<void> keep_alive = {});

    ~Buffer();
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;

    void* data() const noexcept { return data_; }
    std::size_t size() const noexcept { return bytes_; }
    Device device() const noexcept { return device_; }
    Kind kind() const noexcept { return kind_; }

    // Records that `stream` used this buffer last, so that it is freed in order on that stream.
    void record_stream(const Stream& stream);
    Stream last_stream() const;

private:
    Buffer(void* data, std::size_t bytes, Device device, Kind kind) noexcept
        : data_(data), bytes_(bytes), device_(device), kind_(kind) {}

    void* data_;
    std::size_t bytes_;
    Device device_;
    Kind kind_;
    std::shared_ptr<void> keep_alive_;
    mutable std::mutex stream_mutex_;
    Stream last_stream_;  // keeps an owning stream alive until the free is queued on it
};

}  // namespace kjit
