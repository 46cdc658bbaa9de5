#include "runtime/detail/capture.hpp"

#include <algorithm>

#include "kjit/buffer.hpp"
#include "kjit/error.hpp"
#include "runtime/detail/driver.hpp"

namespace kjit::detail {
namespace {

thread_local CollectCapturedBuffers* t_collect = nullptr;

}  // namespace

void note_buffer_made(const std::shared_ptr<Buffer>& buffer) {
    if (t_collect == nullptr) return;
    t_collect->made_.push_back(buffer);
    t_collect->made_addresses_.push_back(buffer.get());
}

void note_buffer_used(Buffer& buffer) {
    if (t_collect == nullptr) return;
    // Not graph memory: holding that would keep it past the capture, where its free belongs.
    const auto& made = t_collect->made_addresses_;
    if (std::find(made.begin(), made.end(), &buffer) != made.end()) return;
    for (const std::shared_ptr<Buffer>& b : t_collect->used_)
        if (b.get() == &buffer) return;
    t_collect->used_.push_back(buffer.shared_from_this());
}

void note_scratch_used(Buffer& buffer) {
    if (t_collect == nullptr) return;
    auto& s = t_collect->scratch_;
    if (std::find(s.begin(), s.end(), &buffer) == s.end()) s.push_back(&buffer);
}

bool capture_collecting() noexcept { return t_collect != nullptr; }

void note_captured_call(const std::string& kernel, std::vector<CapturedScalar> scalars, const void* args, std::size_t bytes) {
    if (t_collect == nullptr) return;
    CapturedLaunch& p = t_collect->pending_;
    p.kernel = kernel;
    p.call = t_collect->calls_[kernel]++;
    p.scalars = std::move(scalars);
    const auto* b = static_cast<const std::byte*>(args);
    p.arguments.assign(b, b + bytes);
}

void note_kernel_launch(CUfunction f) {
    if (t_collect == nullptr || t_collect->pending_.kernel.empty()) return;
    t_collect->launches_.push_back(t_collect->pending_);
    t_collect->launches_.back().function = f;
}

CollectCapturedBuffers::CollectCapturedBuffers() : previous_(t_collect) { t_collect = this; }

CollectCapturedBuffers::~CollectCapturedBuffers() { t_collect = previous_; }

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
