// Events: points in a stream to wait on and to time between.
#pragma once

#include "kjit/export.hpp"

#include <memory>

#include "kjit/cuda_handles.hpp"
#include "kjit/stream.hpp"

namespace kjit {

class KJIT_API Event {
public:
    // A new event; timing events cost a little more to record, so they can be turned off.
    explicit Event(bool enable_timing = true);

    void record(const Stream& stream = Stream::current());
    void synchronize() const;
    bool query() const;              // true when the recorded work has finished
    // Makes `stream` wait for this event without blocking the host.
    void wait_on(const Stream& stream) const;
    // Milliseconds between two recorded timing events (end must have been reached).
    static float elapsed_ms(const Event& start, const Event& end);

    CUevent handle() const noexcept { return handle_.get(); }

private:
    struct Destroy {
        void operator()(CUevent e) const noexcept;
    };
    std::unique_ptr<CUevent_st, Destroy> handle_;
    int device_ordinal_ = 0;
};

}  // namespace kjit
