#include "runtime/detail/peer_copy.hpp"

#include <string>

#include "kjit/buffer.hpp"
#include "kjit/error.hpp"
#include "runtime/detail/capture.hpp"
#include "runtime/detail/check.hpp"
#include "runtime/detail/driver.hpp"

namespace kjit::detail {
namespace {

CUdeviceptr address(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }

// An event recorded on `recorded_on` (whose device's context is current) that `waiter` waits
// for: work queued on `waiter` from now on runs after what `recorded_on` had queued. The event
// may be destroyed at once; the wait stays.
void order_after(Driver& d, CUstream recorded_on, CUstream waiter) {
    CUevent event = nullptr;
    KJIT_CU_CHECK(d.cuEventCreate(&event, CU_EVENT_DISABLE_TIMING));
    const CUresult recorded = d.cuEventRecord(event, recorded_on);
    const CUresult waited = recorded == CUDA_SUCCESS ? d.cuStreamWaitEvent(waiter, event, 0) : recorded;
    d.cuEventDestroy(event);
    KJIT_CU_CHECK(waited);
}

}  // namespace

void order_after(const Stream& first, const Stream& then) {
    Driver& d = driver_on(first.device().ordinal());
    order_after(d, first.handle(), then.handle());
}

void copy_between_devices(void* destination, const Stream& destination_stream, const void* source, const Stream& source_stream,
                          std::size_t bytes) {
    const int from = source_stream.device().ordinal(), to = destination_stream.device().ordinal();
    if (from == to) throw Error("copy_between_devices: both streams are on cuda:" + std::to_string(from));
    if (bytes == 0) return;
    const std::string what = "copying from cuda:" + std::to_string(from) + " to cuda:" + std::to_string(to);
    Driver& d = driver();
    const bool peer = d.peer_access(from, to);
    d.make_current(to);
    refuse_under_capture(d, destination_stream.handle(), what, "copy between devices before or after the capture");
    d.make_current(from);
    refuse_under_capture(d, source_stream.handle(), what, "copy between devices before or after the capture");
    if (peer) {
        // On the source's stream, after the destination's allocation; the destination's stream
        // then waits for the copy.
        d.make_current(to);
        order_after(d, destination_stream.handle(), source_stream.handle());
        d.make_current(from);
        KJIT_CU_CHECK(d.cuMemcpyPeerAsync(address(destination), d.primary_context(to), address(source), d.primary_context(from), bytes,
                                          source_stream.handle()));
        order_after(d, source_stream.handle(), destination_stream.handle());
        return;
    }
    // Staged: to pinned host memory on the source's stream, then to the destination on its own
    // stream once that is done. The staging buffer lives until the second copy has finished, so
    // this waits for it.
    const std::shared_ptr<Buffer> staging = Buffer::allocate_host(bytes, /*pinned=*/true);  // portable
    d.make_current(from);
    KJIT_CU_CHECK(d.cuMemcpyDtoHAsync(staging->data(), address(source), bytes, source_stream.handle()));
    order_after(d, source_stream.handle(), destination_stream.handle());
    d.make_current(to);
    KJIT_CU_CHECK(d.cuMemcpyHtoDAsync(address(destination), staging->data(), bytes, destination_stream.handle()));
    KJIT_CU_CHECK(d.cuStreamSynchronize(destination_stream.handle()));
}

}  // namespace kjit::detail
