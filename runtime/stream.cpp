#include "kjit/stream.hpp"

#include "kjit/error.hpp"
#include "runtime/detail/check.hpp"
#include "runtime/detail/driver.hpp"
#include "runtime/detail/log.hpp"

namespace kjit {
namespace {

thread_local Stream t_current_stream;  // default: the legacy default stream

// Destroys a stream kjit created when the last owning Stream goes.
struct DestroyStream {
    void operator()(CUstream_st* handle) const noexcept {
        detail::Driver* d = detail::try_driver();
        if (d == nullptr) return;
        const CUresult st = d->cuStreamDestroy(handle);
        // At process exit the driver may already be shut down; anything else is worth a word.
        if (st != CUDA_SUCCESS && st != CUDA_ERROR_DEINITIALIZED)
            detail::log(detail::LogLevel::warn, "cuStreamDestroy failed: " + detail::cu_status_name(st));
    }
};

}  // namespace

Stream Stream::create(Device device, int priority) {
    if (!device.is_cuda()) throw Error("Stream::create needs a CUDA device, not " + device.to_string());
    const int ord = device.ordinal();
    detail::Driver& d = detail::driver_on(ord);
    CUstream h = nullptr;
    KJIT_CU_CHECK(d.cuStreamCreateWithPriority(&h, CU_STREAM_NON_BLOCKING, priority));
    Stream s;
    s.handle_ = h;
    s.device_ordinal_ = ord;
    s.owner_ = std::shared_ptr<CUstream_st>(h, DestroyStream{});
    return s;
}

Stream Stream::wrap(CUstream stream, Device device) {
    Stream s;
    s.handle_ = stream;
    s.device_ordinal_ = device.is_cuda() ? device.ordinal() : -1;
    return s;
}

Stream Stream::legacy_default(Device device) { return wrap(nullptr, device); }  // 0 means legacy
Stream Stream::per_thread_default(Device device) { return wrap(CU_STREAM_PER_THREAD, device); }

Stream Stream::current() { return t_current_stream; }

Device Stream::device() const { return device_ordinal_ >= 0 ? Device::cuda(device_ordinal_) : Device::current(); }

Stream Stream::for_device(Device device) const {
    if (!device.is_cuda()) throw Error("a stream is for CUDA devices, not " + device.to_string());
    if (device_ordinal_ < 0) {
        Stream s = *this;
        s.device_ordinal_ = device.ordinal();
        return s;
    }
    if (device_ordinal_ != device.ordinal())
        throw Error("the stream belongs to cuda:" + std::to_string(device_ordinal_) + " but the work is on " +
                    device.to_string());
    return *this;
}

void Stream::synchronize() const {
    detail::Driver& d = detail::driver_on(device().ordinal());
    KJIT_CU_CHECK(d.cuStreamSynchronize(handle_));
}

bool Stream::query() const {
    detail::Driver& d = detail::driver_on(device().ordinal());
    const CUresult st = d.cuStreamQuery(handle_);
    if (st == CUDA_ERROR_NOT_READY) return false;
    KJIT_CU_CHECK(st);
    return true;
}

CurrentStreamGuard::CurrentStreamGuard(const Stream& stream) : previous_(t_current_stream) {
    t_current_stream = stream;
}

CurrentStreamGuard::~CurrentStreamGuard() { t_current_stream = previous_; }

}  // namespace kjit
