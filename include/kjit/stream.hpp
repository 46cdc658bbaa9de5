// Streams: the queues kernels and copies run on.
//
// Which stream a call uses when none is given: the calling thread's current stream, which is the
// device's legacy default stream (stream 0, the one CuPy and PyTorch use by default) until a
// CurrentStreamGuard makes another current. A Stream either owns its CUstream (created by
// Stream::create, destroyed with the last copy) or borrows one (Stream::wrap, never destroyed by
// kjit; the caller keeps it alive while kjit work on it is in flight).
#pragma once

#include "kjit/export.hpp"

#include <memory>

#include "kjit/cuda_handles.hpp"

#include "kjit/device.hpp"

namespace kjit {

class KJIT_API Stream {
public:
    // The legacy default stream of the current device.
    Stream() noexcept = default;

    // A new stream on `device` (non-blocking with respect to the legacy default stream).
    static Stream create(Device device = Device(), int priority = 0);
    // Borrows a stream made elsewhere; `device` is the device its context belongs to.
    static Stream wrap(CUstream stream, Device device = Device());
    // The legacy default stream (0) and the per-thread default stream of `device`.
    static Stream legacy_default(Device device = Device());
    static Stream per_thread_default(Device device = Device());
    // This thread's current stream (see the note at the top of this header).
    static Stream current();

    CUstream handle() const noexcept { return handle_; }
    Device device() const;
    bool owns_handle() const noexcept { return owner_ != nullptr; }

    // Blocks until all work queued so far has finished.
    void synchronize() const;
    // True when all work queued so far has finished.
    bool query() const;

    // This stream, for work on `device`: a default stream that names no device (Stream(),
    // legacy_default(), per_thread_default() without a device) is taken as that device's; a
    // stream that belongs to another device is an error (kjit::Error naming both).
    Stream for_device(Device device) const;

    friend bool operator==(const Stream& a, const Stream& b) noexcept { return a.handle_ == b.handle_; }

private:
    CUstream handle_ = nullptr;
    int device_ordinal_ = -1;           // -1: the thread's current device
    std::shared_ptr<void> owner_;       // destroys the handle when the last owning copy goes
};

// Makes `stream` the calling thread's current stream for the guard's lifetime.
class KJIT_API CurrentStreamGuard {
public:
    explicit CurrentStreamGuard(const Stream& stream);
    ~CurrentStreamGuard();
    CurrentStreamGuard(const CurrentStreamGuard&) = delete;
    CurrentStreamGuard& operator=(const CurrentStreamGuard&) = delete;

private:
    Stream previous_;
};

}  // namespace kjit
