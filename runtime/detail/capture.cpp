#include "runtime/detail/capture.hpp"

#include "kjit/error.hpp"
#include "runtime/detail/driver.hpp"

namespace kjit::detail {
namespace {

thread_local std::vector<std::weak_ptr<Buffer>>* t_captured = nullptr;

}  // namespace

std::vector<std::weak_ptr<Buffer>>* captured_allocations() noexcept { return t_captured; }

CollectCapturedAllocations::CollectCapturedAllocations() : previous_(t_captured) { t_captured = &buffers_; }

CollectCapturedAllocations::~CollectCapturedAllocations() { t_captured = previous_; }

bool is_capturing(Driver& d, CUstream stream) {
    if (d.cuStreamIsCapturing == nullptr) return false;
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    // An invalidated capture still counts: the call would fail inside it either way.
    return d.cuStreamIsCapturing(stream, &status) == CUDA_SUCCESS && status != CU_STREAM_CAPTURE_STATUS_NONE;
}

RelaxedCaptureMode::RelaxedCaptureMode() {
    Driver* d = try_driver();
    if (d == nullptr || d->cuThreadExchangeStreamCaptureMode == nullptr) return;
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    if (d->cuThreadExchangeStreamCaptureMode(&mode) != CUDA_SUCCESS) return;
    driver_ = d;
    previous_ = mode;
}

RelaxedCaptureMode::~RelaxedCaptureMode() {
    if (driver_ == nullptr) return;
    CUstreamCaptureMode mode = previous_;
    driver_->cuThreadExchangeStreamCaptureMode(&mode);  // nothing useful to do if this fails
}

void refuse_kept_allocation_under_capture(Driver& d, CUstream stream, const std::string& what) {
    if (!is_capturing(d, stream)) return;
    throw Error(what + " allocates scratch memory that kjit keeps between calls, which a stream being captured "
                       "into a graph cannot: make the same call once on this stream before the capture, so that the "
                       "memory is there already");
}

void refuse_under_capture(Driver& d, CUstream stream, const std::string& what, const std::string& instead) {
    if (!is_capturing(d, stream)) return;
    throw Error(what + " waits for the GPU, which a stream being captured into a graph cannot record: " + instead);
}

}  // namespace kjit::detail
