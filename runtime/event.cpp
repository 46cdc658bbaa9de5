#include "kjit/event.hpp"

#include "runtime/detail/check.hpp"
#include "runtime/detail/driver.hpp"
#include "runtime/detail/log.hpp"

namespace kjit {

void Event::Destroy::operator()(CUevent e) const noexcept {
    detail::Driver* d = detail::try_driver();
    if (d == nullptr) return;
    const CUresult st = d->cuEventDestroy(e);
    if (st != CUDA_SUCCESS && st != CUDA_ERROR_DEINITIALIZED)
        detail::log(detail::LogLevel::warn, "cuEventDestroy failed: " + detail::cu_status_name(st));
}

Event::Event(bool enable_timing) : device_ordinal_(Device::current().ordinal()) {
    detail::Driver& d = detail::driver_on(device_ordinal_);
    CUevent e = nullptr;
    KJIT_CU_CHECK(d.cuEventCreate(&e, enable_timing ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING));
    handle_.reset(e);
}

void Event::record(const Stream& stream) {
    detail::Driver& d = detail::driver_on(stream.device().ordinal());
    KJIT_CU_CHECK(d.cuEventRecord(handle_.get(), stream.handle()));
}

void Event::synchronize() const {
    detail::Driver& d = detail::driver_on(device_ordinal_);
    KJIT_CU_CHECK(d.cuEventSynchronize(handle_.get()));
}

bool Event::query() const {
    detail::Driver& d = detail::driver_on(device_ordinal_);
    const CUresult st = d.cuEventQuery(handle_.get());
    if (st == CUDA_ERROR_NOT_READY) return false;
    KJIT_CU_CHECK(st);
    return true;
}

void Event::wait_on(const Stream& stream) const {
    detail::Driver& d = detail::driver_on(stream.device().ordinal());
    KJIT_CU_CHECK(d.cuStreamWaitEvent(stream.handle(), handle_.get(), 0));
}

float Event::elapsed_ms(const Event& start, const Event& end) {
    detail::Driver& d = detail::driver_on(start.device_ordinal_);
    float ms = 0.0f;
    KJIT_CU_CHECK(d.cuEventElapsedTime(&ms, start.handle_.get(), end.handle_.get()));
    return ms;
}

}  // namespace kjit
