#include "kjit/buffer.hpp"

#include <cstdlib>
#include <new>

#include "kjit/error.hpp"
#include "runtime/detail/capture.hpp"
#include "runtime/detail/check.hpp"
#include "runtime/detail/driver.hpp"
#include "runtime/detail/log.hpp"

namespace kjit {
namespace {

constexpr std::size_t kHostAlignment = 64;  // a cache line, and enough for any vector load

void log_free_failure(const char* call, CUresult st) {
    // The driver shuts down before static destructors run; frees after that are moot.
    if (st != CUDA_SUCCESS && st != CUDA_ERROR_DEINITIALIZED)
        detail::log(detail::LogLevel::warn, std::string(call) + " failed: " + detail::cu_status_name(st));
}

CUresult allocate_from_pool(detail::Driver& d, CUdeviceptr* ptr, std::size_t bytes, CUmemoryPool pool,
                            CUstream stream) {
    return d.cuMemAllocFromPoolAsync(ptr, bytes, pool, stream);
}

}  // namespace

std::shared_ptr<Buffer> Buffer::allocate_device(std::size_t bytes, const Stream& stream) {
    const int ord = stream.device().ordinal();
    detail::Driver& d = detail::driver_on(ord);
    std::shared_ptr<Buffer> buf(new Buffer(nullptr, bytes, Device::cuda(ord), Kind::device_pool));
    buf->last_stream_ = stream;
    detail::note_buffer_made(buf);
    if (bytes == 0) return buf;  // no memory behind it; data() is null

    CUmemoryPool pool = d.memory_pool(ord);
    CUdeviceptr ptr = 0;
    CUresult st = allocate_from_pool(d, &ptr, bytes, pool, stream.handle());
    if (st == CUDA_ERROR_OUT_OF_MEMORY && !detail::is_capturing(d, stream.handle())) {
        // The pool keeps freed blocks; wait for pending frees, give the cached memory back to the
        // driver and try once more before calling it out of memory (not under capture: the wait
        // would end the capture).
        KJIT_CU_CHECK(d.cuCtxSynchronize());
        KJIT_CU_CHECK(d.cuMemPoolTrimTo(pool, 0));
        st = allocate_from_pool(d, &ptr, bytes, pool, stream.handle());
    }
    if (st == CUDA_ERROR_OUT_OF_MEMORY) {
        std::size_t free_bytes = 0, total_bytes = 0;
        d.cuMemGetInfo(&free_bytes, &total_bytes);
        throw OutOfMemory(st, "cuMemAllocFromPoolAsync(" + std::to_string(bytes) + " bytes)", __FILE__, __LINE__,
                          bytes, free_bytes, total_bytes);
    }
    KJIT_CU_CHECK(st);
    buf->data_ = reinterpret_cast<void*>(static_cast<std::uintptr_t>(ptr));
    return buf;
}

std::shared_ptr<Buffer> Buffer::allocate_host(std::size_t bytes, bool pinned) {
    if (pinned) {
        detail::Driver& d = detail::driver_on(Device::current().ordinal());
        void* p = nullptr;
        if (bytes > 0) KJIT_CU_CHECK(d.cuMemHostAlloc(&p, bytes, CU_MEMHOSTALLOC_PORTABLE));
        return std::shared_ptr<Buffer>(new Buffer(p, bytes, Device::cpu(), Kind::host_pinned));
    }
    void* p = nullptr;
    if (bytes > 0) {
        const std::size_t rounded = (bytes + kHostAlignment - 1) / kHostAlignment * kHostAlignment;
        if (rounded < bytes) throw std::bad_alloc();
        p = std::aligned_alloc(kHostAlignment, rounded);
        if (p == nullptr) throw std::bad_alloc();
    }
    return std::shared_ptr<Buffer>(new Buffer(p, bytes, Device::cpu(), Kind::host));
}

std::shared_ptr<Buffer> Buffer::borrow(void* data, std::size_t bytes, Device device, std::shared_ptr<void> keep_alive) {
    // Pin "the current device" down to its ordinal now: the buffer must not move with the thread.
    if (device.is_cuda()) device = Device::cuda(device.ordinal());
    std::shared_ptr<Buffer> buf(new Buffer(data, bytes, device, Kind::borrowed));
    buf->keep_alive_ = std::move(keep_alive);
    return buf;
}

Buffer::~Buffer() {
    if (data_ == nullptr) return;
    switch (kind_) {
        case Kind::host:
            std::free(data_);
            break;
        case Kind::host_pinned:
            if (detail::Driver* d = detail::try_driver()) log_free_failure("cuMemFreeHost", d->cuMemFreeHost(data_));
            break;
        case Kind::device_pool:
            if (detail::Driver* d = detail::try_driver()) {
                try {
                    d->make_current(device_.ordinal());
                    log_free_failure("cuMemFreeAsync",
                                     d->cuMemFreeAsync(reinterpret_cast<CUdeviceptr>(data_), last_stream_.handle()));
                } catch (const std::exception& e) {
                    detail::log(detail::LogLevel::warn, std::string("freeing device memory failed: ") + e.what());
                }
            }
            break;
        case Kind::borrowed:
            break;  // keep_alive_ releases whatever owns it
    }
}

void Buffer::record_stream(const Stream& stream) {
    detail::note_buffer_used(*this);  // a graph being captured keeps what its calls use
    std::lock_guard lock(stream_mutex_);
    if (!(last_stream_ == stream)) last_stream_ = stream;
}

Stream Buffer::last_stream() const {
    std::lock_guard lock(stream_mutex_);
    return last_stream_;
}

}  // namespace kjit
